"""Command-line arguments shared by the commands: value types that check
their input (so a bad value is one line and exit status 2, before any kernel
object is touched), the options every command takes, and small checks."""

from __future__ import annotations

import argparse
import os
from typing import Any, NoReturn

from traffic.packet import DEFAULT_PAYLOAD, WIRE_EXTRA

from ..fabric import state
from ..fabric.budget import auto_rate_bps
from ..fabric.errors import FabricError
from ..models.schemes import Scheme, SchemeError, parse_pipe_size
from ..run.params import RunError
from ..topology import KINDS, FatTree, TopologyError, validate_k, validate_prefix
from ..topology.timebase import PAPER_LINK_DELAY_PKTS, Propagation, parse_propagation
from ..topology.units import (
    format_rate,
    parse_duration,
    parse_ints,
    parse_rate,
    parse_seeds,
    parse_size,
    parse_threshold,
)

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


def float_pair(text: str) -> tuple[float, float]:
    """ "LO,HI" as two numbers."""
    parts = text.split(",")
    try:
        lo, hi = (float(x) for x in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO,HI (two numbers), got {text!r}") from None
    return lo, hi


def size_pair(text: str) -> tuple[int, int]:
    """ "LO,HI" as two sizes (units: KB, MB; 0 allowed)."""
    parts = text.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected LO,HI (two sizes), got {text!r}")
    return tuple(0 if p.strip() == "0" else size(p) for p in parts)  # type: ignore[return-value]


def duration(text: str) -> float:
    """Seconds from "100ms", "150us", "0.1s" or "2000ns" (units.parse_duration; 0 allowed)."""
    try:
        return parse_duration(text, allow_zero=True)
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


def load(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"load must be a number, got {text!r}") from None
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"load must be in (0, 1], got {text}")
    return v


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


def ecn_threshold(text: str) -> str:
    try:
        parse_threshold(text, 1)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


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
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text}")
    return v


