"""The measurements against hand-counted packets on a real fabric.

One flow of 64 packets under ECMP takes one path, so every number the run
reports can be counted by hand: exactly the ports of one valid path carry the
64 frames (4,178 bytes of line time each: 4,154 on the veth, 24 of FCS and
gap), every other port none; a stage's worst overload is (64 frames) / (64
frames / links in the stage) - 1 = links - 1 on the stages the path crosses
and 0 elsewhere; a port's utilisation is its bytes over line rate x CCT (no
propagation here, so the CCT is what the kernel saw), and the network-wide
utilisation the receiver's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testbed.fabric.build import Fabric, FabricSpec
from testbed.models import control
from testbed.models.schemes import Scheme
from testbed.run.experiment import run
from testbed.run.params import RunParams
from testbed.topology import Stage
from testbed.topology.timebase import NONE
from traffic.packet import Packetizer

from .helpers import TIMING_RATE_BPS

pytestmark = pytest.mark.root

PKTS = 64


@pytest.fixture(scope="module")
def fab() -> Iterator[Fabric]:
    with Fabric(FabricSpec(k=4, prefix="tmo", rate_bps=TIMING_RATE_BPS)) as f:
        yield f


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_one_flow_counted_by_hand(fab: Fabric, seed: int) -> None:
    tree = fab.tree
    frame = Packetizer(4096, fab.spec.wire_overhead).wire_len(4096)
    assert frame == 4178
    r = run(fab, RunParams("incast", PKTS * 4096, 1.0, Scheme.ECMP, seed, fan_in=1, propagation=NONE)).to_json()
    assert r["packets_received"] == PKTS and r["drops"] == 0
    (flow,) = r["flow_stats"]
    src, dst = tree.by_name[flow["src"]], tree.by_name[flow["dst"]]

    carried = {p["port"]: p["tx_pkts"] for p in r["ports"] if p["tx_pkts"]}
    paths = [{p.label for p in path} for path in control.Reach(tree, []).paths(src, dst)]
    assert set(carried) in paths, carried  # one valid shortest path, whole
    assert set(carried.values()) == {PKTS}

    links_per_stage = {st.label: sum(1 for p in tree.ports if p.stage is st) for st in Stage}
    stage_of = {p.label: p.stage.label for p in tree.ports}
    on_path = {stage_of[lbl] for lbl in carried}
    for st, n_links in links_per_stage.items():
        want = n_links - 1 if st in on_path else 0.0
        assert r["overload"][st] == pytest.approx(want), st

    cap_bytes = r["rate_bps"] / 8 * r["cct_s"]
    util = {p["port"]: p["utilisation"] for p in r["ports"]}
    for label in util:
        assert util[label] == pytest.approx(carried.get(label, 0) * frame / cap_bytes, rel=1e-9)
    # delivered: the receiver's link could carry rate x CCT plus its bucket in the window (it starts full)
    assert r["utilisation"] == pytest.approx(PKTS * frame / (cap_bytes + fab.spec.burst), rel=1e-9)
    assert r["utilisation"] <= 1.0
