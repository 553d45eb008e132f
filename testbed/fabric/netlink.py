"""Batched rtnetlink: encode the few messages the fabric needs, send them in bulk.

Building a fat tree means thousands of small netlink requests. One round trip
per request costs far more in Python than the kernel work, so requests are
encoded here as raw bytes and sent many per `send()`; the kernel processes a
buffer of messages in order and acknowledges each one (NLM_F_ACK). Errors are
collected from the acknowledgements and raised with the failing request's
description. Dumps are decoded with pyroute2's message classes, but for the
operational states a build waits on (`operstates`).

Only `Netlink` owns a socket. Everything else returns `bytes`.
"""

from __future__ import annotations

import os
import socket
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

NETLINK_ROUTE = 0
RTMGRP_LINK = 1
IFF_LOWER_UP = 0x10000
NLM_F_REQUEST, NLM_F_MULTI, NLM_F_ACK = 0x1, 0x2, 0x4
NLM_F_DUMP = 0x300
NLM_F_EXCL, NLM_F_CREATE = 0x200, 0x400
NLMSG_ERROR, NLMSG_DONE = 2, 3
RTM_NEWLINK, RTM_DELLINK, RTM_GETLINK = 16, 17, 18
RTM_NEWADDR = 20
RTM_NEWROUTE = 24
RTM_NEWNEIGH = 28
RTM_NEWQDISC, RTM_GETQDISC = 36, 38
RTM_NEWTCLASS = 40
RTM_NEWTFILTER = 44

IFLA_ADDRESS, IFLA_IFNAME, IFLA_MTU, IFLA_OPERSTATE, IFLA_LINKINFO, IFLA_NET_NS_FD = 1, 3, 4, 16, 18, 28
IF_OPER_UP = 6
IFLA_INFO_KIND, IFLA_INFO_DATA = 1, 2
VETH_INFO_PEER = 1
IFF_UP = 0x1
IFA_ADDRESS, IFA_LOCAL = 1, 2
RTA_DST, RTA_OIF, RTA_GATEWAY = 1, 4, 5
RTNH_F_ONLINK = 4
NDA_DST, NDA_LLADDR = 1, 2
NUD_PERMANENT = 0x80
TCA_KIND, TCA_OPTIONS = 1, 2
TCA_TBF_PARMS, TCA_TBF_BURST, TCA_TBF_PBURST = 1, 6, 7
TCA_HTB_PARMS, TCA_HTB_INIT = 1, 2
TCA_BPF_FD, TCA_BPF_NAME, TCA_BPF_FLAGS = 6, 7, 8
TCA_BPF_FLAG_ACT_DIRECT = 1
TC_H_ROOT = 0xFFFFFFFF
TC_H_CLSACT = 0xFFFFFFF1
TC_H_MIN_INGRESS, TC_H_MIN_EGRESS = 0xFFF2, 0xFFF3
TC_LINKLAYER_ETHERNET = 1
ETH_P_ALL = 0x0003

_NLMSGHDR = struct.Struct("=IHHII")
_IFINFOMSG = struct.Struct("=BxHiII")
_TCMSG = struct.Struct("=BxxxiIII")


class NetlinkError(OSError):
    """A netlink request failed; `what` says which request."""

    def __init__(self, err: int, what: str) -> None:
        super().__init__(err, f"{what}: {os.strerror(err)}")
        self.what = what


def _align(n: int) -> int:
    return (n + 3) & ~3


def attr(kind: int, payload: bytes) -> bytes:
    """One rtattr, padded to 4 bytes."""
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * (_align(length) - length)


def attr_u32(kind: int, v: int) -> bytes:
    return attr(kind, struct.pack("=I", v))


def attr_str(kind: int, s: str) -> bytes:
    return attr(kind, s.encode() + b"\0")


@dataclass(frozen=True)
class Request:
    """An encoded request body (header filled in at send time) and a label for errors."""

    msg_type: int
    flags: int
    body: bytes
    what: str


# -- links -----------------------------------------------------------------
def veth_pair(
    name: str,
    index: int,
    mac: bytes,
    ns_fd: int,
    peer_name: str,
    peer_index: int,
    peer_mac: bytes,
    peer_ns_fd: int,
    mtu: int,
) -> Request:
    """Create a veth pair with both ends placed directly in their namespaces,
    with explicit ifindex values (pyroute2's peer dict drops the index)."""
    peer = (
        _IFINFOMSG.pack(0, 0, peer_index, 0, 0)
        + attr_str(IFLA_IFNAME, peer_name)
        + attr_u32(IFLA_MTU, mtu)
        + attr(IFLA_ADDRESS, peer_mac)
        + attr_u32(IFLA_NET_NS_FD, peer_ns_fd)
    )
    info = attr(IFLA_LINKINFO, attr_str(IFLA_INFO_KIND, "veth") + attr(IFLA_INFO_DATA, attr(VETH_INFO_PEER, peer)))
    body = (
        _IFINFOMSG.pack(0, 0, index, 0, 0)
        + attr_str(IFLA_IFNAME, name)
        + attr_u32(IFLA_MTU, mtu)
        + attr(IFLA_ADDRESS, mac)
        + attr_u32(IFLA_NET_NS_FD, ns_fd)
        + info
    )
    return Request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, body, f"veth {name}<->{peer_name}")


