"""What the `testbed` command's commands do beyond the public API (testbed.api): find the fabric that is up
under a prefix, build one and leave it up, tear it down, clean, ping, flap a link, serve its link watcher,
one run on the fabric that is up or on an ephemeral one, and a comparison of schemes x seeds. The command
layer (testbed.cli) parses, calls one of these, and prints; it imports nothing of the fabric or the data
plane itself. Every check happens before the first kernel object is made."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from traffic.packet import WIRE_EXTRA

from ..fabric import controld, netns, state
from ..fabric.budget import RunClass, auto_rate_bps
from ..fabric.build import Fabric as _Fabric
from ..fabric.build import FabricSpec
from ..fabric.errors import FabricError, require_root
from ..fabric.lock import run_lock
from ..models.schemes import Scheme, SchemeConfig
from ..run.params import RunError
from ..topology import FatTree
from ..topology.units import format_rate
from . import Result, _errors, _rate, _scheme, attach, build, check_run, fabric_spec, run_params

FabricState = state.FabricState
ALL_PAIRS_MAX = 100_000  # more than this takes a sample (k=12 has 186,192 pairs)


def fabric_state(prefix: str) -> FabricState | None:
    """The record of the fabric that is up under `prefix`, or None."""
    return state.load(prefix)


def need_root() -> None:
    """One line unless this process is root (every kernel object needs it)."""
    require_root()


def attached_tree(prefix: str) -> FatTree:
    """The description of the fabric that is up under `prefix` (one line if none is)."""
    st = state.load(prefix)
    if st is None or not st.complete:
        raise FabricError(f"no fabric with prefix {prefix!r} is up (testbed up first)")
    return FatTree(st.k, prefix, st.topology)


def topology_of(requested: str | None, st: FabricState | None) -> str:
    """The topology of a command: the fabric's if one is up (a different one asked for is an error), else the
    one asked for, else a fat tree."""
    if st is not None:
        if requested is not None and requested != st.topology:
            raise RunError(f"--topology {requested} differs from the fabric that is up ({st.topology})")
        return st.topology
    return requested or "fattree"


def run_class(acks: bool, host_lb: bool, payload: int, cc: str = "none", workload: str = "permutation") -> RunClass:
    """The budget's class of a run with these options (testbed.fabric.budget)."""
    return RunClass(acks=acks, cc=cc != "none", payload=payload, chained=workload == "fsdp", host_lb=host_lb)


def _auto(tree: FatTree, rc: RunClass) -> int:
    return auto_rate_bps(tree, rc.payload, rc.acks, rc.host_lb, cc=rc.cc, chained=rc.chained)


def resolve_rate(requested: int | str | None, tree: FatTree, rc: RunClass | None = None) -> int:
    """The line rate of a fabric about to be built: the one asked for, or the auto rate of the run's class (also
    when none is asked for)."""
    return _rate(requested) or _auto(tree, rc or RunClass())


def check_rate_of_fabric_up(requested: int | str | None, st: FabricState, tree: FatTree, rc: RunClass) -> None:
    """A rate given for a run on the fabric that is up must agree with it: a number must be its rate, auto
    must not be below it (ACKs double the packets)."""
    if requested is None:
        return
    bps = _rate(requested)
    if bps is None:
        auto = _auto(tree, rc)
        if st.rate_bps > auto:
            raise RunError(
                f"the fabric that is up runs at {format_rate(st.rate_bps)}, above the auto rate "
                f"{format_rate(auto)} of this run{' (ACKs double the packets)' if rc.acks else ''}; "
                f"testbed down, then up --rate {format_rate(auto)}"
            )
    elif bps != st.rate_bps:
        raise RunError(f"--rate differs from the fabric that is up ({format_rate(st.rate_bps)})")


# -- a fabric left up ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Up:
    """What `up` built."""

    spec: FabricSpec
    tree: FatTree
    build_s: float
    cached_program: bool


def up(
    k: int,
    *,
    topology: str | None = None,
    rate: int | str | None = "auto",
    scheme: str | Scheme = Scheme.ECMP,
    pipe_size: int | str = 4,
    seed: int = 1,
    acks: bool = False,
    ack_priority: bool | None = None,
    wire_overhead: int = WIRE_EXTRA,
    prefix: str = "tb",
) -> Up:
    """Build a fabric and leave it up, with its link watcher daemon (testbed.fabric.controld)."""
    spec = fabric_spec(
        k,
        topology=topology or "fattree",
        rate=rate,
        scheme=scheme,
        pipe_size=pipe_size,
        seed=seed,
        acks=acks,
        ack_priority=ack_priority,
        wire_overhead=wire_overhead,
        prefix=prefix,
    )
    need_root()
    fab = _Fabric(spec)
    try:
        fab.build()
        controld.start(prefix)
    except BaseException:
        fab.teardown()
        raise
    if fab.maps is not None:
        fab.maps.close()
    cached = fab.compiled is not None and fab.compiled.from_cache
    if fab.compiled is not None:
        fab.compiled.close()  # the filters keep the programs; the pins keep the maps
    return Up(spec, fab.tree, fab.times.total_s, cached)


