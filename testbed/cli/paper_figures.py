"""The paper's figures drawn as the paper draws them, for sweeps of its
presets (testbed.run.paper; the matrix's `figure` names which): Fig. 7's
CCT increase against the message size with its 1/sqrt(m) trend, Fig. 8's
packet size with the model of Thm. 6 and its optimum (the red dot), Fig.
11's mixes between their two ends, Fig. 13's four panels, Fig. 14's per model and CCA, Fig. 17's ratio
of DRB's largest queue to Ofan's, Fig. 18's average queue per layer with
the model's lines (testbed.measure.queue_model). Means over the valid runs,
error bars one standard error. Other figures are drawn by what the sweep
varies (testbed.cli.figures)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..measure import claim_rules, queue_model
from ..measure.sweep_stats import Sweep, summarise

CCT_LABEL = "CCT increase over the lower bound (%)"
HEADER_BYTES = 82  # per packet on the wire beyond the payload: 58 B of headers on the veth and the 24 B it charges


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _valid(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[rows["fidelity_valid"].astype(bool)]


def _save(fig: Any, out: Path) -> Path:
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    _plt().close(fig)
    return out


def fig7(sw: Sweep, out_dir: Path) -> list[tuple[str, Path]]:
    """CCT increase against the message size (log x), each scheme, and the 1/sqrt(m) trend the gap follows
    (section 6.1) through the largest scheme's first point."""
    rows = sw.rows
    if rows["size_bytes"].nunique() < 2:
        return []
    s = summarise(rows)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4.3))
    anchor: tuple[float, float] | None = None
    for scheme in dict.fromkeys(s["cell_label"]):
        d = s[(s["cell_label"] == scheme) & (s["valid"] > 0)].sort_values("size_bytes")
        if d.empty:
            continue
        x = d["size_bytes"] / 1024
        ax.errorbar(
            x, 100 * d["cct_increase_mean"], yerr=100 * d["cct_increase_sem"], marker="o", capsize=3, label=scheme
        )
        first = (float(x.iloc[0]), 100 * float(d["cct_increase_mean"].iloc[0]))
        if anchor is None or first[1] > anchor[1]:
            anchor = first
    if anchor is not None:
        xs = np.array(sorted(rows["size_bytes"].unique()), dtype=float) / 1024
        ax.plot(xs, anchor[1] * np.sqrt(anchor[0] / xs), "k--", alpha=0.5, label="1/sqrt(m)")
    ax.set_xscale("log")
    ax.set_xlabel("message size per flow (KB)")
    ax.set_ylabel(CCT_LABEL)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="small")
    workload = ", ".join(dict.fromkeys(rows["workload"]))
    ax.set_title(f"Fig. 7: {workload}")
    return [
        (
            f"Fig. 7: CCT increase against the message size ({workload}), with the 1/sqrt(m) trend",
            _save(fig, out_dir / "fig7-message.png"),
        )
    ]


def fig8(sw: Sweep, out_dir: Path) -> list[tuple[str, Path]]:
    """CCT over the payload's own sending time against the payload, each scheme, with Thm. 6's model for Ofan
    (alpha: its 4 KB runs' CCT beyond the lower bound, in packet times) and the model's optimum (red dot)."""
    rows = _valid(sw.rows)
    if rows["cell_payload"].nunique() < 2 or rows.empty:
        return []
    rows = rows.assign(over_payload=rows["cct_s"] * rows["rate_bps"] / (8 * rows["size_bytes"]) - 1)
    s = summarise(rows.assign(cct_increase=rows["over_payload"]))
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4.3))
    for scheme in dict.fromkeys(s["cell_label"]):
        d = s[(s["cell_label"] == scheme) & (s["valid"] > 0)].sort_values("cell_payload")
        ax.errorbar(
            d["cell_payload"],
            100 * d["cct_increase_mean"],
            yerr=100 * d["cct_increase_sem"],
            marker="o",
            capsize=3,
            label=scheme,
        )
    ref = rows[(rows["cell_label"] == "ofan") & (rows["cell_payload"] == 4096)]
    if not ref.empty:
        t_pkt = (4096 + HEADER_BYTES) * 8 / ref["rate_bps"].astype(float)
        alpha = float(((ref["cct_s"] - ref["cct_lower_bound_s"]) / t_pkt).mean())
        message = float(ref["size_bytes"].iloc[0])
        if alpha > 0:
            ps = np.geomspace(rows["cell_payload"].min() / 2, rows["cell_payload"].max() * 2, 200)
            ax.plot(
                ps,
                [100 * queue_model.modelled_increase(p, HEADER_BYTES, alpha, message) for p in ps],
                "k:",
                label=f"model, alpha {alpha:.1f} pkts",
            )
            best = queue_model.optimal_payload(HEADER_BYTES, alpha, message)
            ax.plot(
                [best],
                [100 * queue_model.modelled_increase(best, HEADER_BYTES, alpha, message)],
                "o",
                color="red",
                markersize=9,
                label=f"optimum {best / 1024:.1f} KB",
            )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("payload per packet (bytes)")
    ax.set_ylabel("CCT over the payload's sending time (%)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="small")
    size = int(rows["size_bytes"].iloc[0])
    ax.set_title(f"Fig. 8: a {size / (1 << 20):g} MB message")
    caption = (
        f"Fig. 8: CCT against the packet size, a {size / (1 << 20):g} MB message, with Thm. 6's model and its "
        "optimum (red)"
    )
    return [(caption, _save(fig, out_dir / "fig8-model.png"))]


def fig11(sw: Sweep, out_dir: Path) -> list[tuple[str, Path]]:
    """CCT increase of all AR, each mix (4Ofan on half the LB switches), all 4Ofan; the ends' midpoint dashed."""
    s = summarise(sw.rows)
    base = str(sw.matrix.get("mix_base", "ar"))
    order: list[tuple[str, pd.DataFrame]] = []
    for _, r in s.iterrows():
        name = r["cell_label"] if r["cell_mix"] == "none" else f"{r['cell_label']} on {r['cell_mix']}"
        order.append((name, r))
    order.sort(key=lambda nr: 0 if nr[0] == base else 2 if " on " not in nr[0] else 1)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.3))
    names = [n for n, _ in order]
    vals = [100 * float(r["cct_increase_mean"]) for _, r in order]
    errs = [100 * float(r["cct_increase_sem"]) for _, r in order]
    ax.bar(range(len(names)), vals, yerr=errs, capsize=3, color=["#999" if " on " not in n else "#4a7" for n in names])
    ends = [v for n, v in zip(names, vals, strict=False) if " on " not in n and not math.isnan(v)]
    if len(ends) == 2:
        ax.axhline(sum(ends) / 2, linestyle="--", color="grey", label="midpoint of the two ends")
        ax.legend(fontsize="small")
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right")
    ax.set_ylabel(CCT_LABEL)
    ax.set_title("Fig. 11: incremental deployment")
    ax.grid(axis="y", alpha=0.3)
    return [
        (
            "Fig. 11: CCT increase with 4Ofan on half the LB switches (four ways) between all AR and all 4Ofan",
            _save(fig, out_dir / "fig11-mixes.png"),
        )
    ]