def link_set(index: int, up: bool, what: str = "") -> Request:
    body = _IFINFOMSG.pack(0, 0, index, IFF_UP if up else 0, IFF_UP)
    return Request(RTM_NEWLINK, 0, body, what or f"link {index} {'up' if up else 'down'}")


# -- addresses, routes, neighbours -----------------------------------------
def addr_v4(index: int, ip: bytes, prefixlen: int) -> Request:
    body = struct.pack("=BBBBI", socket.AF_INET, prefixlen, 0, 0, index) + attr(IFA_LOCAL, ip) + attr(IFA_ADDRESS, ip)
    return Request(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, body, f"address on {index}")


def route_v4_onlink(dst: bytes, dst_len: int, gateway: bytes, oif: int) -> Request:
    # rtmsg: family, dst_len, src_len, tos, table=main, protocol=static, scope=universe, type=unicast, flags
    body = struct.pack("=BBBBBBBBI", socket.AF_INET, dst_len, 0, 0, 254, 4, 0, 1, RTNH_F_ONLINK)
    body += attr(RTA_DST, dst) + attr(RTA_GATEWAY, gateway) + attr_u32(RTA_OIF, oif)
    return Request(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, body, "route")


def neigh_permanent(index: int, ip: bytes, mac: bytes) -> Request:
    body = struct.pack("=BxxxiHBB", socket.AF_INET, index, NUD_PERMANENT, 0, 0)
    body += attr(NDA_DST, ip) + attr(NDA_LLADDR, mac)
    return Request(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_EXCL, body, "neighbour")


# -- traffic control -------------------------------------------------------
def tc_handle(major: int, minor: int) -> int:
    return ((major & 0xFFFF) << 16) | (minor & 0xFFFF)


