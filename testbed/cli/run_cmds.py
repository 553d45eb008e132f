"""The commands that run experiments and show their results: run, compare,
demo, plot, and ideal (the same experiment on the ideal fabric, no kernel)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from traffic.packet import DEFAULT_PAYLOAD
from traffic.workloads import ORDERS, WORKLOADS

from .. import api
from ..fabric import state
from ..fabric.build import Fabric, FabricSpec
from ..fabric.lock import run_lock
from ..models.schemes import Scheme, SchemeConfig
from ..run.params import RunError, RunParams
from ..topology import FatTree
from . import args, tables


def add_run(sub: Any) -> None:
    run = sub.add_parser("run", help="run a collective (on the fabric that is up, or on an ephemeral one)")
    run.add_argument("--workload", required=True, choices=WORKLOADS)
    run.add_argument(
        "--size", type=args.size, default=None, help="bytes per flow (units: KB, MB); every workload but cm needs it"
    )
    run.add_argument("--load", type=args.load, default=1.0, help="host pacing as a fraction of line rate")
    run.add_argument(
        "--scheme",
        type=args.scheme,
        default=None,
        help="LB scheme of every switch (default: keep each switch's scheme on a fabric that is up, "
        "ecmp on an ephemeral one)",
    )
    run.add_argument("--pipe-size", type=args.pipe, default=4, help=args.PIPE_HELP)
    run.add_argument(
        "--reset-pointers",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="fresh random pointer state from --seed before the run (default on)",
    )
    run.add_argument("--seed", type=int, default=1)
    run.add_argument("--k", type=args.k_value, default=None, help="fat-tree k (ephemeral fabric: default 4)")
    run.add_argument(
        "--rate",
        type=args.rate,
        default=None,
        help=args.RATE_HELP + " (an ephemeral fabric's; default auto, counting the ACKs of --acks)",
    )
    run.add_argument("--fan-in", type=args.positive_int, default=2, help="incast senders (default 2)")
    run.add_argument("--inter-pod", action="store_true", help="permutation: every flow crosses pods")
    run.add_argument(
        "--gpus-per-server",
        type=args.positive_int,
        default=8,
        help="ring/fsdp: host i sends to i+G; moe: GPUs per server (default 8)",
    )
    run.add_argument(
        "--layers",
        type=args.positive_int,
        default=1,
        help="fsdp: layers of the backward pass, each a ring ReduceScatter and AllGather (default 1)",
    )
    run.add_argument(
        "--steps",
        type=args.positive_int,
        default=None,
        help="fsdp: only the pass's first N ring steps (default all; 1 needs no --cc)",
    )
    run.add_argument(
        "--stride", type=args.positive_int, default=None, help="stride: host i sends to i+S (default: hosts per pod)"
    )
    run.add_argument("--matrix", default=None, help="moe: n x n traffic matrix in bytes (.csv or .npy)")
    run.add_argument("--flows", default=None, help="cm: a flow list in htsim's connection-matrix format")
    run.add_argument(
        "--cm-rate",
        type=args.rate,
        default=100_000_000_000,
        help="cm: the line rate the flow list's start times were written for (default 100gbit)",
    )
    run.add_argument(
        "--skew",
        type=float,
        default=0.0,
        help="moe: the busiest GPU receives F x the mean over the fabric (default 1.48, 1.13 with --eplb: the paper's)",
    )
    run.add_argument("--eplb", action="store_true", help="moe: two expert slots per GPU, popular experts replicated")
    run.add_argument(
        "--mix",
        default="none",
        help="Fig. 11: --scheme on the LB switches this picks (random:F, pods:F drawn from --seed, agg, "
        "edge), --mix-base on the others; none: --scheme on every one (default)",
    )
    run.add_argument("--mix-base", default="ar", help="with --mix: the other switches' scheme (default ar)")
    run.add_argument(
        "--order",
        choices=ORDERS,
        default="staggered",
        help="all-to-all, moe: host s serves s+1, s+2, ... (staggered, default) or 0, 1, ... (sorted)",
    )
    run.add_argument("--acks", action="store_true", help="receivers answer every data packet with a 62-byte ACK")
    args.add_propagation(run)
    args.add_wire_overhead(run)
    args.add_ack_priority(run)
    args.add_ecn(run)
    args.add_transport(run)
    args.add_sampled(run)
    run.add_argument("--payload", type=args.size, default=4096, help="payload bytes per packet (default 4096)")
    run.add_argument("--events", default=None, help="timeline of link faults (JSON) applied during the run")
    run.add_argument(
        "--pace",
        choices=("load", "rho_max"),
        default="load",
        help="rho_max: pace hosts at min(load, rho_max) of the links that are up",
    )
    run.add_argument(
        "--retries",
        type=int,
        default=0,
        help="re-run an invalid run (fidelity out of tolerance) up to N times, same seed (default 0)",
    )
    args.add_wait(run)
    run.add_argument("--json", action="store_true", help="print exactly one JSON object")
    run.add_argument(
        "--out", type=Path, default=None, help="result directory (default results/<time>-<workload>-<scheme>-s<seed>)"
    )
    args.add_topology(run)
    args.add_common(run)


def _print_result(a: argparse.Namespace, r: dict[str, Any]) -> None:
    if a.json:
        print(json.dumps(r))
    else:
        from .tables import run_table

        args.console().print(run_table(r))
        if r.get("out_dir"):
            print(f"results in {r['out_dir']}")
    _warn_if_invalid([r])


def _warn_if_invalid(results: list[dict[str, Any]]) -> None:
    """A run outside its fidelity tolerance: a warning in colour on stderr."""
    for r in results:
        f = r["fidelity"]
        if r.get("discarded_attempts"):
            args.console(stderr=True).print(
                f"[yellow]note:[/] the {r['scheme']} run was repeated "
                f"{len(r['discarded_attempts'])} time(s): earlier attempts were invalid"
            )
        if not f["valid"]:
            args.console(stderr=True).print(
                f"[bold red]warning:[/] the {r['scheme']} run is INVALID: " + "; ".join(f["reasons"])
            )


RUN_FLAGS = (
    "load",
    "pipe_size",
    "seed",
    "fan_in",
    "inter_pod",
    "gpus_per_server",
    "layers",
    "steps",
    "stride",
    "matrix",
    "flows",
    "cm_rate",
    "skew",
    "eplb",
    "mix",
    "mix_base",
    "order",
    "acks",
    "propagation",
    "payload",
    "events",
    "pace",
    "ecn_threshold",
    "buffer_ref",
    "cc",
    "base_rtt",
    "base_rtt_pkts",
    "buffer",
    "sample_interval",
    "flood_interval",
    "dre_interval",
    "load_bands",
    "queue_bands",
    "drill_d",
    "drill_m",
    "reset_pointers",
)


def _run_flags(a: argparse.Namespace) -> dict[str, Any]:
    """`testbed run`'s flags as the API takes them (testbed.api.run_params)."""
    flags = {name: getattr(a, name) for name in RUN_FLAGS}
    flags["stride"] = a.stride or 0
    flags["steps"] = a.steps or 0
    return flags


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
    st = state.load(a.prefix)
    scheme = a.scheme if a.scheme is not None or st is not None else Scheme.ECMP
    k = st.k if st is not None else (a.k or 4)
    if st is not None and a.k is not None and a.k != st.k:
        raise RunError(f"--k {a.k} differs from the fabric that is up (k={st.k}); testbed down first")
    if a.retries < 0:
        raise RunError(f"--retries must be >= 0, got {a.retries}")
    params = api.run_params(a.workload, a.size, scheme=scheme, **_run_flags(a))
    tree = FatTree(k, a.prefix, args.topology_of(a, st))
    host_lb = scheme is not None and scheme.is_host
    if st is not None:
        args.check_rate_of_fabric_up(a.rate, st, tree, a.payload, params.acks, host_lb)
        spec = FabricSpec(
            k=st.k,
            rate_bps=st.rate_bps,
            prefix=a.prefix,
            topology=st.topology,
            mtu=st.mtu,
            wire_overhead=st.wire_overhead,
            ack_priority=st.ack_priority,
        )
    else:
        spec = api.fabric_spec(
            k,
            topology=tree.kind,
            rate=a.rate,
            scheme=scheme or Scheme.ECMP,
            pipe_size=a.pipe_size,
            seed=a.seed,
            acks=params.acks,
            host_lb=host_lb,
            payload=a.payload,
            ack_priority=a.ack_priority,
            wire_overhead=a.wire_overhead,
            prefix=a.prefix,
        )
    api.check_run(tree, params, spec)  # the workload and scheme must be valid on this fabric before anything
    if st is not None and params.acks and not st.ack_priority:
        args.console(stderr=True).print(
            "[yellow]note:[/] this fabric was built without ACK priority (up without "
            "--acks): its queues serve ACKs behind data, first come first served"
        )
    out = _out_dir(a, SchemeConfig(scheme, a.pipe_size).label if scheme is not None else "current")
    args.need_root()
    fabric = (
        api.attach(a.prefix)
        if st is not None
        else api.build(
            k,
            topology=tree.kind,
            rate=spec.rate_bps,
            scheme=scheme or Scheme.ECMP,
            pipe_size=a.pipe_size,
            seed=a.seed,
            acks=params.acks,
            ack_priority=spec.ack_priority,
            wire_overhead=spec.wire_overhead,
            prefix=a.prefix,
        )
    )
    with run_lock(a.prefix, wait=a.wait), fabric as fab:  # the lock before the build: it takes CPU too
        result = fab.run(
            a.workload, a.size, scheme=scheme, retries=a.retries, out=out, wait=a.wait, **_run_flags(a)
        ).json()
    _print_result(a, result)
    return 0


