"""Layer 7, the testbed from Python: build a fabric, run collectives on it, fail and heal links, change schemes on the
fly, sweep, play the ideal fabric, and read every result as the `testbed` command gives it. The command is
built on this module (it parses and prints; this does the work), so the two cannot drift.

    import testbed

    with testbed.build(k=4, scheme="ofan") as fab:
        r = fab.run("permutation", size="1MB", seed=1)
        print(r.cct_increase, r.valid, r.ports.head())
        fab.fail("e0_0-a0_0")
        after = fab.run("permutation", size="1MB", seed=1)
        fab.heal("e0_0-a0_0")

Arguments have the names of the command's flags (dashes become underscores) and take the same values, as
numbers or as the strings the command takes ("1MB", "50mbit", "auto", "200ms", seeds "1-5"). Bad ones raise
TestbedError, with the one-line message the command prints, before any kernel object is made. A fabric is
torn down when its `with` block ends, however it ends (an exception, Ctrl-C, SIGTERM). Everything not in
`__all__` is private. docs/api.md has the reference and the examples in examples/. (It is `build()`, not
`fabric()`: testbed.fabric is the package of the layer that builds fabrics.)
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from traffic.packet import DEFAULT_PAYLOAD, WIRE_EXTRA, Packetizer
from traffic.workloads import Flow, WorkloadError, WorkloadSpec, make_spec

from ..dataplane import switches as dataplane_switches
from ..fabric import state
from ..fabric.budget import auto_rate_bps
from ..fabric.build import DEFAULT_MTU, FabricSpec
from ..fabric.build import Fabric as _Fabric
from ..fabric.errors import FabricError
from ..fabric.lock import run_lock
from ..measure import results as _results
from ..models.schemes import Scheme, SchemeConfig, SchemeError, parse_pipe_size, select_switches
from ..run.options import coerce_all, specs_of
from ..run.params import RunError, RunParams
from ..topology import FatTree, TopologyError
from ..topology.timebase import PAPER, Propagation, parse_propagation
from ..topology.units import parse_rate, parse_seeds, parse_size

__all__ = ["Fabric", "Result", "TestbedError", "attach", "build", "ideal", "sweep"]

_ERRORS = (RunError, SchemeError, FabricError, WorkloadError, TopologyError, ValueError, _results.ResultsError)


class TestbedError(ValueError):
    """Anything the testbed refuses: bad arguments, a fabric that cannot be built or found. Its message is
    one line, the one `testbed` prints after "testbed: error:"."""


@contextlib.contextmanager
def _errors() -> Iterator[None]:
    """The testbed's own exceptions, as one TestbedError with the same message."""
    try:
        yield
    except TestbedError:
        raise
    except _ERRORS as e:
        raise TestbedError(str(e)) from None


# -- values as the command line takes them ---------------------------------------------------------------
def _size(v: int | str) -> int:
    return parse_size(v) if isinstance(v, str) else int(v)


def _rate(v: int | str | None) -> int | None:
    """A rate in bit/s, or None for auto."""
    if v is None or (isinstance(v, str) and v.strip().lower() == "auto"):
        return None
    return parse_rate(v) if isinstance(v, str) else int(v)


def _seeds(v: int | str | Sequence[int]) -> tuple[int, ...]:
    if isinstance(v, str):
        return parse_seeds(v)
    return (int(v),) if isinstance(v, int) else tuple(int(x) for x in v)


def _scheme(v: str | Scheme | None) -> Scheme | None:
    return Scheme.parse(v) if isinstance(v, str) else v


def _pipe(v: int | str) -> int:
    return parse_pipe_size(v) if isinstance(v, str) else int(v)


def _propagation(v: str | float | Propagation) -> Propagation:
    if isinstance(v, Propagation):
        return v
    return parse_propagation(str(v))


def run_params(workload: str, size: int | str | None = None, **options: Any) -> RunParams:
    """One run's parameters from the command line's options (testbed.run.params.RunParams declares them all
    and checks them; a value may be given as the command line writes it, "1MB", "dctcp", "12pkts")."""
    with _errors():
        if size is None and workload != "cm":
            raise RunError(f"--size is required for the {workload} workload")
        given = {"workload": workload, "size": size if size is not None else 0, **options}
        return RunParams(**coerce_all(RunParams, given, "run option"))


