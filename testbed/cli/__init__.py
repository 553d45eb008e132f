"""Layer 8, the `testbed` command: the only layer that prints. Commands by
group (fabric_cmds, run_cmds, link_cmds, sweep_cmds, paper_cmds, export_cmds),
the run options made from their declaration (options), the other shared
arguments (args), rich tables (tables) and figures (plots, figures, report).
Each command parses, calls one function of testbed.api (or of testbed.run),
and prints; it never imports testbed.fabric or testbed.dataplane itself
(an import-linter contract). testbed.launch (layer 9) is the entry point.

Every argument is checked before any kernel object is touched; a bad one
gives a one-line error on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from . import export_cmds, fabric_cmds, link_cmds, paper_cmds, run_cmds, sweep_cmds
from .args import Parser, UsageError

# name -> (adds its parser, runs it), in the order `testbed --help` lists them
COMMANDS: dict[str, tuple[Callable[[Any], None], Callable[[argparse.Namespace], int]]] = {
    "up": (fabric_cmds.add_up, fabric_cmds.cmd_up),
    "status": (fabric_cmds.add_status, fabric_cmds.cmd_status),
    "run": (run_cmds.add_run, run_cmds.cmd_run),
    "scheme": (fabric_cmds.add_scheme, fabric_cmds.cmd_scheme),
    "fail": (link_cmds.add_fail, link_cmds.cmd_fail),
    "heal": (link_cmds.add_heal, link_cmds.cmd_heal),
    "flap": (link_cmds.add_flap, link_cmds.cmd_flap),
    "down": (fabric_cmds.add_down, fabric_cmds.cmd_down),
    "clean": (fabric_cmds.add_clean, fabric_cmds.cmd_clean),
    "ping": (fabric_cmds.add_ping, fabric_cmds.cmd_ping),
    "compare": (run_cmds.add_compare, run_cmds.cmd_compare),
    "sweep": (sweep_cmds.add_sweep, sweep_cmds.cmd_sweep),
    "report": (sweep_cmds.add_report, sweep_cmds.cmd_report),
    "paper": (paper_cmds.add_paper, paper_cmds.cmd_paper),
    "plot": (run_cmds.add_plot, run_cmds.cmd_plot),
    "demo": (sweep_cmds.add_demo, sweep_cmds.cmd_demo),
    "ideal": (run_cmds.add_ideal, run_cmds.cmd_ideal),
    "rates": (run_cmds.add_rates, run_cmds.cmd_rates),
    "export": (export_cmds.add_export, export_cmds.cmd_export),
}


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="testbed", description="Fat-tree load-balancing testbed on the real kernel.")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    for add, _ in COMMANDS.values():
        add(sub)
    return p


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is, so that every kernel object's context manager tears it down as
    for Ctrl-C."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        a = build_parser().parse_args(argv)
        return COMMANDS[a.cmd][1](a)
    except UsageError as e:
        print(f"testbed: error: {e}", file=sys.stderr)
        return 2
    except (ValueError, RuntimeError, OSError) as e:
        print(f"testbed: error: {e}", file=sys.stderr)
        return 2
    except Terminated:
        print("testbed: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("testbed: interrupted", file=sys.stderr)
        return 130
    except ModuleNotFoundError as e:
        if os.environ.get("TESTBED_DEBUG"):
            raise
        print(_missing_binding(e) or _internal_error(e), file=sys.stderr)
        return 1
    except Exception as e:
        if os.environ.get("TESTBED_DEBUG"):
            raise
        print(_internal_error(e), file=sys.stderr)
        return 1


# The kernel's Python bindings the commands import when they reach the kernel: bcc comes from Debian's
# python3-bpfcc, built for Debian's python3 alone, so another interpreter (a pyenv or conda Python that ran
# `pip install .`) has none; scripts/setup's .venv is Debian's python3 with python3-bpfcc linked in.
_BINDINGS = {"bcc": "bcc (Debian's python3-bpfcc)", "pyroute2": "pyroute2"}


def _missing_binding(e: ModuleNotFoundError) -> str | None:
    """One line for a kernel binding this interpreter cannot import (None for any other missing module)."""
    top = (e.name or "").partition(".")[0]
    if top not in _BINDINGS:
        return None
    return (
        f"testbed: error: this interpreter ({sys.executable}) cannot import {_BINDINGS[top]}: run `sudo ./scripts/setup`, "
        "then ./scripts/testbed or .venv/bin/testbed (the project's venv, which links Debian's python3-bpfcc)"
    )


def _internal_error(e: Exception) -> str:
    return f"testbed: internal error: {type(e).__name__}: {e} (TESTBED_DEBUG=1 for the traceback)"
