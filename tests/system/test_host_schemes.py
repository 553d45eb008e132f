"""Host NIC load balancing (REPS, DRB, Ethereal) and ECN on real fabrics:
delivery, REPS's recycling, the even spread of DRB and Ethereal over the
bouncing switches, their behaviour after a link failure, and what the
packets carry (ECT(0), CE, the BECN echo and the entropy in the ACKs)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from testbed.fabric import links
from testbed.fabric.build import Fabric, FabricSpec
from testbed.measure import collector
from testbed.models import control
from testbed.models.schemes import Scheme
from testbed.run.experiment import run
from testbed.run.params import RunParams
from testbed.topology import FatTree, Level

from .helpers import TIMING_RATE_BPS, capture, drain

pytestmark = pytest.mark.root

MB = 1 << 20
HOST_SCHEMES = (Scheme.REPS, Scheme.DRB, Scheme.ETHEREAL)


@pytest.fixture(scope="module")
def fab() -> Iterator[Fabric]:
    with Fabric(FabricSpec(k=4, prefix="ths", rate_bps=TIMING_RATE_BPS)) as f:
        yield f


def params(scheme: Scheme, size: int = MB, **kw: Any) -> RunParams:
    return RunParams("permutation", size, 1.0, scheme, acks=scheme is Scheme.REPS or kw.pop("acks", False), **kw)


def delivered(r: dict[str, Any]) -> None:
    assert r["drops"] == 0, r["drops_detail"]
    assert r["packets_received"] == r["packets_sent"] == sum(f["sent"] for f in r["flow_stats"])
    assert all(f["complete"] for f in r["flow_stats"])
    assert r["switch_counters"]["label_invalid"] == 0


@pytest.mark.parametrize("scheme", HOST_SCHEMES)
def test_host_schemes_deliver_a_permutation(fab: Fabric, scheme: Scheme) -> None:
    r = run(fab, params(scheme)).to_json()
    delivered(r)
    assert r["scheme"] == scheme.label and r["host_lb"]["scheme"] == scheme.label
    sent = r["packets_sent"]
    if scheme is Scheme.REPS:
        assert r["host_lb"]["recycled"] + r["host_lb"]["fresh"] + r["host_lb"]["fresh_first_rtt"] == sent
    else:  # every packet that leaves its edge switch is labelled; one staying under it has no choice to make
        tree = fab.tree
        crossing = sum(f["sent"] for f in r["flow_stats"] if tree.edge_of(f["src"]) != tree.edge_of(f["dst"]))
        assert r["host_lb"]["labelled"] == crossing
        assert {s["scheme"] for s in r["switches"].values()} == {"host-routed"}


# At k=8 the host schemes deliver together with Table 1's, on one fabric: test_table1_schemes.py.


def test_reps_recycles_unless_every_ack_is_marked(fab: Fabric) -> None:
    """Without marking every ACK returns its entropy: after the first round trip most packets go on a
    recycled one (85-94 % measured at k=4 from 1 MB to 16 MB: the rest replace entropies lost when a bunch
    of more than eight ACKs overflows the buffer). With a threshold of 0 bytes every packet is marked: none
    is ever recycled."""
    off = run(fab, params(Scheme.REPS, ecn_threshold="off")).to_json()
    delivered(off)
    h = off["host_lb"]
    share = h["recycled"] / (h["recycled"] + h["fresh"])
    print(
        f"reps, marking off: {h['fresh_first_rtt']} fresh in the first round trip; after it {h['recycled']} "
        f"recycled, {h['fresh']} fresh ({100 * share:.1f} % recycled)"
    )
    assert share > 0.75
    assert off["ecn_marked"] == 0 and all(f["acks_ecn"] == 0 for f in off["flow_stats"])
    marked = run(fab, params(Scheme.REPS, ecn_threshold="0")).to_json()
    delivered(marked)
    assert marked["host_lb"]["recycled"] == 0
    assert marked["host_lb"]["fresh_first_rtt"] == marked["packets_sent"]  # no ACK ever brings one back
    assert all(f["ce"] == f["received"] and f["acks_ecn"] == f["acks"] for f in marked["flow_stats"])


def _per_flow_core_counts(tree: FatTree, r: dict[str, Any], top: Any) -> dict[str, list[int]]:
    """Data packets each flow sent through each core switch. In a permutation each destination has one flow,
    so the cores' per-destination counts are per flow."""
    cores = [s for s in tree.switches if s.level is Level.CORE]
    return {f["dst"]: [int(top[c.nid, tree.by_name[f["dst"]].nid]) for c in cores] for f in r["flow_stats"]}


