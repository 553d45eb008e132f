"""The claims check's catalogue, as data: the experiments (a sweep matrix per scale, shared by every claim
that reads it) and the paper's claims, each with its section, statement, the paper's number, the rule that
measures it (testbed.measure.claim_rules), every experiment whose runs that rule reads, its decisions (each
quantity compared, the comparison and its margin) and its seed cap (the paper's runs per scenario), all written
before any run."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from ...measure import claim_rules as r
from ...measure.claim_rules import KB, MB, MIXES, Data, Decision, Outcome
from ..params import RunError
from ..sweep import Matrix, matrix

SCALES = ("quick", "paper")
# Every fabric of the claims' experiments runs at this fraction of its auto rate by default: a check runs for
# hours unattended, and the packet budget's own rates were at the edge of validity on some days here (k=8 at
# 9.3 Mbit/s: 0 of 4 Ofan runs valid on 2026-12-04; at 6 Mbit/s, 3 of 4; k=12 at 1.1 of 1.5 Mbit/s, 3 of 3).
# Those were the budget of 2026-12-03; the budget re-measured on a slow day (2026-12-07) is lower (k=8:
# 5.4 Mbit/s, k=12: 1.3 Mbit/s), and this factor was kept on top of it (not re-measured)
RATE_FACTOR = 0.75
# The paper runs every scenario at least 10 times (Sec. 6, "Simulator") and Fig. 17 30 times per size (App.
# F.3): the most seeds a claim's experiments grow to while it is not decided. The quick scale stops at 3 so
# that `testbed paper claims --scale quick` stays within about 20 minutes (a first batch of two or three seeds
# is 278 runs, a third seed for every experiment at most 124 more, about 3 s each at k=4 and 8).
PAPER_SEEDS, FIG17_SEEDS = 10, 30
SCALE_SEEDS = {"quick": 3, "paper": None}  # None: the claim's own cap
# how a claim's verdict combines its comparisons, said in every rule that has several
ALL = "agrees when every one is decided its way; disagrees when any is decided the other way; else not decided"


@dataclass(frozen=True)
class Experiment:
    """One sweep, per scale."""

    name: str
    what: str
    quick: Matrix
    paper: Matrix

    def matrix(self, scale: str) -> Matrix:
        return self.quick if scale == "quick" else self.paper


@dataclass(frozen=True, kw_only=True)
class Claim:
    """One of the paper's claims and how it is checked here (made by keyword: its texts are long)."""

    cid: str
    section: str
    statement: str  # the paper's claim, in our words
    paper: str  # the paper's number
    rule: str  # what is measured and how the comparisons combine, in words (the code is `check`)
    decisions: tuple[Decision, ...] = ()  # each quantity `check` measures, its comparison and margin
    experiments: tuple[str, ...] = ()  # every experiment (DESIGNS' names) whose runs `check` reads; () for a
    # claim computed from the testbed's own definitions
    check: Callable[[Data], Outcome] | None = None
    seeds: int = PAPER_SEEDS  # the paper's runs per scenario: the most seeds its experiments grow to
    needs: str = ""  # pending: what it needs

    @property
    def experiment(self) -> str | None:
        """The experiments it reads as one text (claims.json's and claims.md's "experiment"); None: none."""
        return ", ".join(self.experiments) or None

    def cap(self, scale: str) -> int:
        """The most seeds its experiments grow to at `scale` while it is not decided."""
        limit = SCALE_SEEDS.get(scale)
        return self.seeds if limit is None else min(self.seeds, limit)


def D(name: str, quantity: str, comparison: r.Comparison, margin: r.Margin, unit: str = "") -> Decision:
    """A decision, in the catalogue's short form."""
    return Decision(name=name, quantity=quantity, comparison=comparison, margin=margin, unit=unit)


# -- the experiments ------------------------------------------------------------------------
MAIN = ("ar", "reps", "ofan", "pofan:4")
FIG3 = ("rr", "jsq", "choice", "drill", "rps", "ar", "ofan", "pofan:4", "drb", "ethereal")
FIG4 = ("rr", "jsq", "conga", "rps", "reps", "ar", "ethereal", "drb", "pofan:4", "ofan")
FIG8_PAYLOADS_QUICK = (1024, 2048, 4096, 8192, 16384)
FIG8_PAYLOADS_PAPER = (1024, 2048, 4096, 8192, 16384, 32768)
POFANS = ("drb", "pofan:1", "pofan:2", "pofan:4", "ofan")
CCS = ("dctcp", "nscc", "swift")
MOE_OPTIONS = {"workload": ("moe", "moe-eplb"), "cc": ("none", "nscc"), "payload": (32768,), "ecn_threshold": "10pkts"}
FSDP_SIZES = (119 * 4096, 1533 * 4096)  # Llama-3 8B's and 405B's packets per flow and step, 4 KB each


class Design(NamedTuple):
    """An experiment before its matrices are built: its schemes and each scale's options (the keywords of
    testbed.run.sweep.matrix)."""

    name: str
    what: str
    schemes: tuple[str, ...]
    quick: Mapping[str, Any]
    paper: Mapping[str, Any]


