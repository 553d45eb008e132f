"""The paper's time base (section 6) and a link's propagation delay.

The paper simulates 800 Gbit/s links with 0.5 us of propagation each and
frames of 4,096 B of payload, 62 B of headers and 20 B of gap and preamble
(4,178 B on the wire, one packet time = 41.78 ns): a link holds about 12
packet times of propagation, an inter-pod path (6 links) about 72 one way.
The testbed's links run far slower, so every duration of the paper is kept
in packet times of the emulated rate: "paper" propagation is 0.5 us scaled
by 800 Gbit/s over the emulated rate, the same number of bits in flight.

A path's links: 2 between two hosts of one edge switch, 4 within a pod (or
between two leaves of a leaf-spine, which is one pod), 6 between pods.
Where the propagation goes (the kernel cannot hold a packet): see
testbed.measure.metrics (the data path's shift of each flow's completion and
of the bound) and the data plane's ready times (feedback).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .fattree import FatTree

PAPER_RATE_BPS = 800e9
PAPER_LINK_DELAY_S = 0.5e-6
PAPER_WIRE_FRAME_BYTES = 4096 + 62 + 20  # payload, headers (FCS included), inter-frame gap + preamble + SFD
PAPER_LINK_DELAY_PKTS = PAPER_LINK_DELAY_S * PAPER_RATE_BPS / 8 / PAPER_WIRE_FRAME_BYTES  # 11.97
PAPER_REPS_FREEZE_S = 10e-3  # REPS's freezing lasts 10 ms in uet-htsim (HOST-SCHEMES.md), at 800 Gbit/s
KINDS = ("paper", "pkts", "seconds")
_NUM = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")
_PKTS = ("p", "pkt", "pkts", "packets")
_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


@dataclass(frozen=True)
class Propagation:
    """One link's propagation delay as asked for: `paper` (the paper's 0.5 us at 800 Gbit/s, scaled to the
    emulated rate), `pkts` (packet times: full data frames on the wire at line rate) or `seconds`."""

    kind: str = "paper"
    value: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"propagation kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.value < 0:
            raise ValueError(f"a propagation delay must be >= 0, got {self.value}")

    def link_s(self, rate_bps: float, frame_wire_bytes: float) -> float:
        """Seconds per link on a fabric of `rate_bps` whose full data frame takes `frame_wire_bytes` on the
        wire."""
        if self.kind == "paper":
            return PAPER_LINK_DELAY_S * PAPER_RATE_BPS / rate_bps
        if self.kind == "pkts":
            return self.value * frame_wire_bytes * 8 / rate_bps
        return self.value

    def link_pkts(self, rate_bps: float, frame_wire_bytes: float) -> float:
        """Packet times per link (full data frames on the wire at line rate)."""
        return self.link_s(rate_bps, frame_wire_bytes) * rate_bps / 8 / frame_wire_bytes

    @property
    def off(self) -> bool:
        return self.kind != "paper" and self.value == 0

    @property
    def label(self) -> str:
        if self.kind == "paper":
            return "paper"
        if self.kind == "pkts":
            return f"{self.value:g}pkts"
        return f"{self.value:g}s"


PAPER = Propagation()
NONE = Propagation("pkts", 0.0)


def reps_freeze_s(rate_bps: float) -> float:
    """How long a retransmission timeout freezes a REPS connection at the emulated rate: uet-htsim's 10 ms at
    800 Gbit/s, kept in packet times (about 239,000: longer than any run here, so a frozen connection stays
    frozen)."""
    return PAPER_REPS_FREEZE_S * PAPER_RATE_BPS / rate_bps


def parse_propagation(text: str) -> Propagation:
    """'paper' (the default: 0.5 us per link at 800 Gbit/s, about 12 packet times), '0' (none), '12pkts'
    (packet times at line rate; also p, pkt, packets), or a duration at the emulated rate ('2ms', '500us',
    '0.1s', '800ns')."""
    t = text.strip().lower()
    if t == "paper":
        return PAPER
    m = _NUM.match(t)
    if t.startswith("-"):
        raise ValueError(f"a propagation delay must be >= 0, got {text!r}")
    if not m:
        raise ValueError(f"cannot parse propagation {text!r} (examples: paper, 0, 12pkts, 2ms, 500us)")
    v, unit = float(m.group(1)), m.group(2)
    if unit in _PKTS or (unit == "" and v == 0):
        return Propagation("pkts", v)
    if unit in _SECONDS:
        return Propagation("seconds", v * _SECONDS[unit])
    raise ValueError(
        f"cannot parse propagation {text!r} (examples: paper, 0, 12pkts, 2ms, 500us; a bare "
        f"number other than 0 needs a unit)"
    )


# The CCT ends when the last ACK is back at its sender (the paper's, section 6; htsim's "finished at"): a run
# with ACKs measures that ACK's arrival in the kernel, a run without adds the ACK's way back, so either way a
# flow's completion gains its path's links x the delay twice: the data's way there and the ACK's back. The
# ACK's own line time, 86 B a hop (0.02 of a packet time), is left out: ACKs are served first at every queue.
CCT_LEGS = 2


def path_links(tree: FatTree, src: int, dst: int) -> int:
    """Links between hosts `src` and `dst` (host ids): 2 under one edge switch, 4 within a pod, 6 between
    pods."""
    if src // tree.hosts_per_edge == dst // tree.hosts_per_edge:
        return 2
    if src // tree.hosts_per_pod == dst // tree.hosts_per_pod:
        return 4
    return 6
