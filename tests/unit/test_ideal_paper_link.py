"""The ideal fabric's second link model, the paper's simulator's (testbed.models.ideal, link="paper"): every
frame serialised at every port, store-and-forward, propagation per link; and RPS sprayed over entropies as
htsim's oblivious load balancer does it. Hand-derived cases, the htsim twin's permutations, and the
emulator's link model left exactly as it was."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testbed.models import ideal
from testbed.models.schemes import Scheme, SchemeConfig, SchemeError
from testbed.topology import FatTree
from traffic.packet import WIRE_EXTRA, Packetizer
from traffic.workloads import Flow, WorkloadSpec, make_spec

TWIN = Path(__file__).resolve().parents[1] / "data" / "twin"  # the htsim twin's connection matrices
KB = 1024
PAPER_D = 11.97  # the paper's 0.5 us per link, in packet times


def paper(flows: list[Flow], scheme: str = "ecmp", seed: int = 1, **kw: Any) -> ideal.IdealResult:
    cfg = SchemeConfig(Scheme.parse(scheme))
    return ideal.simulate(FatTree(4, "t"), cfg, flows, seed, **{"link": "paper", **kw})


@pytest.mark.parametrize("d", [0.0, PAPER_D, 2.5])
@pytest.mark.parametrize(("dst", "hops"), [(1, 2), (2, 4), (15, 6)])  # same edge, same pod, another pod
def test_an_idle_path_of_h_hops(dst: int, hops: int, d: float) -> None:
    # The NIC sends frame j (from 0) from j to j + 1: the last one's last bit leaves at N. It reaches the next
    # switch D later and is sent whole again, 1 packet time, at each of the path's H - 1 switch ports (the
    # frame before it left each one exactly 1 earlier, so it never waits); the host has it after H links:
    # N + (H - 1) + H x D, which is also the bound.
    for n in (1, 7, 64):
        for scheme in ("ecmp", "rps", "ofan"):
            r = paper([Flow(1, 0, dst, n * 4096)], scheme, propagation=d)
            assert r.frames == r.delivered == n
            assert r.cct_pkts == pytest.approx(n + (hops - 1) + hops * d, abs=1e-6)
            assert r.bound_pkts == pytest.approx(n + (hops - 1) + hops * d, abs=1e-9)
            assert r.cct_increase == pytest.approx(0.0, abs=1e-9)
            assert set(r.max_queue.values()) == {0}  # every frame finds its port free
    r = paper([Flow(1, 0, 15, 64 * 4096)], "rps", spray="entropies")
    assert r.cct_pkts == r.bound_pkts == 64 + 5


@pytest.mark.parametrize("d", [0.0, PAPER_D])
def test_two_flows_sharing_one_uplink(d: float) -> None:
    # h0 -> h2 and h1 -> h3, both from e0_0 to e0_1 (4 links), N frames each. Both NICs deliver frame j's last
    # bit to e0_0 at j + 1 + D. On separate uplinks each flow is an idle path: N + 3 + 4D. Sharing one, the
    # uplink gets two frames per packet time and serves one: busy from 1 + D, its 2N-th frame leaves at
    # 2N + 1 + D; the aggregation switch and e0_1 then take one frame per packet time each, without waiting:
    # 2N + 3 + 4D, N packet times more than the bound.
    n = 64
    flows = [Flow(1, 0, 2, n * 4096), Flow(2, 1, 3, n * 4096)]
    alone, shared = n + 3 + 4 * d, 2 * n + 3 + 4 * d
    seen = set()
    for seed in range(1, 12):
        r = paper(flows, "ecmp", seed, propagation=d)
        assert r.delivered == 2 * n and r.bound_pkts == pytest.approx(alone)
        assert r.cct_pkts in (pytest.approx(alone), pytest.approx(shared))
        together = r.cct_pkts > alone + 1
        seen.add(together)
        # sharing: at j + 1 + D the uplink has received 2(j + 1) frames and finished j, one is in service and
        # j + 1 wait: N when the NICs are done
        assert r.max_queue["edge_agg"] == (n if together else 0)
    assert seen == {True, False}  # both happen over these seeds


def test_one_entropy_is_one_path_per_flow() -> None:
    # With a single entropy value every frame of a flow hashes onto the same uplink at each switch (ECMP):
    # the two flows of the case above either share the uplink all along or never do.
    n = 32
    flows = [Flow(1, 0, 2, n * 4096), Flow(2, 1, 3, n * 4096)]
    got = {paper(flows, "rps", seed, spray="entropies", entropies=1).cct_pkts for seed in range(1, 12)}
    assert got == {n + 3, 2 * n + 3}
    many = [paper(flows, "rps", seed, spray="entropies").cct_pkts for seed in range(1, 6)]
    assert all(n + 3 < c < 2 * n + 3 - 8 for c in many)  # per frame: the uplinks share both flows


TWIN_HTSIM = {256 * KB: 0.232, 1024 * KB: 0.124, 4096 * KB: 0.074}  # htsim oblivious spraying, seeds 1-3


def test_the_twin_permutations_against_htsim() -> None:
    # REPRODUCTION.md, "What the twin showed": htsim's oblivious spraying on these k=4 permutations, no
    # propagation, CCT increase over its own bound, mean of seeds 1-3. The ideal fabric with htsim's links and
    # its spraying, over the bound of those links, for the same files (its seed s for the file of seed s).
    tree, pk = FatTree(4, "t"), Packetizer(wire_overhead=WIRE_EXTRA)
    for size, htsim in TWIN_HTSIM.items():
        incs = []
        for seed in (1, 2, 3):
            spec = WorkloadSpec("cm", 0, seed, flows=str(TWIN / f"perm_{size}_{seed}.cm"), cm_rate=100_000_000_000)
            flows = make_spec(spec, tree.n_hosts, tree.hosts_per_pod)
            r = ideal.simulate(tree, SchemeConfig(Scheme.RPS), flows, seed, pk, link="paper", spray="entropies")
            assert r.delivered == r.frames == 16 * size // 4096
            assert r.bound_pkts == size // 4096 + 5  # every file has a flow between pods: 6 links
            incs.append(r.cct_increase)
        mean = sum(incs) / len(incs)
        assert htsim / 1.3 <= mean <= htsim * 1.3, (size, incs)


# The emulator's link model before the paper's was added (k=4, 256 KB permutations, default frames): cct_pkts
GOLDEN: list[tuple[str, int, dict[str, Any], float]] = [
    ("rps", 1, {}, 75.703326951),
    ("ecmp", 2, {}, 189.971278124),
    ("jsq", 2, {"order": "fixed", "propagation": 11.97}, 149.523326951),
    ("rr", 1, {"order": "fixed", "propagation": 11.97}, 197.791278124),
    ("ofan", 1, {"start_jitter": 1.0}, 63.69188453844561),
]


def test_the_emulators_link_model_is_unchanged() -> None:
    tree, pk = FatTree(4, "t"), Packetizer(wire_overhead=WIRE_EXTRA)
    for scheme, seed, kw, cct in GOLDEN:
        flows = make_spec(WorkloadSpec("permutation", 256 * KB, seed), tree.n_hosts, tree.hosts_per_pod)
        cfg = SchemeConfig(Scheme.parse(scheme))
        r = ideal.simulate(tree, cfg, flows, seed, pk, **kw)
        assert r.cct_pkts == cct and r.bound_pkts == pytest.approx(62.73204882719004 + 6 * kw.get("propagation", 0))
        assert r == ideal.simulate(tree, cfg, flows, seed, pk, link="emulator", **kw)


def test_what_does_not_apply_is_refused() -> None:
    one = [Flow(1, 0, 5, 64 * 4096)]
    with pytest.raises(SchemeError, match="way of doing rps, not ofan"):
        paper(one, "ofan", spray="entropies")
    with pytest.raises(SchemeError, match="link must be one of emulator, paper"):
        paper(one, "rps", link="htsim")
    with pytest.raises(SchemeError, match="power of two"):
        paper(one, "rps", spray="entropies", entropies=3000)
    with pytest.raises(SchemeError, match="no buckets"):
        paper(one, "rps", buckets_bytes=(8000, 5000))


def test_the_command_plays_a_connection_matrix_on_the_papers_links() -> None:
    cm = str(TWIN / "perm_262144_1.cm")
    cmd = [sys.executable, "-m", "testbed.cli", "ideal", "--k", "4", "--schemes", "rps,ofan", "--seeds", "1"]
    cmd += ["--workload", "cm", "--flows", cm, "--cm-rate", "100gbit", "--link", "paper", "--spray", "entropies"]
    r = subprocess.run([*cmd, "--propagation", "0", "--json"], capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["scheme"], x["link"], x["spray"]) for x in rows] == [
        ("rps", "paper", "entropies"),
        ("ofan", "paper", "switch"),
    ]
    assert all(x["frames"] == x["delivered"] == 16 * 64 and x["bound_pkts"] == 69 for x in rows)
    wrong = subprocess.run([*cmd[:7], "ofan", *cmd[8:]], capture_output=True, text=True, timeout=60, check=False)
    assert wrong.returncode != 0 and "add rps to the schemes" in wrong.stderr
