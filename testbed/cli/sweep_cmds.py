"""The sweep command: a matrix of runs into one resumable directory, with a
progress bar; `report` renders a sweep directory from its files alone."""

from __future__ import annotations

import argparse
import dataclasses
import time
from datetime import UTC
from pathlib import Path
from typing import Any

from .. import api
from ..run.params import RunError
from ..topology.units import format_rate
from . import args

DEFAULT_SCHEMES = "ecmp,rps,ar,ofan,pofan:4"


def sizes(text: str) -> tuple[int, ...]:
    return tuple(args.size(x) for x in text.split(",") if x.strip())


def loads(text: str) -> tuple[float, ...]:
    return tuple(args.load(x) for x in text.split(",") if x.strip())


def probabilities(text: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"failure probabilities are numbers, got {text!r}") from None
    if not vals or any(not 0 <= v < 1 for v in vals):
        raise argparse.ArgumentTypeError(f"failure probabilities must be in [0, 1), got {text!r}")
    return vals


def names(what: str, allowed: tuple[str, ...], text: str) -> tuple[str, ...]:
    """A comma-separated list of `what`, each one of `allowed`, at least one."""
    vals = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [w for w in vals if w not in allowed]
    if bad or not vals:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {bad[0] if bad else text!r} (choose from {', '.join(allowed)})"
        )
    return vals


def workloads(text: str) -> tuple[str, ...]:
    from ..run.sweep import SWEEP_WORKLOADS

    return names("workload", SWEEP_WORKLOADS, text)


def mixes(text: str) -> tuple[str, ...]:
    from ..models.schemes import SchemeError, check_mix

    vals = tuple(x.strip() for x in text.split(",") if x.strip())
    try:
        for v in vals:
            check_mix(v)
    except SchemeError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if not vals:
        raise argparse.ArgumentTypeError("at least one mix")
    return vals


def ccs(text: str) -> tuple[str, ...]:
    from traffic.transport import CCAS

    return names("congestion control", CCAS, text)


def ks(text: str) -> tuple[int, ...]:
    return tuple(args.k_value(x) for x in text.split(",") if x.strip())


