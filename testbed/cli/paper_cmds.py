"""The paper's figures and claims: `testbed paper FIG` runs a figure's sweeps and draws it as the paper does,
`testbed paper list` says what each figure runs and how it differs, `testbed paper claims` checks the
paper's quantitative claims one by one. Each parses its command line, calls the run layer once
(testbed.run.paper.run_figures, testbed.run.claims.check: they build, run and write) and prints and draws what
came back."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..run.params import RunError
from . import args, options
from .sweep_cmds import describe


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
    pp.add_argument(
        "--from",
        dest="data",
        type=Path,
        default=None,
        metavar="DATA",
        help="claims: the check's data as the repository keeps it (docs/reproduction/: every run's row, the ideal "
        "fabric's rows, the parts that made them): its runs count as done, each new run is added to it, and the "
        "claims are judged on its rows alone; with --no-run it regenerates the page exactly, without root",
    )
    pp.add_argument(
        "--minutes",
        type=args.positive_float,
        default=None,
        metavar="M",
        help="claims: one part of the check: start no run that would end after M minutes (the judging kept within "
        "them); run the same command again to go on",
    )
    options.add(pp, options.RUN, only=("propagation",))
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
    from ..run.paper import figures, run_figures

    if a.figure == "claims":
        return cmd_claims(a)
    for given, flag in (
        (a.claims is not None, "--claims"),
        (a.doc is not None, "--doc"),
        (a.no_run, "--no-run"),
        (a.data is not None, "--from"),
        (a.minutes is not None, "--minutes"),
    ):
        if given:
            raise RunError(f"{flag} goes with 'testbed paper claims'")
    if a.figure == "list":
        print(paper_list())
        return 0
    con = args.console()
    ran = run_figures(
        a.figure,
        scale=a.scale,
        out=a.out,
        propagation=a.propagation,
        rate_factor=a.rate_factor,
        prefix=a.prefix,
        cluster=a.cluster,
        wait=a.wait,
        announce=con.print,
        progress=_progress,
    )
    from .report import render, render_figures

    figs = figures()
    for d in ran.dirs.values():
        render(d.path, console=con)
    if a.figure == "all" or len(ran.dirs) > 1:
        render_figures(ran.out, [(figs[n], panel, d.path) for (n, panel), d in ran.dirs.items()], con)
    for name in dict.fromkeys(n for n, _ in ran.dirs):
        for diff in figs[name].differs:
            con.print(f"[yellow]{name} differs from the paper:[/] {diff}")
    return 0


def cmd_claims(a: argparse.Namespace) -> int:
    """testbed paper claims: every experiment the chosen claims need (resumable), then each claim's rule;
    claims.json, claims.md and report.html (the claims first) in the output directory."""
    import sys

    from ..run import claims as cl
    from .report import render_claims

    con = args.console()
    done = cl.check(
        a.claims,
        scale=a.scale,
        propagation=a.propagation.label,
        out=a.out,
        rate_factor=a.rate_factor,
        prefix=a.prefix,
        cluster=a.cluster,
        wait=a.wait,
        run_missing=not a.no_run,
        doc=a.doc,
        data=a.data,
        minutes=a.minutes,
        command="testbed " + " ".join(sys.argv[1:]),
        announce=con.print,
        progress=_progress,
    )
    from rich.table import Table

    t = Table(title=f"the paper's claims at --scale {a.scale} ({done.seconds:.0f} s)")
    for col in ("claim", "section", "the paper", "here", "verdict"):
        t.add_column(col)
    colour = {
        "agrees": "green",
        "disagrees": "red",
        "not comparable": "yellow",
        "not decided": "magenta",
        "pending": "blue",
    }
    for r in done.results:
        here = cl.format_value(r)
        t.add_row(r["id"], r["section"], r["paper"], here, f"[{colour.get(r['verdict'], 'white')}]{r['verdict']}[/]")
    con.print(t)
    render_claims(done.out, done.results, con)
    con.print(f"claims in {done.out / 'claims.json'} and {done.out / 'claims.md'}")
    if a.doc is not None:
        con.print(f"claims.md put into {a.doc}")
    return 0


def _progress(name: str, done: int, n: int, row: dict[str, Any] | None) -> None:
    """A sweep's progress line on stderr: the experiment or figure panel, runs done of all, the last run."""
    if row is not None:
        args.console(stderr=True).print(f"[{name} {done}/{n}] {describe(row)}")
