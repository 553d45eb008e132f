"""The commands that build, describe, change and remove a fabric: up,
status, scheme set, down, clean, ping."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .. import api
from ..api import commands
from ..models.schemes import Scheme, SchemeConfig, switch_schemes
from ..topology.units import format_rate
from . import args


def add_up(sub: Any) -> None:
    up = sub.add_parser("up", help="build a fat tree and leave it up")
    up.add_argument("--k", type=args.k_value, required=True)
    up.add_argument("--rate", type=args.rate, default=args.AUTO_RATE, help=args.RATE_HELP + " (default auto)")
    up.add_argument(
        "--scheme",
        type=args.switch_scheme,
        default=Scheme.ECMP,
        help=f"one of {', '.join(s.label for s in switch_schemes())}",
    )
    up.add_argument("--pipe-size", type=args.pipe, default=4, help=args.PIPE_HELP)
    up.add_argument("--seed", type=int, default=1)
    args.add_wire_overhead(up)
    up.add_argument(
        "--acks",
        action="store_true",
        help="the fabric will carry ACKs (runs with --acks or --cc): its auto rate counts them and its "
        "queues serve them first",
    )
    args.add_ack_priority(up)
    args.add_topology(up)
    args.add_common(up)


def cmd_up(a: argparse.Namespace) -> int:
    done = commands.up(
        a.k,
        topology=a.topology,
        rate=a.rate,
        scheme=a.scheme,
        pipe_size=a.pipe_size,
        seed=a.seed,
        acks=a.acks,
        ack_priority=a.ack_priority,
        wire_overhead=a.wire_overhead,
        prefix=a.prefix,
    )
    t, spec = done.tree, done.spec
    print(
        f"fabric {a.prefix} up: {spec.topology} k={a.k}, {t.n_hosts} hosts, {t.n_switches} switches, "
        f"{len(t.links)} links, rate {format_rate(spec.rate_bps)}, scheme {SchemeConfig(a.scheme, a.pipe_size).label} "
        f"(built in {done.build_s:.2f} s, {'cached program' if done.cached_program else 'program compiled'})"
    )
    return 0


def add_status(sub: Any) -> None:
    st = sub.add_parser("status", help="describe the fabric that is up")
    st.add_argument("--json", action="store_true")
    args.add_common(st)


def cmd_status(a: argparse.Namespace) -> int:
    st = commands.status(a.prefix)
    if a.json:
        print(json.dumps(st))
    else:
        from .tables import status_table

        args.console().print(status_table(st))
    return 0


def add_scheme(sub: Any) -> None:
    sch = sub.add_parser("scheme", help="change LB schemes on the fabric that is up (map writes only)")
    sch_sub = sch.add_subparsers(dest="scheme_cmd", required=True)
    sset = sch_sub.add_parser("set", help="set the scheme of some or all LB switches")
    sset.add_argument("scheme", type=args.switch_scheme, help=f"one of {', '.join(s.label for s in switch_schemes())}")
    sset.add_argument("--pipe-size", type=args.pipe, default=4, help=args.PIPE_HELP)
    sset.add_argument("--switches", default="all", help="all, edge, agg, pod:N or random:F (default all)")
    sset.add_argument("--seed", type=int, default=1, help="draws random:F and the fresh pointer state")
    sset.add_argument(
        "--reset-pointers",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="fresh random pointer state for the chosen switches (default on)",
    )
    sset.add_argument("--json", action="store_true")
    args.add_common(sset)


def cmd_scheme(a: argparse.Namespace) -> int:
    commands.attached_tree(a.prefix)  # one line if no fabric is up
    commands.need_root()
    with api.attach(a.prefix) as fab:
        out = fab.set_scheme(
            a.scheme, switches=a.switches, pipe_size=a.pipe_size, seed=a.seed, reset_pointers=a.reset_pointers
        )
    config, chosen, now, apply_s = out["scheme"], out["switches"], out["schemes"], out["apply_ms"] / 1e3
    if a.json:
        print(json.dumps(out))
    else:
        print(
            f"{config} on {len(chosen)} of {len(now)} LB switches ({a.switches}), "
            f"applied by map writes in {apply_s * 1e3:.2f} ms"
        )
    return 0


def add_down(sub: Any) -> None:
    args.add_common(sub.add_parser("down", help="tear the fabric down"))


def cmd_down(a: argparse.Namespace) -> int:
    rep = commands.down(a.prefix)
    print(f"fabric {a.prefix} down: {rep['namespaces']} namespaces removed in {rep['wait_s']:.2f} s")
    return 0


def add_clean(sub: Any) -> None:
    args.add_common(sub.add_parser("clean", help="remove every leftover kernel object with the prefix"))


def cmd_clean(a: argparse.Namespace) -> int:
    rep = commands.clean(a.prefix)
    print(
        f"clean {a.prefix}: {rep['namespaces']} namespaces, pinned maps {'removed' if rep['pinned_maps'] else 'none'}, "
        f"{len(rep['killed'])} processes killed, state {'removed' if rep['state_file'] else 'none'}"
    )
    return 0


def add_ping(sub: Any) -> None:
    ping = sub.add_parser("ping", help="check that hosts reach each other (every pair, or --sample N random pairs)")
    ping.add_argument(
        "--sample",
        type=args.positive_int,
        default=None,
        metavar="N",
        help=f"N random host pairs instead of every pair (needed above {commands.ALL_PAIRS_MAX:,} pairs)",
    )
    ping.add_argument("--seed", type=int, default=1, help="draws the --sample pairs")
    ping.add_argument("--json", action="store_true")
    args.add_common(ping)


def cmd_ping(a: argparse.Namespace) -> int:
    out = commands.ping(a.prefix, a.sample, a.seed)
    missing = out["missing"]
    if a.json:
        print(json.dumps(out))
    else:
        sampled = f" (a sample of {out['sampled_of']:,})" if "sampled_of" in out else ""
        print(
            f"{out['reachable']}/{out['pairs']} host pairs reachable{sampled}"
            + (f"; missing e.g. {missing[:5]}" if missing else "")
        )
    return 0 if not missing else 1
