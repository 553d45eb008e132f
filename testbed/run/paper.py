"""The paper's figures as sweeps: for each figure of its evaluation (Figs. 1
and 3-14 of sections 1-6, Figs. 17 and 18 of appendix F) the matrices that
reproduce it here, one per panel, at two scales.

`quick`: k=4 (or the smallest fabric that shows the effect) and minutes;
`paper`: the paper's configuration where this machine carries it (k=12 by
default, section 6; the paper's message sizes, loads, failure
probabilities and ten seeds), at the packet budget's rates, which is hours.
What of a figure differs from the paper here, and why, is said with it
(`testbed paper list`). REPS, CONGA and DRB need or use ACKs, and the
paper's CCT ends at the last ACK, so every figure with one of them runs with
ACKs. Each matrix names its figure (`Matrix.figure`), so the report draws it
as the paper does (testbed.cli.figures).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traffic.workloads import fsdp_steps

from ..models.schemes import using_acks
from ..topology import FatTree
from ..topology.timebase import Propagation
from .runner import check_can_run, run_sweep
from .sweep import Matrix, SweepDir, matrix

KB, MB = 1024, 1 << 20
MAIN = ("ar", "reps", "ofan", "pofan:4")  # the paper's section 6 comparison
TABLE1 = (
    "ecmp",
    "rr",
    "jsq",
    "rps",
    "ar",
    "choice",
    "drill",
    "conga",
    "dlb",
    "sglb",
    "reps",
    "drb",
    "ethereal",
    "pofan:4",
    "ofan",
)
TEN = tuple(range(1, 11))  # "we run all considered scenarios at least 10 times" (section 6)
CC_SCHEMES = ("ecmp", "rps", "ar", "reps", "ofan", "pofan:4")  # Fig. 12
FSDP_LAYER_PKTS = {"8B": 119, "70B": 418, "405B": 1533}  # section 6.7: packets per flow per layer, FP8, 4 KB
FSDP_LAYERS = {"8B": 32, "70B": 80, "405B": 126}  # section 6.7: the models' layers
MIXES = ("none", "random:0.5", "pods:0.5", "agg", "edge")  # section 6.4: half the LB switches, four ways
SOCKETS = "all-to-all at k=12 needs 186,192 sockets, beyond this machine's open files"


@dataclass(frozen=True)
class Panel:
    name: str  # "" for a figure of one panel, else its letter
    caption: str
    quick: Matrix
    paper: Matrix


@dataclass(frozen=True)
class PaperFigure:
    name: str
    reproduces: str
    panels: tuple[Panel, ...]
    differs: tuple[str, ...] = ()  # what differs from the paper here, and why

    def matrices(self, scale: str) -> dict[str, Matrix]:
        """Each panel's matrix at `scale`, named for its figure (so the report draws it)."""
        return {p.name: (p.quick if scale == "quick" else p.paper).replace(figure=self.name) for p in self.panels}

    def cells(self, scale: str) -> int:
        return sum(len(m.cells()) for m in self.matrices(scale).values())


def _m(schemes: tuple[str, ...], **kw: Any) -> Matrix:
    """A figure's matrix: with ACKs when a scheme needs or uses them (the registry: REPS, CONGA, DRB)."""
    acks = bool(kw.pop("acks", False)) or using_acks(schemes)
    return matrix(schemes, acks=acks, **kw)


def _one(caption: str, quick: Matrix, paper: Matrix) -> tuple[Panel, ...]:
    return (Panel("", caption, quick, paper),)


# -- each figure: its panels' matrices at both scales, and what differs from the paper ----------------------
def _fig1() -> PaperFigure:
    return PaperFigure(
        "fig1",
        "Fig. 1: utilisation, largest queue and CCT increase against the offered load (1, 2.2)",
        _one(
            "a 1 MB permutation",
            _m(("rps", "ar", "reps", "ofan", "pofan:4"), load=(0.5, 0.8, 0.9, 1.0), seed=(1, 2)),
            _m(
                ("rps", "ar", "reps", "ofan", "pofan:4"),
                load=(0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0),
                k=(12,),
                seed=TEN,
            ),
        ),
    )


