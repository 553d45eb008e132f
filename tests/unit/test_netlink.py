from __future__ import annotations

import struct

from testbed.fabric import netlink


def test_attr_padding() -> None:
    a = netlink.attr(3, b"abc")
    assert len(a) == 8
    assert struct.unpack_from("=HH", a) == (7, 3)
    assert netlink.attr_str(3, "abc")[4:8] == b"abc\0"


def _attrs(buf: bytes) -> dict[int, bytes]:
    out, off = {}, 0
    while off + 4 <= len(buf):
        ln, kind = struct.unpack_from("=HH", buf, off)
        out[kind] = buf[off + 4 : off + ln]
        off += (ln + 3) & ~3
    return out


def test_veth_request_carries_both_indexes_and_namespaces() -> None:
    req = netlink.veth_pair(
        "a0_0", 40, b"\x02\x54\x42\x00\x00\x18", 7, "e0_0", 41, b"\x02\x54\x42\x00\x00\x19", 8, 4200
    )
    assert req.msg_type == netlink.RTM_NEWLINK
    assert struct.unpack_from("=i", req.body, 4)[0] == 40  # ifinfomsg.ifi_index
    top = _attrs(req.body[16:])
    assert top[netlink.IFLA_IFNAME] == b"a0_0\0"
    assert struct.unpack("=I", top[netlink.IFLA_NET_NS_FD])[0] == 7
    info = _attrs(top[netlink.IFLA_LINKINFO])
    assert info[netlink.IFLA_INFO_KIND] == b"veth\0"
    peer = _attrs(info[netlink.IFLA_INFO_DATA])[netlink.VETH_INFO_PEER]
    assert struct.unpack_from("=i", peer, 4)[0] == 41
    peer_attrs = _attrs(peer[16:])
    assert peer_attrs[netlink.IFLA_IFNAME] == b"e0_0\0"
    assert struct.unpack("=I", peer_attrs[netlink.IFLA_NET_NS_FD])[0] == 8
    assert struct.unpack("=I", peer_attrs[netlink.IFLA_MTU])[0] == 4200


def test_tbf_request() -> None:
    req = netlink.qdisc_tbf(20, 50_000_000, 8428, 1 << 20)
    opts = _attrs(_attrs(req.body[20:])[netlink.TCA_OPTIONS])
    parms = opts[netlink.TCA_TBF_PARMS]
    assert len(parms) == 36
    assert struct.unpack_from("=I", parms, 8)[0] == 50_000_000 // 8  # rate in bytes/s
    assert parms[1] == netlink.TC_LINKLAYER_ETHERNET
    assert struct.unpack_from("=I", parms, 24)[0] == 1 << 20  # limit
    assert struct.unpack("=I", opts[netlink.TCA_TBF_BURST])[0] == 8428
    change = netlink.qdisc_tbf(20, 50_000_000, 8428, 1 << 20, change=True)
    assert change.flags & netlink.NLM_F_CREATE == 0
