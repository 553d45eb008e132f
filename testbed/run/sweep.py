"""Sweeps: a matrix of runs (schemes x workloads x sizes x loads x failure
probabilities x fabric sizes x packet sizes x seeds), resumable, into one
directory and one table.

    DIR/sweep.json        the matrix; a DIR written by another matrix is refused
    DIR/cells/NAME/       each cell's run directory (testbed.measure.results)
    DIR/rows/NAME.json    each finished cell's row, written last and atomically:
                          a cell with a row is done, and is never run again
    DIR/results.parquet   every row (rebuilt from rows/ after each cell)

One fabric is built per (topology, k) and kept for all its cells; the scheme
is switched between cells by map writes, as a run does. Cells with a failure
probability fail random links (drawn from the cell's seed, redrawn until no
host is cut off) before the run, pace the hosts at rho_max and heal after.
An invalid cell is re-run (same seed) up to `retries` times; the verdicts of
the discarded attempts stay in its manifest. Killing a sweep (Ctrl-C,
SIGKILL) loses at most the cell in progress: its half-written directory is
removed and it runs again on resume.

`execute_cell` is the unit of work: the local runner calls it on a fabric it
keeps, the Ray runner (testbed.run.cluster) on a fabric each task builds.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd

from traffic.packet import WIRE_EXTRA
from traffic.workloads import WORKLOADS

from ..fabric import clean, links, state
from ..fabric.budget import auto_rate_bps, round_down
from ..fabric.build import DEFAULT_MTU, Fabric, FabricSpec
from ..fabric.lock import run_lock
from ..measure.results import write_json
from ..models import control
from ..models.sampled import SampledParams
from ..models.schemes import SchemeConfig, SchemeError, check_mix
from ..topology import FatTree
from ..topology.timebase import parse_propagation
from .compare import parse_schemes
from .experiment import run_valid
from .params import RunError, RunParams

ROWS, CELLS, SPEC, TABLE = "rows", "cells", "sweep.json", "results.parquet"
# a sweep's workloads beyond traffic's: the workload and what it sets of RunParams
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "moe-eplb": ("moe", {"eplb": True}),  # MoE with EPLB (Fig. 13 b, d)
    "all-to-all-host": ("all-to-all", {"size_per_host": True}),  # SIZE is each host's total (Fig. 5 c)
}
SWEEP_WORKLOADS = (*WORKLOADS, *VARIANTS)
HEADERS = 58  # RoCEv2 headers on a veth (traffic.packet): a payload P needs an MTU of P + 44
FAILURE_DRAWS = 100  # redraws of a random failure set that cuts a host off


@dataclass(frozen=True)
class Matrix:
    """What a sweep runs. Every combination is one cell per seed."""

    schemes: tuple[str, ...]  # compare.parse_schemes items: "ecmp", "pofan:4", "reps", ...
    workloads: tuple[str, ...] = ("permutation",)
    sizes: tuple[int, ...] = (1 << 20,)
    loads: tuple[float, ...] = (1.0,)
    failures: tuple[float, ...] = (0.0,)  # probability of each switch link failing
    ks: tuple[int, ...] = (4,)
    payloads: tuple[int, ...] = (4096,)
    seeds: tuple[int, ...] = (1, 2, 3)
    topology: str = "fattree"
    rate_bps: int = 0  # 0: each fabric's auto rate (for its smallest payload)
    acks: bool = False
    ecn_threshold: str = "10%"
    inter_pod: bool = False
    retries: int = 2
    flows_file: str | None = None  # the cm workload's flow list (htsim connection matrix)
    cm_rate_bps: int = 100_000_000_000
    ccs: tuple[str, ...] = ("none",)  # congestion control per cell (traffic/transport.py); a CCA turns ACKs on
    base_rtt_pkts: float | None = None  # with a CCA: the emulated base RTT (default 150 packet times)
    buffer_bytes: int | None = None  # per switch port (default 800 KB with a CCA, unlimited without)
    # The sampled schemes' settings, the same in every cell (testbed.models.sampled.SampledParams)
    sample_pkts: float = SampledParams.sample_pkts
    flood_pkts: float = SampledParams.flood_pkts
    dre_pkts: float = SampledParams.dre_pkts
    load_band: tuple[float, float] = SampledParams.load_band
    queue_band: tuple[int, int] = SampledParams.queue_band
    drill_d: int = SampledParams.drill_d
    drill_m: int = SampledParams.drill_m
    propagation: str = "paper"  # per link (testbed.topology.timebase.parse_propagation), in every cell
    wire_overhead: int = WIRE_EXTRA  # bytes every link charges per frame beyond skb->len (FabricSpec.wire_overhead)
    ack_priority: bool | None = None  # queues serve ACKs first (FabricSpec.ack_priority); None: with ACKs
    rate_factor: float = 1.0  # with the auto rate: this fraction of it (a busier machine than the budget's)
    gpus_per_server: int = 8  # ring, fsdp, moe: GPUs per server (traffic.workloads)
    layers: int = 1  # fsdp: layers of the backward pass
    steps: int = 0  # fsdp: the pass's first STEPS ring steps (0: all)
    mixes: tuple[str, ...] = ("none",)  # Fig. 11: each scheme on these switches (schemes.check_mix), mix_base elsewhere
    mix_base: str = "ar"
    figure: str = ""  # the paper's figure this sweep reproduces (testbed.run.paper): how the report draws it

    def __post_init__(self) -> None:
        if not self.schemes or not all(self.seeds) or not self.sizes or not self.ks:
            raise RunError("a sweep needs at least one scheme, seed, size and k")
        try:
            parse_propagation(self.propagation)
        except ValueError as e:
            raise RunError(f"--propagation: {e}") from None
        if not 0 < self.rate_factor <= 1:
            raise RunError(f"--rate-factor must be in (0, 1], got {self.rate_factor}")
        configs = parse_schemes(",".join(self.schemes))
        for k in self.ks:
            tree = FatTree(k, "tbs", self.topology)
            for config in configs:
                config.validate(tree.switch_ports)
        try:
            for mix in self.mixes:
                check_mix(mix)
            SchemeConfig.parse(self.mix_base)
        except SchemeError as e:
            raise RunError(str(e)) from None
        if any(not 0 <= p < 1 for p in self.failures):
            raise RunError(f"failure probabilities must be in [0, 1), got {list(self.failures)}")
        if self.retries < 0:
            raise RunError(f"retries must be >= 0, got {self.retries}")
        checked = set()
        for cell in self.cells():  # every cell's parameters and workload are valid before anything is built
            kind = (cell.workload, cell.size, cell.k, cell.scheme, cell.payload, cell.pipe_size)
            if kind not in checked:  # the seed changes the flows, not whether the fabric can carry them
                checked.add(kind)
                tree = FatTree(cell.k, "tbs", self.topology)
                cell.params(self).check_fabric(tree)
                cell.params(self).check_propagation(tree, self.rate_for(cell.k), self.wire_overhead)

    def configs(self) -> list[SchemeConfig]:
        return parse_schemes(",".join(self.schemes))

    @property
    def base_label(self) -> str:
        return SchemeConfig.parse(self.mix_base).label

    def cells(self) -> list[Cell]:
        out = []
        for k in self.ks:
            for payload in self.payloads:
                for workload in self.workloads:
                    for size in self.sizes:
                        for load in self.loads:
                            for failure in self.failures:
                                for cc in self.ccs:
                                    for config in self.configs():
                                        for mix in self.mixes:
                                            if mix != "none" and config.label == self.base_label:
                                                continue  # the base scheme among itself: the "none" cell
                                            for seed in self.seeds:
                                                out.append(
                                                    Cell(
                                                        config.label,
                                                        config.scheme.label,
                                                        config.pipe_size,
                                                        workload,
                                                        size,
                                                        load,
                                                        failure,
                                                        k,
                                                        payload,
                                                        seed,
                                                        cc,
                                                        mix,
                                                    )
                                                )
        return out

    @property
    def with_acks(self) -> bool:
        return self.acks or any(cc != "none" for cc in self.ccs)

    def to_json(self) -> dict[str, Any]:
        """Every field; the transport's and the sampled schemes' only when set, so that a sweep without them
        keeps its fingerprint."""
        d = asdict(self)
        for name, default in OPTIONAL_DEFAULTS.items():
            if d[name] == default:
                del d[name]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Matrix:
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}
        return cls(**fields)

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:16]

    @staticmethod
    def mtu_for(payload: int) -> int:
        """The fabric MTU for a payload: the default, or just enough. A fabric is built per (k, MTU), so the
        links' two-frame bucket is two of the run's frames, not of the matrix's largest."""
        return max(DEFAULT_MTU, payload + HEADERS - 14)

    def rate_for(self, k: int) -> int:
        """The line rate of the k fabric: as given, or the auto rate of its smallest payload (the most
        packets per second), counting the ACKs, derated if a host scheme is in the matrix."""
        if self.rate_bps:
            return self.rate_bps
        auto = auto_rate_bps(
            FatTree(k, "tbs", self.topology),
            min(self.payloads),
            self.with_acks,
            any(c.scheme.is_host for c in self.configs()),
        )
        return auto if self.rate_factor == 1 else round_down(Fraction(auto) * Fraction(self.rate_factor))