def _fig3() -> PaperFigure:
    return PaperFigure(
        "fig3",
        "Fig. 3: worst link overload per stage, every Table 1 scheme (3.2)",
        _one(
            "an inter-pod permutation",
            _m(TABLE1, inter_pod=True, seed=(1, 2)),
            _m(TABLE1, inter_pod=True, k=(12,), seed=TEN),
        ),
        ("RSQ is rps (the testbed's JSQ family has no separate RSQ)",),
    )


def _fig4() -> PaperFigure:
    return PaperFigure(
        "fig4",
        "Fig. 4: largest queue and CCT increase against the message size, growth exponents (3.5)",
        _one(
            "a permutation, every Table 1 scheme",
            _m(TABLE1, size=(256 * KB, MB, 4 * MB), seed=(1, 2)),
            _m(TABLE1, size=(64 * KB, 256 * KB, MB, 4 * MB, 16 * MB), k=(12,), seed=TEN),
        ),
        ("RSQ is rps",),
    )


def _fig5() -> PaperFigure:
    return PaperFigure(
        "fig5",
        "Fig. 5: CCT increase against the network size (6.1)",
        (
            Panel(
                "a",
                "(a) a 1 MB permutation",
                _m(MAIN, k=(4, 8), seed=(1, 2)),
                _m(MAIN, k=(4, 8, 12, 16), seed=TEN),
            ),
            Panel(
                "b",
                "(b) all-to-all, a fixed size per flow",
                _m(MAIN, workload=("all-to-all",), size=(16 * KB,), k=(4, 8), seed=(1, 2)),
                _m(MAIN, workload=("all-to-all",), size=(64 * KB,), k=(4, 8), seed=TEN),
            ),
            Panel(
                "c",
                "(c) all-to-all, a fixed total per host",
                _m(MAIN, workload=("all-to-all-host",), size=(256 * KB,), k=(4, 8), seed=(1, 2)),
                _m(MAIN, workload=("all-to-all-host",), size=(2 * MB,), k=(4, 8), seed=TEN),
            ),
        ),
        (
            f"all-to-all (b, c) up to k=8: {SOCKETS}",
            "all-to-all sizes are this testbed's (the paper gives none): (b) 64 KB per flow, (c) 2 MB per host",
        ),
    )


def _fig6() -> PaperFigure:
    return PaperFigure(
        "fig6",
        "Fig. 6: CCT increase of pOfan variants and DRB against the network size (6.1)",
        _one(
            "a 1 MB permutation",
            _m(("drb", "pofan:1", "pofan:2", "pofan:4", "ofan"), k=(4, 8), seed=(1, 2)),
            _m(("drb", "pofan:1", "pofan:2", "pofan:4", "ofan"), k=(4, 8, 12, 16), seed=TEN),
        ),
    )


def _fig7() -> PaperFigure:
    return PaperFigure(
        "fig7",
        "Fig. 7: CCT increase against the message size, with the 1/sqrt(m) trend (6.1)",
        (
            Panel(
                "a",
                "(a) permutation",
                _m(MAIN, size=(256 * KB, MB, 4 * MB), seed=(1, 2)),
                _m(MAIN, size=(256 * KB, MB, 4 * MB, 16 * MB), k=(12,), seed=TEN),
            ),
            Panel(
                "b",
                "(b) all-to-all",
                _m(MAIN, workload=("all-to-all",), size=(4 * KB, 16 * KB, 64 * KB), seed=(1, 2)),
                _m(MAIN, workload=("all-to-all",), size=(4 * KB, 16 * KB, 64 * KB, 256 * KB), k=(8,), seed=TEN),
            ),
        ),
        (
            f"(b) at k=8: {SOCKETS}",
            (
                "message sizes are this testbed's choice around the paper's 1 MB "
                "default (the paper's axis values are not in its text)"
            ),
        ),
    )