DESIGNS: tuple[Design, ...] = (
    Design(
        "fig1",
        "utilisation against the load, 1 MB permutation (Fig. 1)",
        ("ar", "reps", "ofan"),
        {"load": (0.8, 1.0), "seed": (1, 2, 3)},
        {"load": (0.8, 1.0), "k": (12,), "seed": (1, 2, 3)},
    ),
    Design(
        "fig3",
        "worst link overload per stage, 1 MB inter-pod permutation (Fig. 3)",
        FIG3,
        {"inter_pod": True, "seed": (1, 2)},
        {"inter_pod": True, "k": (12,), "seed": (1, 2)},
    ),
    Design(
        "fig4",
        "largest queue and CCT increase against the message size (Figs. 4 and 7)",
        FIG4,
        {"size": (256 * KB, MB, 4 * MB), "seed": (1, 2)},
        {"size": (256 * KB, MB, 4 * MB), "k": (12,), "seed": (1, 2)},
    ),
    Design(
        "fig5",
        "CCT increase against the network size, 1 MB permutation (Fig. 5a)",
        MAIN,
        {"k": (4, 8), "seed": (1, 2)},
        {"k": (4, 8, 12, 16), "seed": (1, 2)},
    ),
    Design(
        "fig5ata",
        "CCT increase, all-to-all of 64 KB per flow (Fig. 5b)",
        MAIN,
        {"workload": ("all-to-all",), "size": (64 * KB,), "k": (4,), "seed": (1, 2)},
        {"workload": ("all-to-all",), "size": (64 * KB,), "k": (4, 8), "seed": (1, 2)},
    ),
    Design(
        "fig6",
        "pOfan variants and DRB against the network size (Fig. 6)",
        POFANS,
        {"k": (4, 8), "seed": (1, 2)},
        {"k": (4, 8, 12), "seed": (1, 2)},
    ),
    Design(
        "fig7r",
        "REPS and AR at large messages without congestion control (Fig. 7a)",
        ("ar", "reps"),
        {"size": (4 * MB, 16 * MB), "seed": (1, 2)},
        {"size": (4 * MB, 16 * MB), "k": (12,), "seed": (1, 2)},
    ),
    Design(
        "fig7f",
        "REPS's freezing mode on and off, a 16 MB permutation with NSCC (Fig. 7a's conjecture)",
        ("reps",),
        {"size": (16 * MB,), "cc": ("nscc",), "reps_freeze": (True, False), "seed": (1, 2)},
        {"size": (16 * MB,), "cc": ("nscc",), "reps_freeze": (True, False), "k": (12,), "seed": (1, 2)},
    ),
    Design(
        "fig8",
        "Ofan's CCT against the packet size, a 0.5 MB message (Fig. 8)",
        ("ofan",),
        {"size": (512 * KB,), "payload": FIG8_PAYLOADS_QUICK, "seed": (1, 2)},
        {"size": (512 * KB,), "payload": FIG8_PAYLOADS_PAPER, "k": (12,), "seed": (1, 2)},
    ),
    Design(
        "fig9",
        "CCT increase over the fault-free bound under random link failures, hosts paced at rho_max (Fig. 9)",
        ("ar", "reps", "ofan"),
        {"failures": (0.0, 0.05, 0.1), "seed": (1, 2)},
        {"failures": (0.0, 0.05, 0.1), "k": (12,), "seed": (1, 2)},
    ),
    Design(
        "fig9w",
        "Fig. 9's failure sets and permutations under weighted Ofan, with ACKs as fig9's REPS cells make them",
        ("wofan",),
        {"failures": (0.0, 0.05, 0.1), "acks": True, "seed": (1, 2)},
        {"failures": (0.0, 0.05, 0.1), "acks": True, "k": (12,), "seed": (1, 2)},
    ),
    Design(
        "fig9e",
        "Fig. 9's failures with hosts paced at rho_even, the other reading of rho_max",
        ("ar", "reps", "ofan"),
        {"failures": (0.05, 0.1), "pace": ("rho_even",), "seed": (1, 2)},
        {"failures": (0.05, 0.1), "pace": ("rho_even",), "k": (12,), "seed": (1, 2)},
    ),
    Design(
        "fig10",
        "the two-level fat tree (Fig. 10)",
        MAIN,
        {"topology": "leafspine", "k": (16,), "seed": (1, 2)},
        {"topology": "leafspine", "k": (64,), "seed": (1, 2)},
    ),
    Design(
        "fig12",
        "congestion control: DCTCP, NSCC and Swift, a 4 MB permutation, 800 KB buffers (Fig. 12)",
        MAIN,
        {"size": (4 * MB,), "cc": CCS, "seed": (1, 2)},
        {"size": (4 * MB,), "cc": CCS, "k": (12,), "seed": (1, 2)},
    ),
    Design(
        "fig11",
        "4Ofan on half the LB switches among AR ones, four ways, a 1 MB permutation (Fig. 11)",
        ("ar", "pofan:4"),
        {"mix": MIXES, "acks": True, "seed": (1, 2)},
        {"mix": MIXES, "acks": True, "k": (12,), "seed": (1, 2)},
    ),
    Design(
        "fig13",
        "MoE dispatch, hierarchical, skew 1.48x and 1.13x (EPLB), without a CCA and with NSCC (Fig. 13)",
        MAIN,
        {**MOE_OPTIONS, "size": (512 * KB,), "gpus_per_server": 4, "seed": (1, 2)},
        {**MOE_OPTIONS, "size": (MB,), "k": (8,), "seed": (1, 2)},
    ),
    Design(
        "fig14",
        "FSDP2's chained backward pass on Llama-3 405B (1,533 packets per step), NSCC and Swift (Fig. 14)",
        MAIN,
        # quick: the first 3 of the pass's 6 ring steps at k=4, so the quick check keeps within 20 minutes (the
        # whole pass took 32 s a run, 511 s of the check's 1,317 at two seeds); paper: 8 of 62 at k=8
        {
            "workload": ("fsdp",),
            "size": (1533 * 4096,),
            "cc": ("nscc", "swift"),
            "gpus_per_server": 4,
            "steps": 3,
            "seed": (1, 2),
        },
        {"workload": ("fsdp",), "size": (1533 * 4096,), "cc": ("nscc", "swift"), "k": (8,), "steps": 8, "seed": (1, 2)},
    ),
    Design(
        "fig14m",
        "FSDP2's chained backward pass per model: 8B and 405B, Ofan, AR and REPS with NSCC (Fig. 14)",
        ("ar", "reps", "ofan"),
        {"workload": ("fsdp",), "size": FSDP_SIZES, "cc": ("nscc",), "gpus_per_server": 4, "steps": 3, "seed": (1, 2)},
        {"workload": ("fsdp",), "size": FSDP_SIZES, "cc": ("nscc",), "k": (8,), "steps": 8, "seed": (1, 2)},
    ),
    Design(
        "fig17",
        "DRB's and Ofan's largest queue against the network size, inter-pod permutation (Fig. 17)",
        ("drb", "ofan"),
        {"inter_pod": True, "k": (4, 8), "seed": (1, 2, 3)},
        {"inter_pod": True, "k": (4, 8, 12), "seed": (1, 2, 3)},
    ),
)