OPTIONAL_DEFAULTS: dict[str, Any] = {
    "ccs": ("none",),
    "base_rtt_pkts": None,
    "buffer_bytes": None,
    "rate_factor": 1.0,
    "gpus_per_server": 8,
    "layers": 1,
    "steps": 0,
    "mixes": ("none",),
    "mix_base": "ar",
    "figure": "",
    "ack_priority": None,
    **{
        f: getattr(SampledParams, f)
        for f in ("sample_pkts", "flood_pkts", "dre_pkts", "load_band", "queue_band", "drill_d", "drill_m")
    },
}


@dataclass(frozen=True)
class Cell:
    """One run of a sweep."""

    label: str  # the scheme configuration's label: ecmp, 4ofan, reps, ...
    scheme: str
    pipe_size: int
    workload: str
    size: int
    load: float
    failure: float
    k: int
    payload: int
    seed: int
    cc: str = "none"
    mix: str = "none"

    @property
    def name(self) -> str:
        cc = f"-{self.cc}" if self.cc != "none" else ""
        mix = f"-m{self.mix.replace(':', '')}" if self.mix != "none" else ""
        return (
            f"k{self.k}-{self.workload}-{self.size}B-l{self.load:g}-f{self.failure:g}-p{self.payload}{cc}-"
            f"{self.label}{mix}-s{self.seed}"
        )

    def params(self, m: Matrix) -> RunParams:
        from ..models.schemes import Scheme

        workload, extra = VARIANTS.get(self.workload, (self.workload, {}))
        return RunParams(
            workload,
            self.size,
            self.load,
            Scheme.parse(self.scheme),
            self.seed,
            gpus_per_server=m.gpus_per_server,
            layers=m.layers,
            steps=m.steps,
            mix=self.mix,
            mix_base=m.mix_base,
            **extra,
            payload=self.payload,
            pipe_size=self.pipe_size,
            acks=m.acks,
            inter_pod=m.inter_pod,
            ecn_threshold=m.ecn_threshold,
            pace_rho_max=self.failure > 0,
            flows_file=m.flows_file,
            cm_rate_bps=m.cm_rate_bps,
            cc=self.cc,
            base_rtt_pkts=m.base_rtt_pkts if self.cc != "none" else None,
            buffer_bytes=m.buffer_bytes,
            sample_pkts=m.sample_pkts,
            flood_pkts=m.flood_pkts,
            dre_pkts=m.dre_pkts,
            load_band=m.load_band,
            queue_band=m.queue_band,
            drill_d=m.drill_d,
            drill_m=m.drill_m,
            propagation=parse_propagation(m.propagation),
        )