def _fig8() -> PaperFigure:
    return PaperFigure(
        "fig8",
        "Fig. 8: CCT increase against the packet size, with the model's optimum (6.1, G)",
        (
            Panel(
                "a",
                "(a) a 0.5 MB message",
                _m(MAIN, size=(512 * KB,), payload=(1024, 2048, 4096, 8192), seed=(1, 2)),
                _m(MAIN, size=(512 * KB,), payload=(1024, 2048, 4096, 8192, 16384, 32768), k=(12,), seed=TEN),
            ),
            Panel(
                "b",
                "(b) a larger message: Ofan's optimum moves to larger packets",
                _m(("ar", "ofan"), size=(4 * MB,), payload=(4096, 8192, 16384, 32768), seed=(1, 2)),
                _m(
                    ("ar", "reps", "ofan"),
                    size=(8 * MB,),
                    payload=(4096, 8192, 16384, 32768),
                    k=(12,),
                    seed=TEN,
                ),
            ),
        ),
        (
            (
                "payloads up to 32 KB: a veth frame is at most 64 KB, and 32 KB is the largest the suite "
                "checks end to end"
            ),
            "(b)'s message size is this testbed's (8 MB)",
            "the ECN threshold of 10 packets at 64 KB does not act: no congestion control here",
        ),
    )


def _fig9() -> PaperFigure:
    return PaperFigure(
        "fig9",
        "Fig. 9: CCT increase over the fault-free bound against random link failures, hosts paced at rho_max (6.2); "
        "weighted Ofan beside the paper's schemes (beyond the paper, docs/schemes.md)",
        _one(
            "a 1 MB permutation",
            _m((*MAIN, "wofan"), failures=(0.0, 0.02, 0.05, 0.1), seed=(1, 2)),
            _m((*MAIN, "wofan"), failures=(0.0, 0.01, 0.02, 0.05, 0.1), k=(12,), seed=TEN),
        ),
    )


def _fig10() -> PaperFigure:
    return PaperFigure(
        "fig10",
        "Fig. 10: the two-level fat tree, k=64 and 2,048 hosts (6.3)",
        _one(
            "a 1 MB permutation",
            _m(MAIN, topology="leafspine", k=(16,), seed=(1, 2)),
            _m(MAIN, topology="leafspine", k=(64,), seed=TEN),
        ),
    )


def _fig11() -> PaperFigure:
    return PaperFigure(
        "fig11",
        "Fig. 11: 4Ofan deployed on half the LB switches among AR ones, four ways (6.4)",
        _one(
            "a 1 MB permutation: all AR, the four mixes, all 4Ofan",
            _m(("ar", "pofan:4"), mix=MIXES, acks=True, seed=TEN),
            _m(("ar", "pofan:4"), mix=MIXES, acks=True, k=(12,), seed=TEN),
        ),
        ("the mixes are drawn from each run's seed: random:0.5 and pods:0.5 differ per seed",),
    )


def _fig12() -> PaperFigure:
    return PaperFigure(
        "fig12",
        "Fig. 12: CCT increase per scheme with DCTCP, NSCC and Swift, a 4 MB permutation, 800 KB "
        "buffers, base RTT 150 packet times (6.5)",
        _one(
            "a 4 MB permutation",
            _m(CC_SCHEMES, size=(4 * MB,), cc=("dctcp", "nscc", "swift"), seed=(1,), retries=1),
            _m(CC_SCHEMES, size=(4 * MB,), cc=("dctcp", "nscc", "swift"), k=(12,), seed=TEN),
        ),
        ("the paper's MSwift is this testbed's swift (docs/traffic.md, \"Congestion control\")",),
    )


def _fig13() -> PaperFigure:
    return PaperFigure(
        "fig13",
        "Fig. 13: MoE dispatch, hierarchical over 8-GPU servers, skew 1.48x (1.13x with EPLB), "
        "without a CCA and with NSCC (6.6)",
        _one(
            "(a) no CCA, (b) no CCA with EPLB, (c) NSCC, (d) NSCC with EPLB",
            _m(
                MAIN,
                workload=("moe", "moe-eplb"),
                size=(512 * KB,),
                cc=("none", "nscc"),
                gpus_per_server=4,
                payload=(32768,),
                ecn_threshold="10pkts",
                seed=(1, 2),
                retries=1,
            ),
            _m(
                MAIN,
                workload=("moe", "moe-eplb"),
                size=(4 * MB,),
                cc=("none", "nscc"),
                k=(8,),
                payload=(32768,),
                ecn_threshold="10pkts",
                seed=TEN,
            ),
        ),
        (
            (
                "synthetic expert popularity drawn to the paper's skews (traffic.workloads), not the Qwen3 "
                "trace; --matrix takes a real trace's matrix"
            ),
            "32 KB packets, not 64 KB: a veth frame is at most 64 KB with headers",
            "4 MB per flow (the paper: 492 MB per GPU, ~33 MB per flow): the packet budget's rate at k=8",
            "quick: servers of 4 GPUs at k=4 (16 hosts: two servers of 8 leave one flow per GPU)",
        ),
    )