def option_parameters(skip: Sequence[str] = ("workload", "size")) -> list[inspect.Parameter]:
    """The run options as keyword-only parameters, read from RunParams (the signatures help() shows)."""
    types = {f.name: f.type for f in dataclasses.fields(RunParams)}
    return [
        inspect.Parameter(s.name, inspect.Parameter.KEYWORD_ONLY, default=s.default, annotation=types[s.name])
        for s in specs_of(RunParams)
        if s.name not in skip
    ]


def _signature_with_options(fn: Callable[..., Any], fixed: Sequence[str]) -> None:
    """`fn(**options)` shows every run option in its signature: its own parameters `fixed`, then the options."""
    sig = inspect.signature(fn)
    own = [p for p in sig.parameters.values() if p.name in fixed]
    params = option_parameters(skip=("workload", "size", *fixed))
    fn.__signature__ = inspect.Signature([*own, *params], return_annotation=sig.return_annotation)  # type: ignore[attr-defined]


# -- results -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Result:
    """One run: every field of `testbed run --json` as an attribute (`r.cct_increase`, `r.queues`, ...),
    its verdict, and its tables as pandas DataFrames (`ports`, `flows`, `stages`, the sampled queue series
    `timeseries`, a transport run's `windows`, None without)."""

    data: dict[str, Any]
    tables: _results.RunResults | None = None

    def json(self) -> dict[str, Any]:
        """What `testbed run --json` prints for this run."""
        return dict(self.data)

    @property
    def valid(self) -> bool:
        return bool(self.data["fidelity"]["valid"])

    @property
    def verdict(self) -> dict[str, Any]:
        """The fidelity verdict: `valid`, its `reasons`, every criterion's figure and the tolerances."""
        return dict(self.data["fidelity"])

    def _table(self, name: str) -> pd.DataFrame | None:
        if self.tables is None:
            return None
        t: pd.DataFrame = getattr(self.tables, name)
        return None if name == "windows" and t.empty else t

    @property
    def ports(self) -> pd.DataFrame:
        t = self._table("ports")
        return t if t is not None else pd.DataFrame(self.data["ports"])

    @property
    def flows(self) -> pd.DataFrame:
        t = self._table("flows")
        return t if t is not None else pd.DataFrame(self.data["flow_stats"])

    @property
    def stages(self) -> pd.DataFrame | None:
        return self._table("stages")

    @property
    def timeseries(self) -> pd.DataFrame | None:
        return self._table("timeseries")

    @property
    def windows(self) -> pd.DataFrame | None:
        return self._table("windows")

    def __getattr__(self, name: str) -> Any:
        data = self.__dict__.get("data", {})
        if name in data:
            return data[name]
        raise AttributeError(f"a run has no field {name!r} (see `testbed run --json`)")