def add_sweep(sub: Any) -> None:
    sw = sub.add_parser("sweep", help="run a matrix of schemes, workloads, sizes, loads, failures, k and seeds")
    sw.add_argument("--schemes", default=DEFAULT_SCHEMES, help=f"comma-separated (default {DEFAULT_SCHEMES})")
    sw.add_argument(
        "--workloads", type=workloads, default=("permutation",), help="comma-separated (default permutation)"
    )
    sw.add_argument("--sizes", type=sizes, default=(1 << 20,), help="comma-separated, bytes per flow (default 1MB)")
    sw.add_argument("--loads", type=loads, default=(1.0,), help="comma-separated (default 1.0)")
    sw.add_argument(
        "--failures",
        type=probabilities,
        default=(0.0,),
        help="comma-separated probabilities of each switch link failing (default 0): hosts paced at rho_max",
    )
    sw.add_argument("--k", type=ks, default=(4,), help="comma-separated fabric sizes (default 4)")
    sw.add_argument("--payloads", type=sizes, default=(4096,), help="comma-separated payload bytes (default 4096)")
    sw.add_argument("--rate", type=args.rate, default=args.AUTO_RATE, help=args.RATE_HELP + " (default auto)")
    sw.add_argument("--seeds", type=args.seeds, default=(1, 2, 3), help=args.SEEDS_HELP + " (default 1-3)")
    sw.add_argument("--acks", action="store_true", help="receivers answer every data packet (reps needs it)")
    sw.add_argument("--inter-pod", action="store_true", help="permutation: every flow crosses pods")
    sw.add_argument("--flows", default=None, help="cm: a flow list in htsim's connection-matrix format")
    sw.add_argument(
        "--cm-rate",
        type=args.rate,
        default=100_000_000_000,
        help="cm: the line rate its start times were written for (default 100gbit)",
    )
    sw.add_argument(
        "--ccs",
        type=ccs,
        default=("none",),
        help="comma-separated congestion controls, none, dctcp, swift, nscc (default none); a CCA turns ACKs on",
    )
    sw.add_argument(
        "--base-rtt-pkts",
        type=float,
        default=None,
        help="with a CCA: the emulated base RTT in packet times (default 150)",
    )
    sw.add_argument(
        "--buffer",
        type=args.size,
        default=None,
        help="bytes per switch port (default 800KB with a CCA, unlimited without)",
    )
    sw.add_argument("--retries", type=int, default=2, help="re-run invalid cells up to N times (default 2)")
    sw.add_argument(
        "--mixes",
        type=mixes,
        default=("none",),
        help="Fig. 11's mixed deployments, comma-separated: each scheme on none (every LB switch), "
        "random:F, pods:F (drawn from the seed), agg or edge, --mix-base on the others "
        "(default none)",
    )
    sw.add_argument("--mix-base", default="ar", help="the scheme of the switches a mix leaves out (default ar)")
    sw.add_argument(
        "--gpus-per-server", type=args.positive_int, default=8, help="ring, fsdp, moe: GPUs per server (default 8)"
    )
    sw.add_argument("--layers", type=args.positive_int, default=1, help="fsdp: layers of the backward pass (default 1)")
    sw.add_argument(
        "--steps", type=args.positive_int, default=None, help="fsdp: only the pass's first N ring steps (default all)"
    )
    args.add_propagation(sw)
    args.add_wire_overhead(sw)
    args.add_ack_priority(sw)
    args.add_rate_factor(sw)
    sw.add_argument("--out", type=Path, required=True, help="the sweep's directory (re-run it to resume)")
    sw.add_argument(
        "--cluster",
        default=None,
        help="run the cells as Ray tasks: 'ray' (the cluster this machine is a node of), HOST:PORT or "
        "ray://HOST:PORT; nodes started with --resources '{\"testbed_fabric\": 1}' (docs/sweeps.md)",
    )
    args.add_ecn(sw)
    args.add_sampled(sw)
    args.add_wait(sw)
    args.add_topology(sw)
    sw.add_argument(
        "--prefix", type=args.prefix, default="tbs", help="name prefix of the sweep's own fabrics (default tbs)"
    )


