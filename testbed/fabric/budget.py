"""The packet budget of this machine kind and the line rate that keeps a
fabric within it (`--rate auto`).

Every host packet costs the kernel a TBF timer, a veth hand-over and a
program run at each hop, so two cores carry a bounded number of host packets
per second faithfully, whatever the fabric's size. The budget is measured
(packet_budget.json beside this module says where and how) and the auto rate
spreads it over the hosts: hosts x rate / frame bits = budget, rounded down to
two significant digits (k=4: 50 Mbit/s, k=12: 1.8 Mbit/s, k=16: 780 kbit/s).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from functools import cache
from pathlib import Path

from traffic.packet import DEFAULT_PAYLOAD, FRAME_OVERHEAD

from ..topology import FatTree

BUDGET_FILE = Path(__file__).with_name("packet_budget.json")


@cache
def host_packets_per_s() -> Fraction:
    """Host packets per second of the measured configuration (exact, so that it gives back its own rate)."""
    m = json.loads(BUDGET_FILE.read_text())
    return Fraction(m["hosts"] * m["rate_bps"], 8 * m["frame_bytes"])


def round_down(bps: Fraction, digits: int = 2) -> int:
    """The largest value with `digits` significant digits that is at most `bps`."""
    if bps < 1:
        return 1
    scale = Fraction(10) ** (len(str(math.floor(bps))) - digits)
    return int(math.floor(bps / scale) * scale)


def auto_rate_bps(tree: FatTree, payload: int = DEFAULT_PAYLOAD, acks: bool = False) -> int:
    """The line rate at which every host sending at line rate (with an ACK per packet, if `acks`) keeps the
    fabric's host packets within the budget."""
    per_host = host_packets_per_s() / tree.n_hosts / (2 if acks else 1)
    return round_down(per_host * (payload + FRAME_OVERHEAD) * 8)