# -- fabrics -------------------------------------------------------------------------------------------------
class Fabric:
    """A fabric that is up: made by `build()` (and torn down with its block) or found by `attach()`."""

    def __init__(self, fab: _Fabric) -> None:
        self._fab = fab

    @property
    def tree(self) -> FatTree:
        """The topology (testbed.topology.FatTree): nodes, ports, links, names."""
        return self._fab.tree

    @property
    def k(self) -> int:
        return self._fab.spec.k

    @property
    def prefix(self) -> str:
        return self._fab.spec.prefix

    @property
    def rate_bps(self) -> int:
        return self._fab.spec.rate_bps

    @property
    def hosts(self) -> int:
        return self._fab.tree.n_hosts

    def run(
        self,
        workload: str,
        size: int | str | None = None,
        *,
        scheme: str | Scheme | None = None,
        retries: int = 0,
        out: str | Path | None = None,
        wait: bool = False,
        **options: Any,
    ) -> Result:
        """One collective (every option of `testbed run`: load, seed, acks, cc, payload, ...; `scheme` None
        keeps every switch's scheme). Holds the machine's run lock (`wait=True` waits for another run to end);
        `retries` re-runs an invalid run with the same seed; `out` keeps its result directory."""
        from ..run.experiment import run_valid

        with _errors():
            p = run_params(workload, size, scheme=scheme, **options)
            if retries < 0:
                raise RunError(f"--retries must be >= 0, got {retries}")
            check_run(self._fab.tree, p, self._fab.spec)
            target = Path(out) if out is not None else None
            if target is not None and (target / _results.MANIFEST).exists():
                raise RunError(f"{target} already holds a run; choose another --out")
            with contextlib.ExitStack() as stack:
                if target is None:
                    target = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="testbed-run-"))) / "run"
                with run_lock(self.prefix, wait=wait):
                    r = run_valid(self._fab, p, target, attempts=retries + 1)
                data = r.to_json()
                if out is None:
                    data["out_dir"] = None
                return Result(data, _results.load(target))

    def fail(
        self, link: str | None = None, *, random: float | None = None, seed: int = 1, force: bool = False
    ) -> dict[str, Any]:
        """Fail a link (named `e0_1-a0_0`, either order) or, with `random`, each switch link with that
        probability; refused if hosts would be cut off unless `force`. Returns the link watcher's event
        (convergence time, packets lost), or {"failed": []} when `random` drew none."""
        from ..fabric import links
        from ..models import control
        from ..run import faults

        with _errors():
            tree = self._fab.tree
            if (link is None) == (random is None):
                raise RunError("give either a LINK or --random P")
            now = faults.current_failed(tree)
            if link is not None:
                new = [control.parse_link(tree, link)]
                if new[0].name in {ln.name for ln in now}:
                    raise RunError(f"{new[0].name} is already down")
            else:
                assert random is not None
                new = [ln for ln in control.random_failures(tree, random, seed) if ln not in now]
                if not new:
                    return {"failed": [], "note": "no link drawn"}
            cut = faults.check_partition(tree, now + new, force)
            ev = links.set_and_wait(tree, new, up=False)
            return {**ev, "unreachable_pairs": len(cut), "requested": [ln.name for ln in new]}

    def heal(self, link: str | None = None, *, all: bool = False) -> dict[str, Any]:
        """Bring a failed link (or `all` of them) back; the link watcher's event, or {"healed": []}."""
        from ..fabric import links
        from ..models import control
        from ..run import faults

        with _errors():
            tree = self._fab.tree
            now = faults.current_failed(tree)
            if all == (link is not None):
                raise RunError("give either a LINK or --all")
            todo = now if all else [control.parse_link(tree, link or "")]
            if not all and todo[0].name not in {ln.name for ln in now}:
                raise RunError(f"{todo[0].name} is not down")
            if not todo:
                return {"healed": []}
            return dict(links.set_and_wait(tree, todo, up=True))

    def set_scheme(
        self,
        scheme: str | Scheme,
        *,
        switches: str = "all",
        pipe_size: int | str = 4,
        seed: int = 1,
        reset_pointers: bool = True,
    ) -> dict[str, Any]:
        """Change the scheme of the chosen LB switches (all, edge, agg, pod:N, random:F drawn from `seed`) by
        map writes only; what is where now and how long the writes took."""
        with _errors():
            s = _scheme(scheme)
            assert s is not None
            config = SchemeConfig(s.switch_scheme, _pipe(pipe_size))
            config.validate(self._fab.tree.switch_ports)
            chosen = select_switches(self._fab.tree, switches, seed)
            maps = self._fab.maps
            assert maps is not None
            if reset_pointers:
                dataplane_switches.reset_state(maps, self._fab.tree, seed, chosen)
            apply_s = dataplane_switches.apply_schemes(maps, self._fab.tree, {name: config for name in chosen})
            now = {n: c.label for n, c in dataplane_switches.current_schemes(maps, self._fab.tree).items()}
        return {
            "scheme": config.label,
            "switches": chosen,
            "selection": switches,
            "seed": seed,
            "apply_ms": apply_s * 1e3,
            "schemes": now,
        }

    def status(self) -> dict[str, Any]:
        """What `testbed status --json` prints: nodes, namespaces, links and their state, schemes."""
        from ..fabric.status import status

        with _errors():
            return status(self.prefix)


_signature_with_options(run_params, ("workload", "size"))
_signature_with_options(Fabric.run, ("self", "workload", "size", "scheme", "retries", "out", "wait"))