def _m(schemes: tuple[str, ...], options: Mapping[str, Any]) -> Matrix:
    """An experiment's matrix (with ACKs where a scheme needs them: the matrix asks the registry)."""
    return matrix(schemes, retries=1, **options)


@functools.cache
def experiments() -> dict[str, Experiment]:
    """Every experiment, built on first use (each matrix checks its cells)."""
    return {d.name: Experiment(d.name, d.what, _m(d.schemes, d.quick), _m(d.schemes, d.paper)) for d in DESIGNS}


# -- the claims --------------------------------------------------------------------------------
PTS = "points"  # of CCT increase, or of overload: percentage points
CLAIMS: tuple[Claim, ...] = (
    Claim(
        cid="C1",
        section="Sec. 1, Fig. 1(a)",
        statement="At load 1 (1 MB permutation, no congestion control) REPS and AR saturate "
        "below 95 % utilisation while Ofan reaches about 99 %.",
        paper="REPS, AR < 95 %; Ofan about 99 %",
        rule=f"each scheme's mean utilisation over the sending window (delivered while every source sends; the "
        f"drain left out, as a maximum utilisation implies) at load 1 +- 2 SEM: Ofan's above its margin, REPS's and AR's below "
        f"theirs; {ALL}",
        decisions=(
            D("ofan", "Ofan's utilisation at load 1", ">=", 97, "%"),
            D("others", "REPS's and AR's utilisation at load 1", "<=", 95, "%"),
        ),
        experiments=("fig1",),
        check=r.c_fig1_utilisation,
    ),
    Claim(
        cid="C2",
        section="Sec. 1, Fig. 1(a)",
        statement="Below load 0.9 every scheme keeps up with the load (utilisation on the diagonal).",
        paper="utilisation = load up to 0.9",
        rule="each scheme's (Ofan, REPS, AR) mean utilisation over the sending window (as C1) at load 0.8 +- 2 SEM, "
        f"within 3 points of 80 %; {ALL}",
        decisions=(D("utilisation", "each scheme's utilisation at load 0.8", "within", (77, 83), "%"),),
        experiments=("fig1",),
        check=r.c_fig1_load,
    ),
    Claim(
        cid="C3",
        section="Sec. 3.2, Fig. 3",
        statement="Simple RR and JSQ balance both uplink stages almost perfectly and collapse on both downlink stages.",
        paper="near 0 up, large down",
        rule="for RR and JSQ, each stage's mean overload +- 2 SEM: the worst uplink stage (E->A, A->C; the higher "
        "of the two intervals) low, each downlink stage (C->A, A->E) high and above 3x the worst uplink stage; "
        f"{ALL}",
        decisions=(
            D("up", "the worst uplink stage's overload, RR and JSQ", "<=", 10, "%"),
            D("down", "each downlink stage's overload, RR and JSQ", ">=", 10, "%"),
            D("down_over_up", "each downlink stage's overload minus 3x the worst uplink stage's", ">=", 0, PTS),
        ),
        experiments=("fig3",),
        check=r.c_fig3_rr_jsq,
    ),
    Claim(
        cid="C4",
        section="Sec. 3.2, Fig. 3",
        statement="Only the destination-aware schemes are near-flat across all four stages.",
        paper="Ofan, 4Ofan, DRB, Ethereal near 0 at every stage",
        rule="each scheme's worst stage (the highest of its four stages' mean overload +- 2 SEM): every "
        "destination-aware scheme's (Ofan, 4Ofan, DRB, Ethereal) low, every destination-oblivious one's (RR, JSQ, "
        f"Choice, DRILL, RPS, AR) high; {ALL}",
        decisions=(
            D("aware", "the worst stage's overload of each destination-aware scheme", "<=", 10, "%"),
            D("oblivious", "the worst stage's overload of each destination-oblivious scheme", ">=", 10, "%"),
        ),
        experiments=("fig3",),
        check=r.c_fig3_aware,
    ),
    Claim(
        cid="C5",
        section="Sec. 3.2, Fig. 3",
        statement="Ethereal achieves ideal balance.",
        paper="0 at every stage",
        rule="Ethereal's worst stage (the highest of its four stages' mean overload +- 2 SEM)",
        decisions=(D("worst", "Ethereal's worst stage's overload", "<=", 2, "%"),),
        experiments=("fig3",),
        check=r.c_fig3_ethereal,
    ),
    Claim(
        cid="C6",
        section="Sec. 3.3-3.5, Fig. 4(b), Thm. 2",
        statement="Simple RR, JSQ and CONGA: the largest queue grows nearly linearly with the message size.",
        paper="Theta(m)",
        rule="each one's exponent of the largest queue against m (least squares over every valid run, 256 KB-4 MB) "
        f"with its 95 % interval; {ALL}",
        decisions=(D("exponent", "the exponent of the largest queue against m, RR, JSQ and CONGA", ">=", 0.7),),
        experiments=("fig4",),
        check=r.c_fig4_linear,
    ),
    Claim(
        cid="C7",
        section="Sec. 3.3-3.5, Fig. 4(b), Thm. 1",
        statement="RPS (RSQ), REPS and AR: the largest queue grows about as the square root of the message size.",
        paper="Theta(sqrt m)",
        rule=f"each one's exponent (as C6) with its 95 % interval; {ALL}",
        decisions=(
            D("exponent", "the exponent of the largest queue against m, RPS, REPS and AR", "within", (0.3, 0.7)),
        ),
        experiments=("fig4",),
        check=r.c_fig4_sqrt,
    ),
    Claim(
        cid="C8",
        section="Sec. 3.4-5.1, Fig. 4(b), Thms. 3-5",
        statement="Ethereal, DRB, 4Ofan and Ofan: the largest queue does not grow with the message size.",
        paper="O(1)",
        rule=f"each one's exponent (as C6) with its 95 % interval; {ALL}",
        decisions=(
            D("exponent", "the exponent of the largest queue against m, Ethereal, DRB, 4Ofan and Ofan", "<=", 0.3),
        ),
        experiments=("fig4",),
        check=r.c_fig4_flat,
    ),
    Claim(
        cid="C9",
        section="App. F.4",
        statement="Ofan's edge-uplink queue never exceeds w + 1 packets, whatever the message size.",
        paper="<= w + 1 (exact)",
        rule="the largest edge-uplink queue of every valid Ofan run without ACKs or failures, at each k, minus "
        "k/2 + 1: exact (the bound is deterministic, so one run beyond it is a counter-example; no mean is "
        f"taken); {ALL}",
        decisions=(D("excess", "the largest edge-uplink queue minus w + 1, at each k", "<=", 0, "packets"),),
        experiments=("fig3", "fig6", "fig17"),
        check=r.c_f4_edge_bound,
    ),
    Claim(
        cid="C10",
        section="App. F.2",
        statement="For w = 6 the XOR-and-add mapping yields 30 distinct cyclic port orders, against 6 with additions alone.",
        paper="30 vs 6",
        rule=f"the data plane's mapping (decisions.ofan_port) with {r.F2_DRAWS} bases drawn at random (seeded): the "
        "median number of distinct cyclic orders over every pointer id, and over the ids whose XOR constant is 0 "
        "(the addition alone), each with its order-statistics 95 % interval; the data plane's own basis is "
        f"reported apart; {ALL}",
        decisions=(
            D("xor", "the median distinct cyclic orders of the XOR-and-add mapping (w = 6)", ">=", 30, "orders"),
            D("addition", "the median distinct cyclic orders of the addition alone", "within", (6, 6), "orders"),
        ),
        experiments=(),
        check=r.c_f2_orders,
    ),
    Claim(
        cid="C11",
        section="App. F.3, Fig. 17",
        statement="The ratio of DRB's largest queue to Ofan's grows with the network size.",
        paper="growing ratio",
        rule="DRB's over Ofan's mean largest queue at each k (its SEM by the delta method): larger at the largest "
        f"k than at the smallest, and above 1 there; {ALL}",
        decisions=(
            D("growth", "DRB/Ofan at the largest k minus at the smallest k", ">=", 0, "x"),
            D("ratio", "DRB/Ofan at the largest k", ">=", 1, "x"),
        ),
        experiments=("fig17",),
        check=r.c_f3_ratio,
        seeds=FIG17_SEEDS,
    ),
    Claim(
        cid="C12",
        section="Sec. 4.2",
        statement="DRB is balanced for large messages but worse for small ones, which Ofan's consolidated pointers avoid.",
        paper="DRB worse at small m",
        rule=f"differences of mean CCT increase +- 2 SEM: DRB's at 256 KB above its own at 4 MB and above Ofan's; {ALL}",
        decisions=(
            D("small_vs_large", "DRB's CCT increase at 256 KB minus at 4 MB", ">=", 0, PTS),
            D("vs_ofan", "DRB's minus Ofan's CCT increase at 256 KB", ">=", 0, PTS),
        ),
        experiments=("fig4",),
        check=r.c_drb_small,
    ),
    Claim(
        cid="C13",
        section="Sec. 6.1, Fig. 5(a)",
        statement="The CCT gap between 4Ofan and the existing schemes grows with the network size.",
        paper="about 5 % at 16 hosts to 11 % at 1,024",
        rule="AR's and REPS's minus 4Ofan's mean CCT increase +- 2 SEM above 0 at every k, and the better of the "
        f"two gaps (the lower interval) larger at the largest k than at the smallest; {ALL}",
        decisions=(
            D("gap", "AR's and REPS's minus 4Ofan's CCT increase, at each k", ">=", 0, PTS),
            D("growth", "the better of AR and REPS minus 4Ofan, at the largest k minus at the smallest", ">=", 0, PTS),
        ),
        experiments=("fig5",),
        check=r.c_fig5_gap,
    ),
    Claim(
        cid="C14",
        section="Sec. 6.1, Fig. 6",
        statement="1Ofan against DRB recovers roughly half the CCT gap between DRB and Ofan "
        "(consolidation at the aggregation switches).",
        paper="about 1/2",
        rule="(DRB - 1Ofan) / (DRB - Ofan) in mean CCT increase at the largest k, +- 2 SEM by the delta method; not "
        "comparable if DRB - Ofan is at or below 0 over its whole interval, unbounded (not decided) while that "
        "interval holds 0",
        decisions=(D("share", "(DRB - 1Ofan) / (DRB - Ofan) at the largest k", "within", (0.25, 0.75)),),
        experiments=("fig6",),
        check=r.c_fig6_half,
    ),
    Claim(
        cid="C15",
        section="Sec. 6.1, Fig. 7",
        statement="The CCT gap between REPS or AR and Ofan falls like 1/sqrt(m).",
        paper="exponent -1/2",
        rule="for X = AR and REPS: X's minus Ofan's mean CCT increase +- 2 SEM above 0 at every size, and the "
        "exponent of that gap against m (each seed's X run paired with its Ofan run, least squares on log-log "
        f"axes) with its 95 % interval; {ALL}",
        decisions=(
            D("gaps", "AR's and REPS's minus Ofan's CCT increase, at each size", ">=", 0, PTS),
            D("exponent", "the exponent of the gap against m, AR and REPS", "within", (-0.8, -0.2)),
        ),
        experiments=("fig4",),
        check=r.c_fig7_sqrt,
    ),
    Claim(
        cid="C16",
        section="Sec. 6.1, Fig. 7(a)",
        statement="REPS gets notably worse at very large messages (a permutation without congestion control).",
        paper="REPS worst at large m",
        rule="a permutation of 4 and 16 MB without congestion control, mean CCT increase +- 2 SEM: REPS's minus AR's "
        f"at 16 MB above 0, and that gap larger at 16 MB than at 4 MB; {ALL}",
        decisions=(
            D("worse_than_ar", "REPS's minus AR's CCT increase at 16 MB", ">=", 0, PTS),
            D("worse_with_m", "REPS's gap to AR at 16 MB minus at 4 MB", ">=", 0, PTS),
        ),
        experiments=("fig7r",),
        check=r.c_fig7_reps,
    ),
    Claim(
        cid="C17",
        section="Sec. 4.2, 6.1, Fig. 8, Thm. 6",
        statement="Ofan's CCT has a sweet spot in the packet size, where P - H = sqrt((H / alpha) D).",
        paper="interior optimum near the model's",
        rule="the mean CCT +- 2 SEM at the smallest and at the largest payload tried above the least of the others "
        "(an interior optimum), and the model's P - H (alpha from the 4 KB runs, +- 2 SEM) within 2x of the best "
        "payload (every payload whose CCT interval reaches below the least upper end may be the best: the ratio's "
        f"interval spans them); {ALL}",
        decisions=(
            D(
                "interior",
                "the CCT at the smallest and the largest payload minus the least of the others",
                ">=",
                0,
                "ms",
            ),
            D("model", "the model's P - H over the best payload", "within", (0.5, 2.0), "x"),
        ),
        experiments=("fig8",),
        check=r.c_fig8_sweet,
    ),
    Claim(
        cid="C18",
        section="Sec. 6.2, Fig. 9",
        statement="Under random link failures, hosts paced at rho_max, Ofan keeps outperforming REPS and AR.",
        paper="Ofan lowest",
        rule="at every failure probability > 0 and under both readings of rho_max (the hosts paced at the LP's "
        "optimum, fig9, and at rho_even, the rate an even split over the valid uplinks carries, fig9e), REPS's and "
        f"AR's minus Ofan's mean CCT increase over the fault-free bound +- 2 SEM; {ALL}",
        decisions=(
            D(
                "ofan_lowest",
                "REPS's and AR's minus Ofan's CCT increase, each failure probability and reading of rho_max",
                ">=",
                0,
                PTS,
            ),
        ),
        experiments=("fig9", "fig9e"),
        check=r.c_fig9_failures,
    ),
    Claim(
        cid="C19",
        section="Sec. 6.3, Fig. 10",
        statement="On a two-level fat tree Ofan and 4Ofan reduce the CCT by over 11 % against REPS and AR.",
        paper="> 11 % (k=64)",
        rule="1 - CCT(X) / CCT(Y) in mean CCT (+- 2 SEM, the delta method) for X = Ofan and 4Ofan and Y = AR and "
        f"REPS; {ALL}",
        decisions=(D("reduction", "1 - CCT(X) / CCT(Y), X = Ofan, 4Ofan and Y = AR, REPS", ">=", 11, "%"),),
        experiments=("fig10",),
        check=r.c_fig10,
    ),
    Claim(
        cid="C20",
        section="Sec. 6.4, Fig. 11",
        statement="Mixing 4Ofan with AR on half the LB switches only lowers the CCT, and every "
        "mix is slightly above the midpoint of all-AR and all-4Ofan.",
        paper="below AR; above the midpoint (7.3 %)",
        rule=f"each mix's mean CCT increase +- 2 SEM below all-AR's and above the midpoint of all-AR and all-4Ofan; {ALL}",
        decisions=(
            D("below_ar", "all-AR's minus each mix's CCT increase", ">=", 0, PTS),
            D("above_mid", "each mix's CCT increase minus the midpoint", ">=", 0, PTS),
        ),
        experiments=("fig11",),
        check=r.c_fig11_mixes,
    ),
    Claim(
        cid="C21",
        section="Sec. 6.5, Fig. 12(a)",
        statement="With DCTCP, REPS's and AR's CCTs are multiplied by 3-4x while Ofan's "
        "and 4Ofan's increase stays under 1 %.",
        paper="3-4x; < 1 %",
        rule=f"a 4 MB permutation with DCTCP, mean CCT increase +- 2 SEM: Ofan's and 4Ofan's low, REPS's and AR's CCT "
        f"at least twice the bound; {ALL}",
        decisions=(
            D("ofan", "Ofan's and 4Ofan's CCT increase", "<=", 1, "%"),
            D("others", "REPS's and AR's CCT over the bound", ">=", 2, "x"),
        ),
        experiments=("fig12",),
        check=r.c_fig12_dctcp,
    ),
    Claim(
        cid="C22",
        section="Sec. 6.5, Fig. 12",
        statement="With NSCC, REPS and AR are worse than Ofan and 4Ofan by at least 8 %.",
        paper=">= 8 points",
        rule=f"each of REPS's and AR's minus each of Ofan's and 4Ofan's mean CCT increase +- 2 SEM with NSCC; {ALL}",
        decisions=(D("gap", "REPS's and AR's minus Ofan's and 4Ofan's CCT increase (each pair)", ">=", 8, PTS),),
        experiments=("fig12",),
        check=r.c_fig12("nscc"),
    ),
    Claim(
        cid="C23",
        section="Sec. 6.5, Fig. 12",
        statement="With MSwift, REPS and AR are worse than Ofan and 4Ofan by at least 14 %.",
        paper=">= 14 points",
        rule=f"as C22 with Swift; {ALL}",
        decisions=(D("gap", "REPS's and AR's minus Ofan's and 4Ofan's CCT increase (each pair)", ">=", 14, PTS),),
        experiments=("fig12",),
        check=r.c_fig12("swift"),
    ),
    Claim(
        cid="C24",
        section="Sec. 6.6, Fig. 13(a, b)",
        statement="MoE dispatch without congestion control: the bottleneck is the "
        "receivers, their buffers grow large (beyond 100 MB), and LB matters little, Ofan a bit better; skew "
        "1.48x, 1.13x with EPLB.",
        paper="> 100 MB at the receivers; small LB effect",
        rule="for both skews, over every run +- 2 SEM: the receivers' largest queue (E->H) above every other stage's "
        "largest and a large share of the bound in packet times; the schemes' mean CCTs close (the highest "
        f"interval over the lowest); Ofan's no more than 2 % above AR's and REPS's; {ALL}",
        decisions=(
            D("lead", "the receivers' largest queue minus the largest other stage's, each skew", ">=", 0, "packets"),
            D("share", "the receivers' largest queue over the bound in packet times, each skew", ">=", 10, "%"),
            D("spread", "the schemes' CCT spread (highest mean over lowest, minus 1), each skew", "<=", 10, "%"),
            D("ofan", "Ofan's CCT over AR's and over REPS's, each skew", "<=", 1.02, "x"),
        ),
        experiments=("fig13",),
        check=r.c_fig13_receivers,
    ),
    Claim(
        cid="C25",
        section="Sec. 6.7, Fig. 14",
        statement="FSDP2 on Llama-3 405B: Ofan (4Ofan) cuts the CCT increase by 16x (15x) "
        "with NSCC and 39x (36x) with MSwift against the best of AR and REPS.",
        paper="16x, 39x",
        rule="with NSCC and with Swift, each of AR's and REPS's mean CCT increase over each of Ofan's and 4Ofan's "
        f"(+- 2 SEM, the delta method), at least a quarter of the paper's smallest factor; {ALL}",
        decisions=(D("factor", "AR's and REPS's over Ofan's and 4Ofan's CCT increase, NSCC and Swift", ">=", 4, "x"),),
        experiments=("fig14",),
        check=r.c_fig14_factor,
    ),
    Claim(
        cid="C26",
        section="Sec. 4.1",
        statement="At k=64 an edge switch needs 4K pointers (about 2.5 KB), an aggregation switch 126 "
        "(79 B), plus 20 B for the basis.",
        paper="2.5 KB, 79 B, 20 B",
        rule=f"the testbed's pointer counts x ceil(log2 w) bits (exact), within 5 % (2 B for the aggregation switch); {ALL}",
        decisions=(
            D("edge", "pointers per edge switch", "within", (2.375, 2.625), "KB"),
            D("agg", "pointers per aggregation switch", "within", (77, 81), "B"),
            D("basis", "the basis", "within", (19.5, 20.5), "B"),
        ),
        experiments=(),
        check=r.c_memory,
    ),
    Claim(
        cid="C27",
        section="Sec. 6, 6.5",
        statement="The propagation RTT is about 150 packets; 1 MB is 1.7 RTTs and 4 MB 6.8.",
        paper="150; 1.7; 6.8",
        rule=f"the testbed's time base (exact), each within 10 %; {ALL}",
        decisions=(
            D("rtt", "the inter-pod propagation RTT", "within", (135, 165), "packet times"),
            D("m1", "1 MB in RTTs", "within", (1.53, 1.87), "RTTs"),
            D("m4", "4 MB in RTTs", "within", (6.12, 7.48), "RTTs"),
        ),
        experiments=(),
        check=r.c_rtt,
    ),
    Claim(
        cid="C28",
        section="Sec. 6.4, Fig. 11",
        statement="Edge switches are the best place to deploy 4Ofan among AR switches.",
        paper="edge best",
        rule=f"each other mix's minus the edge mix's mean CCT increase +- 2 SEM; {ALL}",
        decisions=(D("edge_best", "each other mix's minus the edge mix's CCT increase", ">=", 0, PTS),),
        experiments=("fig11",),
        check=r.c_fig11_edge,
    ),
    Claim(
        cid="C29",
        section="Sec. 6.6, Fig. 13(c, d)",
        statement="MoE dispatch with NSCC: Ofan outperforms AR and REPS, by more with the smaller skew (EPLB).",
        paper="Ofan best; larger gap with EPLB",
        rule="with NSCC, AR's and REPS's minus Ofan's mean CCT increase +- 2 SEM above 0 for both skews, and the "
        f"better of the two gaps (the lower interval) larger with EPLB; {ALL}",
        decisions=(
            D("ofan_best", "AR's and REPS's minus Ofan's CCT increase with NSCC, each skew", ">=", 0, PTS),
            D("eplb_larger", "the better of AR and REPS minus Ofan, with EPLB minus without", ">=", 0, PTS),
        ),
        experiments=("fig13",),
        check=r.c_fig13_nscc,
    ),
    Claim(
        cid="C30",
        section="Sec. 6.7, Fig. 14",
        statement="As the model grows, Ofan's relative CCT increase drops while AR's and REPS's stay about constant.",
        paper="Ofan falls with model size",
        rule="with NSCC, Ofan's mean CCT increase +- 2 SEM lower at 405B than at 8B, and its ratio 405B / 8B (the "
        f"delta method) below AR's and below REPS's; {ALL}",
        decisions=(
            D("ofan_falls", "Ofan's CCT increase at 8B minus at 405B", ">=", 0, PTS),
            D("ratio_below", "AR's and REPS's ratio 405B / 8B minus Ofan's", ">=", 0, "x"),
        ),
        experiments=("fig14m",),
        check=r.c_fig14_models,
    ),
    Claim(
        cid="C31",
        section="App. F.4, Fig. 18",
        statement="Ofan's average queue per switch layer follows the ND/D/1 model: the edge "
        "uplinks well, the layers beyond more loosely.",
        paper="edge model holds; others approximate",
        rule="Ofan in an inter-pod permutation (fig17's runs, the paper's same conditions), each layer's mean queue "
        "over the sending window (Thm. 1-2's q(m)) +- 2 SEM at every k placed in a band around the model with the "
        "server the kernel has (a token bucket of 2 frames; the paper's server's means reported beside) (-1 and +1 "
        "its ends): the edge uplinks' band the "
        "model +- max(25 %, 0.1 packets), every other layer's from the lower of model / 3 and model - 0.25 "
        f"packets to the higher of 3 x model and model + 0.25; {ALL}",
        decisions=(
            D("edge", "the edge uplinks' mean queue in its band, at each k", "within", (-1, 1), "bands"),
            D("others", "every other layer's mean queue in its band, at each k", "within", (-1, 1), "bands"),
        ),
        experiments=("fig17",),
        check=r.c_fig18_model,
        seeds=FIG17_SEEDS,
    ),
    Claim(
        cid="C32",
        section="Sec. 1, Fig. 1(b)",
        statement="At load 1 REPS's and AR's queues grow large (and grow with the load) while Ofan's stay small.",
        paper="REPS, AR queues grow significantly; Ofan's much smaller",
        rule="the mean largest queue +- 2 SEM (the delta method for ratios): REPS's and AR's at load 1 at least twice "
        f"Ofan's, and larger at load 1 than at 0.8; {ALL}",
        decisions=(
            D("over_ofan", "REPS's and AR's largest queue at load 1 over Ofan's", ">=", 2, "x"),
            D("grows", "REPS's and AR's largest queue at load 1 minus at 0.8", ">=", 0, "packets"),
        ),
        experiments=("fig1",),
        check=r.c_fig1_queues,
    ),
    Claim(
        cid="C33",
        section="Sec. 1, Fig. 1(c)",
        statement="REPS's and AR's CCTs improve less than Ofan's beyond load 0.9.",
        paper="REPS, AR saturate",
        rule="each scheme's mean CCT at load 1 over its CCT at load 0.8 (the delta method; 0.8 if the CCT fell with "
        f"the load): REPS's and AR's minus Ofan's above 0; {ALL}",
        decisions=(D("improves_less", "REPS's and AR's CCT ratio (load 1 / 0.8) minus Ofan's", ">=", 0, "x"),),
        experiments=("fig1",),
        check=r.c_fig1_cct,
    ),
    Claim(
        cid="C34",
        section="Sec. 3, Table 1",
        statement="Simple RR and JSQ: the uplink queues stay Theta(1) while the downlink queues grow as Theta(m).",
        paper="q_up Theta(1), q_down Theta(m)",
        rule="for RR and JSQ, the exponent against m (fig4's sizes, least squares, 95 % interval) of the largest "
        "uplink queue (E->A, A->C) and of the largest downlink queue (C->A, A->E, E->H), a queue of 0 counted as 1 "
        f"packet: uplinks low, downlinks high; {ALL}",
        decisions=(
            D("up", "the uplinks' exponent, RR and JSQ", "<=", 0.3),
            D("down", "the downlinks' exponent, RR and JSQ", ">=", 0.7),
        ),
        experiments=("fig4",),
        check=r.c_table1_rr_jsq,
    ),
    Claim(
        cid="C35",
        section="Sec. 3, Table 1, Thm. 1",
        statement="RPS (RSQ): both the uplink and the downlink queues grow as Theta(sqrt m).",
        paper="q_up, q_down Theta(sqrt m)",
        rule=f"RPS's uplink and downlink exponents as C34, each with its 95 % interval; {ALL}",
        decisions=(D("both", "RPS's uplink and downlink exponents", "within", (0.3, 0.7)),),
        experiments=("fig4",),
        check=r.c_table1_rps,
    ),
    Claim(
        cid="C36",
        section="Sec. 6.1, Fig. 5(a)",
        statement="The gap between 4Ofan and Ofan remains small as the network grows.",
        paper="reasonably small",
        rule="4Ofan's minus Ofan's mean CCT increase +- 2 SEM at every k, below 3 points (the paper's smallest gap "
        f"to the existing schemes is 5 %); {ALL}",
        decisions=(D("small", "4Ofan's minus Ofan's CCT increase, at each k", "<=", 3, PTS),),
        experiments=("fig5",),
        check=r.c_fig5_4ofan,
    ),
    Claim(
        cid="C37",
        section="Sec. 6.1, Fig. 5(b, c)",
        statement="In an all-to-all the schemes keep their order: Ofan and 4Ofan below REPS and AR.",
        paper="same ordering as the permutation",
        rule=f"an all-to-all of 64 KB per flow, each of AR's and REPS's minus each of Ofan's and 4Ofan's mean CCT "
        f"increase +- 2 SEM at every k; {ALL}",
        decisions=(D("order", "AR's and REPS's minus Ofan's and 4Ofan's CCT increase, at each k", ">=", 0, PTS),),
        experiments=("fig5ata",),
        check=r.c_fig5_alltoall,
    ),
    Claim(
        cid="C38",
        section="Sec. 6.1, Fig. 6",
        statement="As the network grows the gap between pOfan and Ofan expands, but moderately.",
        paper="expands moderately",
        rule="for 1Ofan, 2Ofan and 4Ofan, mean CCT increase +- 2 SEM: the gap to Ofan larger at the largest k than "
        "at the smallest (expands), and each still below DRB at the largest k (moderately: a per-input pointer "
        f"beats a per-host one); {ALL}",
        decisions=(
            D("expands", "pOfan's gap to Ofan at the largest k minus at the smallest", ">=", 0, PTS),
            D("moderate", "DRB's minus pOfan's CCT increase at the largest k", ">=", 0, PTS),
        ),
        experiments=("fig6",),
        check=r.c_fig6_moderate,
    ),
    Claim(
        cid="C39",
        section="Sec. 6.1, Fig. 8(b), Thm. 6",
        statement="With a queue growing as sqrt(m) (spraying), the optimal packet size grows only as D^(1/3), "
        "against sqrt(D) with Ofan's constant queue.",
        paper="Theta(D^1/3) vs Theta(sqrt D)",
        rule="Thm. 6's cost D (P + H) / P + alpha (P + H) minimised numerically for D from 1 MB to 1 GB (the model, "
        f"exact): the exponent of the optimal payload with alpha = sqrt(D / P) and with alpha constant; {ALL}",
        decisions=(
            D("spraying", "the optimal payload's exponent, a sqrt(m) queue", "within", (0.32, 0.35)),
            D("ofan", "the optimal payload's exponent, a constant queue", "within", (0.49, 0.51)),
        ),
        experiments=(),
        check=r.c_fig8_cube_root,
    ),
    Claim(
        cid="C40",
        section="Sec. 6.5, Fig. 12",
        statement="The gap between REPS or AR and Ofan is a bit larger with MSwift than with NSCC.",
        paper="larger with MSwift",
        rule="the least of REPS's and AR's minus Ofan's and 4Ofan's mean CCT increase (+- 2 SEM), with Swift minus "
        "with NSCC",
        decisions=(D("larger", "the least gap with Swift minus with NSCC", ">=", 0, PTS),),
        experiments=("fig12",),
        check=r.c_fig12_swift_larger,
    ),
    Claim(
        cid="C41",
        section="Sec. 6.6, Fig. 13",
        statement="With w = 4 (k=8) Ofan and 4Ofan are equivalent.",
        paper="equivalent",
        rule="Ofan's minus 4Ofan's mean CCT increase +- 2 SEM for each skew, without a CCA and with NSCC, within 1 "
        f"point (at the quick scale's k=4, w = 2 and a pipe of 4 covers every port as well); {ALL}",
        decisions=(D("same", "Ofan's minus 4Ofan's CCT increase, each skew and CCA", "within", (-1, 1), PTS),),
        experiments=("fig13",),
        check=r.c_fig13_equivalent,
    ),
    Claim(
        cid="C42",
        section="Sec. 6.7, Fig. 14",
        statement="As the model grows, REPS's and AR's relative CCT increase stays about constant.",
        paper="about constant",
        rule="with NSCC, AR's and REPS's mean CCT increase at 405B over at 8B (the delta method), within a factor of "
        f"2; {ALL}",
        decisions=(D("constant", "AR's and REPS's CCT increase, 405B / 8B", "within", (0.5, 2.0), "x"),),
        experiments=("fig14m",),
        check=r.c_fig14_constant,
    ),
    Claim(
        cid="C43",
        section="App. F.5",
        statement="A first pointer at the shortest queue, then an unshuffled round robin, improves the CCT slightly "
        "(without failures).",
        paper="slightly better CCT",
        rule="pending",
        needs="an Ofan variant whose first pointer picks the shortest queue at a collective's first packet and then "
        "cycles unshuffled; the paper itself does not evaluate it further",
    ),
    Claim(
        cid="C44",
        section="Sec. 6.1, Fig. 7(a)",
        statement="REPS's loss at very large messages comes from its freezing mode (the paper's conjecture).",
        paper="freezing, conjectured",
        rule="REPS with NSCC (timeouts need a transport), a 16 MB permutation, freezing on and off: the mean CCT "
        "increase with freezing minus without +- 2 SEM above 0; not comparable if no connection froze",
        decisions=(D("freezing_costs", "REPS's CCT increase with freezing minus without", ">=", 0, PTS),),
        experiments=("fig7f",),
        check=r.c_fig7_freeze,
    ),
    Claim(
        cid="C45",
        section="Beyond the paper",
        statement="Under random link failures, hosts paced at rho_max, weighted Ofan is never worse than AR, REPS "
        "or Ofan, and better than Ofan wherever the even split cannot carry rho_max (this project's own claim, "
        "docs/schemes.md).",
        paper="- (not in the paper)",
        rule="paired by failure set (fig9's and fig9w's cells of one seed share their failure set, permutation and "
        "ACKs), at every failure probability > 0: AR's, REPS's and Ofan's minus weighted Ofan's CCT increase over "
        "the fault-free bound in every set above -1 point (the worst set, exact), and Ofan's minus weighted "
        f"Ofan's in every set where the even split's rate is below rho_max above 0; {ALL}",
        decisions=(
            D("within", "AR's, REPS's and Ofan's minus wofan's CCT increase, each failure probability", ">=", -1, PTS),
            D("short", "Ofan's minus wofan's where the even split falls short of rho_max", ">=", 0, PTS),
        ),
        experiments=("fig9", "fig9w"),
        check=r.c_wofan_failures,
    ),
)


