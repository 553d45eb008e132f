"""Link state of a fabric that is up: setting links down and up, and the
record of link events the watcher (testbed.fabric.watcher) writes, one JSON
line per change in /run/testbed/{prefix}.events.jsonl, with how to wait for
the next one.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from ..topology import FatTree, Link
from . import netlink, netns
from .errors import FabricError
from .netlink import Netlink
from .state import STATE_DIR

SETTLE_S = 0.02  # after convergence, let packets in flight arrive before counting losses


def events_path(prefix: str) -> str:
    return os.path.join(STATE_DIR, f"{prefix}.events.jsonl")


def set_link(tree: FatTree, link: Link, up: bool) -> None:
    """Set both ends of a link administratively up or down."""
    for node, port in ((link.a, tree.ports[link.a_gid]), (link.b, tree.ports[link.b_gid])):
        with netns.entered(tree.ns(node)), Netlink() as nl:
            nl.run([netlink.link_set(port.ifindex, up, f"{link.name} {'up' if up else 'down'}")])


@dataclass
class LinkEvent:
    seq: int
    links_down: list[str]  # links that went down in this event
    links_up: list[str]  # links that came back
    failed: list[str]  # every failed link after the event
    t_event_ns: int  # first kernel notification of the change (CLOCK_MONOTONIC)
    t_converged_ns: int  # maps written
    convergence_ms: float
    lost_pkts: int = 0  # packets that died in the failed links' queues
    lost_by_port: dict[str, int] = field(default_factory=dict)
    map_writes: int = 0


def read_events(prefix: str, since_seq: int = 0) -> list[dict[str, Any]]:
    try:
        with open(events_path(prefix)) as f:
            out = [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []
    return [e for e in out if e["seq"] > since_seq]


def wait_for_event(prefix: str, after_seq: int, timeout_s: float = 5.0) -> dict[str, Any] | None:
    """The first event recorded after `after_seq`, or None after the timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        evs = read_events(prefix, after_seq)
        if evs:
            return evs[0]
        time.sleep(0.002)
    return None


def set_and_wait(tree: FatTree, todo: list[Link], up: bool, timeout_s: float = 5.0) -> dict[str, Any]:
    """Set links down or up, then wait until the watcher's failed set reflects
    all of them (several links may take several events); the last event, with
    `since_request_ms`: from the request to the maps being written."""
    seq = len(read_events(tree.prefix))
    t_req = time.monotonic_ns()
    for ln in todo:
        set_link(tree, ln, up=up)
    names = {ln.name for ln in todo}
    ev = _next_event(tree.prefix, seq, t_req, timeout_s)
    while (set(ev["failed"]) & names) if up else not names <= set(ev["failed"]):
        ev = _next_event(tree.prefix, ev["seq"], t_req, timeout_s)
    return ev


def _next_event(prefix: str, after_seq: int, t_request_ns: int, timeout_s: float) -> dict[str, Any]:
    ev = wait_for_event(prefix, after_seq, timeout_s)
    if ev is None:
        raise FabricError("the link watcher recorded no event (is the fabric's controld running?)")
    ev["since_request_ms"] = (ev["t_converged_ns"] - t_request_ns) / 1e6
    return ev