def _fig14() -> PaperFigure:
    return PaperFigure(
        "fig14",
        "Fig. 14: FSDP2's backward pass on Llama-3 8B, 70B and 405B: every layer's ring "
        "ReduceScatter and AllGather, chained, servers placed at random, NSCC and Swift (6.7)",
        _one(
            "per model (119, 418, 1,533 packets per flow and step)",
            _m(
                ("ar", "reps", "ofan", "pofan:4"),
                workload=("fsdp",),
                size=tuple(n * 4096 for n in FSDP_LAYER_PKTS.values()),
                cc=("nscc", "swift"),
                gpus_per_server=4,
                seed=(1,),
                retries=1,
            ),
            _m(
                ("ar", "reps", "ofan", "pofan:4"),
                workload=("fsdp",),
                size=tuple(n * 4096 for n in FSDP_LAYER_PKTS.values()),
                cc=("nscc", "swift"),
                k=(8,),
                seed=(1, 2, 3),
            ),
        ),
        (
            (
                "one layer's pass (its ReduceScatter and AllGather, 2 (servers - 1) chained ring steps), not "
                "every layer's: each layer repeats the same steps (32, 80 and 126 layers)"
            ),
            (
                "k=8: 128 GPUs in 16 servers of 8, 30 chained steps; the paper's 1,024 GPUs make 254 steps "
                "per layer, and one 405B step takes 159 s at k=16's rate"
            ),
            "a step starts when its input arrived (per GPU, from the ring's ACKs), not at a global barrier",
            "3 seeds: a seed's three passes take about 10 minutes per scheme and CCA at k=8",
            "quick: servers of 4 GPUs at k=4 (4 servers, 6 chained steps)",
        ),
    )


def _fig17() -> PaperFigure:
    return PaperFigure(
        "fig17",
        "Fig. 17: DRB's largest queue over Ofan's against the number of hosts (F.3)",
        _one(
            "an inter-pod 1 MB permutation",
            _m(("drb", "ofan"), inter_pod=True, k=(4, 8), seed=(1, 2, 3)),
            _m(("drb", "ofan"), inter_pod=True, k=(4, 8, 12, 16), seed=tuple(range(1, 31))),
        ),
    )


def _fig18() -> PaperFigure:
    return PaperFigure(
        "fig18",
        "Fig. 18: Ofan's average queue per switch layer against the paper's queue model (F.4)",
        _one(
            "an inter-pod 1 MB permutation",
            _m(("ofan",), inter_pod=True, k=(4, 8), seed=(1, 2, 3)),
            _m(("ofan",), inter_pod=True, k=(4, 8, 12, 16), seed=TEN),
        ),
        ("without ACKs: Ofan alone, the CCT ends at the last data packet (ACKs would halve the rate)",),
    )


BUILDERS = (
    _fig1,
    _fig3,
    _fig4,
    _fig5,
    _fig6,
    _fig7,
    _fig8,
    _fig9,
    _fig10,
    _fig11,
    _fig12,
    _fig13,
    _fig14,
    _fig17,
    _fig18,
)


@functools.cache
def figures() -> dict[str, PaperFigure]:
    """Every figure (built on first use: each matrix checks its cells)."""
    return {f.name: f for f in (build() for build in BUILDERS)}


NAMES = (
    "fig1",
    "fig3",
    "fig4",
    "fig5",
    "fig6",
    "fig7",
    "fig8",
    "fig9",
    "fig10",
    "fig11",
    "fig12",
    "fig13",
    "fig14",
    "fig17",
    "fig18",
)


def matrices(name: str, scale: str) -> dict[str, Matrix]:
    return figures()[name].matrices(scale)