def add_compare(sub: Any) -> None:
    cmp_ = sub.add_parser("compare", help="run a matrix of schemes x seeds and compare them")
    cmp_.add_argument(
        "--schemes",
        default="ecmp,rps,ar,ofan,pofan:4",
        help="comma-separated; pofan:P or pofan:cpu for a pipe size (default ecmp,rps,ar,ofan,pofan:4)",
    )
    cmp_.add_argument("--seeds", type=args.seeds, default=(1, 2, 3), help=args.SEEDS_HELP + " (default 1-3)")
    cmp_.add_argument("--workload", default="permutation", choices=WORKLOADS)
    cmp_.add_argument("--size", type=args.size, default=1 << 20)
    cmp_.add_argument("--load", type=args.load, default=1.0)
    cmp_.add_argument("--k", type=args.k_value, default=None, help="fat-tree k (ephemeral fabric: default 4)")
    cmp_.add_argument(
        "--rate", type=args.rate, default=None, help=args.RATE_HELP + " (an ephemeral fabric's; default auto)"
    )
    cmp_.add_argument("--retries", type=int, default=2, help="re-run invalid runs up to N times (default 2)")
    cmp_.add_argument("--acks", action="store_true", help="receivers answer every data packet (reps and conga need it)")
    args.add_propagation(cmp_)
    args.add_wire_overhead(cmp_)
    args.add_ack_priority(cmp_)
    args.add_ecn(cmp_)
    args.add_sampled(cmp_)
    cmp_.add_argument("--out", type=Path, default=None, help="directory (default results/<time>-compare)")
    args.add_wait(cmp_)
    args.add_topology(cmp_)
    args.add_common(cmp_)