@pytest.mark.parametrize("scheme", [Scheme.DRB, Scheme.ETHEREAL])
def test_each_flow_spreads_evenly_over_the_cores(scheme: Scheme) -> None:
    with Fabric(FabricSpec(k=8, prefix="thc8", rate_bps=6_200_000)) as f:
        tree = f.tree
        assert f.maps is not None
        r = run(f, RunParams("permutation", MB, 1.0, scheme, seed=3, inter_pod=True)).to_json()
        delivered(r)
        counts = _per_flow_core_counts(tree, r, collector.read_top_dst(f.maps, tree))
    assert len(counts) == tree.n_hosts
    for dst, per_core in counts.items():
        assert sum(per_core) == 256
        assert max(per_core) - min(per_core) <= 1, (dst, per_core)  # at most one round apart


@pytest.mark.parametrize("scheme", [Scheme.DRB, Scheme.ETHEREAL])
def test_no_packet_into_a_failed_path(fab: Fabric, scheme: Scheme) -> None:
    tree = fab.tree
    assert fab.maps is not None
    dead = control.parse_link(tree, "a0_0-c0_0")
    links.set_and_wait(tree, [dead], up=False)
    try:
        r = run(fab, params(scheme, seed=4)).to_json()
        top = collector.read_top_dst(fab.maps, tree)
    finally:
        links.set_and_wait(tree, [dead], up=True)
    delivered(r)
    assert r["drops_detail"]["link_failures"] == 0 and r["drops_detail"]["unreachable"] == 0
    c00 = tree.by_name["c0_0"]
    assert all(top[c00.nid, h.nid] == 0 for h in tree.hosts if h.pod == 0)  # nothing down the dead link
    port = tree.port("a0_0", "c0_0")
    assert next(p for p in r["ports"] if p["port"] == port.label)["tx_pkts"] == 0  # nothing up it


@pytest.mark.parametrize("threshold", ["0", "off"])
def test_packets_carry_ect_ce_and_the_echo(fab: Fabric, threshold: str) -> None:
    """Decoded with scapy at one host: its data leaves ECT(0); data reaches it CE (threshold 0: every
    packet is marked) or still ECT(0) (off); its ACKs echo that in BECN and carry each data packet's
    entropy (UDP source port) back."""
    from scapy.contrib.roce import BTH
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    tree = fab.tree
    host = tree.hosts[5]
    cap = capture(tree.ns(host.name), tree.host_port(host.name).ifname)
    try:
        r = run(fab, params(Scheme.REPS, 64 * 4096, seed=6, ecn_threshold=threshold)).to_json()
        time.sleep(0.05)
        frames = drain(cap)
    finally:
        cap.close()
    delivered(r)
    ce = threshold == "0"
    data_in: dict[tuple[int, int], int] = {}
    acks_out: dict[tuple[int, int], tuple[int, int]] = {}
    data_out = 0
    for raw, pkttype in frames:
        pkt = Ether(raw)
        if UDP not in pkt or pkt[UDP].dport != 4791:
            continue
        bth = pkt[BTH]
        if bth.opcode == 0x04 and pkttype == socket.PACKET_OUTGOING:
            assert pkt[IP].tos & 3 == 2 and pkt[UDP].chksum == 0  # ECT(0), no UDP checksum
            data_out += 1
        elif bth.opcode == 0x04:
            assert pkt[IP].tos & 3 == (3 if ce else 2)
            data_in[(bth.dqpn, bth.psn)] = pkt[UDP].sport
        elif bth.opcode == 0x11 and pkttype == socket.PACKET_OUTGOING:
            assert pkt[IP].tos & 3 == 0  # ACKs are not ECN-capable
            acks_out[(bth.dqpn, bth.psn)] = (bth.becn, pkt[UDP].sport)
        elif bth.opcode == 0x11:
            assert bth.becn == int(ce)
    assert data_out == 64 and len(data_in) == 64
    assert set(acks_out) == set(data_in)
    for key, (becn, sport) in acks_out.items():
        assert becn == int(ce) and sport == data_in[key]
