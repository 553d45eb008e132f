"""The packet budget of this machine kind and the line rate that keeps a
fabric within it (`--rate auto`).

Every host packet costs the kernel a TBF timer, a veth hand-over and a
program run at each hop, so two cores carry a bounded number of host packets
per second faithfully. The bound shrinks on large fabrics (thousands of
ports and sender threads) and is larger where paths are shorter (a
leaf-spine's four links against a fat tree's six), so it is measured per
topology and size and stored beside this module (packet_budget.json says
what each point is). The budget of a fabric is interpolated linearly in its
number of hosts between measured sizes (held at the nearest beyond them),
and the auto rate spreads it over the hosts: hosts x rate / frame bits =
budget, rounded down to two significant digits (k=4: 50 Mbit/s, k=12:
1.3 Mbit/s, k=16: 580 kbit/s, leaf-spine k=64: 290 kbit/s). Runs that cost
more per packet than the budget's were measured apart and get a factor below
it (packet_budget.json's "derated": host schemes with ACKs from 128 hosts).
"""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

from traffic.packet import DEFAULT_PAYLOAD, FRAME_OVERHEAD, WIRE_EXTRA

from ..topology import FatTree

BUDGET_FILE = Path(__file__).with_name("packet_budget.json")


@cache
def _measured() -> dict[str, Any]:
    return dict(json.loads(BUDGET_FILE.read_text()))


def points(kind: str) -> list[tuple[int, Fraction]]:
    """(hosts, host packets per second) of the measured configurations of a topology, by size (exact)."""
    m = _measured()
    frame_bits = 8 * m["frame_bytes"]
    return sorted((p["hosts"], Fraction(p["hosts"] * p["rate_bps"], frame_bits)) for p in m["measured"][kind])


def host_packets_per_s(tree: FatTree) -> Fraction:
    """The budget of this fabric: interpolated between the measured sizes of its topology."""
    pts = points(tree.kind)
    n = tree.n_hosts
    if n <= pts[0][0]:
        return pts[0][1]
    for (h0, b0), (h1, b1) in itertools.pairwise(pts):
        if n <= h1:
            return b0 + (b1 - b0) * Fraction(n - h0, h1 - h0)
    return pts[-1][1]


def round_down(bps: Fraction, digits: int = 2) -> int:
    """The largest value with `digits` significant digits that is at most `bps`."""
    if bps < 1:
        return 1
    scale = Fraction(10) ** (len(str(math.floor(bps))) - digits)
    return int(math.floor(bps / scale) * scale)


def derating(tree: FatTree, acks: bool, host_lb: bool) -> Fraction:
    """The measured factor below the budget for runs that cost more CPU per packet than the budget's (a host
    scheme's NIC program handling every ACK, on large fabrics): packet_budget.json's "derated" entries."""
    factor = Fraction(1)
    for d in _measured().get("derated", []):
        if (d["schemes"] == "host" and not host_lb) or (d["acks"] and not acks):
            continue
        if d["topology"] == tree.kind and tree.n_hosts >= d["min_hosts"]:
            factor = min(factor, Fraction(str(d["factor"])))
    return factor


def auto_rate_bps(tree: FatTree, payload: int = DEFAULT_PAYLOAD, acks: bool = False, host_lb: bool = False) -> int:
    """The line rate at which every host sending at line rate (with an ACK per packet, if `acks`) keeps the
    fabric's host packets within its budget (frames counted with the wire's overhead, as the links charge them),
    derated where a host scheme (`host_lb`) was measured to need it."""
    per_host = host_packets_per_s(tree) / tree.n_hosts / (2 if acks else 1)
    rate = round_down(per_host * (payload + FRAME_OVERHEAD + WIRE_EXTRA) * 8)
    factor = derating(tree, acks, host_lb)  # of the rounded rate, as bench/validity.py's auto:FACTOR measured it
    return rate if factor == 1 else round_down(rate * factor)