def cmd_compare(a: argparse.Namespace) -> int:
    from ..run.compare import Cell, compare_summary, parse_schemes, run_matrix
    from ..run.experiment import run_valid
    from .plots import plot_compare
    from .tables import summary_table

    configs = parse_schemes(a.schemes)
    seeds = list(a.seeds)
    st = state.load(a.prefix)
    k = st.k if st is not None else (a.k or 4)
    if st is not None and a.k is not None and a.k != st.k:
        raise RunError(f"--k {a.k} differs from the fabric that is up (k={st.k}); testbed down first")
    for c in configs:
        c.validate(FatTree(k).switch_ports)
    tree = FatTree(k, a.prefix, args.topology_of(a, st))
    host_lb = any(c.scheme.is_host for c in configs)
    if st is not None:
        args.check_rate_of_fabric_up(a.rate, st, tree, DEFAULT_PAYLOAD, a.acks, host_lb)
    rate = st.rate_bps if st is not None else args.resolve_rate(a.rate, tree, acks=a.acks, host_lb=host_lb)
    for c in configs:  # every cell's parameters are valid before anything is touched
        p0 = RunParams(
            a.workload,
            a.size,
            a.load,
            c.scheme,
            acks=a.acks,
            ecn_threshold=a.ecn_threshold,
            buffer_ref=a.buffer_ref,
            propagation=a.propagation,
            **args.sampled_params(a),
        )
        p0.check_fabric(tree)
        p0.check_propagation(tree, rate, st.wire_overhead if st is not None else a.wire_overhead)
    out = a.out or Path("results") / f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-compare"
    if (out / "summary.csv").exists():
        raise RunError(f"{out} already holds a comparison")
    args.need_root()
    cells = [Cell(c, s) for c in configs for s in seeds]

    def run_all(fab: Fabric) -> Any:
        def one(cell: Cell, d: Path) -> dict[str, Any]:
            p = RunParams(
                a.workload,
                a.size,
                a.load,
                cell.config.scheme,
                cell.seed,
                pipe_size=cell.config.pipe_size,
                acks=a.acks,
                ecn_threshold=a.ecn_threshold,
                buffer_ref=a.buffer_ref,
                propagation=a.propagation,
                **args.sampled_params(a),
            )
            return run_valid(fab, p, d, attempts=max(0, a.retries) + 1).to_json()

        return run_matrix(cells, one, out)

    with run_lock(a.prefix, wait=a.wait):
        if st is not None:
            with Fabric.attach(a.prefix) as fab:
                df = run_all(fab)
        else:
            with Fabric(
                FabricSpec(
                    k=k,
                    rate_bps=rate,
                    prefix=a.prefix,
                    topology=tree.kind,
                    wire_overhead=a.wire_overhead,
                    ack_priority=args.ack_priority(a, a.acks),
                )
            ) as fab:
                df = run_all(fab)
    summary = compare_summary(df)
    summary.to_csv(out / "schemes.csv", index=False)
    title = f"{a.workload} {a.size} B, load {a.load}, k={k}, seeds {a.seeds}"
    plot_compare(summary, out / "compare.png", title)
    args.console().print(summary_table(summary, title))
    print(f"results in {out} (summary.csv, schemes.csv, compare.png, one directory per run)")
    if not df["valid"].all():
        args.console(stderr=True).print(
            f"[bold red]warning:[/] {int((~df['valid']).sum())} run(s) INVALID; see summary.csv"
        )
    return 0