def status(prefix: str) -> dict[str, Any]:
    """What `testbed status --json` prints: nodes, namespaces, links and their state, schemes."""
    from ..fabric.status import status as fabric_status

    need_root()
    return fabric_status(prefix)


def down(prefix: str) -> dict[str, Any]:
    """Tear the fabric down (refused if none is up under `prefix`)."""
    from ..fabric.clean import clean as clean_prefix

    need_root()
    if state.load(prefix) is None and not netns.listed(prefix):
        raise FabricError(f"no fabric with prefix {prefix!r} is up")
    rep = clean_prefix(prefix)
    return {"namespaces": rep.namespaces, "wait_s": rep.wait_s}


def clean(prefix: str) -> dict[str, Any]:
    """Remove every leftover kernel object, file and process with the prefix."""
    from ..fabric.clean import clean as clean_prefix

    need_root()
    rep = clean_prefix(prefix)
    return {
        "namespaces": rep.namespaces,
        "pinned_maps": rep.pinned_maps,
        "killed": list(rep.killed),
        "state_file": rep.state_file,
    }


def ping(prefix: str, sample: int | None = None, seed: int = 1) -> dict[str, Any]:
    """Every host pings every other host, or `sample` random pairs drawn from `seed`."""
    from ..fabric.reach import reachable, sample_pairs

    tree = attached_tree(prefix)
    total = tree.n_hosts * (tree.n_hosts - 1)
    if sample is None and total > ALL_PAIRS_MAX:
        raise FabricError(f"{total:,} host pairs is too many to ping at once; use --sample N (e.g. --sample 2000)")
    pairs = sample_pairs(tree, sample if sample is not None else total, seed)
    need_root()
    got = reachable(tree, pairs)
    missing = sorted((tree.hosts[s].name, tree.hosts[d].name) for s, d in pairs if (s, d) not in got)
    out: dict[str, Any] = {"pairs": len(pairs), "reachable": len(got), "missing": missing}
    if len(pairs) < total:
        out.update(sampled_of=total, seed=seed)
    return out


def flap(prefix: str, link: str, period_s: float, count: int) -> dict[str, Any]:
    """Take a link down and up `count` times, one cycle per `period_s`; what the link watcher saw."""
    from ..fabric import links
    from ..models import control
    from ..run import faults

    tree = attached_tree(prefix)
    ln = control.parse_link(tree, link)
    faults.check_partition(tree, [*faults.current_failed(tree), ln], force=True)
    need_root()
    seq = len(links.read_events(prefix))
    done = faults.apply(tree, faults.Action(0.0, "flap", ln.name, period_s, count))
    time.sleep(2 * links.SETTLE_S + 0.05)
    evs = links.read_events(prefix, seq)
    return {
        "link": ln.name,
        "cycles": count,
        "period_s": period_s,
        "transitions": len(done.t_applied_ns),
        "events": len(evs),
        "convergence_ms_max": max((e["convergence_ms"] for e in evs), default=0.0),
        "lost_pkts": sum(e["lost_pkts"] for e in evs),
        "failed_now": evs[-1]["failed"] if evs else [],
    }


# -- runs ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Where:
    """The fabric a command runs on: the one up under `prefix`, or an ephemeral one built for it."""

    k: int | None = None
    topology: str | None = None
    rate: int | str | None = None  # None: the fabric's that is up, or auto
    wire_overhead: int = WIRE_EXTRA
    ack_priority: bool | None = None
    prefix: str = "tb"


def _ephemeral_or_up(where: Where, rc: RunClass) -> tuple[FabricSpec, FatTree, bool]:
    """The spec of the fabric a run uses, its tree, and whether it is up already."""
    st = state.load(where.prefix)
    if st is not None and where.k is not None and where.k != st.k:
        raise RunError(f"--k {where.k} differs from the fabric that is up (k={st.k}); testbed down first")
    k = st.k if st is not None else (where.k or 4)
    tree = FatTree(k, where.prefix, topology_of(where.topology, st))
    if st is not None:
        check_rate_of_fabric_up(where.rate, st, tree, rc)
        spec = FabricSpec(
            k=st.k,
            rate_bps=st.rate_bps,
            prefix=where.prefix,
            topology=st.topology,
            mtu=st.mtu,
            wire_overhead=st.wire_overhead,
            ack_priority=st.ack_priority,
        )
        return spec, tree, True
    spec = FabricSpec(
        k=k,
        rate_bps=resolve_rate(where.rate, tree, rc),
        prefix=where.prefix,
        topology=tree.kind,
        wire_overhead=where.wire_overhead,
        ack_priority=rc.acks if where.ack_priority is None else where.ack_priority,
    )
    return spec, tree, False