def estimate_s(m: Matrix, ecmp_factor: float = 3.0) -> float:
    """A rough wall time: each cell's sending time at its fabric's rate (ECMP and RR-like schemes take a few
    times longer), plus about half a second of set-up per run and a build per fabric."""
    total = 0.0
    for k in m.k:
        rate = m.rate_for(k)
        total += 2.0 + 0.3 * k
        tree = FatTree(k, "est", m.topology)
        for c in m.cells():
            if c.k != k:
                continue
            slow = ecmp_factor if c.label in ("ecmp", "rr", "jsq") else 1.2
            n, gpus = tree.n_hosts, c.option(m, "gpus_per_server")
            per_host = {
                "all-to-all": c.size * (n - 1),
                "all-to-all-host": c.size,
                "moe": c.size * (n // gpus - 1),
                "moe-eplb": c.size * (n // gpus - 1),
                "fsdp": c.size * (c.option(m, "steps") or fsdp_steps(n, gpus, c.option(m, "layers"))),
            }.get(c.workload, c.size)
            frames = per_host * (c.payload + 58) / c.payload
            total += 0.5 + slow * frames * 8 / (rate * c.load)
            if c.cc != "none":  # a few base RTTs of 150 packet times, and the loop's own slowdown
                total += 4 * 150 * (c.payload + 58) * 8 / rate
    return total


def figure_estimate_s(f: PaperFigure, scale: str) -> float:
    return sum(estimate_s(m) for m in f.matrices(scale).values())


# a sweep's progress: (its figure and panel, "fig5a", runs done, runs in all, the last run's row)
Progress = Callable[[str, int, int, dict[str, Any] | None], None]


@dataclass(frozen=True)
class FigureSweeps:
    """What `run_figures` ran: its directory and each figure panel's sweep, by (figure, panel)."""

    out: Path
    dirs: dict[tuple[str, str], SweepDir]


def figure_dirs(
    figure: str, scale: str, out: Path, propagation: Propagation | str, rate_factor: float
) -> dict[tuple[str, str], SweepDir]:
    """Every panel's sweep directory of `figure` (or of every figure: "all", each in out/FIG) at `scale`, its
    matrix with this propagation and rate factor; a directory holding another sweep is refused before any run."""
    names = list(NAMES) if figure == "all" else [figure]
    dirs = {}
    for name in names:
        base = out / name if figure == "all" else out
        for panel, preset in figures()[name].matrices(scale).items():
            m = preset.replace(propagation=propagation, rate_factor=rate_factor)
            dirs[(name, panel)] = SweepDir(base / panel if panel else base, m)
    return dirs


def run_figures(
    figure: str,
    *,
    scale: str = "quick",
    out: Path | None = None,
    propagation: Propagation | str = "paper",
    rate_factor: float | None = None,
    prefix: str = "tbs",
    cluster: str | None = None,
    wait: bool = False,
    announce: Callable[[str], None] = lambda line: None,
    progress: Progress = lambda label, done, total, row: None,
) -> FigureSweeps:
    """`testbed paper FIG|all`: every panel's sweep of the figure (or of every figure) at `scale`, here or on
    `cluster` (resumable: what is done is kept), into `out` (default results/paper-FIG-SCALE); `announce` is told
    what will run, and every directory is checked, before the first build. Drawing them is the caller's."""
    out = out or Path("results") / f"paper-{figure}-{scale}"
    dirs = figure_dirs(figure, scale, out, propagation, rate_factor or 1.0)
    names = list(dict.fromkeys(name for name, _ in dirs))
    total = sum(len(d.matrix.cells()) for d in dirs.values())
    pending = sum(len(d.pending()) for d in dirs.values())
    announce(
        f"{', '.join(names) if len(names) < 4 else f'{len(names)} figures'}: {total} runs at --scale "
        f"{scale} ({total - pending} done already), about "
        f"{sum(figure_estimate_s(figures()[n], scale) for n in names) / 60:.0f} min here"
    )
    if pending:
        check_can_run(cluster)
    for (name, panel), d in dirs.items():
        if d.pending():
            run_sweep(d, prefix=prefix, cluster=cluster, wait=wait, progress=functools.partial(progress, name + panel))
    return FigureSweeps(out, dirs)