def add_plot(sub: Any) -> None:
    plot = sub.add_parser("plot", help="draw figures from a result directory")
    plot.add_argument("what", choices=("queues",), help="queues: occupancy over time of the most loaded ports")
    plot.add_argument("dir", type=Path, help="a result directory (testbed run --out)")
    plot.add_argument("--output", type=Path, default=None, help="PNG file (default DIR/queues.png)")


def cmd_plot(a: argparse.Namespace) -> int:
    from ..measure.results import ResultsError, load
    from .plots import plot_queues

    try:
        res = load(a.dir, allow_incomplete=False)
    except ResultsError as e:
        raise RunError(str(e)) from None
    out = a.output or a.dir / "queues.png"
    port = plot_queues(res, out)
    print(f"wrote {out} (most loaded port: {port})")
    return 0


IDEAL_WORKLOADS = ("permutation", "ring", "stride")


def add_ideal(sub: Any) -> None:
    sp = sub.add_parser(
        "ideal",
        help="the same experiment on the ideal fabric: exact time, no emulator, no root (testbed/models/ideal.py)",
    )
    sp.add_argument(
        "--schemes",
        default="ecmp,rps,ofan,pofan:4",
        help="comma-separated, of ecmp, rps, rr, jsq, ofan, pofan:P (default ecmp,rps,ofan,pofan:4)",
    )
    sp.add_argument("--seeds", type=args.seeds, default=(1, 2, 3), help=args.SEEDS_HELP + " (default 1-3)")
    sp.add_argument("--workload", default="permutation", choices=IDEAL_WORKLOADS)
    sp.add_argument("--inter-pod", action="store_true", help="permutation: every flow crosses pods")
    sp.add_argument("--size", type=args.size, default=1 << 20, help="bytes per flow, a multiple of the payload")
    sp.add_argument("--k", type=args.k_value, default=4, help="fat-tree k (default 4)")
    sp.add_argument(
        "--start-jitter",
        type=float,
        default=0.0,
        help="NIC releases spread uniformly over this many packet times (default 0)",
    )
    sp.add_argument(
        "--order",
        default="random",
        choices=("random", "fixed"),
        help="frames reaching a switch at one instant: in a random order (default) or by source host, "
        "the same phase every packet time",
    )
    args.add_propagation(sp)
    sp.add_argument("--json", action="store_true", help="one JSON object per line instead of the table")
    args.add_topology(sp)


def cmd_ideal(a: argparse.Namespace) -> int:
    rows = api.ideal(
        a.schemes,
        seeds=a.seeds,
        workload=a.workload,
        size=a.size,
        k=a.k,
        topology=a.topology or "fattree",
        inter_pod=a.inter_pod,
        start_jitter=a.start_jitter,
        order=a.order,
        propagation=a.propagation,
        on_row=(lambda row: print(json.dumps(row), flush=True)) if a.json else None,
    )
    tree = FatTree(a.k, "ideal", a.topology or "fattree")
    d = rows[0]["propagation_pkts"] if rows else 0.0
    if not a.json:
        args.console().print(
            tables.ideal_table(
                rows,
                f"ideal fabric: {tree.kind} k={a.k}, {a.workload}"
                f"{' inter-pod' if a.inter_pod else ''} {a.size} B, "
                f"start jitter {a.start_jitter:g} packet times, {a.order} order, "
                f"propagation {d:.2f} packet times per link",
            )
        )
    return 0