def matrix_of(a: argparse.Namespace) -> Any:
    from ..run.sweep import Matrix

    return Matrix(
        tuple(x.strip() for x in a.schemes.split(",") if x.strip()),
        a.workloads,
        a.sizes,
        a.loads,
        a.failures,
        a.k,
        a.payloads,
        a.seeds,
        a.topology or "fattree",
        a.rate,
        a.acks,
        a.ecn_threshold,
        a.inter_pod,
        a.retries,
        a.flows,
        a.cm_rate,
        a.ccs,
        a.base_rtt_pkts,
        a.buffer,
        **args.sampled_params(a),
        propagation=a.propagation.label,
        wire_overhead=a.wire_overhead,
        ack_priority=a.ack_priority,
        rate_factor=a.rate_factor or 1.0,
        gpus_per_server=a.gpus_per_server,
        mixes=a.mixes,
        mix_base=a.mix_base,
        layers=a.layers,
        steps=a.steps or 0,
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

    from ..run.sweep import SweepDir

    if a.retries < 0:
        raise RunError(f"--retries must be >= 0, got {a.retries}")
    m = matrix_of(a)
    d = SweepDir(a.out, m)
    total = len(m.cells())
    if not d.pending():
        args.console().print(f"{a.out}: all {total} cells are done")
    else:
        can_run(a)
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

            api.sweep_matrix(
                m,
                a.out,
                cluster="auto" if a.cluster == "ray" else a.cluster,
                prefix=a.prefix,
                wait=a.wait,
                progress=progress,
            )
        args.console(stderr=True).print(f"sweep done in {time.monotonic() - t0:.0f} s")
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


def can_run(a: argparse.Namespace) -> None:
    """Before the first cell: root to build fabrics here, or a cluster that answers (the nodes of a cluster
    build the fabrics, not this machine)."""
    if a.cluster is None:
        args.need_root()
    else:
        from ..run.cluster import probe

        probe("auto" if a.cluster == "ray" else a.cluster)


def add_paper(sub: Any) -> None:
    from ..run.paper import NAMES

    pp = sub.add_parser(
        "paper",
        help="reproduce the paper's figures (a sweep per panel and a report), list them, or check the paper's claims",
    )
    pp.add_argument(
        "figure",
        choices=["list", "claims", "all", *NAMES],
        help="list, claims (every quantitative claim, one check each), all (every figure), or the figure to reproduce",
    )
    pp.add_argument(
        "--claims",
        default=None,
        metavar="C1,C5,...",
        help="claims: only these (default every claim; 'testbed paper claims' lists them in claims.md)",
    )
    pp.add_argument(
        "--scale",
        choices=("quick", "paper"),
        default="quick",
        help="quick: k=4 and minutes (default); paper: the paper's configuration where this machine carries it, hours",
    )
    pp.add_argument(
        "--out",
        type=Path,
        default=None,
        help="the figure's directory (default results/paper-FIG-SCALE; all: results/paper-all-SCALE)",
    )
    pp.add_argument("--cluster", default=None, help="as for sweep: run the cells on a Ray cluster")
    pp.add_argument(
        "--doc",
        type=Path,
        default=None,
        metavar="PAGE",
        help="claims: also put claims.md into PAGE between its generation markers, keeping the "
        "page's hand-written parts (docs/reproduction.md is made this way)",
    )
    pp.add_argument(
        "--no-run",
        action="store_true",
        help="claims: run nothing; judge the claims on the runs already in --out (a claim whose experiment is "
        "not finished reads 'no data' and says how many of its runs are done)",
    )
    args.add_propagation(pp)
    args.add_rate_factor(pp, "1 for a figure, 0.75 for the claims")
    args.add_wait(pp)
    pp.add_argument("--prefix", type=args.prefix, default="tbs", help="prefix of the sweep's fabrics (default tbs)")


def paper_list(width: int = 80) -> str:
    """`testbed paper list`: every figure, its runs and wall time at both scales, and what differs from the paper
    and why, wrapped to `width` columns."""
    import textwrap

    from ..run.paper import figure_estimate_s, figures

    def wrap(text: str, first: str, rest: str) -> list[str]:
        return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest) or [first.rstrip()]

    out = ["The paper's figures: testbed paper FIG [--scale quick|paper], or all", ""]
    total = {"quick": 0.0, "paper": 0.0}
    for f in figures().values():
        est = {sc: figure_estimate_s(f, sc) for sc in total}
        for sc in total:
            total[sc] += est[sc]
        out += wrap(f.reproduces, f"{f.name:<6}", " " * 6)
        out += wrap("; ".join(p.caption for p in f.panels), "      what: ", " " * 12)
        out += wrap(
            f"{f.cells('quick')} quick (~{est['quick'] / 60:.0f} min), {f.cells('paper')} paper "
            f"(~{est['paper'] / 3600:.1f} h)",
            "      runs: ",
            " " * 12,
        )
        for i, d in enumerate(f.differs or ("nothing: as the paper runs it",)):
            out += wrap(d, "      differs: " if i == 0 else " " * 15, " " * 15)
        out.append("")
    out.append(
        f"all: ~{total['quick'] / 60:.0f} min quick, ~{total['paper'] / 3600:.1f} h paper (estimates at "
        f"this machine's packet budget)"
    )
    return "\n".join(out)


