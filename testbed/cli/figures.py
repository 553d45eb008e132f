"""The figures of a sweep's report, in the paper's spirit, as PNG files: each
is drawn when the sweep varies what it is plotted against (load: Fig. 1,
message size: Fig. 4, fabric size: Fig. 5, pipe size: Fig. 6, packet size:
Fig. 8, failure probability: Fig. 9), plus the worst link overload per stage
(Fig. 3) and the queues of the worst ports over time. Means over the valid
seeds, error bars one standard error."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from ..measure import results
from ..measure.sweep_stats import Growth, Sweep, growths, summarise

STAGES = ("edge_agg", "agg_core", "core_agg", "agg_edge")
STAGE_LABELS = ("E->A", "A->C", "C->A", "A->E")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _schemes(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df["cell_label"]))


def _line_panels(
    summary: pd.DataFrame,
    x: str,
    panels: list[tuple[str, str, float]],
    xlabel: str,
    title: str,
    out: Path,
    log: bool = False,
    xfmt: Callable[[float], float] = lambda v: v,
    legend_extra: Callable[[str], str] = lambda s: "",
) -> Path:
    plt = _plt()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    for ax, (metric, ylabel, scale) in zip(axes[0], panels, strict=False):
        for scheme in _schemes(summary):
            d = summary[summary["cell_label"] == scheme].sort_values(x)
            d = d[d["valid"] > 0]
            if d.empty:
                continue
            ax.errorbar(
                [xfmt(v) for v in d[x]],
                scale * d[f"{metric}_mean"],
                yerr=scale * d[f"{metric}_sem"],
                marker="o",
                capsize=3,
                label=scheme + legend_extra(scheme),
            )
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if log:
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _fixed(rows: pd.DataFrame, keep: str) -> pd.DataFrame:
    """The rows at one value of every cell key but `keep` (the largest size, load 1.0 or the largest load,
    no failure, the first payload and k), so a line against `keep` changes one thing at a time."""
    d = rows
    for key, pick in (
        ("size_bytes", max),
        ("load", max),
        ("cell_failure", min),
        ("cell_payload", min),
        ("k", min),
        ("workload", min),
    ):
        if key != keep and key in d and d[key].nunique() > 1:
            d = d[d[key] == pick(list(d[key].unique()))]
    return d


CCT = ("cct_increase", "CCT increase over the lower bound (%)", 100.0)
QUEUE = ("max_queue_pkts", "largest switch queue (packets)", 1.0)
UTIL = ("utilisation", "utilisation (% of line rate)", 100.0)


def figures(sw: Sweep, out_dir: Path) -> list[tuple[str, Path]]:
    """Every figure this sweep supports, drawn into out_dir: (caption, path). A sweep of one of the paper's
    figures (its matrix's `figure`) gets that figure as the paper draws it first (testbed.cli.paper_figures)."""
    from .paper_figures import draw

    out_dir.mkdir(parents=True, exist_ok=True)
    rows = sw.rows
    figs: list[tuple[str, Path]] = draw(sw, out_dir)
    for against in (_load, _message_size, _network_size, _packet_size, _failures, _congestion_control, _pipe_size):
        figs += against(rows, out_dir)
    figs.append(("Fig. 3: worst link overload per stage", _overload_figure(rows, out_dir / "fig3-overload.png")))
    q = _queue_series(sw, out_dir / "queues-worst.png")
    if q is not None:
        figs.append(("Queues of the worst ports over time (the run with the largest queue of each scheme)", q))
    return figs


def _load(rows: pd.DataFrame, out_dir: Path) -> list[tuple[str, Path]]:
    """Fig. 1, if the sweep varies the load."""
    if rows["load"].nunique() < 2:
        return []
    s = summarise(_fixed(rows, "load"))
    return [
        (
            "Fig. 1: utilisation, largest queue and CCT increase against the offered load",
            _line_panels(
                s,
                "load",
                [UTIL, QUEUE, CCT],
                "offered load (fraction of line rate)",
                "against load",
                out_dir / "fig1-load.png",
            ),
        )
    ]


def _message_size(rows: pd.DataFrame, out_dir: Path) -> list[tuple[str, Path]]:
    """Fig. 4's two, the largest queue and the CCT increase, if the sweep varies the message size: log-log, each
    scheme's fitted growth exponent in its legend."""
    if rows["size_bytes"].nunique() < 2:
        return []
    d = _fixed(rows, "size_bytes")
    s = summarise(d)
    fits = {(g.scheme, g.metric): g for g in growths(d)}

    def exponent_of(metric: str) -> Callable[[str], str]:
        def label(scheme: str) -> str:
            g = fits.get((scheme, metric))
            return f" (x^{g.exponent:.2f})" if g else ""

        return label

    return [
        (
            f"Fig. 4: {metric[1]} against the message size, log-log, with the fitted growth exponent",
            _line_panels(
                s,
                "size_bytes",
                [metric],
                "message size per flow (KB)",
                "against message size",
                out_dir / f"fig4-{name}.png",
                log=True,
                xfmt=lambda v: v / 1024,
                legend_extra=exponent_of(metric[0]),
            ),
        )
        for metric, name in ((QUEUE, "queue"), (CCT, "cct"))
    ]


def _network_size(rows: pd.DataFrame, out_dir: Path) -> list[tuple[str, Path]]:
    """Fig. 5, if the sweep varies the fabric's size: against its hosts."""
    if rows["k"].nunique() < 2:
        return []
    s = summarise(_fixed(rows, "k"))
    s["hosts"] = [k**3 / 4 if r == "fattree" else k * k / 2 for k, r in zip(s["k"], s["topology"], strict=False)]
    return [
        (
            "Fig. 5: CCT increase against the network size",
            _line_panels(s, "hosts", [CCT], "hosts", "against network size", out_dir / "fig5-hosts.png"),
        )
    ]


def _packet_size(rows: pd.DataFrame, out_dir: Path) -> list[tuple[str, Path]]:
    """Fig. 8, if the sweep varies the payload per packet."""
    if rows["cell_payload"].nunique() < 2:
        return []
    s = summarise(_fixed(rows, "cell_payload"))
    return [
        (
            "Fig. 8: CCT increase against the packet size",
            _line_panels(
                s,
                "cell_payload",
                [CCT],
                "payload per packet (bytes)",
                "against packet size",
                out_dir / "fig8-packet.png",
            ),
        )
    ]


def _failures(rows: pd.DataFrame, out_dir: Path) -> list[tuple[str, Path]]:
    """Fig. 9, if the sweep varies the link failure probability: the increase over the fault-free bound."""
    if rows["cell_failure"].nunique() < 2:
        return []
    d = _fixed(rows, "cell_failure")
    s = summarise(d, ("cct_increase_fault_free", "cct_increase", "max_queue_pkts", "utilisation"))
    return [
        (
            "Fig. 9: CCT increase over the fault-free bound against the link failure probability",
            _line_panels(
                s,
                "cell_failure",
                [("cct_increase_fault_free", "CCT increase over the fault-free bound (%)", 100.0)],
                "probability of each switch link failing",
                "against link failures",
                out_dir / "fig9-failures.png",
            ),
        )
    ]


def _congestion_control(rows: pd.DataFrame, out_dir: Path) -> list[tuple[str, Path]]:
    """Fig. 12 (or 14, with several message sizes), if a run has a congestion control: a panel per CCA."""
    if "cell_cc" not in rows or not (rows["cell_cc"] != "none").any():
        return []
    ccs = [c for c in dict.fromkeys(rows["cell_cc"]) if c != "none"]
    several = rows["size_bytes"].nunique() > 1
    return [
        (
            ("Fig. 14: CCT increase per scheme and message size" if several else "Fig. 12: CCT increase per scheme")
            + " under "
            + ", ".join(ccs),
            _cc_figure(rows[rows["cell_cc"] != "none"], ccs, out_dir / "fig12-cc.png"),
        )
    ]


def _pipe_size(rows: pd.DataFrame, out_dir: Path) -> list[tuple[str, Path]]:
    """Fig. 6, if the sweep has pOfan at several pipe sizes."""
    pipes = _pipe_sizes(_schemes(rows))
    if len(pipes) < 2:
        return []
    return [
        ("Fig. 6: CCT increase against the pipe size (pOfan)", _pipe_figure(rows, pipes, out_dir / "fig6-pipes.png"))
    ]


def _pipe_sizes(labels: list[str]) -> dict[str, int]:
    out = {}
    for lb in labels:
        if lb.endswith("ofan") and lb[:-4].isdigit():
            out[lb] = int(lb[:-4])
    return out


def _pipe_figure(rows: pd.DataFrame, pipes: dict[str, int], out: Path) -> Path:
    plt = _plt()
    d = summarise(_fixed(rows, "cell_label"))
    d = d[d["cell_label"].isin(list(pipes))]
    d = d.assign(pipe=[pipes[lb] for lb in d["cell_label"]]).sort_values("pipe")
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    ax.errorbar(
        d["pipe"], 100 * d["cct_increase_mean"], yerr=100 * d["cct_increase_sem"], marker="o", capsize=3, label="pOfan"
    )
    ofan = summarise(_fixed(rows, "cell_label"))
    ofan = ofan[ofan["cell_label"] == "ofan"]
    if not ofan.empty and not math.isnan(float(ofan["cct_increase_mean"].iloc[0])):
        ax.axhline(100 * float(ofan["cct_increase_mean"].iloc[0]), linestyle="--", color="grey", label="Ofan")
    ax.set_xlabel("switch ports per pipe")
    ax.set_ylabel("CCT increase over the lower bound (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _cc_figure(rows: pd.DataFrame, ccs: list[str], out: Path) -> Path:
    """One panel per congestion control: CCT increase per scheme (bars, mean and SEM over valid runs), one group
    per message size."""
    plt = _plt()
    s = summarise(rows)
    schemes = _schemes(rows)
    sizes = sorted(rows["size_bytes"].unique())
    fig, axes = plt.subplots(1, len(ccs), figsize=(4.2 * len(ccs) + 1, 4.2), squeeze=False)
    width = 0.8 / max(1, len(schemes))
    for ax, cc in zip(axes[0], ccs, strict=False):
        d = s[s["cell_cc"] == cc]
        for i, scheme in enumerate(schemes):
            vals, errs = [], []
            for size in sizes:
                r = d[(d["cell_label"] == scheme) & (d["size_bytes"] == size)]
                vals.append(100 * float(r["cct_increase_mean"].iloc[0]) if len(r) else float("nan"))
                errs.append(100 * float(r["cct_increase_sem"].iloc[0]) if len(r) else 0.0)
            ax.bar([j + i * width for j in range(len(sizes))], vals, width, yerr=errs, label=scheme)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(sizes))], [f"{sz // 1024} KB" for sz in sizes])
        ax.set_title(cc)
        ax.set_ylabel("CCT increase over the lower bound (%)")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _overload_figure(rows: pd.DataFrame, out: Path) -> Path:
    plt = _plt()
    d = rows[rows["fidelity_valid"].astype(bool)]
    schemes = _schemes(rows)
    fig, ax = plt.subplots(figsize=(max(5.5, 1.1 * len(schemes) + 2), 4.2))
    width = 0.8 / max(1, len(STAGES))
    for i, (stage, label) in enumerate(zip(STAGES, STAGE_LABELS, strict=False)):
        vals = [
            100 * float(d[d["cell_label"] == s][f"overload_{stage}"].mean()) if (d["cell_label"] == s).any() else 0.0
            for s in schemes
        ]
        ax.bar([j + i * width for j in range(len(schemes))], vals, width, label=label)
    ax.set_xticks([j + 1.5 * width for j in range(len(schemes))], schemes, rotation=30)
    ax.set_ylabel("worst link overload (% above the stage's mean)")
    ax.set_title("worst link overload per stage (mean over valid runs)")
    ax.legend(fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _queue_series(sw: Sweep, out: Path) -> Path | None:
    """Per scheme, the valid run with the largest switch queue: its worst switch port's occupancy over time."""
    rows = sw.rows[sw.rows["fidelity_valid"].astype(bool)]
    if rows.empty:
        return None
    plt = _plt()
    schemes = _schemes(rows)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    drawn = 0
    for scheme in schemes:
        r = rows[rows["cell_label"] == scheme].sort_values("max_queue_pkts").iloc[-1]
        run_dir = sw.path / "cells" / str(r["cell"])
        try:
            res = results.load(run_dir)
        except results.ResultsError:
            continue
        switch_ports = res.ports[res.ports["stage"] != "host_edge"]  # not the NIC's own queue
        worst = switch_ports.sort_values(["max_pkts", "avg_pkts"], ascending=False)["port"].iloc[0]
        ts = res.timeseries[res.timeseries["port"] == worst]
        ax.step(ts["t_s"] * 1e3, ts["pkts"], where="post", label=f"{scheme}: {worst}")
        drawn += 1
    if not drawn:
        plt.close(fig)
        return None
    ax.set_xlabel("time since the first packet (ms)")
    ax.set_ylabel("queue (packets)")
    ax.set_yscale("symlog")
    ax.set_title("the worst port of each scheme's largest-queue run")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def growth_rows(gs: list[Growth]) -> list[dict[str, Any]]:
    return [
        {
            "scheme": g.scheme,
            "metric": g.metric,
            "exponent": g.exponent,
            "ci95_low": g.ci95[0],
            "ci95_high": g.ci95[1],
            "runs": g.points,
            "sizes": g.sizes,
        }
        for g in gs
    ]
