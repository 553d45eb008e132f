"""Fault actions and timelines: fail, heal and flap links of a live fabric.

A timeline is a JSON list of actions at offsets from the collective's start:

    [{"at": "100ms", "fail": "a0_0-c0_0"},
     {"at": "400ms", "heal": "a0_0-c0_0"},
     {"at": "200ms", "flap": "e1_0-a1_1", "period": "100ms", "count": 3}]

Everything is parsed and checked (links exist, durations are valid) before
any kernel object is touched. Links are set down and up with
testbed.fabric.links.set_link; the link watcher reacts to the kernel's events.

The timeline's JSON is read here only (parse_timeline: the API checks a run's timeline with it before the
fabric is touched, the run reads it with it). It shares nothing with the faults injected on purpose for the
verdict's tests (a run's `inject` option, traffic/faults.py), which act on the senders and the NICs, not on
links.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from ..fabric import links
from ..models import control
from ..topology import FatTree, Link
from ..topology.units import parse_duration


class FaultError(ValueError):
    """Bad fault action or timeline."""


Kind = Literal["fail", "heal", "flap"]
KINDS: tuple[Kind, ...] = get_args(Kind)


@dataclass(frozen=True)
class Action:
    at_s: float
    kind: Kind
    link: str
    period_s: float = 0.2
    count: int = 1


def parse_timeline(path: str, tree: FatTree) -> list[Action]:
    try:
        raw = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise FaultError(f"timeline {path} not found") from None
    except json.JSONDecodeError as e:
        raise FaultError(f"timeline {path} is not JSON: {e}") from None
    if not isinstance(raw, list):
        raise FaultError("a timeline is a JSON list of actions")
    out = []
    for i, item in enumerate(raw):
        kinds = [k for k in KINDS if k in item]
        if len(kinds) != 1 or "at" not in item:
            raise FaultError(f"timeline entry {i}: needs 'at' and one of fail, heal, flap")
        kind = kinds[0]
        try:
            ln = control.parse_link(tree, str(item[kind]))
            at = parse_duration(str(item["at"]), allow_zero=True)
            period = parse_duration(str(item.get("period", "200ms")))
        except ValueError as e:
            raise FaultError(f"timeline entry {i}: {e}") from None
        count = int(item.get("count", 1))
        if count < 1:
            raise FaultError(f"timeline entry {i}: count must be >= 1")
        out.append(Action(at_s=at, kind=kind, link=ln.name, period_s=period, count=count))
    return sorted(out, key=lambda a: a.at_s)


def current_failed(tree: FatTree) -> list[Link]:
    """Failed links as the link watcher last recorded them."""
    evs = links.read_events(tree.prefix)
    names = set(evs[-1]["failed"]) if evs else set()
    return [ln for ln in tree.links if ln.name in names]


def check_partition(tree: FatTree, failed: list[Link], force: bool) -> list[tuple[str, str]]:
    """Host pairs cut off by `failed`; an error unless `force`."""
    cut = control.unreachable_pairs(tree, failed)
    if cut and not force:
        hosts = sorted({h for pair in cut for h in pair})
        raise FaultError(
            f"this would leave {len(cut)} host pairs without a path (e.g. {cut[0][0]} -> {cut[0][1]}; "
            f"{len(hosts)} hosts affected); add --force to do it anyway"
        )
    return cut


@dataclass
class Applied:
    action: dict[str, Any]
    t_applied_ns: list[int] = field(default_factory=list)  # one per transition


def apply(tree: FatTree, a: Action) -> Applied:
    link = control.parse_link(tree, a.link)
    done = Applied(asdict(a))
    if a.kind in ("fail", "heal"):
        done.t_applied_ns.append(time.monotonic_ns())
        links.set_link(tree, link, up=a.kind == "heal")
        return done
    half = a.period_s / 2
    for _ in range(a.count):
        done.t_applied_ns.append(time.monotonic_ns())
        links.set_link(tree, link, up=False)
        time.sleep(half)
        done.t_applied_ns.append(time.monotonic_ns())
        links.set_link(tree, link, up=True)
        time.sleep(half)
    return done


class Timeline:
    """Applies a timeline in a thread, from `start()` on."""

    def __init__(self, tree: FatTree, actions: list[Action]) -> None:
        self.tree = tree
        self.actions = actions
        self.applied: list[Applied] = []
        self.t0_ns = 0
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        self.t0_ns = time.monotonic_ns()
        for a in self.actions:
            t = threading.Thread(target=self._at, args=(a,), daemon=True)
            t.start()
            self._threads.append(t)

    def _at(self, a: Action) -> None:
        delay = self.t0_ns / 1e9 + a.at_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        self.applied.append(apply(self.tree, a))

    def join(self, timeout_s: float = 30.0) -> None:
        for t in self._threads:
            t.join(timeout_s)
