"""The paper's figures as sweeps: for each figure of section 6 (and Figs. 1,
3, 4 of sections 1-3) the matrix that reproduces it here, at two scales.

`quick`: k=4 (or the smallest fabric that shows the effect) and a few
minutes; `paper`: the paper's configuration where this machine carries it
(k=12 by default, section 6; the paper's message sizes, loads and failure
probabilities), at the packet budget's rates, which is hours. What of a
figure the testbed does not reproduce is said with it. REPS and CONGA need
ACKs, so every figure with either runs with ACKs (the CCT then ends at the
last ACK, as the paper's does).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..topology import FatTree
from .sweep import Matrix

KB, MB = 1024, 1 << 20
MAIN = ("ar", "reps", "ofan", "pofan:4")  # the paper's section 6 comparison
TABLE1 = ("ecmp", "rr", "jsq", "rps", "ar", "choice", "drill", "conga", "dlb", "sglb", "reps", "drb", "ethereal",
          "pofan:4", "ofan")


@dataclass(frozen=True)
class PaperFigure:
    name: str
    reproduces: str
    quick: Matrix
    paper: Matrix
    missing: str = ""  # what of the paper's figure is not here


CC_SCHEMES = ("ecmp", "rps", "ar", "reps", "ofan", "pofan:4")  # Fig. 12
FSDP_LAYER_PKTS = {"8B": 119, "70B": 418, "405B": 1533}  # section 6.7: packets per flow per layer, FP8, 4 KB


def _m(schemes: tuple[str, ...], **kw: object) -> Matrix:
    acks = "reps" in schemes or "conga" in schemes
    return Matrix(schemes, acks=acks, **kw)  # type: ignore[arg-type]


@functools.cache
def figures() -> dict[str, PaperFigure]:
    """Every figure (built on first use: each matrix checks its cells)."""
    return {f.name: f for f in (
        PaperFigure("fig1", "Fig. 1: utilisation, largest queue and CCT increase of a 1 MB permutation against the "
                    "offered load (sections 1, 2.2)",
                    _m(("rps", "ar", "reps", "ofan", "pofan:4"), loads=(0.5, 0.8, 0.9, 1.0), seeds=(1, 2)),
                    _m(("rps", "ar", "reps", "ofan", "pofan:4"), loads=(0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0), ks=(12,),
                       seeds=tuple(range(1, 11)))),
        PaperFigure("fig3", "Fig. 3: worst link overload per stage, inter-pod permutation, every Table 1 scheme (3.2)",
                    _m(TABLE1, inter_pod=True, seeds=(1, 2)),
                    _m(TABLE1, inter_pod=True, ks=(12,), seeds=tuple(range(1, 11)))),
        PaperFigure("fig4", "Fig. 4: largest queue and CCT increase against the message size, with growth exponents "
                    "(Theta(m), Theta(sqrt m), Theta(1); 3.5)",
                    _m(TABLE1, sizes=(256 * KB, MB, 4 * MB), seeds=(1, 2)),
                    _m(TABLE1, sizes=(64 * KB, 256 * KB, MB, 4 * MB, 16 * MB), ks=(12,), seeds=tuple(range(1, 11))),
                    "RSQ is rps"),
        PaperFigure("fig5", "Fig. 5: CCT increase against the network size (6.1)",
                    _m(MAIN, ks=(4, 8), seeds=(1, 2)),
                    _m(MAIN, ks=(4, 8, 12, 16), seeds=tuple(range(1, 11))),
                    "all-to-all panels: add --workloads all-to-all"),
        PaperFigure("fig6", "Fig. 6: CCT increase of pOfan variants and DRB against the network size (6.1)",
                    _m(("drb", "pofan:1", "pofan:2", "pofan:4", "ofan"), ks=(4, 8), seeds=(1, 2)),
                    _m(("drb", "pofan:1", "pofan:2", "pofan:4", "ofan"), ks=(4, 8, 12, 16), seeds=tuple(range(1, 11)))),
        PaperFigure("fig8", "Fig. 8: CCT increase against the packet size, a 0.5 MB message (6.1)",
                    _m(MAIN, sizes=(512 * KB,), payloads=(1024, 2048, 4096, 8192), seeds=(1, 2)),
                    _m(MAIN, sizes=(512 * KB,), payloads=(1024, 2048, 4096, 8192, 16384, 32768), ks=(12,),
                       seeds=tuple(range(1, 11))),
                    "the paper's model curve and its optimum are not drawn"),
        PaperFigure("fig9", "Fig. 9: CCT increase over the fault-free bound against random link failures, hosts paced at "
                    "rho_max (6.2)",
                    _m(MAIN, failures=(0.0, 0.02, 0.05, 0.1), seeds=(1, 2)),
                    _m(MAIN, failures=(0.0, 0.01, 0.02, 0.05, 0.1), ks=(12,), seeds=tuple(range(1, 11)))),
        PaperFigure("fig10", "Fig. 10: the two-level fat tree, k=64 and 2,048 hosts (6.3)",
                    _m(MAIN, topology="leafspine", ks=(16,), seeds=(1, 2)),
                    _m(MAIN, topology="leafspine", ks=(64,), seeds=tuple(range(1, 4)))),
        PaperFigure("fig11", "Fig. 11: incremental deployment of 4Ofan among AR switches (6.4)",
                    _m(("ar", "pofan:4"), seeds=(1, 2)),
                    _m(("ar", "pofan:4"), ks=(12,), seeds=tuple(range(1, 11))),
                    "the mixes themselves (random, pods, aggregation or edge switches) are set with `testbed scheme set "
                    "pofan --switches ...` and `testbed run`; a sweep runs one scheme per cell, so this gives the two "
                    "ends only"),
        PaperFigure("fig12", "Fig. 12: CCT increase per scheme with congestion control, DCTCP, NSCC and Swift, a "
                    "4 MB permutation, 800 KB buffers, base RTT 150 packet times (6.5)",
                    _m(CC_SCHEMES, sizes=(4 * MB,), ccs=("dctcp", "nscc", "swift"), seeds=(1,), retries=1),
                    _m(CC_SCHEMES, sizes=(4 * MB,), ccs=("dctcp", "nscc", "swift"), ks=(12,),
                       seeds=tuple(range(1, 6))),
                    "the paper's MSwift is this testbed's swift (README, \"Congestion control\")"),
        PaperFigure("fig14", "Fig. 14: FSDP2 on Llama-3, one ring step of a layer's ReduceScatter or AllGather per "
                    "model (8B, 70B, 405B: 119, 418, 1,533 packets per flow), with NSCC and Swift (6.7)",
                    _m(("ar", "reps", "ofan", "pofan:4"), workloads=("fsdp",),
                       sizes=tuple(n * 4096 for n in FSDP_LAYER_PKTS.values()), ccs=("nscc", "swift"), seeds=(1,),
                       retries=1),
                    _m(("ar", "reps", "ofan", "pofan:4"), workloads=("fsdp",),
                       sizes=tuple(n * 4096 for n in FSDP_LAYER_PKTS.values()), ccs=("nscc", "swift"), ks=(16,),
                       seeds=tuple(range(1, 4))),
                    "one ring step per model: a layer's backward pass repeats that step 2 (n - 1) times and the "
                    "model repeats the layer, so the step's CCT increase is the pass's; the steps are not chained "
                    "in one run, and random server placement is not modelled (hosts are servers in id order)"),
        PaperFigure("fig13", "Fig. 13: MoE all-to-all-v with a hot expert, with and without EPLB (6.6)",
                    _m(MAIN, workloads=("moe",), sizes=(64 * KB,), seeds=(1, 2)),
                    _m(MAIN, workloads=("moe",), sizes=(64 * KB, 256 * KB), ks=(8,), seeds=tuple(range(1, 11))),
                    "k=8 at paper scale (all-to-all-v at k=12 needs 186,192 sockets); EPLB replicas: testbed run "
                    "--workload moe --eplb R"),
    )}


NAMES = ("fig1", "fig3", "fig4", "fig5", "fig6", "fig8", "fig9", "fig10", "fig11", "fig12", "fig13", "fig14")


def matrix(name: str, scale: str) -> Matrix:
    f = figures()[name]
    return f.quick if scale == "quick" else f.paper


def estimate_s(m: Matrix, ecmp_factor: float = 3.0) -> float:
    """A rough wall time: each cell's sending time at its fabric's rate (ECMP and RR-like schemes take a few
    times longer), plus about half a second of set-up per run and a build per fabric."""
    total = 0.0
    for k in m.ks:
        rate = m.rate_for(k)
        total += 2.0 + 0.3 * k
        for c in m.cells():
            if c.k != k:
                continue
            slow = ecmp_factor if c.label in ("ecmp", "rr", "jsq") else 1.2
            tree = FatTree(k, "est", m.topology)
            per_host = c.size * (tree.n_hosts - 1) if c.workload in ("all-to-all", "moe") else c.size
            frames = per_host * (c.payload + 58) / c.payload
            total += 0.5 + slow * frames * 8 / (rate * c.load)
            if c.cc != "none":  # a few base RTTs of 150 packet times, and the loop's own slowdown
                total += 4 * 150 * (c.payload + 58) * 8 / rate
    return total


