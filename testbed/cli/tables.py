"""Tables built with rich for the commands to print: a run, runs side by side, a
comparison summary, a fabric's status."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from ..topology import Stage


def compare_table(results: list[dict[str, Any]], title: str = "") -> Table:
    """One column per run (scheme), one row per metric."""
    t = Table(title=title or None)
    t.add_column("metric")
    for r in results:
        t.add_column(r["scheme"], justify="right")

    def row(name: str, fmt: Any) -> None:
        t.add_row(name, *[fmt(r) for r in results])

    row("CCT (ms)", lambda r: f"{r['cct_s'] * 1e3:.2f}")
    row("lower bound (ms)", lambda r: f"{r['cct_lower_bound_s'] * 1e3:.2f}")
    row("CCT increase", lambda r: f"{100 * r['cct_increase']:.2f} %")
    for st in Stage:
        row(
            f"queue {STAGE_SHORT[st.label]} avg / max (pkts)",
            lambda r, s=st.label: f"{r['queues'][s]['avg_pkts']:.2f} / {r['queues'][s]['max_pkts']}",
        )
    row(
        "overload E->A/A->C/C->A/A->E (%)",
        lambda r: "/".join(f"{100 * r['overload'][s]:.0f}" for s in ("edge_agg", "agg_core", "core_agg", "agg_edge")),
    )
    row("utilisation", lambda r: f"{100 * r['utilisation']:.1f} %")
    row("packets sent / received", lambda r: f"{r['packets_sent']} / {r['packets_received']}")
    if any(r.get("acks") for r in results):
        row("ACKs received", lambda r: str(r["acks_received"]))
    row("drops", lambda r: str(r["drops"]))
    row("host pacing error (max)", lambda r: f"{100 * r['fidelity']['pacing_error_max']:.2f} %")
    row("emulator timing, at most", lambda r: f"+{100 * r['fidelity']['timing_excess_share']:.2f} % of CCT")
    row("fidelity", lambda r: "valid" if r["fidelity"]["valid"] else "[bold red]INVALID[/]")
    return t


def run_table(r: dict[str, Any]) -> Table:
    return compare_table([r], title=f"{r['workload']} {r['size_bytes']} B, load {r['load']}, k={r['k']}")


def status_table(st: dict[str, Any]) -> Table:
    t = Table(title=f"fabric {st['prefix']}: k={st['k']}, {st['hosts']} hosts, rate {st['rate']}")
    t.add_column("what")
    t.add_column("value", justify="right")
    t.add_row("namespaces", str(st["namespaces"]))
    t.add_row("links", str(len(st["links"])))
    t.add_row("links up", str(sum(1 for ln in st["links"] if ln["state"] == "up")))
    schemes: dict[str, int] = {}
    for s in st["switches"].values():
        schemes[s["scheme"]] = schemes.get(s["scheme"], 0) + 1
    t.add_row("LB switches by scheme", ", ".join(f"{k}: {v}" for k, v in sorted(schemes.items())))
    t.add_row("link watcher", "running" if st["watcher"]["alive"] else "[bold red]NOT RUNNING[/]")
    return t


def summary_table(summary: Any, title: str) -> Table:
    t = Table(title=title)
    for col, just in (
        ("scheme", "left"),
        ("runs (valid)", "right"),
        ("CCT increase of valid runs, mean +- SEM", "right"),
        ("max switch queue (pkts)", "right"),
        ("drops", "right"),
    ):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for _, r in summary.iterrows():
        mean = (
            "no valid run"
            if r["valid"] == 0
            else f"{100 * r['cct_increase_mean']:.2f} +- {100 * r['cct_increase_sem']:.2f} %"
        )
        none = r["valid"] == 0
        t.add_row(
            str(r["scheme"]),
            f"{r['runs']} ({r['valid']})",
            mean,
            "-" if none else str(int(r["max_queue_pkts"])),
            "-" if none else str(int(r["drops"])),
        )
    return t


STAGE_SHORT = {
    "host_edge": "H->E",
    "edge_agg": "E->A",
    "agg_core": "A->C",
    "core_agg": "C->A",
    "agg_edge": "A->E",
    "edge_host": "E->H",
}


def rates_table(rows: list[dict[str, Any]], title: str) -> Table:
    """`testbed rates`: per failure set the three splits' rates, then each probability's range."""
    t = Table(title=title, caption="rho: the highest host rate, a fraction of the line rate")
    for name in ("failures", "seed", "links down", "LP (rho_max)", "even (ofan)", "weighted (wofan)"):
        t.add_column(name, justify="right")
    for r in rows:
        t.add_row(
            f"{r['failures']:g}",
            str(r["seed"]),
            str(r["failed_links"]),
            *(f"{r[c]:.3f}" for c in ("rho_max", "rho_even", "rho_weighted")),
        )
    for p in dict.fromkeys(r["failures"] for r in rows):
        mine = [r for r in rows if r["failures"] == p]
        if len(mine) > 1:
            t.add_row(
                f"[bold]{p:g}[/]",
                "range",
                "",
                *(
                    f"{min(r[c] for r in mine):.2f}-{max(r[c] for r in mine):.2f}"
                    for c in ("rho_max", "rho_even", "rho_weighted")
                ),
            )
    return t


def ideal_table(rows: list[dict[str, Any]], title: str) -> Table:
    """`testbed ideal`: one row per scheme and seed, then each scheme's mean; with propagation, beside the
    exact CCT increase the analytic shift's (what a kernel run reports) and their difference."""
    t = Table(title=title, caption="largest queue per stage, in frames waiting")
    shifted = any("shifted_cct_increase" in r for r in rows)
    extra = ("shifted", "shift error") if shifted else ()
    for name in ("scheme", "seed", "CCT increase", *extra, *STAGE_SHORT.values()):
        t.add_column(name, justify="left" if name == "scheme" else "right")

    def cols(inc: float, sh: float | None) -> list[str]:
        out = [f"{100 * inc:.2f} %"]
        if shifted and sh is not None:
            out += [f"{100 * sh:.2f} %", f"{100 * (sh - inc):+.2f} pp"]
        return out

    for r in rows:
        t.add_row(
            r["scheme"],
            str(r["seed"]),
            *cols(r["cct_increase"], r.get("shifted_cct_increase")),
            *(str(r["max_queue"][s]) for s in STAGE_SHORT),
        )
    for scheme in dict.fromkeys(r["scheme"] for r in rows):
        mine = [r for r in rows if r["scheme"] == scheme]
        if len(mine) > 1:
            mean = sum(r["cct_increase"] for r in mine) / len(mine)
            sh = sum(r["shifted_cct_increase"] for r in mine) / len(mine) if shifted else None
            t.add_row(
                f"[bold]{scheme}[/]",
                "mean",
                *cols(mean, sh),
                *(str(max(r["max_queue"][s] for r in mine)) for s in STAGE_SHORT),
            )
    return t
