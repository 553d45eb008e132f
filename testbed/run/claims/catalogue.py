"""The claims check's catalogue, as data: the experiments (a sweep matrix per scale, shared by every claim
that reads it) and the paper's claims, each with its section, statement, the paper's number, the rule that
decides its verdict (testbed.measure.claim_rules) and every experiment whose runs that rule reads."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from ...measure import claim_rules as r
from ...measure.claim_rules import KB, MB, MIXES, Data, Outcome
from ..params import RunError
from ..sweep import Matrix, matrix

SCALES = ("quick", "paper")
# Every fabric of the claims' experiments runs at this fraction of its auto rate by default: a check runs for
# hours unattended, and the packet budget's own rates were at the edge of validity on some days here (k=8 at
# 9.3 Mbit/s: 0 of 4 Ofan runs valid on 2026-12-04; at 6 Mbit/s, 3 of 4; k=12 at 1.1 of 1.5 Mbit/s, 3 of 3).
# Those were the budget of 2026-12-03; the budget re-measured on a slow day (2026-12-07) is lower (k=8:
# 5.4 Mbit/s, k=12: 1.3 Mbit/s), and this factor was kept on top of it (not re-measured)
RATE_FACTOR = 0.75


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
    rule: str  # what decides "agrees", in words (the code is `check`)
    experiments: tuple[str, ...] = ()  # every experiment (DESIGNS' names) whose runs `check` reads; () for a
    # claim computed from the testbed's own definitions
    check: Callable[[Data], Outcome] | None = None
    needs: str = ""  # pending: what it needs

    @property
    def experiment(self) -> str | None:
        """The experiments it reads as one text (claims.json's and claims.md's "experiment"); None: none."""
        return ", ".join(self.experiments) or None


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
        "fig6",
        "pOfan variants and DRB against the network size (Fig. 6)",
        POFANS,
        {"k": (4, 8), "seed": (1, 2)},
        {"k": (4, 8, 12), "seed": (1, 2)},
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
        "fig10",
        "the two-level fat tree (Fig. 10)",
        MAIN,
        {"topology": "leafspine", "k": (16,), "seed": (1, 2)},
        {"topology": "leafspine", "k": (64,), "seed": (1,)},
    ),
    Design(
        "fig12",
        "congestion control: DCTCP, NSCC and Swift, a 4 MB permutation, 800 KB buffers (Fig. 12)",
        MAIN,
        {"size": (4 * MB,), "cc": CCS, "seed": (1,)},
        {"size": (4 * MB,), "cc": CCS, "k": (12,), "seed": (1,)},
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
        {"workload": ("fsdp",), "size": (1533 * 4096,), "cc": ("nscc", "swift"), "gpus_per_server": 4, "seed": (1,)},
        {"workload": ("fsdp",), "size": (1533 * 4096,), "cc": ("nscc", "swift"), "k": (8,), "steps": 8, "seed": (1,)},
    ),
    Design(
        "fig14m",
        "FSDP2's chained backward pass per model: 8B and 405B, Ofan, AR and REPS with NSCC (Fig. 14)",
        ("ar", "reps", "ofan"),
        {"workload": ("fsdp",), "size": FSDP_SIZES, "cc": ("nscc",), "gpus_per_server": 4, "seed": (1,)},
        {"workload": ("fsdp",), "size": FSDP_SIZES, "cc": ("nscc",), "k": (8,), "steps": 8, "seed": (1,)},
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
CLAIMS: tuple[Claim, ...] = (
    Claim(
        cid="C1",
        section="Sec. 1, Fig. 1(a)",
        statement="At load 1 (1 MB permutation, no congestion control) REPS and AR saturate "
        "below 95 % utilisation while Ofan reaches about 99 %.",
        paper="REPS, AR < 95 %; Ofan about 99 %",
        rule="Ofan's mean utilisation at load 1 >= 97 % and REPS's and AR's < 95 %",
        experiments=("fig1",),
        check=r.c_fig1_utilisation,
    ),
    Claim(
        cid="C2",
        section="Sec. 1, Fig. 1(a)",
        statement="Below load 0.9 every scheme keeps up with the load (utilisation on the diagonal).",
        paper="utilisation = load up to 0.9",
        rule="at load 0.8 every scheme's mean utilisation is within 3 points of 80 %",
        experiments=("fig1",),
        check=r.c_fig1_load,
    ),
    Claim(
        cid="C3",
        section="Sec. 3.2, Fig. 3",
        statement="Simple RR and JSQ balance both uplink stages almost perfectly and collapse on both downlink stages.",
        paper="near 0 up, large down",
        rule="for RR and JSQ: worst overload of E->A and A->C <= 10 %, and each of C->A and A->E >= 3x that and >= 10 %",
        experiments=("fig3",),
        check=r.c_fig3_rr_jsq,
    ),
    Claim(
        cid="C4",
        section="Sec. 3.2, Fig. 3",
        statement="Only the destination-aware schemes are near-flat across all four stages.",
        paper="Ofan, 4Ofan, DRB, Ethereal near 0 at every stage",
        rule="the worst stage of every destination-aware scheme <= 10 % < the worst stage of every destination-"
        "oblivious one (RR, JSQ, Choice, DRILL, RPS, AR)",
        experiments=("fig3",),
        check=r.c_fig3_aware,
    ),
    Claim(
        cid="C5",
        section="Sec. 3.2, Fig. 3",
        statement="Ethereal achieves ideal balance.",
        paper="0 at every stage",
        rule="Ethereal's worst overload at every stage <= 2 %",
        experiments=("fig3",),
        check=r.c_fig3_ethereal,
    ),
    Claim(
        cid="C6",
        section="Sec. 3.3-3.5, Fig. 4(b), Thm. 2",
        statement="Simple RR, JSQ and CONGA: the largest queue grows nearly linearly with the message size.",
        paper="Theta(m)",
        rule="each one's exponent of the largest queue against m (least squares, 256 KB-4 MB) >= 0.7",
        experiments=("fig4",),
        check=r.c_fig4_linear,
    ),
    Claim(
        cid="C7",
        section="Sec. 3.3-3.5, Fig. 4(b), Thm. 1",
        statement="RPS (RSQ), REPS and AR: the largest queue grows about as the square root of the message size.",
        paper="Theta(sqrt m)",
        rule="each one's exponent in [0.3, 0.7)",
        experiments=("fig4",),
        check=r.c_fig4_sqrt,
    ),
    Claim(
        cid="C8",
        section="Sec. 3.4-5.1, Fig. 4(b), Thms. 3-5",
        statement="Ethereal, DRB, 4Ofan and Ofan: the largest queue does not grow with the message size.",
        paper="O(1)",
        rule="each one's exponent < 0.3",
        experiments=("fig4",),
        check=r.c_fig4_flat,
    ),
    Claim(
        cid="C9",
        section="App. F.4",
        statement="Ofan's edge-uplink queue never exceeds w + 1 packets, whatever the message size.",
        paper="<= w + 1 (exact)",
        rule="the largest edge-uplink queue of every valid Ofan run without ACKs or failures <= k/2 + 1",
        experiments=("fig3", "fig6", "fig17"),
        check=r.c_f4_edge_bound,
    ),
    Claim(
        cid="C10",
        section="App. F.2",
        statement="For w = 6 the XOR-and-add mapping yields 30 distinct cyclic port orders, against 6 with additions alone.",
        paper="30 vs 6",
        rule="the testbed's basis gives >= 30 distinct cyclic orders; the addition alone gives w = 6 orders",
        experiments=(),
        check=r.c_f2_orders,
    ),
    Claim(
        cid="C11",
        section="App. F.3, Fig. 17",
        statement="The ratio of DRB's largest queue to Ofan's grows with the network size.",
        paper="growing ratio",
        rule="DRB/Ofan (means) at the largest k > at the smallest k, and > 1",
        experiments=("fig17",),
        check=r.c_f3_ratio,
    ),
    Claim(
        cid="C12",
        section="Sec. 4.2",
        statement="DRB is balanced for large messages but worse for small ones, which Ofan's consolidated pointers avoid.",
        paper="DRB worse at small m",
        rule="DRB's CCT increase at 256 KB > at 4 MB, and above Ofan's at 256 KB by more than one SEM",
        experiments=("fig4",),
        check=r.c_drb_small,
    ),
    Claim(
        cid="C13",
        section="Sec. 6.1, Fig. 5(a)",
        statement="The CCT gap between 4Ofan and the existing schemes grows with the network size.",
        paper="about 5 % at 16 hosts to 11 % at 1,024",
        rule="(best of AR and REPS) - 4Ofan > 0 at every k, and larger at the largest k than at the smallest",
        experiments=("fig5",),
        check=r.c_fig5_gap,
    ),
    Claim(
        cid="C14",
        section="Sec. 6.1, Fig. 6",
        statement="1Ofan against DRB recovers roughly half the CCT gap between DRB and Ofan "
        "(consolidation at the aggregation switches).",
        paper="about 1/2",
        rule="(DRB - 1Ofan) / (DRB - Ofan) at the largest k in [0.25, 0.75]; not comparable if DRB - Ofan <= 2 SEM",
        experiments=("fig6",),
        check=r.c_fig6_half,
    ),
    Claim(
        cid="C15",
        section="Sec. 6.1, Fig. 7",
        statement="The CCT gap between REPS or AR and Ofan falls like 1/sqrt(m).",
        paper="exponent -1/2",
        rule="the exponent of (X - Ofan) in CCT increase against m in [-0.8, -0.2] for X = AR and "
        "REPS (and every gap > 0)",
        experiments=("fig4",),
        check=r.c_fig7_sqrt,
    ),
    Claim(
        cid="C16",
        section="Sec. 6.1, Fig. 7(a)",
        statement="REPS gets notably worse at very large messages, conjectured to be its freezing mode.",
        paper="REPS worst at large m",
        rule="if REPS froze in the congestion-control runs: REPS's CCT increase > AR's under every CCA; else not "
        "comparable",
        experiments=("fig12",),
        check=r.c_fig7_reps,
    ),
    Claim(
        cid="C17",
        section="Sec. 4.2, 6.1, Fig. 8, Thm. 6",
        statement="Ofan's CCT has a sweet spot in the packet size, where P - H = sqrt((H / alpha) D).",
        paper="interior optimum near the model's",
        rule="the payload of least CCT is neither the smallest nor the largest tried, and the model's P - H (alpha "
        "from the 4 KB runs) is within 2x of it",
        experiments=("fig8",),
        check=r.c_fig8_sweet,
    ),
    Claim(
        cid="C18",
        section="Sec. 6.2, Fig. 9",
        statement="Under random link failures, hosts paced at rho_max, Ofan keeps outperforming REPS and AR.",
        paper="Ofan lowest",
        rule="at every failure probability > 0, Ofan's mean CCT increase over the fault-free bound < REPS's and AR's",
        experiments=("fig9",),
        check=r.c_fig9_failures,
    ),
    Claim(
        cid="C19",
        section="Sec. 6.3, Fig. 10",
        statement="On a two-level fat tree Ofan and 4Ofan reduce the CCT by over 11 % against REPS and AR.",
        paper="> 11 % (k=64)",
        rule="1 - CCT(X) / min(CCT(AR), CCT(REPS)) >= 11 % for X = Ofan and 4Ofan",
        experiments=("fig10",),
        check=r.c_fig10,
    ),
    Claim(
        cid="C20",
        section="Sec. 6.4, Fig. 11",
        statement="Mixing 4Ofan with AR on half the LB switches only lowers the CCT, and every "
        "mix is slightly above the midpoint of all-AR and all-4Ofan.",
        paper="below AR; above the midpoint (7.3 %)",
        rule="every mix's mean CCT increase < all-AR's, and >= the midpoint minus its SEM",
        experiments=("fig11",),
        check=r.c_fig11_mixes,
    ),
    Claim(
        cid="C21",
        section="Sec. 6.5, Fig. 12(a)",
        statement="With DCTCP, REPS's and AR's CCTs are multiplied by 3-4x while Ofan's "
        "and 4Ofan's increase stays under 1 %.",
        paper="3-4x; < 1 %",
        rule="Ofan and 4Ofan < 1 %, REPS and AR >= 2x the bound (a 4 MB permutation)",
        experiments=("fig12",),
        check=r.c_fig12("dctcp", 0),
    ),
    Claim(
        cid="C22",
        section="Sec. 6.5, Fig. 12",
        statement="With NSCC, REPS and AR are worse than Ofan and 4Ofan by at least 8 %.",
        paper=">= 8 points",
        rule="min(REPS, AR) - max(Ofan, 4Ofan) in CCT increase >= 8 points",
        experiments=("fig12",),
        check=r.c_fig12("nscc", 0.08),
    ),
    Claim(
        cid="C23",
        section="Sec. 6.5, Fig. 12",
        statement="With MSwift, REPS and AR are worse than Ofan and 4Ofan by at least 14 %.",
        paper=">= 14 points",
        rule="min(REPS, AR) - max(Ofan, 4Ofan) in CCT increase >= 14 points (swift)",
        experiments=("fig12",),
        check=r.c_fig12("swift", 0.14),
    ),
    Claim(
        cid="C24",
        section="Sec. 6.6, Fig. 13(a, b)",
        statement="MoE dispatch without congestion control: the bottleneck is the "
        "receivers, their buffers grow large (beyond 100 MB), and LB matters little, Ofan a bit better; skew "
        "1.48x, 1.13x with EPLB.",
        paper="> 100 MB at the receivers; small LB effect",
        rule="for both skews: the largest queue at the receivers' links (E->H) is the largest of any stage and >= "
        "10 % of the bound in packet times; the schemes' mean CCTs within 10 % of each other; Ofan's <= 1.02 x "
        "the better of AR and REPS",
        experiments=("fig13",),
        check=r.c_fig13_receivers,
    ),
    Claim(
        cid="C25",
        section="Sec. 6.7, Fig. 14",
        statement="FSDP2 on Llama-3 405B: Ofan (4Ofan) cuts the CCT increase by 16x (15x) "
        "with NSCC and 39x (36x) with MSwift against the best of AR and REPS.",
        paper="16x, 39x",
        rule="with NSCC and with Swift, the better of AR and REPS over Ofan's and over 4Ofan's CCT increase >= 4x "
        "(a quarter of the paper's smallest factor)",
        experiments=("fig14",),
        check=r.c_fig14_factor,
    ),
    Claim(
        cid="C26",
        section="Sec. 4.1",
        statement="At k=64 an edge switch needs 4K pointers (about 2.5 KB), an aggregation switch 126 "
        "(79 B), plus 20 B for the basis.",
        paper="2.5 KB, 79 B, 20 B",
        rule="the testbed's pointer count x ceil(log2 w) bits within 5 % (2 B for the aggregation switch)",
        experiments=(),
        check=r.c_memory,
    ),
    Claim(
        cid="C27",
        section="Sec. 6, 6.5",
        statement="The propagation RTT is about 150 packets; 1 MB is 1.7 RTTs and 4 MB 6.8.",
        paper="150; 1.7; 6.8",
        rule="the testbed's time base within 10 % of each",
        experiments=(),
        check=r.c_rtt,
    ),
    Claim(
        cid="C28",
        section="Sec. 6.4, Fig. 11",
        statement="Edge switches are the best place to deploy 4Ofan among AR switches.",
        paper="edge best",
        rule="of the four mixes, 4Ofan at every edge switch has the lowest mean CCT increase",
        experiments=("fig11",),
        check=r.c_fig11_edge,
    ),
    Claim(
        cid="C29",
        section="Sec. 6.6, Fig. 13(c, d)",
        statement="MoE dispatch with NSCC: Ofan outperforms AR and REPS, by more with the smaller skew (EPLB).",
        paper="Ofan best; larger gap with EPLB",
        rule="with NSCC, the better of AR and REPS minus Ofan in CCT increase > 0 for both skews, and larger with EPLB",
        experiments=("fig13",),
        check=r.c_fig13_nscc,
    ),
    Claim(
        cid="C30",
        section="Sec. 6.7, Fig. 14",
        statement="As the model grows, Ofan's relative CCT increase drops while AR's and REPS's stay about constant.",
        paper="Ofan falls with model size",
        rule="with NSCC, Ofan's CCT increase at 405B < at 8B, and its ratio 405B / 8B below AR's and REPS's",
        experiments=("fig14m",),
        check=r.c_fig14_models,
    ),
    Claim(
        cid="C31",
        section="App. F.4, Fig. 18",
        statement="Ofan's average queue per switch layer follows the ND/D/1 model: the edge "
        "uplinks well, the layers beyond more loosely.",
        paper="edge model holds; others approximate",
        rule="Ofan in an inter-pod permutation (fig17's runs): the edge uplinks' mean queue within 25 % (or 0.1 "
        "packets) of the model at every k, every other layer within 3x (or 0.25 packets) of it",
        experiments=("fig17",),
        check=r.c_fig18_model,
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