def propagation(text: str) -> Propagation:
    try:
        return parse_propagation(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_propagation(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--propagation",
        type=propagation,
        default=Propagation(),
        metavar="D",
        help=f"propagation delay per link: paper (default: 0.5 us at 800 Gbit/s, "
        f"{PAPER_LINK_DELAY_PKTS:.2f} packet times at the emulated rate), packet times (12pkts), a "
        f"duration at the emulated rate (2ms), or 0 (none). Added to each flow's completion and "
        f"bound, and to every feedback loop (docs/methods/timebase.md)",
    )


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


def ack_priority(a: argparse.Namespace, acks: bool) -> bool:
    """--ack-priority as given, else whether the fabric carries ACKs."""
    return acks if a.ack_priority is None else bool(a.ack_priority)


def add_topology(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--topology",
        choices=KINDS,
        default=None,
        help="fattree (3 levels, default) or leafspine (2 levels, k^2/2 hosts)",
    )


def add_common(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--prefix", type=prefix, default="tb", help="name prefix of every kernel object (default tb)")


def topology_of(a: argparse.Namespace, st: state.FabricState | None) -> str:
    """The topology of a command: the fabric's if one is up (a different
    --topology is an error), else --topology, else a fat tree."""
    if st is not None:
        if a.topology is not None and a.topology != st.topology:
            raise RunError(f"--topology {a.topology} differs from the fabric that is up ({st.topology})")
        return st.topology
    return str(a.topology or "fattree")


def resolve_rate(
    requested: int | None, tree: FatTree, payload: int = DEFAULT_PAYLOAD, acks: bool = False, host_lb: bool = False
) -> int:
    """The line rate of a fabric about to be built: the one asked for, or the auto rate (also when none is)."""
    if requested is None or requested == AUTO_RATE:
        return auto_rate_bps(tree, payload, acks, host_lb)
    return requested


def check_rate_of_fabric_up(
    requested: int | None, st: state.FabricState, tree: FatTree, payload: int, acks: bool, host_lb: bool = False
) -> None:
    """A --rate given for a run on the fabric that is up must agree with it: a number must be its rate, auto
    must not be below it (ACKs double the packets)."""
    if requested is None:
        return
    if requested == AUTO_RATE:
        auto = auto_rate_bps(tree, payload, acks, host_lb)
        if st.rate_bps > auto:
            raise RunError(
                f"the fabric that is up runs at {format_rate(st.rate_bps)}, above the auto rate "
                f"{format_rate(auto)} of this run{' (ACKs double the packets)' if acks else ''}; "
                f"testbed down, then up --rate {format_rate(auto)}"
            )
    elif requested != st.rate_bps:
        raise RunError(f"--rate differs from the fabric that is up ({format_rate(st.rate_bps)})")


def attached_tree(prefix: str) -> FatTree:
    """The description of the fabric that is up under `prefix`."""
    st = state.load(prefix)
    if st is None or not st.complete:
        raise FabricError(f"no fabric with prefix {prefix!r} is up (testbed up first)")
    return FatTree(st.k, prefix, st.topology)


def need_root() -> None:
    if os.geteuid() != 0:
        raise FabricError("must run as root (sudo ./scripts/testbed ...)")


def console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr)


# -- option groups shared by several commands ---------------------------------------------
def add_ecn(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--ecn-threshold",
        type=ecn_threshold,
        default="10%",
        help="switches mark CE when the queue a packet joins holds more than this: bytes (80KB), "
        "packets (20pkts), percent of --buffer-ref (default 10%%) or off",
    )
    sp.add_argument(
        "--buffer-ref",
        type=size,
        default=800 * 1024,
        help="the port buffer a threshold in percent refers to (default 800KB, the paper's)",
    )


def add_transport(sp: argparse.ArgumentParser) -> None:
    from traffic.transport import CCAS

    sp.add_argument(
        "--cc",
        choices=CCAS,
        default="none",
        help="congestion control at the hosts: window-limited, ACK-clocked flows (turns --acks on); "
        "none: the paced blast (default)",
    )
    sp.add_argument(
        "--base-rtt",
        type=duration,
        default=None,
        help="with --cc: emulated base RTT, a fixed delay on the feedback (for example 100ms)",
    )
    sp.add_argument(
        "--base-rtt-pkts",
        type=float,
        default=None,
        help="with --cc: the base RTT in packet times at line rate (default 150, the paper's)",
    )
    sp.add_argument(
        "--buffer",
        type=size,
        default=None,
        help="bytes per switch port; a full buffer drops (default 800KB with --cc, unlimited without)",
    )


def add_sampled(sp: argparse.ArgumentParser) -> None:
    from ..models.sampled import SampledParams as S

    sp.add_argument(
        "--sample-interval",
        type=float,
        default=S.sample_pkts,
        help=f"dlb, sglb: sampling interval of the port loads and queues, in packet times at line rate "
        f"(default {S.sample_pkts:g})",
    )
    sp.add_argument(
        "--flood-interval",
        type=float,
        default=S.flood_pkts,
        help=f"sglb: how often switches flood their link qualities to their neighbours, in packet times "
        f"(default {S.flood_pkts:g})",
    )
    sp.add_argument(
        "--dre-interval",
        type=float,
        default=S.dre_pkts,
        help=f"conga: T_dre, the DRE's decay period (alpha 0.2, so tau = 5 T_dre), in packet times "
        f"(default {S.dre_pkts:g})",
    )
    sp.add_argument(
        "--load-bands",
        type=float_pair,
        default=S.load_band,
        metavar="LO,HI",
        help="dlb, sglb: a port's load EWMA is in band 0 at or below LO and 7 at or above HI, fractions "
        "of the line rate (default 0.125,1)",
    )
    sp.add_argument(
        "--queue-bands",
        type=size_pair,
        default=S.queue_band,
        metavar="LO,HI",
        help="dlb, sglb: likewise for its queue EWMA, bytes (default 0,160KB)",
    )
    sp.add_argument(
        "--drill-d",
        type=int,
        default=S.drill_d,
        help=f"drill: DRILL(d, m)'s random samples per packet, 1-4 (default {S.drill_d})",
    )
    sp.add_argument(
        "--drill-m",
        type=int,
        default=S.drill_m,
        help=f"drill: DRILL(d, m)'s remembered uplinks, 0-2 (default {S.drill_m}; 0 with d=2 is choice)",
    )


def sampled_params(a: argparse.Namespace) -> dict[str, Any]:
    return {
        "sample_pkts": a.sample_interval,
        "flood_pkts": a.flood_interval,
        "dre_pkts": a.dre_interval,
        "load_band": a.load_bands,
        "queue_band": a.queue_bands,
        "drill_d": a.drill_d,
        "drill_m": a.drill_m,
    }


def transport_params(a: argparse.Namespace) -> dict[str, Any]:
    """RunParams' transport fields from the command line (a CCA turns ACKs on)."""
    if a.cc != "none":
        a.acks = True
    return {"cc": a.cc, "base_rtt_s": a.base_rtt, "base_rtt_pkts": a.base_rtt_pkts, "buffer_bytes": a.buffer}


def add_wait(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--wait",
        action="store_true",
        help="if another run, compare or demo holds the fabric, wait for it (default: refuse)",
    )
