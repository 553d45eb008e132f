"""Command-line arguments shared by the commands beyond the run options (testbed.cli.options makes those
from their declaration): value types that check their input (so a bad value is one line and exit status 2,
before any kernel object is touched), and the fabric's and the command's own options."""

from __future__ import annotations

import argparse
import math
from typing import Any, NoReturn

from traffic.packet import WIRE_EXTRA

from ..models.schemes import Scheme, SchemeError, parse_pipe_size
from ..topology import KINDS, TopologyError, validate_k, validate_prefix
from ..topology.units import parse_int, parse_ints, parse_rate, parse_seeds, parse_size

AUTO_RATE = 0  # --rate auto (no real rate is 0)
RATE_HELP = (
    "line rate of every link, or auto: the largest rate that keeps the hosts within this machine's "
    "packet budget (50mbit at k=4, 1.5mbit at k=12)"
)
PIPE_HELP = "pofan: ports per pipe (1 = 1Ofan, 4 = 4Ofan, default 4; must divide k) or 'cpu' for per-CPU pointers"


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def k_value(text: str) -> int:
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"k must be an integer, got {text!r}") from None
    try:
        validate_k(k)
    except TopologyError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return k


def rate(text: str) -> int:
    if text == "auto":
        return AUTO_RATE
    try:
        return parse_rate(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


SEEDS_HELP = "seeds: N is seed N, A-B a range, or a comma-separated list of either (1-3,7)"


def seeds(text: str) -> tuple[int, ...]:
    """Seeds as every command takes them (units.parse_seeds): '3' is seed 3, '1-5' five, '1,5,9' three."""
    try:
        return parse_seeds(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def int_list(text: str) -> tuple[int, ...]:
    try:
        return parse_ints(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def probabilities(text: str) -> tuple[float, ...]:
    """Comma-separated probabilities, each in (0, 1)."""
    try:
        ps = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not ps or any(not 0 < p < 1 for p in ps):
        raise argparse.ArgumentTypeError(f"each probability must be in (0, 1), got {text!r}")
    return ps


def scheme(text: str) -> Scheme:
    try:
        return Scheme.parse(text)
    except SchemeError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def switch_scheme(text: str) -> Scheme:
    """A scheme a switch runs (up, scheme set); host schemes belong to a run."""
    s = scheme(text)
    if s.is_host:
        raise argparse.ArgumentTypeError(
            f"{s.label} runs in the host NICs, per run: give it to run or compare (--scheme {s.label})"
        )
    return s


def pipe(text: str) -> int:
    try:
        return parse_pipe_size(text)
    except SchemeError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def prefix(text: str) -> str:
    try:
        validate_prefix(text)
    except TopologyError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def positive_int(text: str) -> int:
    try:
        return parse_int(text, 1)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return v


def nonnegative_int(text: str) -> int:
    try:
        return parse_int(text, 0)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def wire_overhead(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the wire overhead is a whole number of bytes, got {text!r}") from None
    if not 0 <= v <= 256:
        raise argparse.ArgumentTypeError(f"the wire overhead must be in [0, 256] bytes, got {v}")
    return v


def add_wire_overhead(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--wire-overhead",
        type=wire_overhead,
        default=WIRE_EXTRA,
        metavar="BYTES",
        help=f"bytes every link charges per frame beyond what the kernel counts (default {WIRE_EXTRA}: "
        f"the paper's 4 B FCS and 20 B of gap and preamble, so a 4,096 B payload takes 4,178 B of "
        f"line time; 0: bare veth frames). A fabric's, fixed when it is built",
    )


def rate_factor(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the rate factor is a number in (0, 1], got {text!r}") from None
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"the rate factor must be in (0, 1], got {text}")
    return v


def add_rate_factor(sp: argparse.ArgumentParser, default: str = "1") -> None:
    sp.add_argument(
        "--rate-factor",
        type=rate_factor,
        default=None,
        metavar="F",
        help=f"with the auto rate: run every fabric at this fraction of it (default {default}), for a "
        f"machine busier than the one the packet budget was measured on",
    )


def add_ack_priority(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--ack-priority",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="every queue serves ACKs before data, strict priority, as htsim's switches and NICs: an HTB "
        "under each link's TBF, the class picked by the programs (default: when the fabric carries "
        "ACKs; without ACKs the HTB adds 8-21 %% to the CPU per hop: docs/results/per-hop.md). A fabric's, fixed "
        "when it is built",
    )


def add_topology(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--topology",
        choices=KINDS,
        default=None,
        help="fattree (3 levels, default) or leafspine (2 levels, k^2/2 hosts)",
    )


def add_common(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--prefix", type=prefix, default="tb", help="name prefix of every kernel object (default tb)")


def console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr)


def add_wait(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--wait",
        action="store_true",
        help="if another run, compare or demo holds the fabric, wait for it (default: refuse)",
    )
