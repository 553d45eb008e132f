"""The rules of the paper's claims (testbed.run.claims): pure functions of a sweep's rows to measured intervals,
and the decision that turns intervals into a verdict.

A rule reads the valid runs (the fidelity verdict of each: testbed.measure.fidelity) of the experiments its
claim names and measures the quantities the claim compares, each as an Interval: a mean +- 2 SEM over the
valid seeds, a growth exponent's 95 % interval (testbed.measure.sweep_stats), or an exact number for what is
computed from the testbed's own definitions. A quantity has one member or several (a scheme, a k, a pair of
schemes): every member is compared. What it is compared with, the comparison and its margin, is the claim's
Decision, written in the catalogue (testbed.run.claims.catalogue) before any run, not here.

`judge` decides: a member agrees only when its whole interval lies on the margin's side (the margin itself
included), disagrees only when the whole interval lies on the other side, and is "not decided" when its interval
holds the margin. A claim agrees when every member of every decision agrees, disagrees when any member is
decided the wrong way, and is not decided otherwise. A rule may also say "no data" or "not comparable" (with
why) instead of measuring. The rules read rows only (results.parquet, as testbed.run.sweep writes them), the
testbed's own definitions and the paper's models (testbed.measure.queue_model), never a fabric; they are not
tuned to results. Claims that the paper states at its scale (800 Gbit/s, k=12) are checked as ratios, orderings
or growth classes, never as absolute times.

Interval arithmetic: a difference or ratio of two measured means (independent runs) is a Stat, its SEM in
quadrature (a ratio's by the delta method, unbounded when the denominator's interval reaches 0); the lowest or
highest of several intervals, and a difference or ratio of such derived intervals, is taken endpoint by endpoint
(conservative: it is at least as wide as the 2-SEM intervals it is made of).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from traffic.packet import ACK_FRAME_BYTES, DEFAULT_PAYLOAD, WIRE_EXTRA

from ..models import decisions
from ..topology import FatTree
from ..topology.timebase import PAPER_LINK_DELAY_PKTS, PAPER_WIRE_FRAME_BYTES
from . import queue_model
from .sweep_stats import growth

KB, MB = 1024, 1 << 20
AGREES, DISAGREES, NOT_DECIDED = "agrees", "disagrees", "not decided"
NOT_COMPARABLE, PENDING, NO_DATA = "not comparable", "pending", "no data"
VERDICTS = (AGREES, DISAGREES, NOT_DECIDED, NOT_COMPARABLE, PENDING, NO_DATA)
Z = 2.0  # an interval is the mean +- Z SEM
STAGES_UP = ("edge_agg", "agg_core")
STAGES_DOWN = ("core_agg", "agg_edge")
STAGE_NAMES = {"edge_agg": "E->A", "agg_core": "A->C", "core_agg": "C->A", "agg_edge": "A->E"}
# the schemes' groups the rules compare (scheme labels, as the rows' cell_label)
FIG3_AWARE = ("ofan", "4ofan", "drb", "ethereal")
FIG3_OBLIVIOUS = ("rr", "jsq", "choice", "drill", "rps", "ar")
CLASS_LINEAR = ("rr", "jsq", "conga")
CLASS_SQRT = ("rps", "reps", "ar")
CLASS_FLAT = ("ethereal", "drb", "4ofan", "ofan")
MIXES = ("none", "random:0.5", "pods:0.5", "agg", "edge")  # Fig. 11: all of one scheme, and the four mixes
MIXED = MIXES[1:]
MOE = ("ar", "reps", "ofan", "4ofan")
POFANS = ("drb", "1ofan", "2ofan", "4ofan", "ofan")  # Fig. 6's labels, DRB first and Ofan last
LARGE = (4 * MB, 16 * MB)  # C16: a large and a very large message (Fig. 7(a))
F2_W, F2_DRAWS, F2_SEED = 6, 400, 0xF2  # C10: w, the random bases drawn and their seed


@dataclass(frozen=True)
class Stat:
    """A mean over valid runs, its standard error and how many runs."""

    mean: float
    sem: float
    n: int

    @property
    def ok(self) -> bool:
        return self.n > 0 and not math.isnan(self.mean)


@dataclass(frozen=True)
class Interval:
    """A measured quantity: its estimate and the interval it is judged on. [-inf, inf] when its spread is not
    measured (one valid run: no SEM)."""

    value: float
    lo: float
    hi: float
    sem: float | None = None  # the SEM it came from, when it came from one

    @classmethod
    def of(cls, s: Stat, scale: float = 1.0) -> Interval:
        """mean +- 2 SEM, times `scale` (> 0, a change of unit)."""
        if s.n < 2 or not math.isfinite(s.mean) or math.isnan(s.sem):
            return cls(scale * s.mean, -math.inf, math.inf)
        return cls(scale * s.mean, scale * (s.mean - Z * s.sem), scale * (s.mean + Z * s.sem), scale * s.sem)

    @classmethod
    def exact(cls, v: float) -> Interval:
        """A number computed, not sampled: no spread."""
        return cls(v, v, v, 0.0)

    @classmethod
    def whole(cls, value: float = math.nan) -> Interval:
        return cls(value, -math.inf, math.inf)

    def times(self, k: float) -> Interval:
        """k x the interval (k >= 0)."""
        return Interval(k * self.value, k * self.lo, k * self.hi, None if self.sem is None else k * self.sem)

    def plus(self, c: float) -> Interval:
        return Interval(self.value + c, self.lo + c, self.hi + c, self.sem)

    def crosses(self, m: float) -> bool:
        """Whether `m` lies strictly inside."""
        return self.lo < m < self.hi


Comparison = Literal[">=", "<=", "within"]
Margin = float | tuple[float, float]


@dataclass(frozen=True, kw_only=True)
class Decision:
    """How one quantity of a claim is decided: every member the rule measures for `name` compared with `margin`
    (">=" and "<=": one number; "within": a closed range (lo, hi)), in `unit`."""

    name: str  # the rule's name for the quantity
    quantity: str  # what is compared, in words
    comparison: Comparison
    margin: Margin
    unit: str = ""

    def __post_init__(self) -> None:
        ranged = isinstance(self.margin, tuple)
        if ranged != (self.comparison == "within"):
            raise ValueError(f"{self.name}: 'within' takes a range (lo, hi), '>=' and '<=' one number")
        if isinstance(self.margin, tuple) and not self.margin[0] <= self.margin[1]:
            raise ValueError(f"{self.name}: a range from its lower end to its upper end")

    def judge(self, i: Interval) -> str:
        """agrees: the whole interval on the margin's side (the margin included); disagrees: the whole interval on
        the other side; not decided: the interval holds the margin (or is not a number)."""
        lo, hi = i.lo, i.hi
        if math.isnan(lo) or math.isnan(hi):
            return NOT_DECIDED
        if isinstance(self.margin, tuple):
            a, b = self.margin
            return AGREES if a <= lo and hi <= b else DISAGREES if hi < a or lo > b else NOT_DECIDED
        m = self.margin
        if self.comparison == ">=":
            return AGREES if lo >= m else DISAGREES if hi < m else NOT_DECIDED
        return AGREES if hi <= m else DISAGREES if lo > m else NOT_DECIDED

    def slack(self, i: Interval) -> float:
        """How far the interval lies inside the agreeing side (negative: it reaches beyond the margin)."""
        if isinstance(self.margin, tuple):
            return min(i.lo - self.margin[0], self.margin[1] - i.hi)
        return i.lo - self.margin if self.comparison == ">=" else self.margin - i.hi

    def text(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        if isinstance(self.margin, tuple):
            return f"within [{self.margin[0]:g}, {self.margin[1]:g}]{unit}"
        return f"{self.comparison} {self.margin:g}{unit}"


@dataclass(frozen=True)
class Outcome:
    """What a rule measured: for each quantity (a Decision's name), each member's interval; or, with `verdict`
    set ("no data", "not comparable"), why it measured nothing."""

    measured: Mapping[str, Mapping[str, Interval]]
    detail: str  # every figure the rule looked at
    notes: str = ""  # said with any verdict
    caveat: str = ""  # said when it disagrees or is not decided: what differs here from the paper
    verdict: str = ""


@dataclass(frozen=True)
class Part:
    """One member of one decision, judged."""

    decision: Decision
    member: str
    interval: Interval
    verdict: str


@dataclass(frozen=True)
class Judgement:
    verdict: str
    parts: tuple[Part, ...] = ()

    @property
    def deciding(self) -> Part | None:
        """The part a one-line summary shows: the first decided the wrong way, or the first not decided, or (all
        agreeing) the one nearest its margin for its interval's width."""
        for v in (DISAGREES, NOT_DECIDED):
            for p in self.parts:
                if p.verdict == v:
                    return p
        if not self.parts:
            return None

        def nearness(p: Part) -> float:
            width = p.interval.hi - p.interval.lo
            s = p.decision.slack(p.interval)
            return s / width if width > 0 else (math.inf if s > 0 else 0.0)

        return min(self.parts, key=nearness)


def judge(decisions_: Sequence[Decision], o: Outcome) -> Judgement:
    """The claim's verdict from its decisions and its rule's outcome: agrees when every member of every decision
    agrees, disagrees when any is decided the wrong way, not decided otherwise; a rule's own verdict ("no data",
    "not comparable") stands. A decision the rule measured nothing for is "no data"."""
    if o.verdict:
        return Judgement(o.verdict)
    parts: list[Part] = []
    for dec in decisions_:
        members = o.measured.get(dec.name) or {}
        if not members:
            return Judgement(NO_DATA, tuple(parts))
        parts += [Part(dec, m, i, dec.judge(i)) for m, i in members.items()]
    verdicts = {p.verdict for p in parts}
    v = DISAGREES if DISAGREES in verdicts else AGREES if verdicts == {AGREES} else NOT_DECIDED
    return Judgement(v, tuple(parts))


@dataclass
class Data:
    """What a claim's rule reads: the rows (results.parquet) of the experiments it names, and the scale."""

    scale: str
    rows: dict[str, pd.DataFrame] = field(default_factory=dict)

    def of(self, name: str) -> pd.DataFrame:
        return self.rows.get(name, pd.DataFrame())


# -- arithmetic over rows -----------------------------------------------------------------
def valid(rows: pd.DataFrame) -> pd.DataFrame:
    if rows.empty:
        return rows
    return rows[rows["fidelity_valid"].astype(bool)]


def stat_of(x: Iterable[float]) -> Stat:
    """Mean, SEM and count of some numbers (SEM 0 from one: Interval.of takes it as unmeasured)."""
    a = np.asarray(list(x), dtype=float)
    n = len(a)
    if n == 0:
        return Stat(math.nan, math.nan, 0)
    return Stat(float(a.mean()), float(a.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0, n)


def stat(rows: pd.DataFrame, metric: str, **eq: Any) -> Stat:
    """Mean, SEM and count of `metric` over the valid rows whose columns equal `eq`."""
    d = valid(rows)
    for k, v in eq.items():
        if d.empty:
            break
        d = d[d[k] == v]
    return stat_of(d[metric].astype(float)) if not d.empty else Stat(math.nan, math.nan, 0)


def diff(a: Stat, b: Stat) -> Stat:
    """a - b, the SEMs added in quadrature."""
    return Stat(a.mean - b.mean, math.hypot(a.sem, b.sem), min(a.n, b.n))


def ratio(a: Stat, b: Stat) -> Stat:
    """a / b, its SEM by the delta method (independent means); an infinite SEM when b's interval reaches 0."""
    n = min(a.n, b.n)
    if b.mean == 0 or not math.isfinite(b.mean):
        return Stat(math.nan, math.inf, n)
    r = a.mean / b.mean
    if abs(b.mean) <= Z * b.sem:
        return Stat(r, math.inf, n)
    return Stat(r, math.hypot(a.sem, r * b.sem) / abs(b.mean), n)


def iv(s: Stat, scale: float = 1.0) -> Interval:
    return Interval.of(s, scale)


def lowest(*xs: Interval) -> Interval:
    """The lowest of several quantities."""
    return Interval(min(x.value for x in xs), min(x.lo for x in xs), min(x.hi for x in xs))


def highest(*xs: Interval) -> Interval:
    """The highest of several quantities."""
    return Interval(max(x.value for x in xs), max(x.lo for x in xs), max(x.hi for x in xs))


def minus(a: Interval, b: Interval) -> Interval:
    """a - b, endpoint by endpoint."""
    return Interval(a.value - b.value, a.lo - b.hi, a.hi - b.lo)


def over(a: Interval, b: Interval) -> Interval:
    """a / b, endpoint by endpoint; unbounded when b's interval reaches 0."""
    value = a.value / b.value if b.value else math.nan
    if not b.lo > 0:
        return Interval.whole(value)
    ends = [x / y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    return Interval(value, min(ends), max(ends))


def exponent(x: Sequence[float], y: Sequence[float]) -> Interval:
    """The least-squares slope of log y on log x, with its 95 % interval (Student's t); unbounded from fewer
    than three points (two fix a line, not its error)."""
    from scipy import stats

    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    if len(lx) < 2 or len(set(lx.tolist())) < 2:
        return Interval.whole()
    fit = stats.linregress(lx, ly)
    if len(lx) < 3:
        return Interval.whole(float(fit.slope))
    err = float(fit.stderr) if math.isfinite(float(fit.stderr)) else 0.0
    t = float(stats.t.ppf(0.975, len(lx) - 2))
    return Interval(float(fit.slope), float(fit.slope) - t * err, float(fit.slope) + t * err, err)


def median_interval(values: Sequence[float]) -> Interval:
    """The median of draws and its distribution-free 95 % interval (the order statistics n/2 -+ 0.98 sqrt n)."""
    v = sorted(values)
    n = len(v)
    j = max(0, math.floor(n / 2 - 0.98 * math.sqrt(n)) - 1)
    k = min(n - 1, math.ceil(n / 2 + 0.98 * math.sqrt(n)) - 1)
    return Interval(float(np.median(v)), float(v[j]), float(v[k]))


def pct(s: Stat) -> str:
    return f"{100 * s.mean:.2f} +- {100 * s.sem:.2f} %" if s.ok else "no valid run"


def no_data(what: str) -> Outcome:
    return Outcome({}, f"no valid run of {what}", verdict=NO_DATA)


def ks(rows: pd.DataFrame) -> list[int]:
    """The fabric sizes with a valid run, in order."""
    v = valid(rows)
    return sorted(int(k) for k in v["k"].unique()) if not v.empty else []


# -- the rules -------------------------------------------------------------------------------
def sending_utilisation(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with each run's utilisation over its sending window (Fig. 1(a)'s, the drain left out) as its
    "utilisation"; a run made before that was measured keeps its whole window's."""
    if rows.empty or "utilisation_sending" not in rows:
        return rows
    return rows.assign(utilisation=rows["utilisation_sending"].fillna(rows["utilisation"]))


def c_fig1_utilisation(d: Data) -> Outcome:
    rows = sending_utilisation(d.of("fig1"))
    u = {s: stat(rows, "utilisation", cell_label=s, load=1.0) for s in ("ofan", "reps", "ar")}
    if not all(v.ok for v in u.values()):
        return no_data("fig1 at load 1.0")
    return Outcome(
        {"ofan": {"ofan": iv(u["ofan"], 100)}, "others": {s: iv(u[s], 100) for s in ("reps", "ar")}},
        ", ".join(f"{s} {pct(v)}" for s, v in u.items()),
        caveat="utilisation here is delivered bytes over the receivers' capacity while every source sends (the "
        "drain left out, as Fig. 1(a)'s maximum utilisation implies; propagation left out, as the paper's ~99 % for "
        "Ofan implies)",
    )


def c_fig1_load(d: Data) -> Outcome:
    rows = sending_utilisation(d.of("fig1"))
    u = {s: stat(rows, "utilisation", cell_label=s, load=0.8) for s in ("ofan", "reps", "ar")}
    if not all(v.ok for v in u.values()):
        return no_data("fig1 at load 0.8")
    return Outcome(
        {"utilisation": {s: iv(v, 100) for s, v in u.items()}}, ", ".join(f"{s} {pct(v)}" for s, v in u.items())
    )


def _overload(rows: pd.DataFrame, label: str) -> dict[str, Stat]:
    return {st: stat(rows, f"overload_{st}", cell_label=label) for st in STAGES_UP + STAGES_DOWN}


def _stages(o: dict[str, Stat]) -> str:
    return ", ".join(f"{STAGE_NAMES[st]} {pct(v)}" for st, v in o.items())


def c_fig3_rr_jsq(d: Data) -> Outcome:
    rows = d.of("fig3")
    up: dict[str, Interval] = {}
    down: dict[str, Interval] = {}
    over_up: dict[str, Interval] = {}
    parts = []
    for s in ("rr", "jsq"):
        o = _overload(rows, s)
        if not all(v.ok for v in o.values()):
            return no_data(f"fig3 {s}")
        up[s] = highest(*(iv(o[st], 100) for st in STAGES_UP))
        for st in STAGES_DOWN:
            down[f"{s} {STAGE_NAMES[st]}"] = iv(o[st], 100)
            over_up[f"{s} {STAGE_NAMES[st]}"] = minus(iv(o[st], 100), up[s].times(3))
        parts.append(f"{s}: {_stages(o)}")
    return Outcome({"up": up, "down": down, "down_over_up": over_up}, "; ".join(parts))


def c_fig3_aware(d: Data) -> Outcome:
    rows = d.of("fig3")
    worst: dict[str, Interval] = {}
    for s in FIG3_AWARE + FIG3_OBLIVIOUS:
        o = _overload(rows, s)
        if not all(v.ok for v in o.values()):
            return no_data(f"fig3 {s}")
        worst[s] = highest(*(iv(v, 100) for v in o.values()))
    detail = "worst stage: " + ", ".join(f"{s} {v.value:.1f} %" for s, v in worst.items())
    return Outcome(
        {"aware": {s: worst[s] for s in FIG3_AWARE}, "oblivious": {s: worst[s] for s in FIG3_OBLIVIOUS}}, detail
    )


def c_fig3_ethereal(d: Data) -> Outcome:
    o = _overload(d.of("fig3"), "ethereal")
    if not all(v.ok for v in o.values()):
        return no_data("fig3 ethereal")
    return Outcome({"worst": {"ethereal": highest(*(iv(v, 100) for v in o.values()))}}, _stages(o))


def _class(d: Data, labels: tuple[str, ...]) -> Outcome:
    rows = d.of("fig4")
    g = {s: growth(rows, "max_queue_pkts", s) for s in labels}
    missing = [s for s, v in g.items() if v is None]
    if missing:
        return no_data("fig4 at every size for " + ", ".join(missing))
    out = {}
    for s, v in g.items():
        if v is not None:
            lo, hi = v.ci95
            out[s] = Interval.whole(v.exponent) if math.isnan(lo) or math.isnan(hi) else Interval(v.exponent, lo, hi)
    detail = ", ".join(f"{s} {v.value:.2f} [{v.lo:.2f}, {v.hi:.2f}]" for s, v in out.items())
    return Outcome({"exponent": out}, "largest queue ~ m^exponent: " + detail)


def c_fig4_linear(d: Data) -> Outcome:
    return _class(d, CLASS_LINEAR)


def c_fig4_sqrt(d: Data) -> Outcome:
    return _class(d, CLASS_SQRT)


def c_fig4_flat(d: Data) -> Outcome:
    return _class(d, CLASS_FLAT)


def c_f4_edge_bound(d: Data) -> Outcome:
    worst: dict[int, tuple[int, int]] = {}  # k: (largest queue, w + 1)
    for name in ("fig3", "fig6", "fig17"):
        v = valid(d.of(name))
        if v.empty:
            continue
        v = v[(v["cell_label"] == "ofan") & (v["cell_failure"] == 0)]
        for k, g in v.groupby("k"):
            q = max(int(g["queue_edge_agg_max_pkts"].max()), worst.get(int(k), (0, 0))[0])
            worst[int(k)] = (q, int(k) // 2 + 1)
    if not worst:
        return no_data("Ofan without ACKs (fig3, fig6, fig17)")
    return Outcome(
        {"excess": {f"k={k}": Interval.exact(float(q - b)) for k, (q, b) in sorted(worst.items())}},
        ", ".join(f"k={k}: largest {q} packets, w + 1 = {b}" for k, (q, b) in sorted(worst.items())),
        caveat="the kernel's queue counts a packet until the far end's program sees it",
    )


def f2_orders(basis: Sequence[int]) -> tuple[int, int]:
    """Distinct cyclic orders of the data plane's port mapping (testbed.models.decisions.ofan_port) with this
    basis: over every pointer id (the XOR with id1 and the addition of id2), and over the ids whose id1 is 0
    (the addition alone)."""
    w = len(basis)
    b = decisions.b_bits(w)
    every = {decisions.canonical_cycle(decisions.ofan_order(pid, basis)) for pid in range((1 << b) * w)}
    adds = {decisions.canonical_cycle(decisions.ofan_order(j << b, basis)) for j in range(w)}
    return len(every), len(adds)


def c_f2_orders(d: Data) -> Outcome:
    rng = random.Random(F2_SEED)
    draws = []
    for _ in range(F2_DRAWS):
        basis = list(range(F2_W))
        rng.shuffle(basis)
        draws.append(f2_orders(basis))
    xor, add = median_interval([x for x, _ in draws]), median_interval([a for _, a in draws])
    own = decisions.choose_basis(F2_W)
    own_xor, own_add = f2_orders(own)

    def dist(v: list[int]) -> str:
        return f"min {min(v)}, median {np.median(v):g}, max {max(v)}"

    return Outcome(
        {"xor": {"median of the random bases": xor}, "addition": {"median of the random bases": add}},
        f"{F2_DRAWS} bases drawn at random (seed {F2_SEED:#x}), distinct cyclic orders: XOR and addition "
        f"{dist([x for x, _ in draws])}; the addition alone {dist([a for _, a in draws])}. The data plane's "
        f"basis {list(own)} (decisions.choose_basis: the most orders of 256 candidates), apart: {own_xor} and "
        f"{own_add}",
    )


def c_f3_ratio(d: Data) -> Outcome:
    rows = d.of("fig17")
    ratios: dict[int, Stat] = {}
    parts = []
    for k in ks(rows):
        a, b = stat(rows, "max_queue_pkts", cell_label="drb", k=k), stat(rows, "max_queue_pkts", cell_label="ofan", k=k)
        if a.ok and b.ok:
            ratios[k] = ratio(a, b)
            parts.append(f"k={k}: DRB {a.mean:.1f}, Ofan {b.mean:.1f} ({a.n} runs), ratio {ratios[k].mean:.2f}")
    if len(ratios) < 2:
        return no_data("fig17 at two sizes")
    small, large = min(ratios), max(ratios)
    return Outcome(
        {
            "growth": {f"k={large} - k={small}": iv(diff(ratios[large], ratios[small]))},
            "ratio": {f"k={large}": iv(ratios[large])},
        },
        ", ".join(parts),
    )


def c_drb_small(d: Data) -> Outcome:
    rows = d.of("fig4")
    small, large = (
        stat(rows, "cct_increase", cell_label="drb", size_bytes=256 * KB),
        stat(rows, "cct_increase", cell_label="drb", size_bytes=4 * MB),
    )
    ofan = stat(rows, "cct_increase", cell_label="ofan", size_bytes=256 * KB)
    if not (small.ok and large.ok and ofan.ok):
        return no_data("fig4 drb and ofan at 256 KB and 4 MB")
    return Outcome(
        {
            "small_vs_large": {"DRB 256 KB - 4 MB": iv(diff(small, large), 100)},
            "vs_ofan": {"DRB - Ofan at 256 KB": iv(diff(small, ofan), 100)},
        },
        f"DRB {pct(small)} at 256 KB, {pct(large)} at 4 MB; Ofan {pct(ofan)} at 256 KB",
    )


def c_fig5_gap(d: Data) -> Outcome:
    rows = d.of("fig5")
    gaps: dict[str, Interval] = {}
    best: dict[int, Interval] = {}
    for k in ks(rows):
        ar, reps, p4 = (stat(rows, "cct_increase", cell_label=s, k=k) for s in ("ar", "reps", "4ofan"))
        if ar.ok and reps.ok and p4.ok:
            g = {s: iv(diff(x, p4), 100) for s, x in (("AR", ar), ("REPS", reps))}
            gaps |= {f"k={k}: {s} - 4Ofan": v for s, v in g.items()}
            best[k] = lowest(*g.values())
    if len(best) < 2:
        return no_data("fig5 at two sizes")
    small, large = min(best), max(best)
    detail = ", ".join(
        f"k={k} ({FatTree(k).n_hosts} hosts): {g.value:.2f} [{g.lo:.2f}, {g.hi:.2f}] points" for k, g in best.items()
    )
    return Outcome(
        {"gap": gaps, "growth": {f"k={large} - k={small}": minus(best[large], best[small])}},
        "best of AR and REPS minus 4Ofan: " + detail,
    )


def _share(drb: Stat, one: Stat, ofan: Stat) -> Interval:
    """(DRB - 1Ofan) / (DRB - Ofan), its SEM by the delta method over the three independent means."""
    gap, got = drb.mean - ofan.mean, drb.mean - one.mean
    r = got / gap
    sem = math.sqrt(
        (one.sem / gap) ** 2 + ((one.mean - ofan.mean) * drb.sem / gap**2) ** 2 + (got * ofan.sem / gap**2) ** 2
    )
    return iv(Stat(r, sem, min(drb.n, one.n, ofan.n)))


def c_fig6_half(d: Data) -> Outcome:
    rows = d.of("fig6")
    if valid(rows).empty:
        return no_data("fig6")
    k = ks(rows)[-1]
    drb, one, ofan = (stat(rows, "cct_increase", cell_label=s, k=k) for s in ("drb", "1ofan", "ofan"))
    if not (drb.ok and one.ok and ofan.ok):
        return no_data(f"fig6 at k={k}")
    gap = iv(diff(drb, ofan))
    detail = f"k={k}: DRB {pct(drb)}, 1Ofan {pct(one)}, Ofan {pct(ofan)}"
    if gap.hi <= 0:
        return Outcome(
            {}, detail, "DRB is not above Ofan here (its whole interval): no gap to share", verdict=NOT_COMPARABLE
        )
    share = _share(drb, one, ofan) if gap.lo > 0 else Interval.whole(ratio(diff(drb, one), diff(drb, ofan)).mean)
    return Outcome(
        {"share": {f"k={k}": share}},
        detail,
        "" if gap.lo > 0 else "DRB - Ofan holds 0 in its interval: the share has no bound yet",
    )


def _paired_gaps(rows: pd.DataFrame, label: str, sizes: Sequence[int]) -> tuple[list[float], list[float]]:
    """(size, label's minus Ofan's CCT increase) of every seed with a valid run of both at that size, the gap > 0
    (a logarithm is taken)."""
    v = valid(rows)
    xs, ys = [], []
    for m in sizes:
        a = v[(v["cell_label"] == label) & (v["size_bytes"] == m)].set_index("seed")["cct_increase"]
        b = v[(v["cell_label"] == "ofan") & (v["size_bytes"] == m)].set_index("seed")["cct_increase"]
        for seed in a.index.intersection(b.index):
            g = float(a[seed]) - float(b[seed])
            if g > 0:
                xs.append(float(m))
                ys.append(g)
    return xs, ys


def c_fig7_sqrt(d: Data) -> Outcome:
    rows = d.of("fig4")
    sizes = (256 * KB, MB, 4 * MB)
    gaps: dict[str, Interval] = {}
    slopes: dict[str, Interval] = {}
    parts = []
    for s in ("ar", "reps"):
        g = {
            m: diff(
                stat(rows, "cct_increase", cell_label=s, size_bytes=m),
                stat(rows, "cct_increase", cell_label="ofan", size_bytes=m),
            )
            for m in sizes
        }
        if not all(x.ok for x in g.values()):
            return no_data(f"fig4 {s} and ofan at every size")
        gaps |= {f"{s} - ofan at {m // KB} KB": iv(x, 100) for m, x in g.items()}
        slopes[s] = exponent(*_paired_gaps(rows, s, sizes))
        parts.append(
            f"{s} - Ofan: {', '.join(f'{100 * x.mean:.2f}' for x in g.values())} points, exponent of the paired "
            f"runs' gap {slopes[s].value:.2f} [{slopes[s].lo:.2f}, {slopes[s].hi:.2f}]"
        )
    return Outcome({"gaps": gaps, "exponent": slopes}, "; ".join(parts))


def c_fig7_reps(d: Data) -> Outcome:
    rows = d.of("fig7r")
    st = {(s, m): stat(rows, "cct_increase", cell_label=s, size_bytes=m) for s in ("reps", "ar") for m in LARGE}
    if not all(v.ok for v in st.values()):
        return no_data("fig7r (REPS and AR at 4 and 16 MB)")
    big, mid = LARGE[-1], LARGE[0]
    return Outcome(
        {
            "worse_than_ar": {"16 MB": iv(diff(st[("reps", big)], st[("ar", big)]), 100)},
            "worse_with_m": {
                "REPS's gap to AR, 16 MB - 4 MB": iv(
                    diff(diff(st[("reps", big)], st[("ar", big)]), diff(st[("reps", mid)], st[("ar", mid)])), 100
                )
            },
        },
        ", ".join(f"{s} {pct(v)} at {m // MB} MB" for (s, m), v in st.items()),
        "without congestion control no packet is lost here (unlimited buffers), so no REPS connection can time "
        "out and freeze in these runs: C44 tries the conjecture with NSCC",
    )


def c_fig7_freeze(d: Data) -> Outcome:
    rows = valid(d.of("fig7f"))
    if rows.empty or "cell_reps_freeze" not in rows:
        return no_data("fig7f")
    on, off = (stat(rows, "cct_increase", cell_reps_freeze=v) for v in (True, False))
    if not (on.ok and off.ok):
        return no_data("fig7f with freezing on and off")
    froze = rows[rows["cell_reps_freeze"].astype(bool)]
    freezes = int(froze["host_lb_freezes"].sum()) if "host_lb_freezes" in froze else 0
    detail = f"REPS with NSCC, 16 MB: freezing on {pct(on)} ({freezes} connections frozen), off {pct(off)}"
    if not freezes:
        return Outcome({}, detail, "no REPS connection timed out, so freezing never triggered", verdict=NOT_COMPARABLE)
    return Outcome({"freezing_costs": {"on - off": iv(diff(on, off), 100)}}, detail)


def _fig8_model(rows: pd.DataFrame) -> tuple[Stat, float, int]:
    """Appendix G's model: queueing of alpha packets of the run's size, headers of H bytes each, P - H =
    sqrt((H / alpha) D); alpha from the 4 KB runs' increase over their bound, in packet times. (alpha, H, D)"""
    v = valid(rows)
    v4 = v[v["cell_payload"] == 4096]
    t_pkt = PAPER_WIRE_FRAME_BYTES * 8 / v4["rate_bps"].astype(float)
    alpha = stat_of((v4["cct_s"] - v4["cct_lower_bound_s"]) / t_pkt)
    return alpha, PAPER_WIRE_FRAME_BYTES - 4096, int(v["size_bytes"].iloc[0])  # H 82: headers and gap on the wire


def c_fig8_sweet(d: Data) -> Outcome:
    rows = d.of("fig8")
    pays = sorted(int(p) for p in valid(rows)["cell_payload"].unique()) if not valid(rows).empty else []
    ccts = {p: s for p in pays if (s := stat(rows, "cct_s", cell_payload=p)).ok}
    if len(ccts) < 3 or 4096 not in ccts:
        return no_data("fig8 at three payloads including 4096")
    ps = sorted(ccts)
    inner = min(ps[1:-1], key=lambda p: ccts[p].mean)
    best = min(ps, key=lambda p: ccts[p].mean)
    alpha, h, message = _fig8_model(rows)
    a = iv(alpha)

    def model(x: float) -> float:
        return math.sqrt(h / x * message) if x > 0 else math.inf

    # the payloads that may be the best: each one whose interval reaches below the least upper end
    top = min(iv(s).hi for s in ccts.values())
    cands = [p for p in ps if iv(ccts[p]).lo <= top]
    fit = Interval(model(alpha.mean) / best, model(a.hi) / max(cands), model(a.lo) / min(cands))
    return Outcome(
        {
            "interior": {f"{e} B - {inner} B": iv(diff(ccts[e], ccts[inner]), 1e3) for e in (ps[0], ps[-1])},
            "model": {f"model over {best} B": fit},
        },
        ", ".join(f"{p} B: {1e3 * s.mean:.1f} ms" for p, s in ccts.items())
        + f"; best {best} B (may be: {', '.join(map(str, cands))} B); model alpha {alpha.mean:.2f} packets, P - H = "
        f"{model(alpha.mean):.0f} B",
        caveat="a TBF with tokens forwards a frame without its serialisation time at each hop, so larger packets "
        "cost less here than with store-and-forward switches (htsim's): the optimum moves up",
    )


RHO_READINGS = (("fig9", "rho_max (the LP)"), ("fig9e", "rho_even"))  # Fig. 9's two readings of rho_max


def c_fig9_failures(d: Data) -> Outcome:
    gaps: dict[str, Interval] = {}
    parts = []
    every = {name: d.of(name) for name, _ in RHO_READINGS}  # both read, whatever the first holds
    for name, reading in RHO_READINGS:
        rows = every[name]
        v = valid(rows)
        ps = sorted(float(p) for p in v["cell_failure"].unique() if p > 0) if not v.empty else []
        if not ps:
            return no_data(f"{name} with failures")
        for p in ps:
            st = {
                s: stat(rows, "cct_increase_fault_free", cell_label=s, cell_failure=p) for s in ("ofan", "reps", "ar")
            }
            if not all(x.ok for x in st.values()):
                return no_data(f"{name} at p={p}")
            gaps |= {f"{reading}, p={p:g}: {s} - ofan": iv(diff(st[s], st["ofan"]), 100) for s in ("reps", "ar")}
            parts.append(f"{reading}, p={p:g}: " + ", ".join(f"{s} {pct(x)}" for s, x in st.items()))
    return Outcome(
        {"ofan_lowest": gaps},
        "; ".join(parts),
        caveat="hosts paced at each reading of rho_max: the LP's optimum (which may split a destination unevenly, "
        "which Ofan's even rotation cannot follow) and rho_even (the rate at which an even split over each "
        "switch's valid uplinks keeps every link within capacity)",
    )


def c_wofan_failures(d: Data) -> Outcome:
    """Paired by failure set (a cell's seed draws its failure set and permutation, the same in fig9 and fig9w):
    each scheme's minus wofan's CCT increase over the fault-free bound in its worst set; and Ofan's minus
    wofan's in the worst of the sets where the even split carries less than rho_max. Exact (a minimum over
    sets, each one run): a mean over failure sets mixes sets where every split carries rho_max (differences
    of a few tenths of a point) with sets where one does not (tens of points), and its interval says nothing."""
    base, mine = valid(d.of("fig9")), valid(d.of("fig9w"))
    ps = sorted(float(p) for p in mine["cell_failure"].unique() if p > 0) if not mine.empty else []
    if not ps or base.empty:
        return no_data("fig9 and fig9w with failures")
    within: dict[str, Interval] = {}
    short: dict[str, Interval] = {}
    parts = []
    for p in ps:
        w = mine[mine["cell_failure"] == p].set_index("seed")
        for s in ("ar", "reps", "ofan"):
            x = base[(base["cell_failure"] == p) & (base["cell_label"] == s)].set_index("seed")
            both = x.index.intersection(w.index)
            diffs = x.loc[both, "cct_increase_fault_free"] - w.loc[both, "cct_increase_fault_free"]
            if len(diffs):
                within[f"p={p:g}: {s} - wofan, worst set"] = Interval.exact(100 * float(diffs.min()))
            if s == "ofan":
                cut = [seed for seed in both if w.loc[seed, "rho_even"] < w.loc[seed, "rho_max"] - 1e-9]
                if cut:
                    short[f"p={p:g}: ofan - wofan, worst of {len(cut)} short sets"] = Interval.exact(
                        100 * float(diffs.loc[cut].min())
                    )
        parts.append(
            f"p={p:g}: wofan {pct(stat_of(w['cct_increase_fault_free']))} over {len(w)} sets, "
            + ", ".join(
                f"{s} {pct(stat(base, 'cct_increase_fault_free', cell_label=s, cell_failure=p))}"
                for s in ("ar", "reps", "ofan")
            )
        )
    return Outcome({"within": within, "short": short} if short else {"within": within}, "; ".join(parts))


def c_fig10(d: Data) -> Outcome:
    rows = d.of("fig10")
    cct = {s: stat(rows, "cct_s", cell_label=s) for s in ("ar", "reps", "ofan", "4ofan")}
    if not all(v.ok for v in cct.values()):
        return no_data("fig10")
    hundred = Interval.exact(100.0)
    red = {
        f"{x} vs {y}": minus(hundred, iv(ratio(cct[x], cct[y]), 100)) for x in ("ofan", "4ofan") for y in ("ar", "reps")
    }
    return Outcome(
        {"reduction": red},
        ", ".join(f"{s} {1e3 * v.mean:.1f} ms" for s, v in cct.items()),
        caveat="the paper's fabric is k=64 (2,048 hosts); the quick scale runs k=16",
    )


def c_fig12_dctcp(d: Data) -> Outcome:
    rows = d.of("fig12")
    st = {s: stat(rows, "cct_increase", cell_label=s, cell_cc="dctcp") for s in ("ar", "reps", "ofan", "4ofan")}
    if not all(v.ok for v in st.values()):
        return no_data("fig12 with dctcp")
    return Outcome(
        {
            "ofan": {s: iv(st[s], 100) for s in ("ofan", "4ofan")},
            "others": {s: iv(st[s]).plus(1) for s in ("reps", "ar")},
        },
        ", ".join(f"{s} {pct(v)}" for s, v in st.items()),
    )


def c_fig12(cc: str) -> Callable[[Data], Outcome]:
    def check(d: Data) -> Outcome:
        rows = d.of("fig12")
        st = {s: stat(rows, "cct_increase", cell_label=s, cell_cc=cc) for s in ("ar", "reps", "ofan", "4ofan")}
        if not all(v.ok for v in st.values()):
            return no_data(f"fig12 with {cc}")
        gaps = {f"{y} - {x}": iv(diff(st[y], st[x]), 100) for y in ("reps", "ar") for x in ("ofan", "4ofan")}
        return Outcome(
            {"gap": gaps},
            ", ".join(f"{s} {pct(v)}" for s, v in st.items()),
            "" if cc != "swift" else "the paper's MSwift is this testbed's swift",
        )

    return check


def _mixes(d: Data) -> tuple[Stat, Stat, dict[str, Stat]] | None:
    rows = d.of("fig11")
    ar, p4 = (
        stat(rows, "cct_increase", cell_label="ar", cell_mix="none"),
        stat(rows, "cct_increase", cell_label="4ofan", cell_mix="none"),
    )
    mixes = {m: stat(rows, "cct_increase", cell_label="4ofan", cell_mix=m) for m in MIXED}
    if not (ar.ok and p4.ok and all(v.ok for v in mixes.values())):
        return None
    return ar, p4, mixes


def _mix_detail(ar: Stat, p4: Stat, mixes: dict[str, Stat]) -> str:
    return f"all AR {pct(ar)}, all 4Ofan {pct(p4)}, midpoint {100 * (ar.mean + p4.mean) / 2:.2f} %; " + ", ".join(
        f"{m} {pct(v)}" for m, v in mixes.items()
    )


def c_fig11_mixes(d: Data) -> Outcome:
    got = _mixes(d)
    if got is None:
        return no_data("fig11 (all AR, all 4Ofan and the four mixes)")
    ar, p4, mixes = got
    mid = Stat((ar.mean + p4.mean) / 2, math.hypot(ar.sem, p4.sem) / 2, min(ar.n, p4.n))
    return Outcome(
        {
            "below_ar": {f"AR - {m}": iv(diff(ar, v), 100) for m, v in mixes.items()},
            "above_mid": {f"{m} - midpoint": iv(diff(v, mid), 100) for m, v in mixes.items()},
        },
        _mix_detail(ar, p4, mixes),
    )


def c_fig11_edge(d: Data) -> Outcome:
    got = _mixes(d)
    if got is None:
        return no_data("fig11 (all AR, all 4Ofan and the four mixes)")
    ar, p4, mixes = got
    return Outcome(
        {"edge_best": {f"{m} - edge": iv(diff(v, mixes["edge"]), 100) for m, v in mixes.items() if m != "edge"}},
        _mix_detail(ar, p4, mixes),
    )


def _receivers(sub: pd.DataFrame) -> tuple[Stat, Stat]:
    """Per run: the receivers' largest queue (E->H) minus the largest of any other stage, in packets; and over
    the bound in packet times."""
    others = sub[[f"queue_{st}_max_pkts" for st in STAGES_UP + STAGES_DOWN]].max(axis=1)
    t_pkt = (sub["cell_payload"] + 58 + 24) * 8 / sub["rate_bps"]  # one frame's line time
    share = sub["queue_edge_host_max_pkts"] / (sub["cct_lower_bound_s"] / t_pkt)
    return stat_of(sub["queue_edge_host_max_pkts"] - others), stat_of(share)


def c_fig13_receivers(d: Data) -> Outcome:
    rows = valid(d.of("fig13"))
    if rows.empty:
        return no_data("fig13")
    m: dict[str, dict[str, Interval]] = {"lead": {}, "share": {}, "spread": {}, "ofan": {}}
    parts = []
    for wl in ("moe", "moe-eplb"):
        sub = rows[(rows["cell_workload"] == wl) & (rows["cell_cc"] == "none")]
        if sub.empty or not all((sub["cell_label"] == s).any() for s in MOE):
            return no_data(f"fig13 {wl} without a CCA for every scheme")
        lead, share = _receivers(sub)
        cct = {s: stat(sub, "cct_s", cell_label=s) for s in MOE}
        ivs = [iv(v) for v in cct.values()]
        spread = over(highest(*ivs), lowest(*ivs)).plus(-1).times(100)
        m["lead"][wl], m["share"][wl] = iv(lead), iv(share, 100)
        m["spread"][wl] = Interval(spread.value, max(0.0, spread.lo), spread.hi)
        m["ofan"] |= {f"{wl}: ofan / {y}": iv(ratio(cct["ofan"], cct[y])) for y in ("ar", "reps")}
        parts.append(
            f"{wl}: the receivers' largest queue {lead.mean:+.0f} packets over the other stages', {100 * share.mean:.0f} "
            f"% of the bound in packet times; CCT spread {spread.value:.1f} % ("
            + ", ".join(f"{s} {1e3 * v.mean:.1f} ms" for s, v in cct.items())
            + ")"
        )
    return Outcome(m, "; ".join(parts))


def c_fig13_nscc(d: Data) -> Outcome:
    rows = d.of("fig13")
    gaps: dict[str, Interval] = {}
    best: dict[str, Interval] = {}
    parts = []
    for wl in ("moe", "moe-eplb"):
        st = {s: stat(rows, "cct_increase", cell_label=s, cell_workload=wl, cell_cc="nscc") for s in MOE}
        if not all(v.ok for v in st.values()):
            return no_data(f"fig13 {wl} with NSCC")
        g = {f"{wl}: {y} - ofan": iv(diff(st[y], st["ofan"]), 100) for y in ("ar", "reps")}
        gaps |= g
        best[wl] = lowest(*g.values())
        parts.append(f"{wl}: " + ", ".join(f"{s} {pct(v)}" for s, v in st.items()))
    return Outcome(
        {"ofan_best": gaps, "eplb_larger": {"EPLB - no EPLB": minus(best["moe-eplb"], best["moe"])}},
        "; ".join(parts)
        + "; better of AR and REPS minus Ofan "
        + ", ".join(f"{wl} {g.value:.2f}" for wl, g in best.items()),
    )


_RING_COLUMNS = ("size_bytes", "flows", "hosts", "rate_bps", "cct_s", "cct_lower_bound_s")


def ring_acks_s(rows: pd.DataFrame) -> pd.Series:
    """Each FSDP run's ACK frames on one host's link over the pass: its ring steps (flows / hosts) x the
    frames of one step's flow x one ACK frame's line time. Every host sends one flow and receives one per
    step, and ACKs every frame it receives on the link its own step's data leaves by; the bound's chain term
    (metrics.cct_lower_bound_s) counts the data only, since no ordering forces the two to overlap."""
    payload = rows["cell_payload"].fillna(DEFAULT_PAYLOAD) if "cell_payload" in rows else DEFAULT_PAYLOAD
    frames = np.ceil(rows["size_bytes"] / payload)
    steps = rows["flows"] / rows["hosts"]
    return steps * frames * (ACK_FRAME_BYTES + WIRE_EXTRA) * 8 / rows["rate_bps"]


def with_ring_acks(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with `cct_increase_acks`: the CCT's increase over the bound plus the ring's ACK frames
    (ring_acks_s), the reading that separates a scheme's own cost from the ACKs' line time."""
    if rows.empty or not all(c in rows for c in _RING_COLUMNS):
        return rows
    return rows.assign(cct_increase_acks=rows["cct_s"] / (rows["cct_lower_bound_s"] + ring_acks_s(rows)) - 1)


def acks_reading(rows: pd.DataFrame, schemes: Sequence[str], **eq: Any) -> str:
    """The FSDP rules' second reading, reported beside the verdict (which reads the bound alone)."""
    r = with_ring_acks(rows)
    if "cct_increase_acks" not in r:
        return "not known (rows without their flows and rates)"
    return ", ".join(f"{s} {pct(stat(r, 'cct_increase_acks', cell_label=s, **eq))}" for s in schemes)


def c_fig14_factor(d: Data) -> Outcome:
    rows = d.of("fig14")
    factors: dict[str, Interval] = {}
    parts = []
    for cc in ("nscc", "swift"):
        st = {s: stat(rows, "cct_increase", cell_label=s, cell_cc=cc) for s in MOE}
        if not all(v.ok for v in st.values()):
            return no_data(f"fig14 with {cc}")
        f = {f"{cc}: {y} / {x}": iv(ratio(st[y], st[x])) for y in ("ar", "reps") for x in ("ofan", "4ofan")}
        factors |= f
        parts.append(f"{cc}: " + ", ".join(f"{s} {pct(v)}" for s, v in st.items()))
        parts.append(f"{cc} over the bound plus the ring's ACK frames: " + acks_reading(rows, MOE, cell_cc=cc))
    return Outcome({"factor": factors}, "; ".join(parts))


def c_fig14_models(d: Data) -> Outcome:
    rows = d.of("fig14m")
    sizes = (119 * 4096, 1533 * 4096)
    st = {(s, m): stat(rows, "cct_increase", cell_label=s, size_bytes=m) for s in ("ar", "reps", "ofan") for m in sizes}
    if not all(v.ok for v in st.values()):
        return no_data("fig14m (8B and 405B)")
    r = {s: ratio(st[(s, sizes[1])], st[(s, sizes[0])]) for s in ("ar", "reps", "ofan")}
    return Outcome(
        {
            "ofan_falls": {"ofan 8B - 405B": iv(diff(st[("ofan", sizes[0])], st[("ofan", sizes[1])]), 100)},
            "ratio_below": {f"{y} - ofan": iv(diff(r[y], r["ofan"])) for y in ("ar", "reps")},
        },
        ", ".join(
            f"{s} {pct(st[(s, sizes[0])])} at 8B, {pct(st[(s, sizes[1])])} at 405B (ratio {r[s].mean:.2f})"
            for s in ("ar", "reps", "ofan")
        )
        + _acks_by_model(rows, ("ar", "reps", "ofan"), sizes),
    )


def _acks_by_model(rows: pd.DataFrame, schemes: Sequence[str], sizes: Sequence[int]) -> str:
    return "; over the bound plus the ring's ACK frames: " + "; ".join(
        f"{name} " + acks_reading(rows, schemes, size_bytes=m) for name, m in zip(("8B", "405B"), sizes, strict=True)
    )


def band_error(got: Interval, model: float, low: float, high: float) -> Interval:
    """Where `got` lies in the band [low, high] around `model`: 0 at the model, -1 at `low`, +1 at `high`
    (linear on each side; endpoint by endpoint)."""

    def f(x: float) -> float:
        if x >= model:
            return (x - model) / (high - model) if high > model else math.inf
        return (x - model) / (model - low) if model > low else -math.inf

    return Interval(f(got.value), f(got.lo), f(got.hi))


def sending_queue(rows: pd.DataFrame, stage: str) -> pd.Series:
    """Each run's mean queue at `stage` over the sending window (Thm. 1-2's q(m)); a run made before that
    was measured gives its mean over the kernel's whole window."""
    whole = rows[f"queue_{stage}_avg_pkts"]
    col = f"queue_{stage}_avg_sending_pkts"
    return rows[col].fillna(whole) if col in rows else whole


def _at_least_0(got: Interval) -> Interval:
    """A mean queue's interval cut at 0, below which no mean of queues lies (a layer whose model is 0 read
    -inf from a mean of 0.01 +- 0.02)."""
    return Interval(got.value, max(got.lo, 0.0), got.hi, got.sem)


def _server_of(rows: pd.DataFrame) -> float | None:
    """The server the rows' links have, as queue_model.layer_means takes it: the kernel's token bucket unless
    the rows say otherwise (`server_bucket_frames`: the ideal fabric's; 0 for the paper's server, one frame in
    service)."""
    if "server_bucket_frames" not in rows or rows["server_bucket_frames"].isna().all():
        return queue_model.KERNEL_BUCKET_FRAMES
    bucket = float(rows["server_bucket_frames"].dropna().iloc[0])
    return bucket if bucket > 0 else None


def c_fig18_model(d: Data) -> Outcome:
    rows = valid(d.of("fig17"))
    rows = rows[rows["cell_label"] == "ofan"] if not rows.empty else rows
    if rows.empty:
        return no_data("Ofan in fig17 (an inter-pod permutation without ACKs)")
    edge: dict[str, Interval] = {}
    others: dict[str, Interval] = {}
    parts = []
    for k, g in rows.groupby("k"):
        model = queue_model.layer_means(int(k), _server_of(g))
        paper = queue_model.layer_means(int(k))
        got = {st: stat_of(sending_queue(g, st)) for st in queue_model.STAGES}
        m = model["edge_agg"]
        tol = max(0.25 * m, 0.1)
        edge[f"k={int(k)}"] = band_error(_at_least_0(iv(got["edge_agg"])), m, m - tol, m + tol)
        for st in queue_model.STAGES[1:]:
            m = model[st]
            low, high = max(0.0, min(m / 3, m - 0.25)), max(3 * m, m + 0.25)
            others[f"k={int(k)} {st}"] = band_error(_at_least_0(iv(got[st])), m, low, high)
        parts.append(
            f"k={int(k)}: "
            + ", ".join(
                f"{st} {got[st].mean:.2f} (model {model[st]:.2f}, paper's server {paper[st]:.2f})"
                for st in queue_model.STAGES
            )
        )
    return Outcome(
        {"edge": edge, "others": others},
        "; ".join(parts),
        caveat="queues averaged over the sending window; the model's server is the kernel's (a token bucket of "
        f"{queue_model.KERNEL_BUCKET_FRAMES} frames, which passes a frame on at once); with the paper's (a packet "
        "time of service, the one in service not counted) its means are the ones in brackets",
    )


def c_memory(d: Data) -> Outcome:
    tree = FatTree(64, "c")
    b = decisions.b_bits(tree.w)
    edge_ptrs = decisions.N_CLASSES * (tree.n_edges - 1)  # one per (other edge switch, size class)
    agg_ptrs = decisions.N_CLASSES * (tree.pods - 1)  # one per (other pod, size class)
    edge_kb, agg_b, basis_b = edge_ptrs * b / 8 / 1024, agg_ptrs * b / 8, tree.w * b / 8
    return Outcome(
        {
            "edge": {"k=64": Interval.exact(edge_kb)},
            "agg": {"k=64": Interval.exact(agg_b)},
            "basis": {"k=64": Interval.exact(basis_b)},
        },
        f"edge switch {edge_ptrs} pointers of {b} bits = {edge_kb:.2f} KB; aggregation switch {agg_ptrs} "
        f"pointers = {agg_b:.0f} B; basis {tree.w} x {b} bits = {basis_b:.0f} B",
    )


def c_rtt(d: Data) -> Outcome:
    rtt = 2 * 6 * PAPER_LINK_DELAY_PKTS  # an inter-pod path, both ways, in packet times of 4,178 B
    m1, m4 = 256 / rtt, 1024 / rtt
    return Outcome(
        {
            "rtt": {"inter-pod": Interval.exact(rtt)},
            "m1": {"1 MB": Interval.exact(m1)},
            "m4": {"4 MB": Interval.exact(m4)},
        },
        f"RTT {rtt:.1f} packet times; 1 MB = {m1:.2f} RTTs, 4 MB = {m4:.2f} RTTs (the frames' own serialisation, one "
        "packet time, left out)",
    )


# -- the claims the paper states and the first check left out (C32-C44) ------------------------------------
def c_fig1_queues(d: Data) -> Outcome:
    rows = d.of("fig1")
    q = {
        (s, ld): stat(rows, "max_queue_pkts", cell_label=s, load=ld)
        for s in ("ofan", "reps", "ar")
        for ld in (0.8, 1.0)
    }
    if not all(v.ok for v in q.values()):
        return no_data("fig1 at loads 0.8 and 1")
    return Outcome(
        {
            "over_ofan": {f"{s} / ofan": iv(ratio(q[(s, 1.0)], q[("ofan", 1.0)])) for s in ("reps", "ar")},
            "grows": {f"{s} 1.0 - 0.8": iv(diff(q[(s, 1.0)], q[(s, 0.8)])) for s in ("reps", "ar")},
        },
        ", ".join(f"{s} {q[(s, 0.8)].mean:.1f} at 0.8, {q[(s, 1.0)].mean:.1f} at 1" for s in ("ofan", "reps", "ar"))
        + " packets (largest queue)",
    )


def c_fig1_cct(d: Data) -> Outcome:
    rows = d.of("fig1")
    c = {(s, ld): stat(rows, "cct_s", cell_label=s, load=ld) for s in ("ofan", "reps", "ar") for ld in (0.8, 1.0)}
    if not all(v.ok for v in c.values()):
        return no_data("fig1 at loads 0.8 and 1")
    r = {s: ratio(c[(s, 1.0)], c[(s, 0.8)]) for s in ("ofan", "reps", "ar")}
    return Outcome(
        {"improves_less": {f"{s} - ofan": iv(diff(r[s], r["ofan"])) for s in ("reps", "ar")}},
        "CCT at load 1 over at 0.8 (0.80 if it improved with the load): "
        + ", ".join(f"{s} {v.mean:.3f}" for s, v in r.items()),
    )


def stage_exponent(rows: pd.DataFrame, label: str, stages: Sequence[str]) -> Interval | None:
    """The exponent of a stage group's largest queue (the largest over `stages`, each run; a queue of 0 counted
    as 1 packet, so that a flat queue reads 0) against the message size, with its 95 % interval; None with
    fewer than two sizes."""
    v = valid(rows)
    v = v[v["cell_label"] == label] if not v.empty else v
    if v.empty or v["size_bytes"].nunique() < 2:
        return None
    y = v[[f"queue_{st}_max_pkts" for st in stages]].max(axis=1).clip(lower=1)
    return exponent(v["size_bytes"].astype(float).tolist(), y.astype(float).tolist())


def _split(d: Data, labels: tuple[str, ...]) -> tuple[dict[str, Interval], dict[str, Interval]] | None:
    up: dict[str, Interval] = {}
    down: dict[str, Interval] = {}
    for s in labels:
        u, dn = stage_exponent(d.of("fig4"), s, STAGES_UP), stage_exponent(d.of("fig4"), s, (*STAGES_DOWN, "edge_host"))
        if u is None or dn is None:
            return None
        up[s], down[s] = u, dn
    return up, down


def _split_detail(up: dict[str, Interval], down: dict[str, Interval]) -> str:
    return "; ".join(
        f"{s}: up {up[s].value:.2f} [{up[s].lo:.2f}, {up[s].hi:.2f}], down {down[s].value:.2f} "
        f"[{down[s].lo:.2f}, {down[s].hi:.2f}]"
        for s in up
    )


def c_table1_rr_jsq(d: Data) -> Outcome:
    got = _split(d, ("rr", "jsq"))
    if got is None:
        return no_data("fig4 RR and JSQ at every size")
    up, down = got
    return Outcome({"up": up, "down": down}, _split_detail(up, down))


def c_table1_rps(d: Data) -> Outcome:
    got = _split(d, ("rps",))
    if got is None:
        return no_data("fig4 RPS at every size")
    up, down = got
    return Outcome(
        {"both": {f"{s} up": v for s, v in up.items()} | {f"{s} down": v for s, v in down.items()}},
        _split_detail(up, down),
    )


def c_fig5_4ofan(d: Data) -> Outcome:
    rows = d.of("fig5")
    gaps: dict[str, Interval] = {}
    for k in ks(rows):
        p4, ofan = (stat(rows, "cct_increase", cell_label=s, k=k) for s in ("4ofan", "ofan"))
        if p4.ok and ofan.ok:
            gaps[f"k={k}"] = iv(diff(p4, ofan), 100)
    if not gaps:
        return no_data("fig5 4Ofan and Ofan")
    return Outcome({"small": gaps}, "4Ofan - Ofan: " + ", ".join(f"{k} {g.value:.2f} points" for k, g in gaps.items()))


def c_fig5_alltoall(d: Data) -> Outcome:
    rows = d.of("fig5ata")
    gaps: dict[str, Interval] = {}
    parts = []
    for k in ks(rows):
        st = {s: stat(rows, "cct_increase", cell_label=s, k=k) for s in MOE}
        if not all(v.ok for v in st.values()):
            continue
        gaps |= {f"k={k}: {y} - {x}": iv(diff(st[y], st[x]), 100) for y in ("ar", "reps") for x in ("ofan", "4ofan")}
        parts.append(f"k={k}: " + ", ".join(f"{s} {pct(v)}" for s, v in st.items()))
    if not gaps:
        return no_data("fig5ata (all-to-all)")
    return Outcome({"order": gaps}, "; ".join(parts))


def c_fig6_moderate(d: Data) -> Outcome:
    rows = d.of("fig6")
    every = ks(rows)
    if len(every) < 2:
        return no_data("fig6 at two sizes")
    small, large = every[0], every[-1]
    st = {(s, k): stat(rows, "cct_increase", cell_label=s, k=k) for s in POFANS for k in (small, large)}
    if not all(v.ok for v in st.values()):
        return no_data(f"fig6 at k={small} and k={large}")
    gap = {(s, k): diff(st[(s, k)], st[("ofan", k)]) for s in POFANS[:-1] for k in (small, large)}
    return Outcome(
        {
            "expands": {f"{s}": iv(diff(gap[(s, large)], gap[(s, small)]), 100) for s in POFANS[1:-1]},
            "moderate": {f"drb - {s}": iv(diff(st[("drb", large)], st[(s, large)]), 100) for s in POFANS[1:-1]},
        },
        "; ".join(
            f"k={k}: " + ", ".join(f"{s} - ofan {100 * gap[(s, k)].mean:.2f}" for s in POFANS[:-1])
            for k in (small, large)
        )
        + " points",
    )


def optimal_payload_exponent(sqrt_queue: bool) -> float:
    """Thm. 6 numerically: the exponent of the optimal payload P - H against the message D (1 MB to 1 GB), when
    the queue is a constant alpha packets (Ofan) or grows as sqrt(D / P) packets (spraying, Thm. 1)."""
    from scipy import optimize

    h = 64.0
    ds = np.geomspace(MB, 1 << 30, 7)

    def best(d: float) -> float:
        def cost(p: float) -> float:
            alpha = math.sqrt(d / p) if sqrt_queue else 8.0
            return d * (p + h) / p + alpha * (p + h)

        return float(optimize.minimize_scalar(cost, bounds=(1.0, d), method="bounded", options={"xatol": 1e-6}).x)

    slope = np.polyfit(np.log(ds), np.log([best(float(d)) for d in ds]), 1)[0]
    return float(slope)


def c_fig8_cube_root(d: Data) -> Outcome:
    spray, ofan = optimal_payload_exponent(True), optimal_payload_exponent(False)
    return Outcome(
        {"spraying": {"sqrt(m) queue": Interval.exact(spray)}, "ofan": {"constant queue": Interval.exact(ofan)}},
        f"the optimal payload grows as D^{spray:.3f} with a queue growing as sqrt(m), D^{ofan:.3f} with a constant "
        "queue (Thm. 6's cost minimised numerically, 1 MB to 1 GB)",
    )


def c_fig12_swift_larger(d: Data) -> Outcome:
    rows = d.of("fig12")
    least: dict[str, Interval] = {}
    for cc in ("nscc", "swift"):
        st = {s: stat(rows, "cct_increase", cell_label=s, cell_cc=cc) for s in MOE}
        if not all(v.ok for v in st.values()):
            return no_data(f"fig12 with {cc}")
        least[cc] = lowest(*(iv(diff(st[y], st[x]), 100) for y in ("reps", "ar") for x in ("ofan", "4ofan")))
    return Outcome(
        {"larger": {"swift - nscc": minus(least["swift"], least["nscc"])}},
        "the least gap (REPS or AR minus Ofan or 4Ofan): "
        + ", ".join(f"{cc} {g.value:.2f} points" for cc, g in least.items()),
    )


def c_fig13_equivalent(d: Data) -> Outcome:
    rows = d.of("fig13")
    gaps: dict[str, Interval] = {}
    for wl in ("moe", "moe-eplb"):
        for cc in ("none", "nscc"):
            a, b = (stat(rows, "cct_increase", cell_label=s, cell_workload=wl, cell_cc=cc) for s in ("ofan", "4ofan"))
            if a.ok and b.ok:
                gaps[f"{wl} {cc}"] = iv(diff(a, b), 100)
    if not gaps:
        return no_data("fig13 Ofan and 4Ofan")
    return Outcome(
        {"same": gaps}, "Ofan - 4Ofan: " + ", ".join(f"{n} {g.value:.2f}" for n, g in gaps.items()) + " points"
    )


def c_fig14_constant(d: Data) -> Outcome:
    rows = d.of("fig14m")
    sizes = (119 * 4096, 1533 * 4096)
    st = {(s, m): stat(rows, "cct_increase", cell_label=s, size_bytes=m) for s in ("ar", "reps") for m in sizes}
    if not all(v.ok for v in st.values()):
        return no_data("fig14m AR and REPS (8B and 405B)")
    r = {s: ratio(st[(s, sizes[1])], st[(s, sizes[0])]) for s in ("ar", "reps")}
    return Outcome(
        {"constant": {f"{s} 405B / 8B": iv(v) for s, v in r.items()}},
        ", ".join(f"{s} {v.mean:.2f}" for s, v in r.items()) + _acks_by_model(rows, ("ar", "reps"), sizes),
    )
