"""Reachability: hosts ping hosts, every pair or a random sample of pairs.

One raw ICMP socket per sending host, created inside the host's namespace.
Each source sends one echo request to each of its destinations (the
sequence number is the destination's host id); the destination's kernel
answers. A pair is reachable when the source gets the reply.
"""

from __future__ import annotations

import os
import random
import select
import socket
import struct
import time

from ..topology import FatTree
from . import netns

ICMP_ECHO_REQUEST, ICMP_ECHO_REPLY = 8, 0


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s: int = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def _echo(ident: int, seq: int) -> bytes:
    hdr = struct.pack("!BBHHH", ICMP_ECHO_REQUEST, 0, 0, ident, seq)
    payload = b"testbed-reach"
    return struct.pack("!BBHHH", ICMP_ECHO_REQUEST, 0, _checksum(hdr + payload), ident, seq) + payload


def sample_pairs(tree: FatTree, n: int, seed: int) -> list[tuple[int, int]]:
    """`n` distinct ordered host pairs (src != dst), drawn with `seed`; every pair if there are no more than n."""
    hosts = tree.n_hosts
    total = hosts * (hosts - 1)
    if n >= total:
        return [(s, d) for s in range(hosts) for d in range(hosts) if s != d]
    rng = random.Random(seed)
    picked = rng.sample(range(total), n)
    return sorted((i // (hosts - 1), (i % (hosts - 1)) + (i % (hosts - 1) >= i // (hosts - 1))) for i in picked)


def all_pairs(tree: FatTree, timeout_s: float = 3.0) -> set[tuple[int, int]]:
    """Pairs (src host id, dst host id) whose echo request got a reply, over every pair."""
    return reachable(tree, [(s, d) for s in range(tree.n_hosts) for d in range(tree.n_hosts) if s != d], timeout_s)


def reachable(tree: FatTree, pairs: list[tuple[int, int]], timeout_s: float = 3.0) -> set[tuple[int, int]]:
    """Those of `pairs` (src host id, dst host id) whose echo request got a reply."""
    socks: dict[int, socket.socket] = {}
    got: set[tuple[int, int]] = set()
    ident_base = os.getpid() & 0x7FFF
    poll = select.epoll()  # not select(): it stops at fd 1024
    try:
        for h in sorted({s for s, _ in pairs}):
            with netns.entered(tree.ns(tree.hosts[h].name)):
                socks[h] = socket.socket(socket.AF_INET, socket.SOCK_RAW | socket.SOCK_NONBLOCK, socket.IPPROTO_ICMP)
            poll.register(socks[h].fileno(), select.EPOLLIN)
        for src, dst in pairs:
            socks[src].sendto(_echo((ident_base + src) & 0xFFFF, dst), (str(tree.host_ip(tree.hosts[dst])), 0))
        want = set(pairs)
        by_fd = {s.fileno(): (nid, s) for nid, s in socks.items()}
        deadline = time.monotonic() + timeout_s
        while not want <= got and time.monotonic() < deadline:
            for fd, _ in poll.poll(max(0.0, deadline - time.monotonic())):
                nid, s = by_fd[fd]
                while True:
                    try:
                        pkt = s.recv(2048)
                    except BlockingIOError:
                        break
                    ihl = (pkt[0] & 0x0F) * 4
                    icmp_type, _code, _ck, ident, seq = struct.unpack_from("!BBHHH", pkt, ihl)
                    if icmp_type == ICMP_ECHO_REPLY and ident == (ident_base + nid) & 0xFFFF and (nid, seq) in want:
                        got.add((nid, seq))
    finally:
        poll.close()
        for s in socks.values():
            s.close()
    return got