def run(
    workload: str,
    size: int | str | None = None,
    *,
    where: Where = Where(),
    retries: int = 0,
    out: Path,
    wait: bool = False,
    note: Callable[[str], None] = lambda text: None,
    **options: Any,
) -> Result:
    """`testbed run`: one collective on the fabric that is up under the prefix (its schemes kept unless a
    scheme is given), or on an ephemeral fabric (ECMP unless a scheme is given) built, run and torn down."""
    with _errors():
        st = state.load(where.prefix)
        scheme = _scheme(options.pop("scheme", None))
        if scheme is None and st is None:
            scheme = Scheme.ECMP
        if retries < 0:
            raise RunError(f"--retries must be >= 0, got {retries}")
        params = run_params(workload, size, scheme=scheme, **options)
        rc = run_class(params.acks, scheme is not None and scheme.is_host, params.payload, params.cc, params.workload)
        spec, tree, is_up = _ephemeral_or_up(where, rc)
        check_run(tree, params, spec)  # the workload and scheme must be valid on this fabric before anything
        if (out / "manifest.json").exists():
            raise RunError(f"{out} already holds a run; choose another --out")
        if is_up and params.acks and not spec.ack_priority:
            note(
                "this fabric was built without ACK priority (up without --acks): its queues serve ACKs "
                "behind data, first come first served"
            )
        need_root()
        with run_lock(where.prefix, wait=wait):  # the lock before the build: it takes CPU too
            fabric = attach(where.prefix) if is_up else build(spec.k, **_build_args(spec, params))
            with fabric as fab:
                return fab.run(workload, size, scheme=scheme, retries=retries, out=out, wait=wait, **options)


def _build_args(spec: FabricSpec, params: Any) -> dict[str, Any]:
    """build()'s arguments for an ephemeral fabric of this spec and run."""
    return {
        "topology": spec.topology,
        "rate": spec.rate_bps,
        "scheme": params.scheme.switch_scheme if params.scheme is not None else Scheme.ECMP,
        "pipe_size": params.pipe_size,
        "seed": params.seed,
        "acks": params.acks,
        "ack_priority": spec.ack_priority,
        "wire_overhead": spec.wire_overhead,
        "prefix": spec.prefix,
    }


def compare(
    schemes: Sequence[str],
    seeds: Sequence[int],
    *,
    where: Where = Where(),
    out: Path,
    retries: int = 2,
    wait: bool = False,
    **options: Any,
) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """`testbed compare`: every scheme item ('ecmp', 'pofan:4') x seed on one fabric (the one up, or an
    ephemeral one); (every run's row, one row per scheme, a title). Every cell is checked first."""
    from ..run.compare import Cell, compare_summary, parse_schemes, run_matrix
    from ..run.experiment import run_valid

    with _errors():
        configs = parse_schemes(",".join(schemes))
        workload, size = options.pop("workload", "permutation"), options.pop("size", 1 << 20)

        def params_of(config: SchemeConfig, seed: int) -> Any:
            return run_params(workload, size, scheme=config.scheme, pipe_size=config.pipe_size, seed=seed, **options)

        first = params_of(configs[0], seeds[0])
        host_lb = any(c.scheme.is_host for c in configs)
        spec, tree, is_up = _ephemeral_or_up(
            where, run_class(first.acks, host_lb, first.payload, first.cc, first.workload)
        )
        for c in configs:  # every cell's parameters are valid before anything is touched
            c.validate(tree.switch_ports)
            check_run(tree, params_of(c, seeds[0]), spec)
        if (out / "summary.csv").exists():
            raise RunError(f"{out} already holds a comparison")
        need_root()
        cells = [Cell(c, s) for c in configs for s in seeds]
        with run_lock(where.prefix, wait=wait), _Fabric.attach(where.prefix) if is_up else _Fabric(spec) as fab:
            df = run_matrix(
                cells,
                lambda cell, d: run_valid(fab, params_of(cell.config, cell.seed), d, attempts=retries + 1).to_json(),
                out,
            )
    summary = compare_summary(df)
    summary.to_csv(out / "schemes.csv", index=False)
    title = f"{workload} {first.size} B, load {first.load}, k={tree.k}, seeds {','.join(map(str, seeds))}"
    return df, summary, title


def serve_watcher(prefix: str) -> None:
    """The link watcher daemon's body (testbed.fabric.controld), for a command that runs it in the
    foreground."""
    need_root()
    controld.serve(prefix)