def qdisc_tbf(
    index: int,
    rate_bps: int,
    burst_bytes: int,
    limit_bytes: int,
    change: bool = False,
    peak_bps: int = 0,
    peak_burst_bytes: int = 0,
    overhead: int = 0,
) -> Request:
    """Root TBF: `rate_bps` in bits/s, burst and limit in bytes (limit makes a
    bfifo child). `change=True` modifies the existing TBF in place. A peak rate
    (above `rate_bps`) with a one-frame `peak_burst_bytes` adds the second
    bucket: no two frames leave closer than one frame at the peak rate. Every
    packet costs `overhead` bytes of tokens beyond its length (the ratespecs'
    overhead: FCS, gap and preamble, which a veth frame does not carry)."""
    rate_Bps = rate_bps // 8
    if not 0 < rate_Bps < 2**32:
        raise ValueError(f"rate {rate_bps} bit/s out of range for tc_ratespec")
    if peak_bps and not (rate_Bps < peak_bps // 8 < 2**32 and peak_burst_bytes > 0):
        raise ValueError(f"peak rate {peak_bps} bit/s must exceed the rate {rate_bps} bit/s, with a peak burst")
    # struct tc_ratespec: cell_log u8, linklayer u8, overhead u16, cell_align s16, mpu u16, rate u32
    ratespec = struct.pack("=BBHhHI", 0, TC_LINKLAYER_ETHERNET, overhead, 0, 0, rate_Bps)
    peak = struct.pack(
        "=BBHhHI", 0, TC_LINKLAYER_ETHERNET if peak_bps else 0, overhead if peak_bps else 0, 0, 0, peak_bps // 8
    )
    # buffer and mtu (ticks) are recomputed by the kernel from TCA_TBF_BURST/PBURST; give sane values anyway
    buffer_ticks = int(burst_bytes * 1e6 / rate_Bps) * 64  # psched ticks are 1/64 us
    mtu_ticks = int(peak_burst_bytes * 1e6 / (peak_bps // 8)) * 64 if peak_bps else 0
    qopt = ratespec + peak + struct.pack("=III", limit_bytes, buffer_ticks, mtu_ticks)
    opts = attr(TCA_TBF_PARMS, qopt) + attr_u32(TCA_TBF_BURST, burst_bytes)
    if peak_bps:
        opts += attr_u32(TCA_TBF_PBURST, peak_burst_bytes)
    body = _TCMSG.pack(0, index, tc_handle(1, 0), TC_H_ROOT, 0) + attr_str(TCA_KIND, "tbf") + attr(TCA_OPTIONS, opts)
    return Request(RTM_NEWQDISC, 0 if change else NLM_F_CREATE | NLM_F_EXCL, body, f"tbf on {index}")


# The ACKs' strict priority inside a link's TBF (ebpf/include/shared.h ACK_PRIORITY): the TBF (1:) shapes, its
# child HTB (10:) only orders: class 10:1 for ACKs (prio 0, chosen by skb->priority), 10:2 for the rest (prio 1,
# the default), both at a rate no emulated link reaches, each with its own bfifo.
PRIO_MAJOR, ACK_CLASS, DATA_CLASS = 0x10, 1, 2
_UNSHAPED_BPS = 10_000_000_000


def ack_priority(index: int, limit_bytes: int, overhead: int = 0) -> list[Request]:
    """The HTB under the TBF of port `index` and its two classes with their bfifos (ACKs first, then data)."""
    parent = tc_handle(1, 1)  # the TBF's one class: grafting here replaces its default bfifo
    handle = tc_handle(PRIO_MAJOR, 0)
    glob = struct.pack("=IIIII", 3, 10, DATA_CLASS, 0, 0)  # version, rate2quantum, default class, debug, direct
    reqs = [
        Request(
            RTM_NEWQDISC,
            NLM_F_CREATE | NLM_F_EXCL,
            _TCMSG.pack(0, index, handle, parent, 0)
            + attr_str(TCA_KIND, "htb")
            + attr(TCA_OPTIONS, attr(TCA_HTB_INIT, glob)),
            f"htb on {index}",
        )
    ]
    rate_Bps = _UNSHAPED_BPS // 8
    rate = struct.pack("=BBHhHI", 0, TC_LINKLAYER_ETHERNET, overhead, 0, 0, rate_Bps)
    buffer_ticks = (1 << 20) * 64 * 1_000_000 // rate_Bps  # a 1 MB bucket, in 1/64 us ticks
    for cls, prio in ((ACK_CLASS, 0), (DATA_CLASS, 1)):
        opt = rate + rate + struct.pack("=IIIII", buffer_ticks, buffer_ticks, 65536, 0, prio)
        reqs.append(
            Request(
                RTM_NEWTCLASS,
                NLM_F_CREATE | NLM_F_EXCL,
                _TCMSG.pack(0, index, tc_handle(PRIO_MAJOR, cls), handle, 0)
                + attr_str(TCA_KIND, "htb")
                + attr(TCA_OPTIONS, attr(TCA_HTB_PARMS, opt)),
                f"htb class {cls} on {index}",
            )
        )
        reqs.append(
            Request(
                RTM_NEWQDISC,
                NLM_F_CREATE | NLM_F_EXCL,
                _TCMSG.pack(0, index, tc_handle(PRIO_MAJOR + cls, 0), tc_handle(PRIO_MAJOR, cls), 0)
                + attr_str(TCA_KIND, "bfifo")
                + attr(TCA_OPTIONS, struct.pack("=I", limit_bytes)),
                f"bfifo {cls} on {index}",
            )
        )
    return reqs


def qdisc_clsact(index: int, egress: bool = True) -> Request:
    """clsact (ingress and egress hooks for filters), or with `egress=False` the
    ingress-only qdisc: one filter block instead of two. The kernel walks a
    list of every block in the system each time one is bound, so a fabric's
    build time grows with the square of the blocks it makes."""
    kind = "clsact" if egress else "ingress"
    body = _TCMSG.pack(0, index, 0xFFFF0000, TC_H_CLSACT, 0) + attr_str(TCA_KIND, kind)
    return Request(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, body, f"{kind} on {index}")


def filter_bpf(index: int, prog_fd: int, name: str, egress: bool, prio: int = 1) -> Request:
    parent = tc_handle(0xFFFF, TC_H_MIN_EGRESS if egress else TC_H_MIN_INGRESS)
    info = tc_handle(prio, socket.htons(ETH_P_ALL))
    opts = (
        attr_u32(TCA_BPF_FD, prog_fd) + attr_str(TCA_BPF_NAME, name) + attr_u32(TCA_BPF_FLAGS, TCA_BPF_FLAG_ACT_DIRECT)
    )
    body = _TCMSG.pack(0, index, 1, parent, info) + attr_str(TCA_KIND, "bpf") + attr(TCA_OPTIONS, opts)
    return Request(RTM_NEWTFILTER, NLM_F_CREATE | NLM_F_EXCL, body, f"bpf filter {name} on {index}")


# -- the socket ------------------------------------------------------------
class Netlink:
    """One NETLINK_ROUTE socket (bound to the netns it was created in), no
    multicast groups. Use as a context manager."""

    CHUNK = 96 * 1024

    def __init__(self, groups: int = 0) -> None:
        """`groups`: multicast groups to listen to (RTMGRP_LINK for link events); none by default."""
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, NETLINK_ROUTE)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.sock.bind((0, groups))
        self.seq = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Netlink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _frame(self, req: Request, extra_flags: int) -> tuple[int, bytes]:
        self.seq += 1
        hdr = _NLMSGHDR.pack(16 + len(req.body), req.msg_type, NLM_F_REQUEST | req.flags | extra_flags, self.seq, 0)
        return self.seq, hdr + req.body

    def run(self, requests: Iterable[Request], ignore: tuple[int, ...] = ()) -> None:
        """Send requests in batches, wait for every acknowledgement, raise the
        first error whose errno is not in `ignore`."""
        pending: dict[int, Request] = {}
        buf: list[bytes] = []
        size = 0
        first_error: NetlinkError | None = None
        for req in requests:
            seq, data = self._frame(req, NLM_F_ACK)
            pending[seq] = req
            buf.append(data)
            size += len(data)
            if size >= self.CHUNK:
                first_error = self._flush(buf, pending, ignore) or first_error
                buf, size = [], 0
        if buf:
            first_error = self._flush(buf, pending, ignore) or first_error
        if first_error:
            raise first_error

    def _flush(self, buf: list[bytes], pending: dict[int, Request], ignore: tuple[int, ...]) -> NetlinkError | None:
        self.sock.send(b"".join(buf))
        err: NetlinkError | None = None
        while pending:
            data = self.sock.recv(1 << 20)
            for mtype, seq, payload in _messages(data):
                if mtype != NLMSG_ERROR:
                    continue
                (code,) = struct.unpack_from("=i", payload)
                req = pending.pop(seq, None)
                if code and req is not None and -code not in ignore and err is None:
                    err = NetlinkError(-code, req.what)
        return err

    def dump(self, msg_type: int, body: bytes) -> Iterator[bytes]:
        """Yield each raw message (header included) of a dump request."""
        seq, data = self._frame(Request(msg_type, NLM_F_DUMP, body, "dump"), 0)
        self.sock.send(data)
        while True:
            data = self.sock.recv(1 << 20)
            off = 0
            while off < len(data):
                length, mtype, _flags, mseq, _pid = _NLMSGHDR.unpack_from(data, off)
                if mseq == seq:
                    if mtype == NLMSG_DONE:
                        return
                    if mtype == NLMSG_ERROR:
                        (code,) = struct.unpack_from("=i", data, off + 16)
                        if code:
                            raise NetlinkError(-code, "dump")
                        return
                    yield data[off : off + length]
                off += _align(length)


def messages(data: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(type, sequence number, payload) of each message in a netlink buffer."""
    return _messages(data)


def _messages(data: bytes) -> Iterator[tuple[int, int, bytes]]:
    off = 0
    while off + 16 <= len(data):
        length, mtype, _flags, seq, _pid = _NLMSGHDR.unpack_from(data, off)
        if length < 16:
            break
        yield mtype, seq, data[off + 16 : off + length]
        off += _align(length)


def link_attr(payload: bytes, kind: int) -> bytes | None:
    """Attribute `kind` of an RTM_NEWLINK payload (ifinfomsg, then attributes), None if absent."""
    off = _IFINFOMSG.size
    while off + 4 <= len(payload):
        alen, atype = struct.unpack_from("=HH", payload, off)
        if alen < 4:
            break
        if atype & 0x3FFF == kind:
            return payload[off + 4 : off + alen]
        off += _align(alen)
    return None


def operstates(nl: Netlink) -> dict[int, int]:
    """Operational state (IF_OPER_*) of every link in the socket's namespace, by ifindex. The kernel sets it
    when it has processed a carrier change, in the same step that activates the device's qdisc."""
    out = {}
    for raw in nl.dump(RTM_GETLINK, dump_links_body()):
        payload = raw[16:]
        index = _IFINFOMSG.unpack_from(payload)[2]
        state = link_attr(payload, IFLA_OPERSTATE)
        out[index] = state[0] if state else 0
    return out


def dump_links_body() -> bytes:
    return _IFINFOMSG.pack(0, 0, 0, 0, 0)


def dump_qdiscs_body() -> bytes:
    return _TCMSG.pack(0, 0, 0, 0, 0)


__all__ = ["Netlink", "NetlinkError", "Request"]