# -- the rows ----------------------------------------------------------------
TRANSPORT_FIELDS = (
    "ack_late_p50_pkts",
    "ack_late_p99_pkts",
    "ack_late_max_pkts",
    "send_late_p50_pkts",
    "send_late_p99_pkts",
    "send_late_max_pkts",
    "ring_overflow",
    "incomplete_flows",
)
SWITCH_STAGES = ("edge_agg", "agg_core", "core_agg", "agg_edge", "edge_host")


def fidelity_columns(f: dict[str, Any]) -> dict[str, Any]:
    """The verdict's columns of a results.parquet row: every one-number figure of `run --json`'s fidelity (each
    criterion's, and what is reported beside them), the delivery balance, the qdisc timers', the transport's
    lateness and the run's place in the ideal fabric's distribution (NaN where a run has none)."""
    nan = float("nan")
    row: dict[str, Any] = {
        f"fidelity_{k}": v for k, v in f.items() if isinstance(v, (bool, int, float, str)) and k != "reasons"
    }
    row["fidelity_reasons"] = "; ".join(f["reasons"])
    for name, v in f["delivery"].items():  # the delivery balance
        row[f"fidelity_delivery_{name}"] = v
    timers = f.get("timers") or {}  # None when the run could not watch its qdisc timers
    for name in ("max_s", "mean_s", "fired", "over_100us"):
        row[f"fidelity_timer_late_{name}" if name.endswith("_s") else f"fidelity_timers_{name}"] = (
            float(timers[name]) if name in timers else nan
        )
    window = f.get("cpu_busiest_window_detail") or {}
    row["fidelity_cpu_busiest_window_s"] = float(window.get("window_s", nan))
    placed = f.get("ideal") or {}  # the ideal fabric's distribution
    on = bool(placed.get("placed"))
    for name in ("z", "percentile", "limit"):
        row[f"fidelity_ideal_cct_{name}"] = float(placed[f"cct_increase_{name}"]) if on else nan
    for stage in SWITCH_STAGES:  # each stage's largest queue against the ideal fabric's limit for it
        q = (placed.get("queues") or {}).get(stage) if on else None
        row[f"fidelity_ideal_queue_{stage}_limit"] = float(q["limit"]) if q else nan
    t = f.get("transport") or {}  # transport (--cc) runs: how late it acted
    for name in TRANSPORT_FIELDS:
        row[f"fidelity_transport_{name}"] = float(t[name]) if name in t else nan
    return row


