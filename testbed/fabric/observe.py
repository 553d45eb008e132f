"""Reading a fabric that is up, from netlink: the TBF counters and the
operational state of every port, in every namespace of the fabric."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from ..topology import FatTree
from . import netlink, netns
from .netlink import Netlink


@dataclass(frozen=True)
class QdiscStats:
    ifindex: int
    packets: int
    bytes: int
    drops: int
    backlog_bytes: int
    qlen: int
    overlimits: int
    ack_drops: int = 0  # of `drops`, the ACK class's (its bfifo under the HTB of netlink.ack_priority)


def _dump_all(tree: FatTree, msg_type: int, body: bytes, decoder: Any) -> Iterator[Any]:
    """Every message of one dump request, in every namespace of the fabric,
    decoded with a pyroute2 message class."""
    for node in tree.nodes:
        with netns.entered(tree.ns(node.name)), Netlink() as nl:
            for raw in nl.dump(msg_type, body):
                m = decoder(raw)
                m.decode()
                yield m


def qdisc_stats(tree: FatTree) -> dict[int, QdiscStats]:
    """TBF counters of every port, by ifindex."""
    from pyroute2.netlink.rtnl.tcmsg import tcmsg

    out: dict[int, QdiscStats] = {}
    ack_drops: dict[int, int] = {}
    ack_handle = netlink.tc_handle(netlink.PRIO_MAJOR + netlink.ACK_CLASS, 0)
    for m in _dump_all(tree, netlink.RTM_GETQDISC, netlink.dump_qdiscs_body(), tcmsg):
        kind = m.get_attr("TCA_KIND")
        st = m.get_attr("TCA_STATS2")
        q = st.get_attr("TCA_STATS_QUEUE")
        if kind == "bfifo" and m["handle"] == ack_handle:
            ack_drops[m["index"]] = q["drops"]
        if kind != "tbf":
            continue
        b = st.get_attr("TCA_STATS_BASIC")
        out[m["index"]] = QdiscStats(
            ifindex=m["index"],
            packets=b["packets"],
            bytes=b["bytes"],
            drops=q["drops"],
            backlog_bytes=q["backlog"],
            qlen=q["qlen"],
            overlimits=q["overlimits"],
        )
    # the TBF counts its child's drops too: the ACK class's are taken out of the data's
    return {i: replace(s, ack_drops=ack_drops.get(i, 0)) for i, s in out.items()}


def link_states(tree: FatTree) -> dict[int, str]:
    """Operational state (UP, DOWN, ...) of every port, by ifindex."""
    from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg

    return {
        m["index"]: str(m.get_attr("IFLA_OPERSTATE"))
        for m in _dump_all(tree, netlink.RTM_GETLINK, netlink.dump_links_body(), ifinfmsg)
        if m["index"] != 1
    }