def check_run(tree: FatTree, p: RunParams, spec: FabricSpec) -> None:
    """What a run needs of the fabric it is about to use, checked before anything is touched."""
    p.check_fabric(tree)
    p.check_propagation(tree, spec.rate_bps, spec.wire_overhead)
    if p.events:
        from ..run.faults import parse_timeline

        parse_timeline(p.events, tree)
    if p.payload + 58 > spec.mtu + 14:
        raise RunError(f"payload {p.payload} does not fit the MTU; at most {spec.mtu - 44} bytes")


def fabric_spec(
    k: int = 4,
    *,
    topology: str = "fattree",
    rate: int | str | None = "auto",
    scheme: str | Scheme = Scheme.ECMP,
    pipe_size: int | str = 4,
    seed: int = 1,
    acks: bool = False,
    host_lb: bool = False,
    payload: int | str = DEFAULT_PAYLOAD,
    ack_priority: bool | None = None,
    wire_overhead: int = WIRE_EXTRA,
    prefix: str = "tb",
    mtu: int = DEFAULT_MTU,
) -> FabricSpec:
    """A fabric's description from the flags of `testbed up` (rate auto: the packet budget's, counting the
    ACKs of `acks` and derated for `host_lb` schemes), checked."""
    with _errors():
        s = _scheme(scheme)
        assert s is not None
        tree = FatTree(k, prefix, topology)
        bps = _rate(rate) or auto_rate_bps(tree, _size(payload), acks, host_lb)
        spec = FabricSpec(
            k=k,
            rate_bps=bps,
            prefix=prefix,
            scheme=s.switch_scheme,
            seed=seed,
            pipe_size=_pipe(pipe_size),
            topology=topology,
            wire_overhead=wire_overhead,
            ack_priority=acks if ack_priority is None else ack_priority,
            mtu=mtu,
        )
        SchemeConfig(s.switch_scheme, _pipe(pipe_size)).validate(tree.switch_ports)
        return spec


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt inside the block (main thread only), so the fabric is torn down; a
    handler the caller installed (the command's own) is kept."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) not in (
        signal.SIG_DFL,
        None,
    ):
        yield
        return

    def raise_interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt("terminated (SIGTERM)")

    old = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def build(
    k: int = 4,
    *,
    topology: str = "fattree",
    rate: int | str | None = "auto",
    scheme: str | Scheme = "ecmp",
    pipe_size: int | str = 4,
    seed: int = 1,
    acks: bool = False,
    ack_priority: bool | None = None,
    wire_overhead: int = WIRE_EXTRA,
    prefix: str = "tbapi",
    wait: bool = False,
) -> Iterator[Fabric]:
    """Build a k-ary fat tree (or `topology="leafspine"`) under `prefix`, yield it, tear it down when the
    block ends, however it ends. `rate="auto"` is the packet budget's rate (counting ACKs with `acks`, whose
    queues then serve them first). The build holds the machine's run lock (it takes CPU from any run going
    on): refused while another run holds it, or with `wait` after it."""
    spec = fabric_spec(
        k,
        topology=topology,
        rate=rate,
        scheme=scheme,
        pipe_size=pipe_size,
        seed=seed,
        acks=acks,
        ack_priority=ack_priority,
        wire_overhead=wire_overhead,
        prefix=prefix,
    )
    with _errors():
        if state.load(prefix) is not None:
            raise FabricError(f"a fabric is up under prefix {prefix!r}: choose another prefix, or testbed down")
        with _terminate_as_interrupt(), contextlib.ExitStack() as stack:
            with run_lock(prefix, wait=wait):
                fab = stack.enter_context(_Fabric(spec))
            yield Fabric(fab)


@contextlib.contextmanager
def attach(prefix: str = "tb") -> Iterator[Fabric]:
    """The fabric that is up under `prefix` (built by `testbed up`); it stays up after the block."""
    with _errors(), _Fabric.attach(prefix) as fab:
        yield Fabric(fab)


