"""The commands for live link failures: fail, heal and flap (the link watcher daemon that sees them is the
fabric layer's, testbed.fabric.controld, started by `testbed up`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .. import api
from ..api import commands
from ..topology.units import parse_duration
from . import args


def add_fail(sub: Any) -> None:
    fail = sub.add_parser("fail", help="fail a link (or random links) of the fabric that is up")
    fail.add_argument("link", nargs="?", help="NODE-NODE, e.g. e0_1-a0_0 (either order)")
    fail.add_argument(
        "--random",
        type=float,
        default=None,
        metavar="P",
        help="fail each edge-aggregation and aggregation-core link with probability P",
    )
    fail.add_argument("--seed", type=int, default=1)
    fail.add_argument("--force", action="store_true", help="allow failures that cut hosts off")
    fail.add_argument("--json", action="store_true")
    args.add_common(fail)


def add_heal(sub: Any) -> None:
    heal = sub.add_parser("heal", help="bring a failed link (or all) back up")
    heal.add_argument("link", nargs="?")
    heal.add_argument("--all", action="store_true")
    heal.add_argument("--json", action="store_true")
    args.add_common(heal)


def add_flap(sub: Any) -> None:
    flap = sub.add_parser("flap", help="take a link down and up repeatedly")
    flap.add_argument("link")
    flap.add_argument("--period", default="200ms", help="one down+up cycle (default 200ms)")
    flap.add_argument("--count", type=args.positive_int, default=1)
    flap.add_argument("--json", action="store_true")
    args.add_common(flap)


def _print_event(a: argparse.Namespace, what: str, ev: dict[str, Any], extra: dict[str, Any] | None = None) -> None:
    if a.json:
        print(json.dumps({**ev, **(extra or {})}))
        return
    print(
        f"{what}: converged {ev['convergence_ms']:.2f} ms after the kernel event "
        f"({ev['since_request_ms']:.2f} ms after the request), {ev['map_writes']} map entries, "
        f"{ev['lost_pkts']} packets lost; failed links now: {', '.join(ev['failed']) or 'none'}"
    )


def cmd_fail(a: argparse.Namespace) -> int:
    commands.attached_tree(a.prefix)  # one line if no fabric is up, before anything else
    commands.need_root()
    with api.attach(a.prefix) as fab:
        ev = fab.fail(a.link, random=a.random, seed=a.seed, force=a.force)
    if not ev.get("failed") and "note" in ev:
        print(json.dumps(ev) if a.json else ev["note"])
        return 0
    extra = {k: ev.pop(k) for k in ("unreachable_pairs", "requested")}
    _print_event(a, f"failed {', '.join(extra['requested'])}", ev, extra)
    return 0


def cmd_heal(a: argparse.Namespace) -> int:
    commands.attached_tree(a.prefix)
    commands.need_root()
    with api.attach(a.prefix) as fab:
        ev = fab.heal(a.link, all=a.all)
    if "healed" in ev:
        print(json.dumps(ev) if a.json else "no link is down")
        return 0
    _print_event(a, f"healed {', '.join(ev.get('links_up') or [a.link or ''])}", ev)
    return 0


def cmd_flap(a: argparse.Namespace) -> int:
    out = commands.flap(a.prefix, a.link, parse_duration(a.period), a.count)
    if a.json:
        print(json.dumps(out))
    else:
        print(
            f"flapped {out['link']} {a.count} times: {out['events']} events, worst convergence "
            f"{out['convergence_ms_max']:.2f} ms, {out['lost_pkts']} packets lost"
        )
    return 0
