"""Figures drawn with matplotlib from result directories and comparisons (PNG files)."""

from __future__ import annotations

from typing import Any


def plot_queues(res: Any, out: Any, top: int = 4) -> str:
    """PNG of the sampled occupancy of the `top` most loaded ports (by their
    exact maximum); returns the most loaded port's name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ports = res.ports.sort_values(["max_pkts", "avg_pkts"], ascending=False)
    names = list(ports["port"].head(top))
    ts = res.timeseries
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name in names:
        series = ts[ts["port"] == name]
        ax.step(series["t_s"] * 1e3, series["pkts"], where="post", label=name)
    m = res.manifest
    size = m["params"].get("size", m["params"].get("size_bytes"))  # "size_bytes" in runs made before 2026-12-07
    ax.set_xlabel("time since the first packet (ms)")
    ax.set_ylabel("queue (packets)")
    ax.set_title(f"{m['params']['workload']} {size} B, load {m['params']['load']}, {m['scheme']}, k={m['k']}")
    ax.legend(loc="upper right", fontsize="small")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return str(names[0])


def plot_compare(summary: Any, out: Any, title: str) -> None:
    """Two panels: CCT increase (mean, SEM error bars) and the largest switch queue, per scheme."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    x = list(range(len(summary)))
    a1.bar(x, 100 * summary["cct_increase_mean"], yerr=100 * summary["cct_increase_sem"], capsize=4)
    a1.set_ylabel("CCT increase over the lower bound (%)")
    a2.bar(x, summary["max_queue_pkts"])
    a2.set_ylabel("largest switch queue (packets)")
    for ax in (a1, a2):
        ax.set_xticks(x, summary["scheme"], rotation=30)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
