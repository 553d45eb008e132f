"""The paper's time base on a real fabric: --propagation shifts an inter-pod
permutation's CCT and bound by exactly 6 links x the delay, there and back
(the CCT ends at the last ACK, whose way back a run without ACKs adds), and changes
nothing the kernel saw (ECMP with a fixed seed takes the same paths, so every
port carries the same packets), 0 leaves the run as it was, and a propagation the
fabric cannot carry is refused in one line before anything is built."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from testbed.fabric.build import Fabric, FabricSpec
from testbed.models.schemes import Scheme
from testbed.run.experiment import run
from testbed.run.params import RunParams
from testbed.topology.timebase import NONE, PAPER, Propagation

from .helpers import TIMING_RATE_BPS

pytestmark = pytest.mark.root

MB = 1 << 20


@pytest.fixture(scope="module")
def fab() -> Iterator[Fabric]:
    with Fabric(FabricSpec(k=4, prefix="ttb", rate_bps=TIMING_RATE_BPS)) as f:
        yield f


def test_inter_pod_cct_and_bound_move_by_six_links_each_way(fab: Fabric) -> None:
    runs = {}
    for name, prop in (("none", NONE), ("paper", PAPER), ("20pkts", Propagation("pkts", 20.0))):
        runs[name] = run(
            fab, RunParams("permutation", MB, 1.0, Scheme.ECMP, seed=3, inter_pod=True, propagation=prop)
        ).to_json()
    none = runs["none"]
    assert none["propagation"]["link_s"] == 0.0
    assert none["cct_end_ns"] == max(f["last_rx_ns"] for f in none["flow_stats"])  # the kernel's end, unmoved
    for name in ("paper", "20pkts"):
        r = runs[name]
        d = r["propagation"]["link_s"]
        assert d > 0 and all(f["path_links"] == 6 for f in r["flow_stats"])
        assert r["cct_lower_bound_s"] == pytest.approx(none["cct_lower_bound_s"] + 12 * d, rel=1e-12)
        kernel_end = max(f["last_rx_ns"] for f in r["flow_stats"])
        assert r["cct_end_ns"] == kernel_end + round(12 * d * 1e9)  # 6 x D there, 6 x D for the ACK back
        # the data path is the kernel's alone: ECMP with the same seed takes the same paths, so every port
        # carries the same packets (its queue maxima may differ by a packet: that is the senders' timing)
        assert {p["port"]: p["tx_pkts"] for p in r["ports"]} == {p["port"]: p["tx_pkts"] for p in none["ports"]}
    paper = runs["paper"]
    assert paper["propagation"]["link_pkts"] == pytest.approx(11.97, abs=0.01)  # 0.5 us at 800 Gbit/s


def test_a_propagation_reps_cannot_hold_is_refused() -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "testbed.cli",
            "run",
            "--workload",
            "permutation",
            "--size",
            "1MB",
            "--scheme",
            "reps",
            "--acks",
            "--propagation",
            "100pkts",
            "--prefix",
            "ttr",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "REPS holds a propagation round trip" in r.stderr
    assert (
        subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout.count("ttr-") == 0
    )
