"""The `testbed` command. The only module that prints.

Every argument is checked before any kernel object is touched; a bad one
gives a one-line error on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from . import clean as clean_mod
from . import cli_links, netns, state
from .cli_links import need_root
from .experiment import RunError, RunParams
from .fabric import DEFAULT_MTU, DEFAULT_RATE_BPS, Fabric, FabricError, FabricSpec
from .schemes import Scheme, SchemeConfig, SchemeError, names, parse_pipe_size, select_switches
from .topology import KINDS, FatTree, TopologyError, validate_k, validate_prefix
from .traffic.workloads import WORKLOADS
from .units import format_rate, parse_rate, parse_size


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _k(text: str) -> int:
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"k must be an integer, got {text!r}") from None
    try:
        validate_k(k)
    except TopologyError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return k


def _rate(text: str) -> int:
    try:
        return parse_rate(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _load(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"load must be a number, got {text!r}") from None
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"load must be in (0, 1], got {text}")
    return v


def _scheme(text: str) -> Scheme:
    try:
        return Scheme.parse(text)
    except SchemeError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _pipe(text: str) -> int:
    try:
        return parse_pipe_size(text)
    except SchemeError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _prefix(text: str) -> str:
    try:
        validate_prefix(text)
    except TopologyError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text}")
    return v


def _topology(a: argparse.Namespace, st: state.FabricState | None) -> str:
    """The topology of a command: the fabric's if one is up (a different
    --topology is an error), else --topology, else a fat tree."""
    if st is not None:
        if a.topology is not None and a.topology != st.topology:
            raise RunError(f"--topology {a.topology} differs from the fabric that is up ({st.topology})")
        return st.topology
    return str(a.topology or "fattree")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="testbed", description="Fat-tree load-balancing testbed on the real kernel.")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    rate_help = f"line rate of every link (default {format_rate(DEFAULT_RATE_BPS)})"
    pipe_help = "pofan: ports per pipe (1 = 1Ofan, 4 = 4Ofan, default 4; must divide k) or 'cpu' for per-CPU pointers"

    def topology(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--topology", choices=KINDS, default=None,
                        help="fattree (3 levels, default) or leafspine (2 levels, k^2/2 hosts)")

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--prefix", type=_prefix, default="tb", help="name prefix of every kernel object (default tb)")

    up = sub.add_parser("up", help="build a fat tree and leave it up")
    up.add_argument("--k", type=_k, required=True)
    up.add_argument("--rate", type=_rate, default=DEFAULT_RATE_BPS, help=rate_help)
    up.add_argument("--scheme", type=_scheme, default=Scheme.ECMP, help=f"one of {', '.join(names())}")
    up.add_argument("--pipe-size", type=_pipe, default=4, help=pipe_help)
    up.add_argument("--seed", type=int, default=1)
    topology(up)
    common(up)

    st = sub.add_parser("status", help="describe the fabric that is up")
    st.add_argument("--json", action="store_true")
    common(st)

    run = sub.add_parser("run", help="run a collective (on the fabric that is up, or on an ephemeral one)")
    run.add_argument("--workload", required=True, choices=WORKLOADS)
    run.add_argument("--size", type=_size, required=True, help="bytes per flow (units: KB, MB)")
    run.add_argument("--load", type=_load, default=1.0, help="host pacing as a fraction of line rate")
    run.add_argument("--scheme", type=_scheme, default=None,
                     help="LB scheme of every switch (default: keep each switch's scheme on a fabric that is up, "
                          "ecmp on an ephemeral one)")
    run.add_argument("--pipe-size", type=_pipe, default=4, help=pipe_help)
    run.add_argument("--reset-pointers", action=argparse.BooleanOptionalAction, default=True,
                     help="fresh random pointer state from --seed before the run (default on)")
    run.add_argument("--seed", type=int, default=1)
    run.add_argument("--k", type=_k, default=None, help="fat-tree k (ephemeral fabric: default 4)")
    run.add_argument("--rate", type=_rate, default=None, help=rate_help + " (ephemeral fabric only)")
    run.add_argument("--fan-in", type=_positive_int, default=2, help="incast senders (default 2)")
    run.add_argument("--inter-pod", action="store_true", help="permutation: every flow crosses pods")
    run.add_argument("--gpus-per-server", type=_positive_int, default=8, help="ring/fsdp: host i sends to i+G (default 8)")
    run.add_argument("--stride", type=_positive_int, default=None, help="stride: host i sends to i+S (default: hosts per pod)")
    run.add_argument("--matrix", default=None, help="moe: n x n traffic matrix in bytes (.csv or .npy)")
    run.add_argument("--hot-factor", type=float, default=1.5, help="moe: busiest receiver gets F x the mean (default 1.5)")
    run.add_argument("--eplb", type=_positive_int, default=1, help="moe: spread the hot receiver over R replicas")
    run.add_argument("--acks", action="store_true", help="receivers answer every data packet with a 62-byte ACK")
    run.add_argument("--payload", type=_size, default=4096, help="payload bytes per packet (default 4096)")
    run.add_argument("--events", default=None, help="timeline of link faults (JSON) applied during the run")
    run.add_argument("--pace", choices=("load", "rho_max"), default="load",
                     help="rho_max: pace hosts at min(load, rho_max) of the links that are up")
    run.add_argument("--retries", type=int, default=0,
                     help="re-run an invalid run (fidelity out of tolerance) up to N times, same seed (default 0)")
    run.add_argument("--json", action="store_true", help="print exactly one JSON object")
    run.add_argument("--out", type=Path, default=None,
                     help="result directory (default results/<time>-<workload>-<scheme>-s<seed>)")
    topology(run)
    common(run)

    sch = sub.add_parser("scheme", help="change LB schemes on the fabric that is up (map writes only)")
    sch_sub = sch.add_subparsers(dest="scheme_cmd", required=True)
    sset = sch_sub.add_parser("set", help="set the scheme of some or all LB switches")
    sset.add_argument("scheme", type=_scheme, help=f"one of {', '.join(names())}")
    sset.add_argument("--pipe-size", type=_pipe, default=4, help=pipe_help)
    sset.add_argument("--switches", default="all", help="all, edge, agg, pod:N or random:F (default all)")
    sset.add_argument("--seed", type=int, default=1, help="draws random:F and the fresh pointer state")
    sset.add_argument("--reset-pointers", action=argparse.BooleanOptionalAction, default=True,
                      help="fresh random pointer state for the chosen switches (default on)")
    sset.add_argument("--json", action="store_true")
    common(sset)

    cli_links.add_parsers(sub, common, _positive_int)

    down = sub.add_parser("down", help="tear the fabric down")
    common(down)
    cl = sub.add_parser("clean", help="remove every leftover kernel object with the prefix")
    common(cl)
    ping = sub.add_parser("ping", help="check that every host reaches every other host")
    ping.add_argument("--json", action="store_true")
    common(ping)

    cmp_ = sub.add_parser("compare", help="run a matrix of schemes x seeds and compare them")
    cmp_.add_argument("--schemes", default="ecmp,rps,ar,ofan,pofan:4",
                      help="comma-separated; pofan:P or pofan:cpu for a pipe size (default ecmp,rps,ar,ofan,pofan:4)")
    cmp_.add_argument("--seeds", default="1,2,3", help="comma-separated seeds (default 1,2,3)")
    cmp_.add_argument("--workload", default="permutation", choices=WORKLOADS)
    cmp_.add_argument("--size", type=_size, default=1 << 20)
    cmp_.add_argument("--load", type=_load, default=1.0)
    cmp_.add_argument("--k", type=_k, default=None, help="fat-tree k (ephemeral fabric: default 4)")
    cmp_.add_argument("--rate", type=_rate, default=None, help=rate_help + " (ephemeral fabric only)")
    cmp_.add_argument("--retries", type=int, default=2, help="re-run invalid runs up to N times (default 2)")
    cmp_.add_argument("--out", type=Path, default=None, help="directory (default results/<time>-compare)")
    topology(cmp_)
    common(cmp_)

    plot = sub.add_parser("plot", help="draw figures from a result directory")
    plot.add_argument("what", choices=("queues",), help="queues: occupancy over time of the most loaded ports")
    plot.add_argument("dir", type=Path, help="a result directory (testbed run --out)")
    plot.add_argument("--output", type=Path, default=None, help="PNG file (default DIR/queues.png)")

    demo = sub.add_parser("demo", help="k=4, 1MB permutation at load 1.0 under ECMP and Ofan, side by side")
    demo.add_argument("--k", type=_k, default=4)
    demo.add_argument("--size", type=_size, default=1 << 20)
    demo.add_argument("--load", type=_load, default=1.0)
    demo.add_argument("--rate", type=_rate, default=DEFAULT_RATE_BPS, help=rate_help)
    demo.add_argument("--seed", type=int, default=1)
    demo.add_argument("--retries", type=int, default=2, help="re-run an invalid run up to N times (default 2)")
    topology(demo)
    common(demo)
    return p


def _console() -> Any:
    from rich.console import Console

    return Console()


def cmd_up(a: argparse.Namespace) -> int:
    spec = FabricSpec(k=a.k, rate_bps=a.rate, prefix=a.prefix, scheme=a.scheme, seed=a.seed,
                      pipe_size=a.pipe_size, topology=a.topology or "fattree")
    need_root()
    fab = Fabric(spec)
    try:
        fab.build()
    except BaseException:
        fab.teardown()
        raise
    times = fab.times
    try:
        cli_links.start_controld(a.prefix)
    except BaseException:
        fab.teardown()
        raise
    if fab.maps is not None:
        fab.maps.close()
    if fab.compiled is not None:
        fab.compiled.close()  # the filters keep the programs; the pins keep the maps
    t = fab.tree
    print(f"fabric {a.prefix} up: {spec.topology} k={a.k}, {t.n_hosts} hosts, {t.n_switches} switches, {len(t.links)} links, "
          f"rate {format_rate(a.rate)}, scheme {SchemeConfig(a.scheme, a.pipe_size).label} "
          f"(built in {times.total_s:.2f} s)")
    return 0


def _watcher_status(prefix: str) -> dict[str, Any]:
    """The link watcher daemon: without it, failures are not handled."""
    from .clean import ours

    st = state.load(prefix)
    pids = [p for p in (st.pids if st else []) if ours(p)]
    return {"alive": bool(pids), "pids": pids}


def status_dict(prefix: str) -> dict[str, Any]:
    from . import dataplane
    from . import fabric as fabric_mod

    with Fabric.attach(prefix) as fab:
        tree = fab.tree
        assert fab.maps is not None
        states = fabric_mod.link_states(tree)
        switches = {name: {"scheme": c.label, "scheme_base": c.scheme.label,
                           **({"pipe_size": c.pipe_size or "cpu"} if c.scheme is Scheme.POFAN else {})}
                    for name, c in dataplane.current_schemes(fab.maps, tree).items()}
        links = []
        for ln in tree.links:
            a, b = tree.ports[ln.a_gid], tree.ports[ln.b_gid]
            sa, sb = states.get(a.ifindex, "absent"), states.get(b.ifindex, "absent")
            links.append({"link": ln.name, "a": ln.a, "b": ln.b, "state_a": sa, "state_b": sb,
                          "state": "up" if sa == sb == "UP" else "down"})
        return {
            "prefix": prefix, "topology": tree.kind, "k": tree.k, "rate_bps": fab.spec.rate_bps, "rate": format_rate(fab.spec.rate_bps),
            "mtu": fab.spec.mtu, "burst_bytes": fab.spec.burst, "hosts": tree.n_hosts,
            "switches_total": tree.n_switches, "namespaces": len(netns.listed(prefix)),
            "nodes": [{"name": n.name, "tier": n.level.name.lower(), "namespace": tree.ns(n.name),
                       **({"ip": str(tree.host_ip(n))} if n.is_host else {})} for n in tree.nodes],
            "links": links, "switches": switches, "watcher": _watcher_status(prefix),
        }


def cmd_status(a: argparse.Namespace) -> int:
    need_root()
    st = status_dict(a.prefix)
    if a.json:
        print(json.dumps(st))
    else:
        from .report import status_table

        _console().print(status_table(st))
    return 0


def _print_result(a: argparse.Namespace, r: dict[str, Any]) -> None:
    if a.json:
        print(json.dumps(r))
    else:
        from .report import run_table

        _console().print(run_table(r))
        if r.get("out_dir"):
            print(f"results in {r['out_dir']}")
    _warn_if_invalid([r])


def _warn_if_invalid(results: list[dict[str, Any]]) -> None:
    """A run outside its fidelity tolerance: a warning in colour on stderr."""
    from rich.console import Console

    for r in results:
        f = r["fidelity"]
        if r.get("discarded_attempts"):
            Console(stderr=True).print(f"[yellow]note:[/] the {r['scheme']} run was repeated "
                                       f"{len(r['discarded_attempts'])} time(s): earlier attempts were invalid")
        if not f["valid"]:
            Console(stderr=True).print(f"[bold red]warning:[/] the {r['scheme']} run is INVALID: "
                                       + "; ".join(f["reasons"]))


def _run_params(a: argparse.Namespace, scheme: Scheme | None) -> RunParams:
    return RunParams(a.workload, a.size, a.load, scheme, a.seed, a.fan_in, payload=a.payload, pipe_size=a.pipe_size,
                     reset_pointers=a.reset_pointers, acks=a.acks, inter_pod=a.inter_pod,
                     gpus_per_server=a.gpus_per_server, stride=a.stride or 0, matrix=a.matrix,
                     hot_factor=a.hot_factor, eplb_replicas=a.eplb, events=a.events,
                     pace_rho_max=a.pace == "rho_max")


def _out_dir(a: argparse.Namespace, scheme_label: str) -> Path:
    if a.out is not None:
        out: Path = a.out
    else:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        out = Path("results") / f"{stamp}-{a.workload}-{scheme_label}-s{a.seed}"
    if (out / "manifest.json").exists():
        raise RunError(f"{out} already holds a run; choose another --out")
    return out


def cmd_run(a: argparse.Namespace) -> int:
    from .experiment import run_valid

    if a.retries < 0:
        raise RunError(f"--retries must be >= 0, got {a.retries}")
    st = state.load(a.prefix)
    scheme = a.scheme if a.scheme is not None or st is not None else Scheme.ECMP
    k = st.k if st is not None else (a.k or 4)
    if st is not None and a.k is not None and a.k != st.k:
        raise RunError(f"--k {a.k} differs from the fabric that is up (k={st.k}); testbed down first")
    if st is not None and a.rate is not None and a.rate != st.rate_bps:
        raise RunError(f"--rate differs from the fabric that is up ({format_rate(st.rate_bps)})")
    if scheme is not None:
        SchemeConfig(scheme, a.pipe_size).validate(FatTree(k).switch_ports)
    params = _run_params(a, scheme)
    tree = FatTree(k, a.prefix, _topology(a, st))
    params.flows(tree)  # the workload must be valid on this fabric before anything is touched
    if a.events:
        from .faults import parse_timeline

        parse_timeline(a.events, tree)
    if a.payload + 58 > (st.mtu if st is not None else DEFAULT_MTU) + 14:
        raise RunError(f"payload {a.payload} does not fit the MTU; at most {DEFAULT_MTU - 44} bytes")
    out = _out_dir(a, SchemeConfig(scheme, a.pipe_size).label if scheme is not None else "current")
    need_root()
    if st is not None:
        with Fabric.attach(a.prefix) as fab:
            result = run_valid(fab, params, out, attempts=a.retries + 1).to_json()
    else:
        spec = FabricSpec(k=k, rate_bps=a.rate or DEFAULT_RATE_BPS, prefix=a.prefix, scheme=scheme or Scheme.ECMP,
                          seed=a.seed, pipe_size=a.pipe_size, topology=_topology(a, st))
        with Fabric(spec) as fab:
            result = run_valid(fab, params, out, attempts=a.retries + 1).to_json()
    _print_result(a, result)
    return 0


def cmd_scheme(a: argparse.Namespace) -> int:
    from . import dataplane

    st = state.load(a.prefix)
    if st is None or not st.complete:
        raise FabricError(f"no fabric with prefix {a.prefix!r} is up (testbed up first)")
    tree = FatTree(st.k, a.prefix, st.topology)
    config = SchemeConfig(a.scheme, a.pipe_size)
    config.validate(tree.switch_ports)
    chosen = select_switches(tree, a.switches, a.seed)
    need_root()
    with Fabric.attach(a.prefix) as fab:
        assert fab.maps is not None
        if a.reset_pointers:
            dataplane.reset_state(fab.maps, tree, a.seed, chosen)
        apply_s = dataplane.apply_schemes(fab.maps, tree, {name: config for name in chosen})
        now = {n: c.label for n, c in dataplane.current_schemes(fab.maps, tree).items()}
    out = {"scheme": config.label, "switches": chosen, "selection": a.switches, "seed": a.seed,
           "apply_ms": apply_s * 1e3, "schemes": now}
    if a.json:
        print(json.dumps(out))
    else:
        print(f"{config.label} on {len(chosen)} of {len(now)} LB switches ({a.switches}), "
              f"applied by map writes in {apply_s * 1e3:.2f} ms")
    return 0


def cmd_down(a: argparse.Namespace) -> int:
    need_root()
    if state.load(a.prefix) is None and not netns.listed(a.prefix):
        raise FabricError(f"no fabric with prefix {a.prefix!r} is up")
    rep = clean_mod.clean(a.prefix)
    print(f"fabric {a.prefix} down: {rep.namespaces} namespaces removed in {rep.wait_s:.2f} s")
    return 0


def cmd_clean(a: argparse.Namespace) -> int:
    need_root()
    rep = clean_mod.clean(a.prefix)
    print(f"clean {a.prefix}: {rep.namespaces} namespaces, pinned maps {'removed' if rep.pinned_maps else 'none'}, "
          f"{len(rep.killed)} processes killed, state {'removed' if rep.state_file else 'none'}")
    return 0


def cmd_ping(a: argparse.Namespace) -> int:
    from .reach import all_pairs

    need_root()
    with Fabric.attach(a.prefix) as fab:
        tree = fab.tree
        got = all_pairs(tree)
    want = tree.n_hosts * (tree.n_hosts - 1)
    missing = sorted((tree.hosts[s].name, tree.hosts[d].name) for s in range(tree.n_hosts)
                     for d in range(tree.n_hosts) if s != d and (s, d) not in got)
    if a.json:
        print(json.dumps({"pairs": want, "reachable": len(got), "missing": missing}))
    else:
        print(f"{len(got)}/{want} host pairs reachable" + (f"; missing e.g. {missing[:5]}" if missing else ""))
    return 0 if not missing else 1


def cmd_demo(a: argparse.Namespace) -> int:
    from .experiment import run_valid
    from .report import compare_table

    spec = FabricSpec(k=a.k, rate_bps=a.rate, prefix=a.prefix, seed=a.seed, topology=a.topology or "fattree")
    need_root()
    con = _console()
    results = []
    with Fabric(spec) as fab:
        con.print(f"built k={a.k} {spec.topology} ({fab.tree.n_hosts} hosts, {len(fab.tree.links)} links) "
                  f"in {fab.times.total_s:.2f} s; link rate {format_rate(a.rate)}")
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        for scheme in (Scheme.ECMP, Scheme.OFAN):
            out = Path("results") / f"{stamp}-demo-{scheme.label}"
            results.append(run_valid(fab, RunParams("permutation", a.size, a.load, scheme, a.seed), out,
                                     attempts=max(0, a.retries) + 1).to_json())
    con.print(compare_table(results, title=f"random permutation, {a.size} B per host, load {a.load}, k={a.k}"))
    con.print(f"fabric torn down; results in {', '.join(r['out_dir'] for r in results)}")
    _warn_if_invalid(results)
    return 0


def cmd_compare(a: argparse.Namespace) -> int:
    from .compare import Cell, compare_summary, parse_schemes, parse_seeds, run_matrix
    from .experiment import run_valid
    from .report import plot_compare, summary_table

    configs = parse_schemes(a.schemes)
    seeds = parse_seeds(a.seeds)
    st = state.load(a.prefix)
    k = st.k if st is not None else (a.k or 4)
    if st is not None and a.k is not None and a.k != st.k:
        raise RunError(f"--k {a.k} differs from the fabric that is up (k={st.k}); testbed down first")
    for c in configs:
        c.validate(FatTree(k).switch_ports)
    RunParams(a.workload, a.size, a.load).flows(FatTree(k, a.prefix, _topology(a, st)))
    out = a.out or Path("results") / f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-compare"
    if (out / "summary.csv").exists():
        raise RunError(f"{out} already holds a comparison")
    need_root()
    cells = [Cell(c, s) for c in configs for s in seeds]

    def run_all(fab: Fabric) -> Any:
        def one(cell: Cell, d: Path) -> dict[str, Any]:
            p = RunParams(a.workload, a.size, a.load, cell.config.scheme, cell.seed, pipe_size=cell.config.pipe_size)
            return run_valid(fab, p, d, attempts=max(0, a.retries) + 1).to_json()

        return run_matrix(cells, one, out)

    if st is not None:
        with Fabric.attach(a.prefix) as fab:
            df = run_all(fab)
    else:
        with Fabric(FabricSpec(k=k, rate_bps=a.rate or DEFAULT_RATE_BPS, prefix=a.prefix,
                               topology=_topology(a, st))) as fab:
            df = run_all(fab)
    summary = compare_summary(df)
    summary.to_csv(out / "schemes.csv", index=False)
    title = f"{a.workload} {a.size} B, load {a.load}, k={k}, seeds {a.seeds}"
    plot_compare(summary, out / "compare.png", title)
    _console().print(summary_table(summary, title))
    print(f"results in {out} (summary.csv, schemes.csv, compare.png, one directory per run)")
    if not df["valid"].all():
        from rich.console import Console

        Console(stderr=True).print(f"[bold red]warning:[/] {int((~df['valid']).sum())} run(s) INVALID; see summary.csv")
    return 0


def cmd_plot(a: argparse.Namespace) -> int:
    from .report import plot_queues
    from .results import ResultsError, load

    try:
        res = load(a.dir, allow_incomplete=False)
    except ResultsError as e:
        raise RunError(str(e)) from None
    out = a.output or a.dir / "queues.png"
    port = plot_queues(res, out)
    print(f"wrote {out} (most loaded port: {port})")
    return 0


COMMANDS = {"up": cmd_up, "plot": cmd_plot, "compare": cmd_compare, **cli_links.COMMANDS, "status": cmd_status, "run": cmd_run, "scheme": cmd_scheme, "down": cmd_down,
            "clean": cmd_clean,
            "ping": cmd_ping, "demo": cmd_demo}


def main(argv: list[str] | None = None) -> int:
    try:
        a = build_parser().parse_args(argv)
        return COMMANDS[a.cmd](a)
    except UsageError as e:
        print(f"testbed: error: {e}", file=sys.stderr)
        return 2
    except (ValueError, RuntimeError, OSError) as e:
        print(f"testbed: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("testbed: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