def cmd_paper(a: argparse.Namespace) -> int:
    from ..run.paper import NAMES, figure_estimate_s, figures

    if a.figure == "claims":
        return cmd_claims(a)
    for given, flag in ((a.claims is not None, "--claims"), (a.doc is not None, "--doc"), (a.no_run, "--no-run")):
        if given:
            raise RunError(f"{flag} goes with 'testbed paper claims'")
    if a.figure == "list":
        print(paper_list())
        return 0
    names = list(NAMES) if a.figure == "all" else [a.figure]
    out = a.out or Path("results") / f"paper-{a.figure}-{a.scale}"
    figs = figures()
    con = args.console()
    dirs = {}  # every panel's directory and matrix, checked (and refused if another sweep's) before any run
    from ..run.sweep import SweepDir, run_local

    for name in names:
        base = out / name if a.figure == "all" else out
        for panel, preset in figs[name].matrices(a.scale).items():
            m = dataclasses.replace(preset, propagation=a.propagation.label, rate_factor=a.rate_factor or 1.0)
            dirs[(name, panel)] = SweepDir(base / panel if panel else base, m)
    total = sum(len(d.matrix.cells()) for d in dirs.values())
    pending = sum(len(d.pending()) for d in dirs.values())
    con.print(
        f"{', '.join(names) if len(names) < 4 else f'{len(names)} figures'}: {total} runs at --scale "
        f"{a.scale} ({total - pending} done already), about "
        f"{sum(figure_estimate_s(figs[n], a.scale) for n in names) / 60:.0f} min here"
    )
    if pending:
        can_run(a)
    for (name, panel), d in dirs.items():
        if not d.pending():
            continue
        label = f"{name}{panel}"

        def progress(done: int, n: int, row: dict[str, Any] | None, label: str = label) -> None:
            if row is not None:
                args.console(stderr=True).print(f"[{label} {done}/{n}] {describe(row)}")

        if a.cluster is not None:
            from ..run.cluster import run_ray

            run_ray(d, "auto" if a.cluster == "ray" else a.cluster, progress)
        else:
            run_local(d, a.prefix, progress, wait=a.wait)
    from .report import render, render_figures

    for d in dirs.values():
        render(d.path, console=con)
    if a.figure == "all" or len(dirs) > 1:
        render_figures(out, [(figs[n], panel, d.path) for (n, panel), d in dirs.items()], con)
    for name in names:
        for diff in figs[name].differs:
            con.print(f"[yellow]{name} differs from the paper:[/] {diff}")
    return 0


def cmd_claims(a: argparse.Namespace) -> int:
    """testbed paper claims: every experiment the chosen claims need (resumable), then each claim's rule;
    claims.json, claims.md and report.html (the claims first) in the output directory."""
    import platform
    import sys
    from datetime import datetime

    from ..measure import provenance
    from ..run import claims as cl
    from .report import render_claims

    selected = cl.select(a.claims)
    if a.doc is not None:
        cl.check_doc(a.doc)
    factor = cl.RATE_FACTOR if a.rate_factor is None else a.rate_factor
    out = a.out or Path("results") / f"paper-claims-{a.scale}"
    mats = cl.matrices(a.scale, a.propagation.label, selected, factor)  # cells checked before any build
    dirs = cl.sweep_dirs(out, mats)  # a directory of another check is refused
    total = sum(len(m.cells()) for m in mats.values())
    pending = sum(len(d.pending()) for d in dirs.values())
    con = args.console()
    con.print(
        f"{len(selected)} claims, {len(mats)} experiments, {total} runs at --scale {a.scale} "
        f"({total - pending} done already) into {out}"
    )
    if pending and not a.no_run:
        can_run(a)
    prov = provenance.describe()
    meta = {
        "command": "testbed " + " ".join(sys.argv[1:]),
        "commit": prov.get("project_commit"),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.node()}, {prov.get('cpus')} CPUs, kernel {prov.get('kernel_release')}",
    }

    def progress(name: str, done: int, n: int, row: dict[str, Any] | None) -> None:
        if row is not None:
            args.console(stderr=True).print(f"[{name} {done}/{n}] {describe(row)}")

    t0 = time.monotonic()
    results = cl.run(
        out,
        a.scale,
        selected,
        a.propagation.label,
        a.prefix,
        meta,
        factor,
        None if a.cluster is None else "auto" if a.cluster == "ray" else a.cluster,
        progress,
        a.wait,
        run_missing=not a.no_run,
    )
    from rich.table import Table

    t = Table(title=f"the paper's claims at --scale {a.scale} ({time.monotonic() - t0:.0f} s)")
    for col in ("claim", "section", "the paper", "here", "verdict"):
        t.add_column(col)
    colour = {"agrees": "green", "disagrees": "red", "not comparable": "yellow", "pending": "blue"}
    for r in results:
        here = cl.format_value(r)
        t.add_row(r["id"], r["section"], r["paper"], here, f"[{colour.get(r['verdict'], 'white')}]{r['verdict']}[/]")
    con.print(t)
    render_claims(out, results, con)
    con.print(f"claims in {out / 'claims.json'} and {out / 'claims.md'}")
    if a.doc is not None:
        cl.splice_doc(a.doc, (out / "claims.md").read_text())
        con.print(f"claims.md put into {a.doc}")
    return 0


