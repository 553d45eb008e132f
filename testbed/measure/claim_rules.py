"""The rules of the paper's claims (testbed.run.claims): pure functions of a sweep's rows to a verdict.

Each rule reads the valid runs (the fidelity verdict of each: testbed.measure.fidelity) of the experiments its
claim names and decides: agrees, disagrees, not comparable here (with why), or no data. The rules are written
before any run and are not tuned to results; they read rows only (results.parquet, as testbed.run.sweep writes
them), the testbed's own definitions and the paper's models (testbed.measure.queue_model), never a fabric.

Values are means over the valid seeds of a cell, with the standard error of the mean (SEM); a growth exponent
comes with its 95 % interval (testbed.measure.sweep_stats). Claims that the paper states at its scale (800
Gbit/s, k=12) are checked as ratios, orderings or growth classes, never as absolute times.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..models import decisions
from ..topology import FatTree
from ..topology.timebase import PAPER_LINK_DELAY_PKTS, PAPER_WIRE_FRAME_BYTES
from . import queue_model
from .sweep_stats import growth

KB, MB = 1024, 1 << 20
VERDICTS = ("agrees", "disagrees", "not comparable", "pending", "no data")
STAGES_UP = ("edge_agg", "agg_core")
STAGES_DOWN = ("core_agg", "agg_edge")
# the schemes' groups the rules compare (scheme labels, as the rows' cell_label)
FIG3_AWARE = ("ofan", "4ofan", "drb", "ethereal")
FIG3_OBLIVIOUS = ("rr", "jsq", "choice", "drill", "rps", "ar")
CLASS_LINEAR = ("rr", "jsq", "conga")
CLASS_SQRT = ("rps", "reps", "ar")
CLASS_FLAT = ("ethereal", "drb", "4ofan", "ofan")
MIXES = ("none", "random:0.5", "pods:0.5", "agg", "edge")  # Fig. 11: all of one scheme, and the four mixes
MIXED = MIXES[1:]
MOE = ("ar", "reps", "ofan", "4ofan")


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
class Outcome:
    verdict: str
    value: float | None  # the claim's headline number, in `unit`
    sem: float | None
    unit: str
    detail: str  # every figure the rule looked at
    notes: str = ""  # why, for a disagreement or a claim not comparable here


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


def stat(rows: pd.DataFrame, metric: str, **eq: Any) -> Stat:
    """Mean, SEM and count of `metric` over the valid rows whose columns equal `eq`."""
    d = valid(rows)
    for k, v in eq.items():
        if d.empty:
            break
        d = d[d[k] == v]
    if d.empty:
        return Stat(math.nan, math.nan, 0)
    x = d[metric].astype(float)
    n = len(x)
    return Stat(float(x.mean()), float(x.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0, n)


def diff(a: Stat, b: Stat) -> Stat:
    """a - b, the SEMs added in quadrature."""
    return Stat(a.mean - b.mean, math.hypot(a.sem, b.sem), min(a.n, b.n))


def slope(x: list[float], y: list[float]) -> tuple[float, float]:
    """Least-squares slope of log y on log x and its standard error (0 with two points)."""
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    if len(lx) < 2:
        return math.nan, math.nan
    a = np.polyfit(lx, ly, 1)
    if len(lx) < 3:
        return float(a[0]), 0.0
    resid = ly - np.polyval(a, lx)
    se = math.sqrt(float(resid @ resid) / (len(lx) - 2) / float(((lx - lx.mean()) ** 2).sum()))
    return float(a[0]), se


def pct(s: Stat) -> str:
    return f"{100 * s.mean:.2f} +- {100 * s.sem:.2f} %" if s.ok else "no valid run"


def no_data(what: str) -> Outcome:
    return Outcome("no data", None, None, "", f"no valid run of {what}")


def verdict(ok: bool) -> str:
    return "agrees" if ok else "disagrees"


# -- the rules -------------------------------------------------------------------------------
def c_fig1_utilisation(d: Data) -> Outcome:
    rows = d.of("fig1")
    u = {s: stat(rows, "utilisation", cell_label=s, load=1.0) for s in ("ofan", "reps", "ar")}
    if not all(v.ok for v in u.values()):
        return no_data("fig1 at load 1.0")
    ok = u["ofan"].mean >= 0.97 and u["reps"].mean < 0.95 and u["ar"].mean < 0.95
    detail = ", ".join(f"{s} {100 * v.mean:.1f} +- {100 * v.sem:.1f} %" for s, v in u.items())
    notes = (
        ""
        if ok
        else (
            "utilisation here is delivered bytes over the receivers' capacity during what the "
            "kernel saw (propagation left out, as the paper's ~99 % for Ofan implies)"
        )
    )
    return Outcome(verdict(ok), u["ofan"].mean * 100, u["ofan"].sem * 100, "% (Ofan)", detail, notes)


def c_fig1_load(d: Data) -> Outcome:
    rows = d.of("fig1")
    u = {s: stat(rows, "utilisation", cell_label=s, load=0.8) for s in ("ofan", "reps", "ar")}
    if not all(v.ok for v in u.values()):
        return no_data("fig1 at load 0.8")
    worst = max(abs(v.mean - 0.8) for v in u.values())
    detail = ", ".join(f"{s} {100 * v.mean:.1f} +- {100 * v.sem:.1f} %" for s, v in u.items())
    return Outcome(verdict(worst <= 0.03), 100 * worst, None, "points off the load (worst)", detail)


def _overload(rows: pd.DataFrame, label: str) -> dict[str, Stat]:
    return {st: stat(rows, f"overload_{st}", cell_label=label) for st in STAGES_UP + STAGES_DOWN}


def c_fig3_rr_jsq(d: Data) -> Outcome:
    rows = d.of("fig3")
    parts, ok, head = [], True, math.nan
    for s in ("rr", "jsq"):
        o = _overload(rows, s)
        if not all(v.ok for v in o.values()):
            return no_data(f"fig3 {s}")
        up = max(o[st].mean for st in STAGES_UP)
        down = min(o[st].mean for st in STAGES_DOWN)
        ok = ok and up <= 0.10 and down >= max(3 * up, 0.10)
        head = up if s == "rr" else head
        parts.append(
            f"{s}: uplinks {', '.join(f'{100 * o[st].mean:.1f} %' for st in STAGES_UP)}, downlinks "
            f"{', '.join(f'{100 * o[st].mean:.1f} %' for st in STAGES_DOWN)}"
        )
    return Outcome(verdict(ok), None, None, "", "; ".join(parts))


def c_fig3_aware(d: Data) -> Outcome:
    rows = d.of("fig3")
    worst: dict[str, float] = {}
    for s in FIG3_AWARE + FIG3_OBLIVIOUS:
        o = _overload(rows, s)
        if not all(v.ok for v in o.values()):
            return no_data(f"fig3 {s}")
        worst[s] = max(v.mean for v in o.values())
    aware = max(worst[s] for s in FIG3_AWARE)
    oblivious = min(worst[s] for s in FIG3_OBLIVIOUS)
    ok = aware <= 0.10 < oblivious
    detail = "worst stage: " + ", ".join(f"{s} {100 * v:.1f} %" for s, v in worst.items())
    return Outcome(verdict(ok), 100 * aware, None, "% worst stage, destination-aware", detail)


def c_fig3_ethereal(d: Data) -> Outcome:
    o = _overload(d.of("fig3"), "ethereal")
    if not all(v.ok for v in o.values()):
        return no_data("fig3 ethereal")
    worst = max(v.mean for v in o.values())
    return Outcome(
        verdict(worst <= 0.02),
        100 * worst,
        None,
        "% worst stage",
        ", ".join(f"{st} {100 * v.mean:.2f} %" for st, v in o.items()),
    )


def _exponents(rows: pd.DataFrame, labels: tuple[str, ...]) -> dict[str, Any]:
    return {s: growth(rows, "max_queue_pkts", s) for s in labels}


def _class(d: Data, labels: tuple[str, ...], lo: float, hi: float) -> Outcome:
    g = _exponents(d.of("fig4"), labels)
    if any(v is None for v in g.values()):
        return no_data("fig4 at every size for " + ", ".join(s for s, v in g.items() if v is None))
    ok = all(lo <= v.exponent < hi for v in g.values())
    detail = ", ".join(f"{s} {v.exponent:.2f} [{v.ci95[0]:.2f}, {v.ci95[1]:.2f}]" for s, v in g.items())
    mean = float(np.mean([v.exponent for v in g.values()]))
    return Outcome(verdict(ok), mean, None, "mean exponent", "largest queue ~ m^exponent: " + detail)


def c_fig4_linear(d: Data) -> Outcome:
    return _class(d, CLASS_LINEAR, 0.7, math.inf)


def c_fig4_sqrt(d: Data) -> Outcome:
    return _class(d, CLASS_SQRT, 0.3, 0.7)


def c_fig4_flat(d: Data) -> Outcome:
    return _class(d, CLASS_FLAT, -math.inf, 0.3)


def c_f4_edge_bound(d: Data) -> Outcome:
    worst: list[tuple[int, int, int]] = []  # (queue, w + 1, k)
    for name in ("fig3", "fig6", "fig17"):
        v = valid(d.of(name))
        if v.empty:
            continue
        v = v[(v["cell_label"] == "ofan") & (v["cell_failure"] == 0)]
        for k, g in v.groupby("k"):
            worst.append((int(g["queue_edge_agg_max_pkts"].max()), int(k) // 2 + 1, int(k)))
    if not worst:
        return no_data("Ofan without ACKs (fig3, fig6, fig17)")
    ok = all(q <= bound for q, bound, _ in worst)
    detail = ", ".join(f"k={k}: largest {q} packets, w + 1 = {b}" for q, b, k in sorted(worst, key=lambda x: x[2]))
    excess = max(q - b for q, b, _ in worst)
    return Outcome(
        verdict(ok),
        float(excess),
        None,
        "packets beyond w + 1 (worst)",
        detail,
        "" if ok else "the kernel's queue counts a packet until the far end's program sees it",
    )


def c_f2_orders(d: Data) -> Outcome:
    basis = decisions.choose_basis(6)
    n = decisions.distinct_cycles(basis)
    adds = len({tuple((basis[i] + s) % 6 for i in range(6)) for s in range(6)})
    ok = n >= 30 and adds == 6
    return Outcome(
        verdict(ok),
        float(n),
        None,
        "distinct cyclic orders (w = 6)",
        f"basis {list(basis)}: {n} cyclic orders from the XOR and the addition; the addition alone "
        f"gives {adds} orders (rotations of one cycle)",
    )


def c_f3_ratio(d: Data) -> Outcome:
    rows = d.of("fig17")
    ks = sorted(int(k) for k in valid(rows)["k"].unique()) if not valid(rows).empty else []
    ratios = {}
    for k in ks:
        a, b = stat(rows, "max_queue_pkts", cell_label="drb", k=k), stat(rows, "max_queue_pkts", cell_label="ofan", k=k)
        if a.ok and b.ok and b.mean > 0:
            ratios[k] = (a.mean / b.mean, a, b)
    if len(ratios) < 2:
        return no_data("fig17 at two sizes")
    lo, hi = ratios[min(ratios)][0], ratios[max(ratios)][0]
    ok = hi > lo and hi > 1
    detail = ", ".join(f"k={k}: DRB {a.mean:.1f}, Ofan {b.mean:.1f}, ratio {r:.2f}" for k, (r, a, b) in ratios.items())
    return Outcome(verdict(ok), hi, None, f"DRB/Ofan at k={max(ratios)}", detail)


def c_drb_small(d: Data) -> Outcome:
    rows = d.of("fig4")
    small, large = (
        stat(rows, "cct_increase", cell_label="drb", size_bytes=256 * KB),
        stat(rows, "cct_increase", cell_label="drb", size_bytes=4 * MB),
    )
    ofan = stat(rows, "cct_increase", cell_label="ofan", size_bytes=256 * KB)
    if not (small.ok and large.ok and ofan.ok):
        return no_data("fig4 drb and ofan at 256 KB and 4 MB")
    gap = diff(small, ofan)
    ok = small.mean > large.mean and gap.mean > gap.sem
    return Outcome(
        verdict(ok),
        100 * gap.mean,
        100 * gap.sem,
        "points, DRB - Ofan at 256 KB",
        f"DRB {pct(small)} at 256 KB, {pct(large)} at 4 MB; Ofan {pct(ofan)} at 256 KB",
    )


def c_fig5_gap(d: Data) -> Outcome:
    rows = d.of("fig5")
    gaps: dict[int, Stat] = {}
    for k in sorted(int(k) for k in valid(rows)["k"].unique()) if not valid(rows).empty else []:
        ar, reps, p4 = (stat(rows, "cct_increase", cell_label=s, k=k) for s in ("ar", "reps", "4ofan"))
        if ar.ok and reps.ok and p4.ok:
            gaps[k] = diff(ar if ar.mean < reps.mean else reps, p4)
    if len(gaps) < 2:
        return no_data("fig5 at two sizes")
    lo, hi = gaps[min(gaps)], gaps[max(gaps)]
    ok = all(g.mean > 0 for g in gaps.values()) and hi.mean > lo.mean
    detail = ", ".join(
        f"k={k} ({FatTree(k).n_hosts} hosts): {100 * g.mean:.2f} +- {100 * g.sem:.2f} points" for k, g in gaps.items()
    )
    return Outcome(
        verdict(ok),
        100 * hi.mean,
        100 * hi.sem,
        f"points at k={max(gaps)}",
        "best of AR and REPS minus 4Ofan: " + detail,
    )


def c_fig6_half(d: Data) -> Outcome:
    rows = d.of("fig6")
    if valid(rows).empty:
        return no_data("fig6")
    k = int(valid(rows)["k"].max())
    drb, one, ofan = (stat(rows, "cct_increase", cell_label=s, k=k) for s in ("drb", "1ofan", "ofan"))
    if not (drb.ok and one.ok and ofan.ok):
        return no_data(f"fig6 at k={k}")
    gap = diff(drb, ofan)
    detail = f"k={k}: DRB {pct(drb)}, 1Ofan {pct(one)}, Ofan {pct(ofan)}"
    if gap.mean <= 2 * gap.sem:
        return Outcome(
            "not comparable",
            None,
            None,
            "",
            detail,
            "DRB and Ofan are within two standard errors of each other here: no gap to share",
        )
    r = (drb.mean - one.mean) / gap.mean
    return Outcome(verdict(0.25 <= r <= 0.75), r, None, "of the DRB-Ofan gap recovered by 1Ofan", detail)


def c_fig7_sqrt(d: Data) -> Outcome:
    rows = d.of("fig4")
    sizes = (256 * KB, MB, 4 * MB)
    out, ok = [], True
    slopes = []
    for s in ("ar", "reps"):
        gaps = [
            diff(
                stat(rows, "cct_increase", cell_label=s, size_bytes=m),
                stat(rows, "cct_increase", cell_label="ofan", size_bytes=m),
            )
            for m in sizes
        ]
        if not all(g.ok for g in gaps):
            return no_data(f"fig4 {s} and ofan at every size")
        if any(g.mean <= 0 for g in gaps):
            ok = False
            out.append(f"{s}: a gap <= 0 ({', '.join(f'{100 * g.mean:.2f}' for g in gaps)} points)")
            continue
        b, se = slope(list(sizes), [g.mean for g in gaps])
        slopes.append(b)
        ok = ok and -0.8 <= b <= -0.2
        out.append(f"{s} - Ofan: {', '.join(f'{100 * g.mean:.2f}' for g in gaps)} points, exponent {b:.2f} +- {se:.2f}")
    return Outcome(
        verdict(ok), float(np.mean(slopes)) if slopes else None, None, "mean exponent of the gap", "; ".join(out)
    )


def c_fig7_reps(d: Data) -> Outcome:
    rows = valid(d.of("fig12"))
    if rows.empty:
        return no_data("fig12")
    reps = rows[rows["cell_label"] == "reps"]
    freezes = int(reps["host_lb_freezes"].sum()) if "host_lb_freezes" in reps else 0
    detail = f"REPS connections frozen in the congestion-control runs (4 MB): {freezes}"
    if not freezes:
        return Outcome(
            "not comparable",
            0.0,
            None,
            "freezes",
            detail,
            "no REPS connection timed out, so freezing never triggered; without congestion control no "
            "packet is lost here (unlimited buffers), so the paper's conjecture cannot be exercised",
        )
    worse = []
    for cc in sorted(reps["cell_cc"].unique()):
        r, a = (
            stat(rows, "cct_increase", cell_label="reps", cell_cc=cc),
            stat(rows, "cct_increase", cell_label="ar", cell_cc=cc),
        )
        worse.append((cc, r, a))
    ok = all(r.mean > a.mean for _, r, a in worse)
    detail += "; " + ", ".join(f"{cc}: REPS {pct(r)}, AR {pct(a)}" for cc, r, a in worse)
    return Outcome(verdict(ok), float(freezes), None, "freezes", detail)


def c_fig8_sweet(d: Data) -> Outcome:
    rows = d.of("fig8")
    pays = sorted(int(p) for p in valid(rows)["cell_payload"].unique()) if not valid(rows).empty else []
    ccts = {p: stat(rows, "cct_s", cell_payload=p) for p in pays}
    ccts = {p: s for p, s in ccts.items() if s.ok}
    if len(ccts) < 3 or 4096 not in ccts:
        return no_data("fig8 at three payloads including 4096")
    best = min(ccts, key=lambda p: ccts[p].mean)
    # the model (appendix G): queueing of alpha packets of the run's size, headers of H bytes each:
    # P - H = sqrt((H / alpha) D); alpha from the 4 KB runs' increase over their bound, in packet times
    v = valid(rows)
    v4 = v[v["cell_payload"] == 4096]
    h = PAPER_WIRE_FRAME_BYTES - 4096  # 82: headers and gap on the wire
    t_pkt = PAPER_WIRE_FRAME_BYTES * 8 / v4["rate_bps"].astype(float)
    alpha = float(((v4["cct_s"] - v4["cct_lower_bound_s"]) / t_pkt).mean())
    message = int(v["size_bytes"].iloc[0])
    model = math.sqrt(h / alpha * message) if alpha > 0 else math.inf
    interior = min(ccts) < best < max(ccts)
    ok = interior and best / 2 <= model <= best * 2
    detail = (
        ", ".join(f"{p} B: {1e3 * s.mean:.1f} ms" for p, s in ccts.items())
        + f"; best {best} B; model alpha {alpha:.2f} packets, P - H = {model:.0f} B"
    )
    notes = (
        ""
        if ok
        else (
            "a TBF with tokens forwards a frame without its serialisation time at each hop, so larger "
            "packets cost less here than with store-and-forward switches (htsim's): the optimum "
            "moves up"
        )
    )
    return Outcome(verdict(ok), float(best), None, "bytes, the best payload", detail, notes)


def c_fig9_failures(d: Data) -> Outcome:
    rows = d.of("fig9")
    ps = sorted(float(p) for p in valid(rows)["cell_failure"].unique() if p > 0) if not valid(rows).empty else []
    if not ps:
        return no_data("fig9 with failures")
    ok, parts, margin = True, [], math.inf
    for p in ps:
        st = {s: stat(rows, "cct_increase_fault_free", cell_label=s, cell_failure=p) for s in ("ofan", "reps", "ar")}
        if not all(v.ok for v in st.values()):
            return no_data(f"fig9 at p={p}")
        best_other = min(st["reps"].mean, st["ar"].mean)
        margin = min(margin, best_other - st["ofan"].mean)
        ok = ok and st["ofan"].mean < best_other
        parts.append(f"p={p:g}: " + ", ".join(f"{s} {pct(v)}" for s, v in st.items()))
    return Outcome(
        verdict(ok),
        100 * margin,
        None,
        "points, best of REPS and AR minus Ofan (smallest)",
        "; ".join(parts),
        ""
        if ok
        else "see docs/reproduction.md: an uplink that reaches fewer cores takes a full share of "
        "Ofan's rotation, which rho_max does not assume",
    )


def c_fig10(d: Data) -> Outcome:
    rows = d.of("fig10")
    cct = {s: stat(rows, "cct_s", cell_label=s) for s in ("ar", "reps", "ofan", "4ofan")}
    if not all(v.ok for v in cct.values()):
        return no_data("fig10")
    base = min(cct["ar"].mean, cct["reps"].mean)
    red = {s: 1 - cct[s].mean / base for s in ("ofan", "4ofan")}
    ok = all(v >= 0.11 for v in red.values())
    return Outcome(
        verdict(ok),
        100 * min(red.values()),
        None,
        "% CCT reduction (the smaller of Ofan, 4Ofan)",
        ", ".join(f"{s} {1e3 * v.mean:.1f} ms" for s, v in cct.items()),
        "" if ok else "the paper's fabric is k=64 (2,048 hosts); the quick scale runs k=16",
    )


def c_fig12(cc: str, lo: float) -> Callable[[Data], Outcome]:
    def check(d: Data) -> Outcome:
        rows = d.of("fig12")
        st = {s: stat(rows, "cct_increase", cell_label=s, cell_cc=cc) for s in ("ar", "reps", "ofan", "4ofan")}
        if not all(v.ok for v in st.values()):
            return no_data(f"fig12 with {cc}")
        detail = ", ".join(f"{s} {pct(v)}" for s, v in st.items())
        if cc == "dctcp":
            ok = max(st["ofan"].mean, st["4ofan"].mean) < 0.01 and min(st["reps"].mean, st["ar"].mean) >= 1.0
            return Outcome(
                verdict(ok),
                1 + min(st["reps"].mean, st["ar"].mean),
                None,
                "x the bound, the better of REPS and AR",
                detail,
            )
        gap = min(st["reps"].mean, st["ar"].mean) - max(st["ofan"].mean, st["4ofan"].mean)
        return Outcome(
            verdict(gap >= lo),
            100 * gap,
            None,
            "points, the better of REPS and AR minus the worse of Ofan and 4Ofan",
            detail,
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
    mid = (ar.mean + p4.mean) / 2
    lowers = all(v.mean < ar.mean for v in mixes.values())
    above = all(v.mean >= mid - v.sem for v in mixes.values())
    worst = max(v.mean for v in mixes.values())
    return Outcome(
        verdict(lowers and above),
        100 * (min(v.mean for v in mixes.values()) - mid),
        None,
        "points, the best mix above the midpoint",
        _mix_detail(ar, p4, mixes),
        "" if lowers else f"a mix read {100 * worst:.2f} %, not below all-AR's {pct(ar)}",
    )


def c_fig11_edge(d: Data) -> Outcome:
    got = _mixes(d)
    if got is None:
        return no_data("fig11 (all AR, all 4Ofan and the four mixes)")
    ar, p4, mixes = got
    best = min(mixes, key=lambda m: mixes[m].mean)
    return Outcome(
        verdict(best == "edge"),
        100 * mixes["edge"].mean,
        100 * mixes["edge"].sem,
        "% CCT increase, 4Ofan at the edge",
        _mix_detail(ar, p4, mixes) + f"; best mix: {best}",
    )


def c_fig13_receivers(d: Data) -> Outcome:
    rows = valid(d.of("fig13"))
    if rows.empty:
        return no_data("fig13")
    parts, ok, spread_worst = [], True, 0.0
    for wl in ("moe", "moe-eplb"):
        sub = rows[(rows["cell_workload"] == wl) & (rows["cell_cc"] == "none")]
        if sub.empty or not all((sub["cell_label"] == s).any() for s in MOE):
            return no_data(f"fig13 {wl} without a CCA for every scheme")
        stages = {st: float(sub[f"queue_{st}_max_pkts"].max()) for st in STAGES_UP + STAGES_DOWN + ("edge_host",)}
        at_receivers = stages["edge_host"] >= max(stages.values())
        t_pkt = (sub["cell_payload"] + 58 + 24) * 8 / sub["rate_bps"]  # one frame's line time
        big = float((sub["queue_edge_host_max_pkts"] / (sub["cct_lower_bound_s"] / t_pkt)).median())
        cct = {s: float(sub[sub["cell_label"] == s]["cct_s"].mean()) for s in MOE}
        spread = max(cct.values()) / min(cct.values()) - 1
        spread_worst = max(spread_worst, spread)
        ofan_best = cct["ofan"] <= min(cct[s] for s in ("ar", "reps")) * 1.02
        ok = ok and at_receivers and big >= 0.10 and spread <= 0.10 and ofan_best
        parts.append(
            f"{wl}: largest queue at the receivers {stages['edge_host']:.0f} packets (other stages up to "
            f"{max(v for k, v in stages.items() if k != 'edge_host'):.0f}), {100 * big:.0f} % of the bound "
            f"in packet times; CCT spread {100 * spread:.1f} % ("
            + ", ".join(f"{s} {1e3 * v:.1f} ms" for s, v in cct.items())
            + ")"
        )
    return Outcome(
        verdict(ok), 100 * spread_worst, None, "% CCT spread over the schemes (worst skew)", "; ".join(parts)
    )


def c_fig13_nscc(d: Data) -> Outcome:
    rows = d.of("fig13")
    gaps: dict[str, Stat] = {}
    parts = []
    for wl in ("moe", "moe-eplb"):
        st = {s: stat(rows, "cct_increase", cell_label=s, cell_workload=wl, cell_cc="nscc") for s in MOE}
        if not all(v.ok for v in st.values()):
            return no_data(f"fig13 {wl} with NSCC")
        other = min(("ar", "reps"), key=lambda s: st[s].mean)
        gaps[wl] = diff(st[other], st["ofan"])
        parts.append(f"{wl}: " + ", ".join(f"{s} {pct(v)}" for s, v in st.items()))
    ok = all(g.mean > 0 for g in gaps.values()) and gaps["moe-eplb"].mean > gaps["moe"].mean
    return Outcome(
        verdict(ok),
        100 * gaps["moe-eplb"].mean,
        100 * gaps["moe-eplb"].sem,
        "points, the better of AR and REPS minus Ofan (EPLB)",
        "; ".join(parts) + "; gaps " + ", ".join(f"{wl} {100 * g.mean:.2f}" for wl, g in gaps.items()),
    )


def c_fig14_factor(d: Data) -> Outcome:
    rows = d.of("fig14")
    parts, factors = [], []
    for cc in ("nscc", "swift"):
        st = {s: stat(rows, "cct_increase", cell_label=s, cell_cc=cc) for s in MOE}
        if not all(v.ok for v in st.values()):
            return no_data(f"fig14 with {cc}")
        base = min(st["ar"].mean, st["reps"].mean)
        f = {s: base / st[s].mean if st[s].mean > 0 else math.inf for s in ("ofan", "4ofan")}
        factors += list(f.values())
        parts.append(
            f"{cc}: "
            + ", ".join(f"{s} {pct(v)}" for s, v in st.items())
            + "; factors "
            + ", ".join(f"{s} {v:.1f}x" for s, v in f.items())
        )
    ok = all(v >= 4 for v in factors)
    return Outcome(
        verdict(ok), min(factors), None, "x, the smallest factor (Ofan or 4Ofan, NSCC or Swift)", "; ".join(parts)
    )


def c_fig14_models(d: Data) -> Outcome:
    rows = d.of("fig14m")
    sizes = (119 * 4096, 1533 * 4096)
    st = {(s, m): stat(rows, "cct_increase", cell_label=s, size_bytes=m) for s in ("ar", "reps", "ofan") for m in sizes}
    if not all(v.ok for v in st.values()):
        return no_data("fig14m (8B and 405B)")
    ofan_falls = st[("ofan", sizes[1])].mean < st[("ofan", sizes[0])].mean
    ratio = {
        s: st[(s, sizes[1])].mean / st[(s, sizes[0])].mean if st[(s, sizes[0])].mean > 0 else math.inf
        for s in ("ar", "reps", "ofan")
    }
    ok = ofan_falls and ratio["ofan"] < min(ratio["ar"], ratio["reps"])
    return Outcome(
        verdict(ok),
        ratio["ofan"],
        None,
        "Ofan's increase at 405B over 8B",
        ", ".join(
            f"{s} {pct(st[(s, sizes[0])])} at 8B, {pct(st[(s, sizes[1])])} at 405B" for s in ("ar", "reps", "ofan")
        ),
    )


def c_fig18_model(d: Data) -> Outcome:
    rows = valid(d.of("fig17"))
    rows = rows[rows["cell_label"] == "ofan"] if not rows.empty else rows
    if rows.empty:
        return no_data("Ofan in fig17 (an inter-pod permutation without ACKs)")
    parts, ok, edge_err = [], True, 0.0
    for k, g in rows.groupby("k"):
        model = queue_model.layer_means(int(k))
        got = {st: float(g[f"queue_{st}_avg_pkts"].mean()) for st in queue_model.STAGES}
        e = got["edge_agg"] - model["edge_agg"]
        edge_err = max(edge_err, abs(e))
        ok = ok and abs(e) <= max(0.25 * model["edge_agg"], 0.1)
        ok = ok and all(
            got[st] <= max(3 * model[st], model[st] + 0.25) and model[st] <= max(3 * got[st], got[st] + 0.25)
            for st in queue_model.STAGES
            if st != "edge_agg"
        )
        parts.append(
            f"k={int(k)}: " + ", ".join(f"{st} {got[st]:.2f} (model {model[st]:.2f})" for st in queue_model.STAGES)
        )
    return Outcome(
        verdict(ok),
        edge_err,
        None,
        "packets, the edge uplinks' largest error",
        "; ".join(parts),
        "" if ok else "the kernel counts a packet in a queue until the far end's program sees it",
    )


def c_memory(d: Data) -> Outcome:
    tree = FatTree(64, "c")
    b = decisions.b_bits(tree.w)
    edge_ptrs = decisions.N_CLASSES * (tree.n_edges - 1)  # one per (other edge switch, size class)
    agg_ptrs = decisions.N_CLASSES * (tree.pods - 1)  # one per (other pod, size class)
    edge_kb, agg_b, basis_b = edge_ptrs * b / 8 / 1024, agg_ptrs * b / 8, tree.w * b / 8
    ok = abs(edge_kb - 2.5) <= 0.125 and abs(agg_b - 79) <= 2 and round(basis_b) == 20
    return Outcome(
        verdict(ok),
        edge_kb,
        None,
        "KB per edge switch (k=64)",
        f"edge switch {edge_ptrs} pointers of {b} bits = {edge_kb:.2f} KB; aggregation switch {agg_ptrs} "
        f"pointers = {agg_b:.0f} B; basis {tree.w} x {b} bits = {basis_b:.0f} B",
    )


def c_rtt(d: Data) -> Outcome:
    rtt = 2 * 6 * PAPER_LINK_DELAY_PKTS  # an inter-pod path, both ways, in packet times of 4,178 B
    m1, m4 = 256 / rtt, 1024 / rtt
    ok = abs(rtt / 150 - 1) <= 0.1 and abs(m1 / 1.7 - 1) <= 0.1 and abs(m4 / 6.8 - 1) <= 0.1
    return Outcome(
        verdict(ok),
        rtt,
        None,
        "packet times, the inter-pod propagation RTT",
        f"1 MB = {m1:.2f} RTTs, 4 MB = {m4:.2f} RTTs (the frames' own serialisation, one packet time, left out)",
    )
