"""The sweep command: a matrix of runs into one resumable directory, with a
progress bar; `report` renders a sweep directory from its files alone; `demo`,
a small sweep."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from .. import api
from ..topology.units import format_rate
from . import args, options


def probabilities(text: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"failure probabilities are numbers, got {text!r}") from None
    if not vals or any(not 0 <= v < 1 for v in vals):
        raise argparse.ArgumentTypeError(f"failure probabilities must be in [0, 1), got {text!r}")
    return vals


def ks(text: str) -> tuple[int, ...]:
    return tuple(args.k_value(x) for x in text.split(",") if x.strip())


def add_sweep(sub: Any) -> None:
    sw = sub.add_parser("sweep", help="run a matrix of schemes, workloads, sizes, loads, failures, k and seeds")
    options.add(sw, options.SWEEP)
    fab = sw.add_argument_group("fabric options")
    fab.add_argument("--k", type=ks, default=(4,), help="comma-separated fabric sizes (default 4)")
    fab.add_argument(
        "--failures",
        type=probabilities,
        default=(0.0,),
        help="comma-separated probabilities of each switch link failing (default 0): hosts paced at rho_max",
    )
    fab.add_argument("--rate", type=args.rate, default=args.AUTO_RATE, help=args.RATE_HELP + " (default auto)")
    args.add_rate_factor(fab)
    args.add_wire_overhead(fab)
    args.add_ack_priority(fab)
    args.add_topology(fab)
    sw.add_argument(
        "--retries", type=args.nonnegative_int, default=2, help="re-run invalid cells up to N times (default 2)"
    )
    sw.add_argument("--out", type=Path, required=True, help="the sweep's directory (re-run it to resume)")
    sw.add_argument(
        "--cluster",
        default=None,
        help="run the cells as Ray tasks: 'ray' (the cluster this machine is a node of), HOST:PORT or "
        "ray://HOST:PORT; nodes started with --resources '{\"testbed_fabric\": 1}' (docs/sweeps.md)",
    )
    args.add_wait(sw)
    sw.add_argument(
        "--prefix", type=args.prefix, default="tbs", help="name prefix of the sweep's own fabrics (default tbs)"
    )


def matrix_of(a: argparse.Namespace) -> Any:
    """The sweep's matrix from its command line: the run options by name, the fabrics."""
    from ..run.sweep import matrix

    given = options.values(a)
    return matrix(
        given.pop("scheme"),
        k=a.k,
        failures=a.failures,
        topology=a.topology or "fattree",
        rate_bps=a.rate,
        rate_factor=a.rate_factor or 1.0,
        wire_overhead=a.wire_overhead,
        ack_priority=a.ack_priority,
        retries=a.retries,
        **given,
    )


def describe(row: dict[str, Any]) -> str:
    verdict = "valid" if row["fidelity_valid"] else "[red]INVALID[/]"
    cc = f" {row['cc']}" if row.get("cc", "none") != "none" else ""
    mix = f" mix {row['cell_mix']}" if row.get("cell_mix", "none") != "none" else ""
    return (
        f"k={row['k']} {row.get('cell_label', row['scheme'])}{mix}{cc} {row['size_bytes'] // 1024} KB load {row['load']:g} s{row['seed']}: "
        f"{100 * row['cct_increase']:+.2f} % {verdict}"
    )


def cmd_sweep(a: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    m = matrix_of(a)
    total, pending = len(m.cells()), len(api.prepare_sweep(m, a.out, a.cluster).pending())
    if not pending:
        args.console().print(f"{a.out}: all {total} cells are done")
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    t0 = time.monotonic()
    with Progress(*columns, console=args.console(stderr=True), transient=False) as bar:
        task = bar.add_task("sweep", total=total)

        def progress(done: int, total_: int, row: dict[str, Any] | None) -> None:
            bar.update(task, completed=done, description=describe(row) if row else "sweep")

        api.sweep_matrix(m, a.out, cluster=a.cluster, prefix=a.prefix, wait=a.wait, progress=progress)
    args.console(stderr=True).print(f"sweep of {total} cells done in {time.monotonic() - t0:.0f} s")
    from .report import render

    render(a.out, console=args.console())
    return 0


def add_report(sub: Any) -> None:
    rp = sub.add_parser("report", help="tables, figures and an HTML page from a sweep's files (no root needed)")
    rp.add_argument("dir", type=Path, help="a sweep directory (testbed sweep --out, testbed paper --out)")
    rp.add_argument("--no-html", action="store_true", help="the terminal table and PNG figures only")


def cmd_report(a: argparse.Namespace) -> int:
    from .report import render

    render(a.dir, console=args.console(), html=not a.no_html)
    return 0


DEMO_SCHEMES = "ecmp,rps,ar,reps,ofan,pofan:4"


def add_demo(sub: Any) -> None:
    demo = sub.add_parser(
        "demo",
        help="a small sweep: k=4, ECMP, RPS, AR, REPS, Ofan and 4Ofan, two sizes, one "
        "seed; the table and an HTML report",
    )
    demo.add_argument("--k", type=args.k_value, default=4)
    spec = options.spec("size")
    demo.add_argument(
        "--sizes",
        type=options.argtype(spec.parse_list, "sizes"),
        default=(256 << 10, 1 << 20),
        help="comma-separated bytes per flow (default 256KB,1MB)",
    )
    demo.add_argument(
        "--schemes",
        type=options.argtype(options.spec("scheme").parse_list, "schemes"),
        default=tuple(DEMO_SCHEMES.split(",")),
        help=f"comma-separated (default {DEMO_SCHEMES}); ACKs on when one needs them",
    )
    options.add(demo, options.RUN, only=("load", "seed", "propagation"))
    demo.add_argument("--rate", type=args.rate, default=args.AUTO_RATE, help=args.RATE_HELP + " (default auto)")
    demo.add_argument(
        "--retries", type=args.nonnegative_int, default=2, help="re-run an invalid run up to N times (default 2)"
    )
    demo.add_argument("--out", type=Path, default=None, help="the sweep's directory (default results/<time>-demo)")
    args.add_wait(demo)
    args.add_topology(demo)
    args.add_common(demo)


def cmd_demo(a: argparse.Namespace) -> int:
    from ..models.schemes import SchemeConfig
    from ..run.sweep import matrix
    from .report import render

    m = matrix(
        a.schemes,
        size=a.sizes,
        load=a.load,
        seed=a.seed,
        propagation=a.propagation,
        k=(a.k,),
        topology=a.topology or "fattree",
        rate_bps=a.rate,
        retries=a.retries,
    )  # ACKs on when a scheme needs them: the matrix asks the registry
    out = a.out or Path("results") / f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-demo"
    needing = [x for x in a.schemes if SchemeConfig.parse(x).scheme.needs_acks]
    args.console().print(
        f"demo: k={a.k} {m.topology}, {len(m.cells())} runs, link rate {format_rate(m.rate_for(a.k))}"
        + (f" (ACKs on: {', '.join(needing)} {'needs' if len(needing) == 1 else 'need'} them)" if needing else "")
    )

    def progress(done: int, total: int, row: dict[str, Any] | None) -> None:
        if row is not None:
            args.console(stderr=True).print(f"[{done}/{total}] {describe(row)}")

    api.sweep_matrix(m, out, prefix=a.prefix, wait=a.wait, progress=progress)
    render(out, console=args.console())
    return 0