# -- sweeps and the ideal fabric -------------------------------------------------------------------------
def sweep(
    scheme: str | Sequence[str],
    *,
    out: str | Path,
    k: int | Sequence[int] = 4,
    failures: Sequence[float] = (0.0,),
    topology: str = "fattree",
    rate: int | str | None = "auto",
    rate_factor: float = 1.0,
    wire_overhead: int = WIRE_EXTRA,
    ack_priority: bool | None = None,
    retries: int = 2,
    cluster: str | None = None,
    prefix: str = "tbs",
    wait: bool = False,
    progress: Callable[[int, int, dict[str, Any] | None], None] | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Every combination (`testbed sweep`), one fabric per k, resumable in `out`: its results.parquet as a
    DataFrame. The run options go by their names (`testbed run`'s): a DIMENSION option takes a list of values
    or one value (`size=["256KB", "1MB"]`, `seed="1-3"`), a FIXED one a value (testbed.run.options)."""
    from ..run.sweep import matrix

    with _errors():
        m = matrix(
            scheme,
            k=(k,) if isinstance(k, int) else tuple(k),
            failures=tuple(failures),
            topology=topology,
            rate_bps=_rate(rate) or 0,
            rate_factor=rate_factor,
            wire_overhead=wire_overhead,
            ack_priority=ack_priority,
            retries=retries,
            **options,
        )
    return sweep_matrix(m, out, cluster=cluster, prefix=prefix, wait=wait, progress=progress)


def sweep_matrix(
    m: Any,
    out: str | Path,
    *,
    cluster: str | None = None,
    prefix: str = "tbs",
    wait: bool = False,
    progress: Callable[[int, int, dict[str, Any] | None], None] | None = None,
) -> pd.DataFrame:
    """A sweep of a testbed.run.sweep.Matrix (what `sweep()` builds from its arguments), on this machine or
    on a Ray cluster (`cluster`: "ray" or "auto", HOST:PORT or ray://HOST:PORT)."""
    from ..run.runner import run_sweep

    with _errors():
        d = prepare_sweep(m, out, cluster)
        return run_sweep(d, prefix=prefix, cluster=cluster, wait=wait, progress=progress or (lambda *_: None))


def prepare_sweep(m: Any, out: str | Path, cluster: str | None = None) -> Any:
    """The sweep's directory (testbed.run.sweep.SweepDir; another sweep's is refused), checked that its
    pending cells can run: root here, or a cluster that answers."""
    from ..run.runner import check_can_run
    from ..run.sweep import SweepDir

    with _errors():
        d = SweepDir(Path(out), m)
        if d.pending():
            check_can_run(cluster)
        return d


def rates(
    *,
    failures: float | Sequence[float] = (0.05, 0.1),
    seeds: int | str | Sequence[int] = "1-10",
    k: int = 12,
    topology: str = "fattree",
    inter_pod: bool = False,
) -> list[dict[str, Any]]:
    """The rate each split of a sweep's failure set sustains (`testbed rates`), from the control plane alone:
    per failure probability and seed (the failure set and permutation a sweep's cell with them draws), the
    highest host rate at which every link stays within capacity under the paper's LP (rho_max), Ofan's even
    split and weighted Ofan's split (testbed.models.control)."""
    from ..models import control
    from ..run.sweep import failure_set

    with _errors():
        ps = (failures,) if isinstance(failures, float | int) else tuple(failures)
        if not ps or any(not 0 < p < 1 for p in ps):
            raise RunError(f"failure probabilities must be in (0, 1), got {list(ps)}")
        tree = FatTree(k, "rates", topology)
        out = []
        for p in ps:
            for seed in _seeds(seeds):
                failed = failure_set(tree, float(p), seed)
                flows = make_spec(
                    WorkloadSpec("permutation", 1 << 20, seed, inter_pod=inter_pod), tree.n_hosts, tree.hosts_per_pod
                )
                out.append(
                    {
                        "failures": float(p),
                        "seed": seed,
                        "failed_links": len(failed),
                        "rho_max": control.rho_max(tree, flows, failed).rho,
                        "rho_even": control.even_split_rho(tree, flows, failed).rho,
                        "rho_weighted": control.weighted_split_rho(tree, flows, failed).rho,
                    }
                )
        return out


def ideal(
    schemes: str | Sequence[str] = "ecmp,rps,ofan,pofan:4",
    *,
    seeds: int | str | Sequence[int] = "1-3",
    workload: str = "permutation",
    size: int | str = "1MB",
    k: int = 4,
    topology: str = "fattree",
    inter_pod: bool = False,
    start_jitter: float = 1.0,  # testbed.models.ideal.START_JITTER
    order: str = "random",
    propagation: str | float | Propagation = PAPER,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    link: str = "emulator",
    spray: str = "switch",
    entropies: int = 8192,
    flows: str | None = None,
    cm_rate: int | str = "100gbit",
) -> list[dict[str, Any]]:
    """The same experiment on the ideal fabric (`testbed ideal`): exact time, no kernel, no root. One row per
    scheme and seed: CCT increase, packet times, largest queue per stage, and with propagation the analytic
    shift's CCT increase. `on_row` sees each row as it is done. `link="paper"`: htsim's links (every frame
    serialised at every hop) instead of the emulator's; `spray="entropies"`: rps as htsim's oblivious
    spraying, over `entropies` values per flow; `workload="cm"` plays the connection matrix `flows`, written
    for `cm_rate` (docs/methods/ideal-fabric.md)."""
    from ..models import ideal as model
    from ..run.compare import parse_schemes

    with _errors():
        configs = parse_schemes(schemes if isinstance(schemes, str) else ",".join(schemes))
        seeds_ = _seeds(seeds)
        if start_jitter < 0:
            raise RunError(f"--start-jitter must be >= 0, got {start_jitter}")
        if spray != "switch" and not any(c.scheme is Scheme.RPS for c in configs):
            raise RunError(f"--spray {spray} is a way of doing rps: add rps to the schemes")
        tree = FatTree(k, "ideal", topology)
        nbytes, rate = _size(size), _rate(cm_rate) or 0
        work = {
            s: make_spec(
                WorkloadSpec(workload, nbytes, s, inter_pod=inter_pod, flows=flows, cm_rate=rate),
                tree.n_hosts,
                tree.hosts_per_pod,
            )
            for s in seeds_
        }
        sprays = {c: spray if c.scheme is Scheme.RPS else "switch" for c in configs}
        for c in configs:  # everything is checked before the first simulation
            c.validate(tree.switch_ports)
            model.check(c, work[seeds_[0]], Packetizer())
            model.check_options(c, order, link, sprays[c], entropies)
        prop = _propagation(propagation)
        if prop.kind == "seconds":
            raise RunError(
                "the ideal fabric counts packet times: give --propagation as paper, 0 or packet times (12pkts)"
            )
    pk = Packetizer(wire_overhead=WIRE_EXTRA)  # the fabric's default frames
    d = prop.link_pkts(1.0, pk.wire_len(pk.payload))
    rows = []
    for c in configs:
        model_kw = {"start_jitter": start_jitter, "order": order, "link": link, "spray": sprays[c]}
        for s in seeds_:
            row = _ideal_row(tree, c, work[s], s, d, {**model_kw, "pk": pk, "entropies": entropies})
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows


def _ideal_row(
    tree: FatTree, config: SchemeConfig, flows: list[Flow], seed: int, d: float, model_kw: dict[str, Any]
) -> dict[str, Any]:
    """One row of ideal(): the scheme on one seed's flows with `d` packet times of propagation per link."""
    from ..models import ideal as model

    r = model.simulate(tree, config, flows, seed, propagation=d, **model_kw)
    row: dict[str, Any] = {
        "scheme": config.label,
        "seed": seed,
        "link": model_kw["link"],
        "spray": model_kw["spray"],
        "cct_increase": r.cct_increase,
        "cct_pkts": r.cct_pkts,
        "bound_pkts": r.bound_pkts,
        "frames": r.frames,
        "delivered": r.delivered,
        "max_queue": r.max_queue,
        "mean_queue_sending": r.mean_queue_sending,
        "propagation_pkts": d,
    }
    if d > 0:  # the analytic shift of a kernel run, from the same run without propagation
        r0 = model.simulate(tree, config, flows, seed, **model_kw)
        row["shifted_cct_increase"] = model.shifted_cct_pkts(tree, flows, r0.flow_done, d) / r.bound_pkts - 1
    return row