def _grouped(
    s: pd.DataFrame,
    *,
    group: str,
    names: dict[Any, str],
    metrics: tuple[tuple[str, str, float, bool], ...],
    title: str,
    stem: str,
    out_dir: Path,
) -> list[tuple[str, Path]]:
    """Per congestion control a panel, per value of `group` a group of bars, per scheme a bar: each metric
    (column, axis label, scale, log axis) a figure."""
    ccs = list(dict.fromkeys(s["cell_cc"]))
    groups = list(dict.fromkeys(s[group]))
    schemes = list(dict.fromkeys(s["cell_label"]))
    out = []
    for metric, label, scale, log in metrics:
        plt = _plt()
        fig, axes = plt.subplots(1, len(ccs), figsize=(4.6 * len(ccs) + 1, 4.2), squeeze=False)
        width = 0.8 / max(1, len(schemes))
        for ax, cc in zip(axes[0], ccs, strict=False):
            for i, scheme in enumerate(schemes):
                vals, errs = [], []
                for g in groups:
                    r = s[(s["cell_cc"] == cc) & (s[group] == g) & (s["cell_label"] == scheme)]
                    vals.append(scale * float(r[f"{metric}_mean"].iloc[0]) if len(r) else math.nan)
                    errs.append(scale * float(r[f"{metric}_sem"].iloc[0]) if len(r) else 0.0)
                ax.bar([j + i * width for j in range(len(groups))], vals, width, yerr=errs, capsize=2, label=scheme)
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(groups))], [names.get(g, str(g)) for g in groups])
            ax.set_title("no CCA" if cc == "none" else cc)
            ax.set_ylabel(label)
            if log:
                ax.set_yscale("log")
            ax.grid(axis="y", alpha=0.3)
        axes[0][0].legend(fontsize="small")
        out.append((f"{title}, {label.split(' (')[0]} per scheme", _save(fig, out_dir / f"{stem}-{metric}.png")))
    return out


def fig13(sw: Sweep, out_dir: Path) -> list[tuple[str, Path]]:
    """Per congestion control a panel, per workload (without and with EPLB) a group: CCT increase and largest
    switch queue per scheme."""
    s = summarise(sw.rows)
    names = {w: "with EPLB" if str(w).endswith("eplb") else "without EPLB" for w in s["workload"]}
    return _grouped(
        s,
        group="workload",
        names=names,
        metrics=(
            ("cct_increase", CCT_LABEL, 100.0, False),
            ("max_queue_pkts", "largest switch queue (packets)", 1.0, True),
        ),
        title="Fig. 13: MoE dispatch, without and with EPLB, per CCA",
        stem="fig13",
        out_dir=out_dir,
    )


FSDP_MODELS = {119 * 4096: "8B", 418 * 4096: "70B", 1533 * 4096: "405B"}  # section 6.7's packets per flow and step


