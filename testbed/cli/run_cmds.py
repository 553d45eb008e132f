"""The commands that run experiments and show their results: run, compare,
demo, plot, and ideal (the same experiment on the ideal fabric, no kernel)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from .. import api
from ..api import commands
from ..api.commands import Where
from ..models.schemes import SchemeConfig
from ..run.params import RunError
from ..topology import FatTree
from . import args, options, tables


def add_fabric_choice(sp: argparse.ArgumentParser, what: str) -> None:
    """Where a run command runs: the fabric that is up under --prefix, or an ephemeral one these describe."""
    sp.add_argument("--k", type=args.k_value, default=None, help="fat-tree k (ephemeral fabric: default 4)")
    sp.add_argument(
        "--rate",
        type=args.rate,
        default=None,
        help=args.RATE_HELP + f" (an ephemeral fabric's; default auto, {what})",
    )
    args.add_wire_overhead(sp)
    args.add_ack_priority(sp)
    args.add_topology(sp)
    args.add_common(sp)


def where_of(a: argparse.Namespace) -> Where:
    return Where(
        k=a.k,
        topology=a.topology,
        rate=a.rate,
        wire_overhead=a.wire_overhead,
        ack_priority=a.ack_priority,
        prefix=a.prefix,
    )


def add_run(sub: Any) -> None:
    run = sub.add_parser("run", help="run a collective (on the fabric that is up, or on an ephemeral one)")
    options.add(run, options.RUN)
    run.add_argument(
        "--retries",
        type=args.nonnegative_int,
        default=0,
        help="re-run an invalid run (fidelity out of tolerance) up to N times, same seed (default 0)",
    )
    args.add_wait(run)
    run.add_argument("--json", action="store_true", help="print exactly one JSON object")
    run.add_argument(
        "--out", type=Path, default=None, help="result directory (default results/<time>-<workload>-<scheme>-s<seed>)"
    )
    add_fabric_choice(run, "counting the ACKs of --acks")


def _print_result(a: argparse.Namespace, r: dict[str, Any]) -> None:
    if a.json:
        print(json.dumps(r))
    else:
        from .tables import run_table

        args.console().print(run_table(r))
        if r.get("out_dir"):
            print(f"results in {r['out_dir']}")
    _warn_if_invalid([r])


def _warn_if_invalid(results: list[dict[str, Any]]) -> None:
    """A run outside its fidelity tolerance: a warning in colour on stderr."""
    for r in results:
        f = r["fidelity"]
        if r.get("discarded_attempts"):
            args.console(stderr=True).print(
                f"[yellow]note:[/] the {r['scheme']} run was repeated "
                f"{len(r['discarded_attempts'])} time(s): earlier attempts were invalid"
            )
        if not f["valid"]:
            args.console(stderr=True).print(
                f"[bold red]warning:[/] the {r['scheme']} run is INVALID: " + "; ".join(f["reasons"])
            )


def _out_dir(a: argparse.Namespace) -> Path:
    if a.out is not None:
        return Path(a.out)
    label = SchemeConfig(a.scheme, a.pipe_size).label if a.scheme is not None else "current"
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return Path("results") / f"{stamp}-{a.workload}-{label}-s{a.seed}"


def cmd_run(a: argparse.Namespace) -> int:
    def note(text: str) -> None:
        args.console(stderr=True).print(f"[yellow]note:[/] {text}")

    given = options.values(a)
    result = commands.run(
        given.pop("workload"),
        given.pop("size"),
        where=where_of(a),
        retries=a.retries,
        out=_out_dir(a),
        wait=a.wait,
        note=note,
        **given,
    )
    _print_result(a, result.json())
    return 0


def add_compare(sub: Any) -> None:
    cmp_ = sub.add_parser("compare", help="run a matrix of schemes x seeds and compare them")
    options.add(cmp_, options.COMPARE)
    cmp_.add_argument(
        "--retries", type=args.nonnegative_int, default=2, help="re-run invalid runs up to N times (default 2)"
    )
    cmp_.add_argument("--out", type=Path, default=None, help="directory (default results/<time>-compare)")
    args.add_wait(cmp_)
    add_fabric_choice(cmp_, "counting the ACKs of --acks")


def cmd_compare(a: argparse.Namespace) -> int:
    from .plots import plot_compare
    from .tables import summary_table

    given = options.values(a)
    out = a.out or Path("results") / f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-compare"
    df, summary, title = commands.compare(
        given.pop("scheme"), given.pop("seed"), where=where_of(a), out=out, retries=a.retries, wait=a.wait, **given
    )
    plot_compare(summary, out / "compare.png", title)
    args.console().print(summary_table(summary, title))
    print(f"results in {out} (summary.csv, schemes.csv, compare.png, one directory per run)")
    if not df["valid"].all():
        args.console(stderr=True).print(
            f"[bold red]warning:[/] {int((~df['valid']).sum())} run(s) INVALID; see summary.csv"
        )
    return 0


def add_plot(sub: Any) -> None:
    plot = sub.add_parser("plot", help="draw figures from a result directory")
    plot.add_argument("what", choices=("queues",), help="queues: occupancy over time of the most loaded ports")
    plot.add_argument("dir", type=Path, help="a result directory (testbed run --out)")
    plot.add_argument("--output", type=Path, default=None, help="PNG file (default DIR/queues.png)")


def cmd_plot(a: argparse.Namespace) -> int:
    from ..measure.results import ResultsError, load
    from .plots import plot_queues

    try:
        res = load(a.dir, allow_incomplete=False)
    except ResultsError as e:
        raise RunError(str(e)) from None
    out = a.output or a.dir / "queues.png"
    port = plot_queues(res, out)
    print(f"wrote {out} (most loaded port: {port})")
    return 0


IDEAL_WORKLOADS = ("permutation", "ring", "stride", "cm")


def add_rates(sub: Any) -> None:
    sp = sub.add_parser(
        "rates",
        help="per failure set, the host rate the LP's split, Ofan's even split and weighted Ofan's sustain (no root)",
    )
    sp.add_argument(
        "--failures",
        type=args.probabilities,
        default=(0.05, 0.1),
        help="comma-separated link failure probabilities, each in (0, 1) (default 0.05,0.1)",
    )
    sp.add_argument("--seeds", type=args.seeds, default=tuple(range(1, 11)), help=args.SEEDS_HELP + " (default 1-10)")
    sp.add_argument("--k", type=args.k_value, default=12, help="fat-tree k (default 12)")
    sp.add_argument("--inter-pod", action="store_true", help="the permutation's every flow crosses pods")
    sp.add_argument("--json", action="store_true", help="one JSON object per line instead of the table")
    args.add_topology(sp)


def cmd_rates(a: argparse.Namespace) -> int:
    rows = api.rates(failures=a.failures, seeds=a.seeds, k=a.k, topology=a.topology or "fattree", inter_pod=a.inter_pod)
    if a.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    args.console().print(
        tables.rates_table(
            rows,
            f"rates that keep every link within capacity: {a.topology or 'fattree'} k={a.k}, a 1 MB "
            f"{'inter-pod ' if a.inter_pod else ''}permutation, the failure sets of a sweep's cells",
        )
    )
    return 0


def add_ideal(sub: Any) -> None:
    sp = sub.add_parser(
        "ideal",
        help="the same experiment on the ideal fabric: exact time, no emulator, no root (testbed/models/ideal.py)",
    )
    sp.add_argument(
        "--schemes",
        default="ecmp,rps,ofan,pofan:4",
        help="comma-separated, of ecmp, rps, rr, jsq, ofan, pofan:P, drb (default ecmp,rps,ofan,pofan:4)",
    )
    sp.add_argument("--seeds", type=args.seeds, default=(1, 2, 3), help=args.SEEDS_HELP + " (default 1-3)")
    sp.add_argument(
        "--workload",
        default="permutation",
        choices=IDEAL_WORKLOADS,
        help="cm: the connection matrix of --flows (one flow per host, all starting at 0; --size unused)",
    )
    sp.add_argument("--inter-pod", action="store_true", help="permutation: every flow crosses pods")
    sp.add_argument("--size", type=args.size, default=1 << 20, help="bytes per flow, a multiple of the payload")
    sp.add_argument("--k", type=args.k_value, default=4, help="fat-tree k (default 4)")
    sp.add_argument(
        "--start-jitter",
        type=float,
        default=0.0,
        help="NIC releases spread uniformly over this many packet times (default 0)",
    )
    sp.add_argument(
        "--order",
        default="random",
        choices=("random", "fixed"),
        help="frames reaching a switch at one instant: in a random order (default) or by source host, "
        "the same phase every packet time",
    )
    sp.add_argument(
        "--link",
        default="emulator",
        choices=("emulator", "paper"),
        help="the link model: the emulator's (token buckets of 2 frames, no serialisation per hop; default) or "
        "the paper's simulator's (one frame in service per port at line rate, store-and-forward at every hop)",
    )
    sp.add_argument(
        "--spray",
        default="switch",
        choices=("switch", "entropies"),
        help="rps: each switch draws an uplink per packet (default), or, as htsim's oblivious spraying, each "
        "flow cycles through --entropies values in a shuffled round robin and each switch hashes them",
    )
    sp.add_argument(
        "--entropies",
        type=args.positive_int,
        default=8192,
        help="--spray entropies: entropy values per flow, a power of two (default 8192, htsim's -paths as the "
        "twin ran it)",
    )
    options.add(sp, options.RUN, only=("propagation", "flows", "cm_rate"))
    sp.add_argument("--json", action="store_true", help="one JSON object per line instead of the table")
    args.add_topology(sp)


def cmd_ideal(a: argparse.Namespace) -> int:
    rows = api.ideal(
        a.schemes,
        seeds=a.seeds,
        workload=a.workload,
        size=a.size,
        k=a.k,
        topology=a.topology or "fattree",
        inter_pod=a.inter_pod,
        start_jitter=a.start_jitter,
        order=a.order,
        propagation=a.propagation,
        on_row=(lambda row: print(json.dumps(row), flush=True)) if a.json else None,
        link=a.link,
        spray=a.spray,
        entropies=a.entropies,
        flows=a.flows,
        cm_rate=a.cm_rate,
    )
    tree = FatTree(a.k, "ideal", a.topology or "fattree")
    d = rows[0]["propagation_pkts"] if rows else 0.0
    work = f"cm {a.flows}" if a.workload == "cm" else f"{a.workload}{' inter-pod' if a.inter_pod else ''} {a.size} B"
    spray = f", rps over {a.entropies} entropies" if a.spray == "entropies" else ""
    if not a.json:
        args.console().print(
            tables.ideal_table(
                rows,
                f"ideal fabric: {tree.kind} k={a.k}, {work}, {a.link} links{spray}, "
                f"start jitter {a.start_jitter:g} packet times, {a.order} order, "
                f"propagation {d:.2f} packet times per link",
            )
        )
    return 0
