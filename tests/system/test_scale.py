"""The paper's fabrics on this machine, through the CLI as a user runs them:
k=12 and k=16 fat trees, leaf-spines of k=16, 32 and 64 (section 6, Fig. 5,
section 6.3). Each is built at --rate auto, 2,000 random host pairs ping, a
permutation is delivered packet for packet, and `down` leaves nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.measure import results

from .helpers import cli, leftovers

pytestmark = pytest.mark.root

FABRICS = [("fattree", 12), ("fattree", 16), ("leafspine", 16), ("leafspine", 32), ("leafspine", 64)]


@pytest.mark.parametrize(("kind", "k"), FABRICS, ids=[f"{kind}-k{k}" for kind, k in FABRICS])
def test_paper_fabric_builds_pings_delivers_and_goes(kind: str, k: int, tmp_path: Path) -> None:
    p = f"ts{kind[0]}{k}"
    out = tmp_path / "perm"
    try:
        up = cli("up", "--k", str(k), "--topology", kind, "--scheme", "ofan", "--prefix", p)
        assert up.returncode == 0, up.stderr
        ping = cli("ping", "--sample", "2000", "--json", "--prefix", p)
        assert ping.returncode == 0, ping.stdout + ping.stderr
        pj = json.loads(ping.stdout)
        assert pj["pairs"] == pj["reachable"] == 2000 and pj["missing"] == []
        r = cli("run", "--workload", "permutation", "--size", "64KB", "--json", "--out", str(out), "--prefix", p)
        assert r.returncode == 0, r.stderr
        res = json.loads(r.stdout)
        hosts = res["hosts"]
        assert res["flows"] == hosts and res["packets_sent"] == res["packets_received"] == 16 * hosts
        assert res["drops"] == 0, res["drops_detail"]
        assert all(f["complete"] for f in res["flow_stats"])
        ts = results.load(out)
        kept = ts.manifest["timeseries"]
        assert kept["ports"] == len(res["ports"]) and kept["watched_hz"] == 500
        per_port = ts.timeseries.groupby("port").size()
        assert len(per_port) == len(res["ports"])  # every port is in the series (the choice of the watched ports
        assert kept["every_port_hz"] * kept["ports"] <= 200_000  # is tested in tests/unit/test_sampler.py)
        f = res["fidelity"]
        assert f["valid"] == (not f["reasons"])  # a verdict that says why, exactly when it rejects
        assert res["cct_s"] >= res["cct_lower_bound_s"]  # the bound is a bound, at every scale
        # Ofan's exact bound (appendix F.4), which no timing error can loosen: an edge switch's uplink queue
        # never holds more than w + 1 packets (a scheme that is not Ofan's breaks it within a few flows)
        w = k // 2
        edge_up = res["queues"]["edge_agg"]["max_pkts"]
        assert edge_up <= w + 1, (edge_up, w + 1)
        placed = f["ideal"]  # every fabric here but the k=64 leaf-spine is small enough to be placed
        assert placed["placed"] == (not (kind == "leafspine" and k == 64)), placed
        if placed["placed"] and f["valid"]:  # Ofan at scale as the ideal fabric plays it, give or take two points
            assert placed["cct_increase_min"] - 0.02 <= res["cct_increase"] <= placed["cct_increase_max"] + 0.02, (
                res["cct_increase"],
                placed,
            )
        print(
            f"{kind} k={k}: {hosts} hosts at {res['rate_bps'] / 1e6:g} Mbit/s, Ofan +{100 * res['cct_increase']:.2f} %, "
            f"fidelity {'valid' if res['fidelity']['valid'] else res['fidelity']['reasons']}, "
            f"time series every port at {kept['every_port_hz']:g} Hz + {kept['watched_ports']} at 500 Hz"
        )
    finally:
        down = cli("down", "--prefix", p)
    assert down.returncode == 0, down.stderr
    assert leftovers(p) == []


def test_ping_refuses_every_pair_of_a_large_fabric() -> None:
    p = "tsp12"
    try:
        assert cli("up", "--k", "12", "--prefix", p).returncode == 0
        r = cli("ping", "--prefix", p)
        assert r.returncode == 2 and "186,192 host pairs" in r.stderr and "--sample" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    finally:
        cli("down", "--prefix", p)
    assert leftovers(p) == []