DEMO_SCHEMES = "ecmp,rps,ar,reps,ofan,pofan:4"


def add_demo(sub: Any) -> None:
    demo = sub.add_parser(
        "demo",
        help="a small sweep: k=4, ECMP, RPS, AR, REPS, Ofan and 4Ofan, two sizes, one "
        "seed; the table and an HTML report",
    )
    demo.add_argument("--k", type=args.k_value, default=4)
    demo.add_argument("--sizes", default="256KB,1MB", help="comma-separated bytes per flow (default 256KB,1MB)")
    demo.add_argument("--schemes", default=DEMO_SCHEMES, help=f"comma-separated (default {DEMO_SCHEMES})")
    demo.add_argument("--load", type=args.load, default=1.0)
    demo.add_argument("--rate", type=args.rate, default=args.AUTO_RATE, help=args.RATE_HELP + " (default auto)")
    demo.add_argument("--seed", type=int, default=1)
    demo.add_argument("--retries", type=int, default=2, help="re-run an invalid run up to N times (default 2)")
    args.add_propagation(demo)
    demo.add_argument("--out", type=Path, default=None, help="the sweep's directory (default results/<time>-demo)")
    args.add_wait(demo)
    args.add_topology(demo)
    args.add_common(demo)


def cmd_demo(a: argparse.Namespace) -> int:
    from ..run.sweep import Matrix, SweepDir, run_local
    from .report import render

    schemes = tuple(x.strip() for x in a.schemes.split(",") if x.strip())
    sizes = tuple(args.size(x) for x in a.sizes.split(",") if x.strip())
    if a.retries < 0:
        raise RunError(f"--retries must be >= 0, got {a.retries}")
    m = Matrix(
        schemes,
        sizes=sizes,
        loads=(a.load,),
        ks=(a.k,),
        seeds=(a.seed,),
        topology=a.topology or "fattree",
        rate_bps=a.rate,
        acks="reps" in schemes,
        retries=a.retries,
        propagation=a.propagation.label,
    )
    out = a.out or Path("results") / f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-demo"
    args.need_root()
    d = SweepDir(out, m)
    con = args.console()
    con.print(
        f"demo: k={a.k} {m.topology}, {len(m.cells())} runs, link rate {format_rate(m.rate_for(a.k))}"
        f"{' (ACKs on: reps needs them)' if m.acks else ''}"
    )

    def progress(done: int, total: int, row: dict[str, Any] | None) -> None:
        if row is not None:
            args.console(stderr=True).print(f"[{done}/{total}] {describe(row)}")

    run_local(d, a.prefix, progress, wait=a.wait)
    render(out, console=con)
    return 0