def fig14(sw: Sweep, out_dir: Path) -> list[tuple[str, Path]]:
    """Per congestion control a panel, per model a group: the chained pass's CCT increase (log), the
    receivers' utilisation and the largest switch queue per scheme, as Fig. 14's panels."""
    s = summarise(sw.rows)
    return _grouped(
        s,
        group="size_bytes",
        names=FSDP_MODELS,
        metrics=(
            ("cct_increase", CCT_LABEL, 100.0, True),
            ("utilisation", "utilisation (%)", 100.0, False),
            ("max_queue_pkts", "largest switch queue (packets)", 1.0, False),
        ),
        title="Fig. 14: FSDP2's backward pass per model and CCA",
        stem="fig14",
        out_dir=out_dir,
    )


def _hosts(k: int, topology: str) -> int:
    return k**3 // 4 if topology == "fattree" else k * k // 2


def fig17(sw: Sweep, out_dir: Path) -> list[tuple[str, Path]]:
    """DRB's largest switch queue over Ofan's, mean over the valid runs of each, against the number of hosts
    (error bar: the ratio's standard error from both means')."""
    s = summarise(sw.rows)
    pts = []
    for k in sorted(s["k"].unique()):
        d = s[s["k"] == k].set_index("cell_label")
        if not {"drb", "ofan"} <= set(d.index) or min(d.loc["drb", "valid"], d.loc["ofan", "valid"]) == 0:
            continue
        a, b = float(d.loc["drb", "max_queue_pkts_mean"]), float(d.loc["ofan", "max_queue_pkts_mean"])
        sa, sb = float(d.loc["drb", "max_queue_pkts_sem"]), float(d.loc["ofan", "max_queue_pkts_sem"])
        ratio = a / b
        pts.append((_hosts(int(k), str(d["topology"].iloc[0])), ratio, ratio * math.hypot(sa / a, sb / b)))
    if not pts:
        return []
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4.3))
    ax.errorbar(
        [p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts], marker="o", capsize=3, label="DRB / Ofan"
    )
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("hosts")
    ax.set_ylabel("largest queue, DRB over Ofan")
    ax.set_title("Fig. 17: scaling impact on queue sizes")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="small")
    return [
        (
            "Fig. 17: ratio of DRB's largest switch queue to Ofan's against the number of hosts",
            _save(fig, out_dir / "fig17-ratio.png"),
        )
    ]


def fig18(sw: Sweep, out_dir: Path) -> list[tuple[str, Path]]:
    """Ofan's average queue over the sending window at each of the five switch layers, per fabric size, against
    the model with the kernel's server (black; dotted: the paper's edge and aggregation counts; dashed: the
    downlinks, the testbed's own) and with the paper's (grey)."""
    rows = _valid(sw.rows[sw.rows["cell_label"] == "ofan"])
    if rows.empty:
        return []
    ks = sorted(int(k) for k in rows["k"].unique())
    plt = _plt()
    fig, axes = plt.subplots(1, len(ks), figsize=(4.4 * len(ks) + 0.5, 4.2), squeeze=False)
    labels = ("E->A", "A->C", "C->A", "A->E", "E->H")
    for ax, k in zip(axes[0], ks, strict=False):
        d = rows[rows["k"] == k]
        got = [claim_rules.sending_queue(d, st) for st in queue_model.STAGES]
        means = [float(g.mean()) for g in got]
        sems = [float(g.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else 0.0 for g in got]
        ax.bar(range(5), means, yerr=sems, capsize=3, color="#4a7", label="measured (sending window)")
        model = queue_model.layer_means(k, queue_model.KERNEL_BUCKET_FRAMES)
        paper = queue_model.layer_means(k)
        for i, st in enumerate(queue_model.STAGES):
            ax.hlines(
                paper[st], i - 0.45, i + 0.45, colors="0.6", linestyles=":", label="paper's server" if i == 0 else None
            )
            ax.hlines(
                model[st],
                i - 0.45,
                i + 0.45,
                colors="k",
                linestyles=":" if st in queue_model.EXACT else "--",
                label=(
                    "model, kernel's server (paper's counts)"
                    if st == "edge_agg"
                    else "model, kernel's server (downlinks: testbed's)"
                    if st == "core_agg"
                    else None
                ),
            )
        ax.set_xticks(range(5), labels)
        ax.set_title(f"k={k}, {_hosts(k, 'fattree')} hosts")
        ax.set_ylabel("average queue (packets)")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize="small")
    return [
        (
            "Fig. 18: Ofan's average queue per switch layer against the queue model (ND/D/1 per layer)",
            _save(fig, out_dir / "fig18-layers.png"),
        )
    ]


DRAW: dict[str, Callable[[Sweep, Path], list[tuple[str, Path]]]] = {
    "fig7": fig7,
    "fig8": fig8,
    "fig11": fig11,
    "fig13": fig13,
    "fig14": fig14,
    "fig17": fig17,
    "fig18": fig18,
}


def draw(sw: Sweep, out_dir: Path) -> list[tuple[str, Path]]:
    """The paper's drawing of this sweep's figure, if it has one ([] otherwise or without data)."""
    f = DRAW.get(str(sw.matrix.get("figure", "")))
    return f(sw, out_dir) if f is not None else []