def flatten(r: dict[str, Any], cell: Cell, topology: str, wall_s: float, failed_links: list[str]) -> dict[str, Any]:
    """One results.parquet row: the cell, and every number of `run --json` that is one number."""
    row: dict[str, Any] = {"cell": cell.name, "topology": topology, **{f"cell_{k}": v for k, v in asdict(cell).items()}}
    for key in (
        "scheme",
        "workload",
        "k",
        "hosts",
        "size_bytes",
        "load",
        "rate_bps",
        "host_rate_bps",
        "seed",
        "flows",
        "acks",
        "cct_s",
        "cct_lower_bound_s",
        "cct_increase",
        "cct_lower_bound_fault_free_s",
        "cct_increase_fault_free",
        "packets_sent",
        "packets_received",
        "acks_received",
        "drops",
        "utilisation",
        "ecn_marked",
    ):
        row[key] = r[key]
    row["workload"] = cell.workload  # the sweep's name for it (a variant such as moe-eplb, not only the generator)
    for stage, q in r["queues"].items():
        row[f"queue_{stage}_avg_pkts"] = float(q["avg_pkts"])
        row[f"queue_{stage}_max_pkts"] = int(q["max_pkts"])
    row["max_queue_pkts"] = max(int(r["queues"][s]["max_pkts"]) for s in SWITCH_STAGES)
    for stage, v in r["overload"].items():
        row[f"overload_{stage}"] = float(v)
    for name, v in r["drops_detail"].items():
        row[f"drops_{name}"] = int(v)
    row.update(fidelity_columns(r["fidelity"]))
    for name in (
        "recycled",
        "fresh",
        "fresh_first_rtt",
        "labelled",
        "giveups",
        "delay_lost",
        "frozen",
        "freezes",
        "explore",
    ):
        row[f"host_lb_{name}"] = int(r["host_lb"].get(name, 0))
    row["rho_max"] = float(r["rho_max"].get("rho_max", 1.0)) if r["rho_max"].get("paced") else 1.0
    row["propagation_link_pkts"] = float((r.get("propagation") or {}).get("link_pkts", 0.0))
    t = r.get("transport") or {}
    row["cc"] = cell.cc
    for name in (
        "retransmits",
        "fast_retransmits",
        "timeouts",
        "spurious_retransmits",
        "received_duplicates",
        "buffer_drops",
    ):
        row[f"transport_{name}"] = int(t.get(name, 0))
    row["transport_window_decreases"] = int((t.get("rules") or {}).get("decrease", 0))
    for name in ("ack_late_p99_pkts", "send_late_p99_pkts", "ack_late_max_pkts", "send_late_max_pkts"):
        row[f"transport_{name}"] = float((t.get("timing") or {}).get(name, 0.0))
    for name in ("ring_overflow", "incomplete_flows"):
        row[f"transport_{name}"] = int((t.get("timing") or {}).get(name, 0))
    row["failed_links"] = ",".join(failed_links)
    row["attempts"] = 1 + len(r["discarded_attempts"])
    row["discarded"] = json.dumps(r["discarded_attempts"])
    row["wall_s"] = wall_s
    row["run_dir"] = r["out_dir"]
    return row


