"""testbed export htsim RUN_DIR: a run's experiment as an htsim twin (testbed.measure.htsim)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..run.params import RunError
from . import args


def add_export(sub: Any) -> None:
    ex = sub.add_parser(
        "export",
        help="write a run's experiment for another simulator (htsim: its connection matrix, fat tree and command line)",
    )
    ex.add_argument("format", choices=("htsim",), help="htsim: uet-htsim's htsim_uec")
    ex.add_argument("dir", type=Path, help="a result directory (testbed run --out, or a sweep's cells/NAME)")
    ex.add_argument("--out", type=Path, default=None, help="where to write (default DIR/htsim)")


def cmd_export(a: argparse.Namespace) -> int:
    from ..measure import htsim
    from ..measure.results import ResultsError, load

    try:
        res = load(a.dir)
    except ResultsError as e:
        raise RunError(str(e)) from None
    try:
        files = htsim.write(res, a.out or a.dir / "htsim")
    except htsim.ExportError as e:
        raise RunError(str(e)) from None
    args.console().print("wrote " + ", ".join(str(f) for f in files))
    print((files[0].parent / "command.sh").read_text().splitlines()[-1])
    return 0
