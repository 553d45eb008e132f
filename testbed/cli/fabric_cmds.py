"""The commands that build, describe, change and remove a fabric: up,
status, scheme set, down, clean, ping."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .. import api
from ..fabric import netns, state
from ..fabric.build import Fabric, FabricSpec
from ..fabric.clean import clean
from ..fabric.errors import FabricError
from ..models.schemes import Scheme, SchemeConfig, switch_schemes
from ..topology import FatTree
from ..topology.units import format_rate
from . import args
from .link_cmds import start_controld


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
    topology = a.topology or "fattree"
    rate = args.resolve_rate(a.rate, FatTree(a.k, a.prefix, topology), acks=a.acks)
    spec = FabricSpec(
        k=a.k,
        rate_bps=rate,
        prefix=a.prefix,
        scheme=a.scheme,
        seed=a.seed,
        pipe_size=a.pipe_size,
        topology=topology,
        wire_overhead=a.wire_overhead,
        ack_priority=args.ack_priority(a, a.acks),
    )
    args.need_root()
    fab = Fabric(spec)
    try:
        fab.build()
    except BaseException:
        fab.teardown()
        raise
    times = fab.times
    try:
        start_controld(a.prefix)
    except BaseException:
        fab.teardown()
        raise
    if fab.maps is not None:
        fab.maps.close()
    program = "cached program" if fab.compiled is not None and fab.compiled.from_cache else "program compiled"
    if fab.compiled is not None:
        fab.compiled.close()  # the filters keep the programs; the pins keep the maps
    t = fab.tree
    print(
        f"fabric {a.prefix} up: {spec.topology} k={a.k}, {t.n_hosts} hosts, {t.n_switches} switches, {len(t.links)} links, "
        f"rate {format_rate(rate)}, scheme {SchemeConfig(a.scheme, a.pipe_size).label} "
        f"(built in {times.total_s:.2f} s, {program})"
    )
    return 0


def add_status(sub: Any) -> None:
    st = sub.add_parser("status", help="describe the fabric that is up")
    st.add_argument("--json", action="store_true")
    args.add_common(st)


def cmd_status(a: argparse.Namespace) -> int:
    from ..fabric.status import status

    args.need_root()
    st = status(a.prefix)
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
    args.attached_tree(a.prefix)  # one line if no fabric is up
    args.need_root()
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
    args.need_root()
    if state.load(a.prefix) is None and not netns.listed(a.prefix):
        raise FabricError(f"no fabric with prefix {a.prefix!r} is up")
    rep = clean(a.prefix)
    print(f"fabric {a.prefix} down: {rep.namespaces} namespaces removed in {rep.wait_s:.2f} s")
    return 0


def add_clean(sub: Any) -> None:
    args.add_common(sub.add_parser("clean", help="remove every leftover kernel object with the prefix"))


def cmd_clean(a: argparse.Namespace) -> int:
    args.need_root()
    rep = clean(a.prefix)
    print(
        f"clean {a.prefix}: {rep.namespaces} namespaces, pinned maps {'removed' if rep.pinned_maps else 'none'}, "
        f"{len(rep.killed)} processes killed, state {'removed' if rep.state_file else 'none'}"
    )
    return 0


ALL_PAIRS_MAX = 100_000  # more than this takes --sample (k=12 has 186,192 pairs)


def add_ping(sub: Any) -> None:
    ping = sub.add_parser("ping", help="check that hosts reach each other (every pair, or --sample N random pairs)")
    ping.add_argument(
        "--sample",
        type=args.positive_int,
        default=None,
        metavar="N",
        help=f"N random host pairs instead of every pair (needed above {ALL_PAIRS_MAX:,} pairs)",
    )
    ping.add_argument("--seed", type=int, default=1, help="draws the --sample pairs")
    ping.add_argument("--json", action="store_true")
    args.add_common(ping)


def cmd_ping(a: argparse.Namespace) -> int:
    from ..fabric.reach import reachable, sample_pairs

    tree = args.attached_tree(a.prefix)
    total = tree.n_hosts * (tree.n_hosts - 1)
    if a.sample is None and total > ALL_PAIRS_MAX:
        raise FabricError(f"{total:,} host pairs is too many to ping at once; use --sample N (e.g. --sample 2000)")
    pairs = sample_pairs(tree, a.sample if a.sample is not None else total, a.seed)
    args.need_root()
    got = reachable(tree, pairs)
    missing = sorted((tree.hosts[s].name, tree.hosts[d].name) for s, d in pairs if (s, d) not in got)
    if a.json:
        print(
            json.dumps(
                {
                    "pairs": len(pairs),
                    "reachable": len(got),
                    "missing": missing,
                    **({"sampled_of": total, "seed": a.seed} if len(pairs) < total else {}),
                }
            )
        )
    else:
        what = f"{len(got)}/{len(pairs)} host pairs reachable" + (
            f" (a sample of {total:,})" if len(pairs) < total else ""
        )
        print(what + (f"; missing e.g. {missing[:5]}" if missing else ""))
    return 0 if not missing else 1
