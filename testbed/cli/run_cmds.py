"""The commands that run experiments and show their results: run, compare,
demo, plot, and ideal (the same experiment on the ideal fabric, no kernel)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from traffic.packet import DEFAULT_PAYLOAD, WIRE_EXTRA, Packetizer
from traffic.workloads import ORDERS, WORKLOADS

from ..fabric import state
from ..fabric.build import DEFAULT_MTU, Fabric, FabricSpec
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


def _run_params(a: argparse.Namespace, scheme: Scheme | None) -> RunParams:
    if a.size is None and a.workload != "cm":
        raise RunError(f"--size is required for the {a.workload} workload")
    tp = args.transport_params(a)
    return RunParams(
        a.workload,
        a.size or 0,
        a.load,
        scheme,
        a.seed,
        a.fan_in,
        payload=a.payload,
        pipe_size=a.pipe_size,
        reset_pointers=a.reset_pointers,
        acks=a.acks,
        inter_pod=a.inter_pod,
        gpus_per_server=a.gpus_per_server,
        stride=a.stride or 0,
        matrix=a.matrix,
        layers=a.layers,
        steps=a.steps or 0,
        moe_skew=a.skew,
        eplb=a.eplb,
        mix=a.mix,
        mix_base=a.mix_base,
        order=a.order,
        events=a.events,
        pace_rho_max=a.pace == "rho_max",
        ecn_threshold=a.ecn_threshold,
        buffer_ref=a.buffer_ref,
        flows_file=a.flows,
        cm_rate_bps=a.cm_rate,
        propagation=a.propagation,
        **tp,
        **args.sampled_params(a),
    )


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
    from ..run.experiment import run_valid

    if a.retries < 0:
        raise RunError(f"--retries must be >= 0, got {a.retries}")
    st = state.load(a.prefix)
    scheme = a.scheme if a.scheme is not None or st is not None else Scheme.ECMP
    k = st.k if st is not None else (a.k or 4)
    if st is not None and a.k is not None and a.k != st.k:
        raise RunError(f"--k {a.k} differs from the fabric that is up (k={st.k}); testbed down first")
    if scheme is not None:
        SchemeConfig(scheme.switch_scheme, a.pipe_size).validate(FatTree(k).switch_ports)
    params = _run_params(a, scheme)
    tree = FatTree(k, a.prefix, args.topology_of(a, st))
    if st is not None:
        args.check_rate_of_fabric_up(a.rate, st, tree, a.payload, a.acks, scheme is not None and scheme.is_host)
    params.check_fabric(tree)  # the workload and scheme must be valid on this fabric before anything is touched
    if st is not None and params.acks and not st.ack_priority:
        args.console(stderr=True).print(
            "[yellow]note:[/] this fabric was built without ACK priority (up without "
            "--acks): its queues serve ACKs behind data, first come first served"
        )
    rate = (
        st.rate_bps
        if st is not None
        else args.resolve_rate(a.rate, tree, a.payload, a.acks, scheme is not None and scheme.is_host)
    )
    params.check_propagation(tree, rate, st.wire_overhead if st is not None else a.wire_overhead)
    if a.events:
        from ..run.faults import parse_timeline

        parse_timeline(a.events, tree)
    if a.payload + 58 > (st.mtu if st is not None else DEFAULT_MTU) + 14:
        raise RunError(f"payload {a.payload} does not fit the MTU; at most {DEFAULT_MTU - 44} bytes")
    out = _out_dir(a, SchemeConfig(scheme, a.pipe_size).label if scheme is not None else "current")
    args.need_root()
    with run_lock(a.prefix, wait=a.wait):
        if st is not None:
            with Fabric.attach(a.prefix) as fab:
                result = run_valid(fab, params, out, attempts=a.retries + 1).to_json()
        else:
            spec = FabricSpec(
                k=k,
                rate_bps=rate,
                prefix=a.prefix,
                wire_overhead=a.wire_overhead,
                ack_priority=args.ack_priority(a, a.acks),
                scheme=(scheme or Scheme.ECMP).switch_scheme,
                seed=a.seed,
                pipe_size=a.pipe_size,
                topology=tree.kind,
            )
            with Fabric(spec) as fab:
                result = run_valid(fab, params, out, attempts=a.retries + 1).to_json()
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
    from traffic.workloads import WorkloadSpec, make_spec

    from ..models import ideal
    from ..run.compare import parse_schemes

    configs = parse_schemes(a.schemes)
    seeds = list(a.seeds)
    if a.start_jitter < 0:
        raise RunError(f"--start-jitter must be >= 0, got {a.start_jitter}")
    tree = FatTree(a.k, "ideal", a.topology or "fattree")
    work = {
        s: make_spec(WorkloadSpec(a.workload, a.size, s, inter_pod=a.inter_pod), tree.n_hosts, tree.hosts_per_pod)
        for s in seeds
    }
    for c in configs:  # everything is checked before the first simulation
        c.validate(tree.switch_ports)
        ideal.check(c, work[seeds[0]], Packetizer())
    if a.propagation.kind == "seconds":
        raise RunError("the ideal fabric counts packet times: give --propagation as paper, 0 or packet times (12pkts)")
    pk = Packetizer(wire_overhead=WIRE_EXTRA)  # the fabric's default frames
    d = a.propagation.link_pkts(1.0, pk.wire_len(pk.payload))
    rows = []
    for c in configs:
        for s in seeds:
            r = ideal.simulate(tree, c, work[s], s, pk, start_jitter=a.start_jitter, order=a.order, propagation=d)
            row = {
                "scheme": c.label,
                "seed": s,
                "cct_increase": r.cct_increase,
                "cct_pkts": r.cct_pkts,
                "bound_pkts": r.bound_pkts,
                "frames": r.frames,
                "delivered": r.delivered,
                "max_queue": r.max_queue,
                "propagation_pkts": d,
            }
            if d > 0:  # the analytic shift of a kernel run, from the same run without propagation
                r0 = ideal.simulate(tree, c, work[s], s, pk, start_jitter=a.start_jitter, order=a.order)
                row["shifted_cct_increase"] = ideal.shifted_cct_pkts(tree, work[s], r0.flow_done, d) / r.bound_pkts - 1
            rows.append(row)
            if a.json:
                print(json.dumps(row), flush=True)
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
