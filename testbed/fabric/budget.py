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
from dataclasses import dataclass
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


def interpolate(pts: list[tuple[int, Fraction]], n: int) -> Fraction:
    """A value at n hosts from (hosts, value) points sorted by hosts: linear between them, held beyond them."""
    if n <= pts[0][0]:
        return pts[0][1]
    for (h0, b0), (h1, b1) in itertools.pairwise(pts):
        if n <= h1:
            return b0 + (b1 - b0) * Fraction(n - h0, h1 - h0)
    return pts[-1][1]


def host_packets_per_s(tree: FatTree) -> Fraction:
    """The budget of this fabric: interpolated between the measured sizes of its topology."""
    return interpolate(points(tree.kind), tree.n_hosts)


def round_down(bps: Fraction, digits: int = 2) -> int:
    """The largest value with `digits` significant digits that is at most `bps`."""
    if bps < 1:
        return 1
    scale = Fraction(10) ** (len(str(math.floor(bps))) - digits)
    return int(math.floor(bps / scale) * scale)


# The run classes: what a run costs per data packet beyond the data budget's runs (1 MB permutations without
# ACKs). A run is in every class its options put it in and takes the lowest of their budgets.
CLASSES = ("acks", "cc", "payload", "chained")
LARGE_PAYLOAD = 16 * 1024  # the payload class: frames of 16 KB and more


@dataclass(frozen=True)
class RunClass:
    """What decides a run's budget beyond its fabric: ACKs, congestion control (an ACK-clocked window), the
    payload, chained steps (FSDP2: a GPU's step starts when its input arrived), a host scheme."""

    acks: bool = False
    cc: bool = False
    payload: int = DEFAULT_PAYLOAD
    chained: bool = False
    host_lb: bool = False

    def classes(self) -> tuple[str, ...]:
        """The classes this run is in (none: the data budget's own runs)."""
        return tuple(
            name
            for name, on in (
                ("acks", self.acks and not self.cc),
                ("cc", self.cc),
                ("payload", self.payload >= LARGE_PAYLOAD),
                ("chained", self.chained),
            )
            if on
        )


def class_factor(name: str, tree: FatTree) -> Fraction:
    """A class's budget as a fraction of the data budget on this fabric: measured where packet_budget.json's
    "classes" has points for its topology (interpolated in the number of hosts, held beyond them, as the data
    budget is), else the class's rule (ACKs: an ACK per data packet costs about what the packet does, 1/2)."""
    c = _measured()["classes"][name]
    pts = sorted((p["hosts"], Fraction(str(p["factor"]))) for p in c.get("measured", {}).get(tree.kind, []))
    return interpolate(pts, tree.n_hosts) if pts else Fraction(str(c["rule_factor"]))


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


def auto_rate_bps(
    tree: FatTree,
    payload: int = DEFAULT_PAYLOAD,
    acks: bool = False,
    host_lb: bool = False,
    *,
    cc: bool = False,
    chained: bool = False,
) -> int:
    """The line rate at which every host sending at line rate keeps the fabric's data packets within its run
    class's budget (the lowest of the classes it is in: ACKs, congestion control, large payloads, chained steps;
    frames counted with the wire's overhead, as the links charge them), derated where a host scheme (`host_lb`)
    was measured to need it."""
    run = RunClass(acks=acks or cc, cc=cc, payload=payload, chained=chained, host_lb=host_lb)
    share = min((class_factor(n, tree) for n in run.classes()), default=Fraction(1))
    per_host = host_packets_per_s(tree) / tree.n_hosts * share
    rate = round_down(per_host * (payload + FRAME_OVERHEAD + WIRE_EXTRA) * 8)
    factor = derating(tree, run.acks, host_lb)  # of the rounded rate, as bench/validity.py's auto:FACTOR measured it
    return rate if factor == 1 else round_down(rate * factor)