# -- the directory ------------------------------------------------------------------
class SweepDir:
    """A sweep's directory: its matrix, finished rows and cell directories."""

    def __init__(self, path: Path, matrix: Matrix) -> None:
        self.path = Path(path)
        self.matrix = matrix
        spec = self.path / SPEC
        if spec.exists():
            old = json.loads(spec.read_text())
            if old.get("fingerprint") != matrix.fingerprint():
                raise RunError(
                    f"{self.path} holds another sweep ({old.get('matrix', {}).get('schemes')}, ...): "
                    f"choose another --out"
                )
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            write_json(spec, {"matrix": matrix.to_json(), "fingerprint": matrix.fingerprint(), "created": time.time()})
        (self.path / ROWS).mkdir(exist_ok=True)
        (self.path / CELLS).mkdir(exist_ok=True)

    def done(self) -> set[str]:
        return {p.stem for p in (self.path / ROWS).glob("*.json")}

    def pending(self) -> list[Cell]:
        done = self.done()
        return [c for c in self.matrix.cells() if c.name not in done]

    def cell_dir(self, cell: Cell) -> Path:
        return self.path / CELLS / cell.name

    def fresh_cell_dir(self, cell: Cell) -> Path:
        """The cell's directory, emptied of what an interrupted attempt left."""
        d = self.cell_dir(cell)
        shutil.rmtree(d, ignore_errors=True)
        for stale in d.parent.glob(f".{cell.name}.attempt*"):
            shutil.rmtree(stale, ignore_errors=True)
        return d

    def write_row(self, row: dict[str, Any]) -> None:
        write_json(self.path / ROWS / f"{row['cell']}.json", row)
        self.write_table()

    def rows(self) -> list[dict[str, Any]]:
        order = {c.name: i for i, c in enumerate(self.matrix.cells())}
        rows = [json.loads(p.read_text()) for p in (self.path / ROWS).glob("*.json")]
        return sorted(rows, key=lambda r: order.get(r["cell"], len(order)))

    def write_table(self) -> pd.DataFrame:
        df = pd.DataFrame(self.rows())
        tmp = self.path / f".{TABLE}.tmp"
        df.to_parquet(tmp, index=False)
        os.replace(tmp, self.path / TABLE)
        return df


# -- running -------------------------------------------------------------------------
def failure_set(tree: FatTree, p: float, seed: int) -> list[Any]:
    """Random switch-link failures with probability p, drawn from `seed`, redrawn (seed + 7919 i) until no
    host is cut off from another."""
    for i in range(FAILURE_DRAWS):
        failed = control.random_failures(tree, p, seed + 7919 * i)
        if not control.unreachable_pairs(tree, failed):
            return failed
    raise RunError(f"no failure set with p={p} leaves every host connected after {FAILURE_DRAWS} draws")


def execute_cell(fab: Fabric, m: Matrix, cell: Cell, out_dir: Path) -> dict[str, Any]:
    """Run one cell on a fabric that is up (its failures applied and healed around it); its row."""
    t0 = time.monotonic()
    failed = failure_set(fab.tree, cell.failure, cell.seed) if cell.failure > 0 else []
    if failed:
        links.set_and_wait(fab.tree, failed, up=False)
    try:
        r = run_valid(fab, cell.params(m), out_dir, attempts=m.retries + 1).to_json()
    finally:
        if failed:
            links.set_and_wait(fab.tree, failed, up=True)
    return flatten(r, cell, m.topology, time.monotonic() - t0, [ln.name for ln in failed])


Progress = Callable[[int, int, dict[str, Any] | None], None]  # (done, total, last row)


@contextmanager
def fabric_for(m: Matrix, k: int, prefix: str, mtu: int = DEFAULT_MTU) -> Iterator[Fabric]:
    """The sweep's fabric for one k, under its own prefix; leftovers of a killed sweep under that prefix (its
    run lock free: nobody uses them) are cleaned first, a fabric that is up (`testbed up`) is refused."""
    st = state.load(prefix)
    if st is not None and st.complete and any(clean.ours(pid) for pid in st.pids):
        raise RunError(f"a fabric is up under prefix {prefix!r}: a sweep builds its own (--prefix), or testbed down")
    clean.clean(prefix)
    spec = FabricSpec(
        k=k,
        rate_bps=m.rate_for(k),
        prefix=prefix,
        topology=m.topology,
        mtu=mtu,
        wire_overhead=m.wire_overhead,
        ack_priority=m.with_acks if m.ack_priority is None else m.ack_priority,
    )
    with Fabric(spec) as fab:
        yield fab


def run_local(
    d: SweepDir, prefix: str, progress: Progress = lambda done, total, row: None, wait: bool = False
) -> pd.DataFrame:
    """Every pending cell on this machine, one fabric per k (and MTU); returns the whole table."""
    m = d.matrix
    total = len(m.cells())
    pending = d.pending()
    progress(total - len(pending), total, None)
    with run_lock(prefix, wait=wait):
        for k, mtu in dict.fromkeys((c.k, m.mtu_for(c.payload)) for c in pending):
            cells = [c for c in pending if c.k == k and m.mtu_for(c.payload) == mtu]
            with fabric_for(m, k, prefix, mtu) as fab:
                for cell in cells:
                    row = execute_cell(fab, m, cell, d.fresh_cell_dir(cell))
                    d.write_row(row)
                    progress(len(d.done()), total, row)
    return d.write_table()