def claims() -> list[Claim]:
    """Every claim, in the order of their ids."""
    return sorted(CLAIMS, key=lambda c: int(c.cid[1:]))


def select(names: str | None) -> list[Claim]:
    """The claims asked for (comma-separated ids, case-insensitive), all by default; a RunError names an unknown
    one."""
    every = claims()
    if not names:
        return every
    by_id = {c.cid.lower(): c for c in every}
    want = [n.strip().lower() for n in names.split(",") if n.strip()]
    unknown = [n for n in want if n not in by_id]
    if unknown:
        raise RunError(f"unknown claim {unknown[0]!r} (one of {', '.join(c.cid for c in every)})")
    return [by_id[n] for n in dict.fromkeys(want)]


def needed(selected: list[Claim]) -> list[str]:
    """The experiments the selected claims read, in order, each once."""
    return list(dict.fromkeys(n for c in selected for n in c.experiments))


def matrices(scale: str, propagation: str, selected: list[Claim], rate_factor: float = 1.0) -> dict[str, Matrix]:
    """The matrix of every experiment the selected claims read, at `scale`, with the check's propagation and
    rate factor."""
    if scale not in SCALES:
        raise RunError(f"--scale must be one of {', '.join(SCALES)}, got {scale!r}")
    ex = experiments()
    return {n: ex[n].matrix(scale).replace(propagation=propagation, rate_factor=rate_factor) for n in needed(selected)}
