"""All-pairs reachability: every host pings every other host.

One raw ICMP socket per host, created inside the host's namespace. Each host
sends one echo request to every other host; the destination's kernel answers.
A pair is reachable when the source gets the reply.
"""

from __future__ import annotations

import os
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


def all_pairs(tree: FatTree, timeout_s: float = 3.0) -> set[tuple[int, int]]:
    """Pairs (src host id, dst host id) whose echo request got a reply."""
    socks: dict[int, socket.socket] = {}
    got: set[tuple[int, int]] = set()
    ident_base = os.getpid() & 0x7FFF
    try:
        for h in tree.hosts:
            with netns.entered(tree.ns(h.name)):
                socks[h.nid] = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        for h in tree.hosts:
            for d in tree.hosts:
                if d.nid != h.nid:
                    socks[h.nid].sendto(_echo((ident_base + h.nid) & 0xFFFF, d.nid), (str(tree.host_ip(d)), 0))
        want = tree.n_hosts * (tree.n_hosts - 1)
        by_fd = {s.fileno(): (nid, s) for nid, s in socks.items()}
        deadline = time.monotonic() + timeout_s
        while len(got) < want and time.monotonic() < deadline:
            ready, _, _ = select.select(list(by_fd), [], [], max(0.0, deadline - time.monotonic()))
            for fd in ready:
                nid, s = by_fd[fd]
                pkt = s.recv(2048)
                ihl = (pkt[0] & 0x0F) * 4
                icmp_type, _code, _ck, ident, seq = struct.unpack_from("!BBHHH", pkt, ihl)
                if icmp_type == ICMP_ECHO_REPLY and ident == (ident_base + nid) & 0xFFFF:
                    got.add((nid, seq))
    finally:
        for s in socks.values():
            s.close()
    return got
