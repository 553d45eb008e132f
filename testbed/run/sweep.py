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

import dataclasses
import hashlib
import itertools
import json
import math
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, fields
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd

from traffic.packet import WIRE_EXTRA

from ..fabric import clean, links, state
from ..fabric.budget import auto_rate_bps, round_down
from ..fabric.build import DEFAULT_MTU, Fabric, FabricSpec
from ..fabric.lock import run_lock
from ..measure import provenance
from ..measure.results import write_json
from ..models import control
from ..models.schemes import SchemeConfig, SchemeError, check_mix, needing_acks
from ..topology import FatTree
from ..topology.units import format_rate
from . import params as _params
from .experiment import run_valid
from .options import Spec, Sweep, by_name
from .params import RunError

ROWS, CELLS, SPEC, TABLE = "rows", "cells", "sweep.json", "results.parquet"
HEADERS = 58  # RoCEv2 headers on a veth (traffic.packet): a payload P needs an MTU of P + 44
FAILURE_DRAWS = 100  # redraws of a random failure set that cuts a host off
# the dimensions every cell carries and its name shows; another shows when the matrix gives it several values
NAMED = ("workload", "size", "load", "payload", "cc", "scheme", "mix", "seed")
OUTER = ("payload", "workload", "size", "load")  # the loops outside the failure probability, in this order
INNER = ("scheme", "mix", "seed")  # and the innermost ones


def specs() -> dict[str, Spec]:
    """The run options (testbed.run.options), read from RunParams each time (a test may add one)."""
    return by_name(_params.RunParams)


@dataclass(frozen=True)
class Matrix:
    """What a sweep runs: each run option's values and the fabrics. A DIMENSION option (testbed.run.options)
    is a tuple of values, one cell per value, in every combination with the others and with each k and failure
    probability; a FIXED option is one value for every cell. `options` holds every option (`matrix()` fills
    in the defaults); the scheme's values are sweep items, 'ecmp' or 'pofan:4'."""

    options: Mapping[str, tuple[Any, ...]]
    k: tuple[int, ...] = (4,)
    failures: tuple[float, ...] = (0.0,)  # probability of each switch link failing (hosts paced at rho_max)
    topology: str = "fattree"
    rate_bps: int = 0  # 0: each fabric's auto rate (for its smallest payload)
    rate_factor: float = 1.0  # with the auto rate: this fraction of it (a busier machine than the budget's)
    wire_overhead: int = WIRE_EXTRA  # bytes every link charges per frame beyond skb->len (FabricSpec.wire_overhead)
    ack_priority: bool | None = None  # queues serve ACKs first (FabricSpec.ack_priority); None: with ACKs
    retries: int = 2
    figure: str = ""  # the paper's figure this sweep reproduces (testbed.run.paper): how the report draws it

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", _complete(self.options))
        if not self.values("scheme") or not self.values("seed") or not self.values("size") or not self.k:
            raise RunError("a sweep needs at least one scheme, seed, size and k")
        if not 0 < self.rate_factor <= 1:
            raise RunError(f"--rate-factor must be in (0, 1], got {self.rate_factor}")
        configs = self.configs()
        for k in self.k:
            tree = FatTree(k, "tbs", self.topology)
            for config in configs:
                config.validate(tree.switch_ports)
        if any(not 0 <= p < 1 for p in self.failures):
            raise RunError(f"failure probabilities must be in [0, 1), got {list(self.failures)}")
        if self.retries < 0:
            raise RunError(f"retries must be >= 0, got {self.retries}")
        checked = set()
        for cell in self.cells():  # every cell's parameters and workload are valid before anything is built
            kind = (cell.k, cell.scheme, tuple(v for v in cell.values if v[0] not in ("seed", "load", "mix")))
            if kind not in checked:  # the seed changes the flows, not whether the fabric can carry them
                checked.add(kind)
                tree = FatTree(cell.k, "tbs", self.topology)
                p = cell.params(self)
                p.check_fabric(tree)
                p.check_propagation(tree, self.rate_for(cell.k), self.wire_overhead)

    def values(self, name: str) -> tuple[Any, ...]:
        """The option's values in this sweep."""
        return tuple(self.options[name])

    def value(self, name: str) -> Any:
        """A FIXED option's one value."""
        return self.options[name][0]

    def configs(self) -> list[SchemeConfig]:
        return [SchemeConfig.parse(x) for x in self.values("scheme")]

    @property
    def base_label(self) -> str:
        return SchemeConfig.parse(self.value("mix_base")).label

    def dimensions(self) -> list[str]:
        """The options a cell carries, in the order the cells are made (outermost first): the dimensions a cell
        name always shows, and every other DIMENSION option this matrix gives more than one value."""
        sp = specs()
        varying = [
            n for n, s in sp.items() if s.sweep is Sweep.DIMENSION and n not in NAMED and len(self.options[n]) > 1
        ]
        return [*OUTER, "cc", *varying, *INNER]

    def cells(self) -> list[Cell]:
        dims = self.dimensions()
        out = []
        for k in self.k:
            outer = itertools.product(*(self.values(d) for d in OUTER))
            for head in outer:
                for failure in self.failures:
                    rest = itertools.product(*(self.values(d) for d in dims[len(OUTER) :]))
                    for tail in rest:
                        v = dict(zip(dims, (*head, *tail), strict=True))
                        if v["mix"] != "none" and SchemeConfig.parse(v["scheme"]).label == self.base_label:
                            continue  # the base scheme among itself: the "none" cell
                        scheme = v.pop("scheme")
                        out.append(Cell(k, failure, scheme, tuple(v.items())))
        return out

    @property
    def with_acks(self) -> bool:
        return bool(self.value("acks")) or any(cc != "none" for cc in self.values("cc"))

    def to_json(self) -> dict[str, Any]:
        """The matrix as sweep.json holds it: the options not at their default (so that an option added later
        leaves the fingerprint of an older sweep as it was), and the fabrics."""
        sp = specs()
        opts = {}
        for name, vals in self.options.items():
            s = sp[name]
            if s.required or tuple(vals) != (s.default,):
                opts[name] = [s.to_json(v) for v in vals]
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "options"}
        return {"options": opts, **{k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Matrix:
        sp = specs()
        opts = {n: tuple(sp[n].sweep_coerce(v) for v in vals) for n, vals in d["options"].items()}
        rest: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k != "options"}
        return cls(opts, **rest)

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:16]

    def replace(self, **changes: Any) -> Matrix:
        """A copy with these fields or run options changed (options as `matrix()` takes them)."""
        sp = specs()
        opts = dict(self.options)
        for name in [n for n in changes if n in sp]:
            opts[name] = _values(sp[name], changes.pop(name))
        return dataclasses.replace(self, options=opts, **changes)

    def rates(self) -> dict[str, int]:
        """The line rate each fabric of the matrix resolves to today, by k (as text: sweep.json's keys): the auto
        rate follows the packet budget, which the fingerprint does not hold."""
        return {str(k): self.rate_for(k) for k in self.k}

    @staticmethod
    def mtu_for(payload: int) -> int:
        """The fabric MTU for a payload: the default, or just enough. A fabric is built per (k, MTU), so the
        links' two-frame bucket is two of the run's frames, not of the matrix's largest."""
        return max(DEFAULT_MTU, payload + HEADERS - 14)

    def rate_for(self, k: int) -> int:
        """The line rate of the k fabric: as given, or the auto rate of its smallest payload (the most
        packets per second) in the lowest budget class of its cells (ACKs, congestion control, chained steps:
        testbed.fabric.budget), derated if a host scheme is in the matrix."""
        if self.rate_bps:
            return self.rate_bps
        auto = auto_rate_bps(
            FatTree(k, "tbs", self.topology),
            min(self.values("payload")),
            self.with_acks,
            any(c.scheme.is_host for c in self.configs()),
            cc=any(cc != "none" for cc in self.values("cc")),
            chained="fsdp" in self.values("workload"),
        )
        return auto if self.rate_factor == 1 else round_down(Fraction(auto) * Fraction(self.rate_factor))


def _values(spec: Spec, given: Any) -> tuple[Any, ...]:
    """An option's values in a matrix as given: a DIMENSION option's list (or one value), a FIXED one's value."""
    if spec.sweep is Sweep.NONE and given != spec.default:
        raise RunError(f"{spec.flag} is not a sweep option ({spec.decl.help})")
    if spec.sweep is Sweep.DIMENSION and isinstance(given, (tuple, list)):
        vals = tuple(given)
    elif spec.sweep is Sweep.DIMENSION and isinstance(given, str) and spec.decl.sweep_parse is not None:
        vals = spec.decl.sweep_parse(given)  # "1-3" seeds, "ecmp,ofan" schemes
    else:
        vals = (given,)
    try:
        return tuple(spec.sweep_coerce(v) for v in vals)
    except ValueError as e:
        raise RunError(f"{spec.flag}: {e}") from None


def _complete(given: Mapping[str, Any]) -> dict[str, tuple[Any, ...]]:
    """Every option's values: those given (checked), the others at the sweep's default; ACKs on when a scheme
    needs them (the registry, testbed.models.schemes)."""
    sp = specs()
    unknown = [n for n in given if n not in sp]
    if unknown:
        raise RunError(f"unknown run option {unknown[0]!r} in a sweep (the options are {', '.join(sp)})")
    out: dict[str, tuple[Any, ...]] = {}
    for name, s in sp.items():
        if s.sweep is Sweep.NONE:
            if name in given and tuple(given[name]) != (s.default,):
                raise RunError(f"{s.flag} is not a sweep option ({s.decl.help})")
            out[name] = (s.default,)
            continue
        vals = tuple(given[name]) if name in given else _values(s, s.sweep_default)
        if s.sweep is Sweep.FIXED and len(vals) != 1:
            raise RunError(f"{s.flag} takes one value in a sweep, got {len(vals)}")
        out[name] = vals
    try:
        for item in out["scheme"]:
            SchemeConfig.parse(item)
        for mix in out["mix"]:
            check_mix(mix)
        SchemeConfig.parse(out["mix_base"][0])
    except SchemeError as e:
        raise RunError(str(e)) from None
    if needing_acks(out["scheme"]):
        out["acks"] = (True,)
    return out


def matrix(scheme: Any, **kw: Any) -> Matrix:
    """A Matrix from keyword arguments: the run options by their names (a DIMENSION option's values as a tuple
    or one value, a FIXED option's value), the other fields of Matrix by theirs."""
    sp = specs()
    opts = {"scheme": _values(sp["scheme"], scheme)}
    for name in [n for n in kw if n in sp]:
        opts[name] = _values(sp[name], kw.pop(name))
    return Matrix(opts, **kw)


@dataclass(frozen=True)
class Cell:
    """One run of a sweep: its fabric (k, failure probability), its scheme item and the values of the other
    dimensions (in Matrix.dimensions order)."""

    k: int
    failure: float
    item: str  # the sweep's scheme item: "ecmp", "pofan:4"
    values: tuple[tuple[str, Any], ...]

    def get(self, name: str) -> Any:
        """A value the cell carries (a dimension of its name, or one the matrix gives several values)."""
        return dict(self.values)[name]

    def option(self, m: Matrix, name: str) -> Any:
        """Any run option's value in this cell: its own, or the matrix's one value."""
        return dict(self.values)[name] if any(n == name for n, _ in self.values) else m.value(name)

    @property
    def config(self) -> SchemeConfig:
        return SchemeConfig.parse(self.item)

    @property
    def label(self) -> str:  # the scheme configuration's label: ecmp, 4ofan, reps, ...
        return self.config.label

    @property
    def scheme(self) -> str:
        return self.config.scheme.label

    @property
    def pipe_size(self) -> int:
        return self.config.pipe_size

    @property
    def workload(self) -> str:
        return str(self.get("workload"))

    @property
    def size(self) -> int:
        return int(self.get("size"))

    @property
    def load(self) -> float:
        return float(self.get("load"))

    @property
    def payload(self) -> int:
        return int(self.get("payload"))

    @property
    def seed(self) -> int:
        return int(self.get("seed"))

    @property
    def cc(self) -> str:
        return str(self.get("cc"))

    @property
    def mix(self) -> str:
        return str(self.get("mix"))

    @property
    def name(self) -> str:
        cc = f"-{self.cc}" if self.cc != "none" else ""
        mix = f"-m{self.mix.replace(':', '')}" if self.mix != "none" else ""
        sp = specs()
        extra = "".join(f"-{n}{_safe(sp[n].show(v))}" for n, v in self.values if n not in NAMED)
        return (
            f"k{self.k}-{self.workload}-{self.size}B-l{self.load:g}-f{self.failure:g}-p{self.payload}{cc}-"
            f"{self.label}{mix}{extra}-s{self.seed}"
        )

    def columns(self) -> dict[str, Any]:
        """The cell's columns of its results.parquet row."""
        sp = specs()
        out: dict[str, Any] = {
            "cell_label": self.label,
            "cell_scheme": self.scheme,
            "cell_pipe_size": self.pipe_size,
            "cell_k": self.k,
            "cell_failure": self.failure,
        }
        for n, v in self.values:
            out[f"cell_{n}"] = sp[n].to_json(v)
        return out

    def to_json(self) -> dict[str, Any]:
        sp = specs()
        return {
            "k": self.k,
            "failure": self.failure,
            "item": self.item,
            "values": [[n, sp[n].to_json(v)] for n, v in self.values],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Cell:
        sp = specs()
        values = tuple((n, sp[n].sweep_coerce(v)) for n, v in d["values"])
        return cls(int(d["k"]), float(d["failure"]), str(d["item"]), values)

    def params(self, m: Matrix) -> _params.RunParams:
        """The cell's run: the matrix's options of one value, the cell's values, its scheme item."""
        v: dict[str, Any] = {n: vals[0] for n, vals in m.options.items() if len(vals) == 1}
        v.update(self.values)
        v["workload"], extra = _params.VARIANTS.get(self.workload, (self.workload, {}))
        v.update(extra)
        v.update(scheme=self.config.scheme, pipe_size=self.pipe_size)
        if self.failure > 0 and v.get("pace") != "rho_even":
            v["pace"] = "rho_max"
        if self.cc == "none":  # a base RTT delays a congestion controller's feedback: none without one
            v.update(base_rtt_pkts=None, base_rtt=None)
        return _params.RunParams(**v)


def _safe(text: str) -> str:
    return "".join(c for c in text if c.isalnum() or c in ".%_")


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
    row["fidelity_ideal_judged"] = on and bool(placed.get("judged", True))  # RR, JSQ: placed, not judged
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
    row: dict[str, Any] = {"cell": cell.name, "topology": topology, **cell.columns()}
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
    row["utilisation_sending"] = float(r.get("utilisation_sending", 0.0)) or float("nan")  # nan: not measured
    row["workload"] = cell.workload  # the sweep's name for it (a variant such as moe-eplb, not only the generator)
    for stage, q in r["queues"].items():
        row[f"queue_{stage}_avg_pkts"] = float(q["avg_pkts"])
        row[f"queue_{stage}_avg_sending_pkts"] = float(q.get("avg_sending_pkts", float("nan")))  # nan: an older run
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
    row["rho_even"] = float(r["rho_max"].get("rho_even", row["rho_max"])) if r["rho_max"].get("paced") else 1.0
    row["rho_weighted"] = float(r["rho_max"].get("rho_weighted", math.nan)) if r["rho_max"].get("paced") else 1.0
    eb = r.get("edge_bound") or {}  # weighted Ofan's edge-uplink bound (nan: not checked)
    row["edge_bound_excess"] = float(eb["largest_excess"]) if "largest_excess" in eb else math.nan
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
    row.update(wall_s=wall_s, run_dir=r["out_dir"], **provenance.origin())  # a row kept in docs/reproduction/
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
            write_json(
                spec,
                {
                    "matrix": matrix.to_json(),
                    "fingerprint": matrix.fingerprint(),
                    "rates": matrix.rates(),
                    "created": time.time(),
                },
            )
        (self.path / ROWS).mkdir(exist_ok=True)
        (self.path / CELLS).mkdir(exist_ok=True)

    def done(self) -> set[str]:
        return {p.stem for p in (self.path / ROWS).glob("*.json")}

    def check_rates(self) -> None:
        """Refuse (one RunError line) to add runs to a directory made for, or whose finished runs went at,
        another line rate than this matrix resolves to today (sweep.json's record; the rows' own rate_bps for
        directories made before it): the auto rate follows the packet budget, which a re-measurement changes,
        and the fingerprint holds the rate factor, not the rate. Judging the rows there (no run) needs no such
        check."""
        held = json.loads((self.path / SPEC).read_text()).get("rates") or {}
        for kk, rate in self.matrix.rates().items():  # what the directory was made for (none before 2026-12-08)
            if kk in held and int(held[kk]) != rate:
                raise RunError(
                    f"{self.path} was made for k={kk} at {format_rate(int(held[kk]))}, this matrix's rate for k={kk} is "
                    f"{format_rate(rate)} today (the packet budget changed): runs at two rates would mix; choose "
                    "another --out"
                )
        want: dict[int, int] = {}
        for f in sorted((self.path / ROWS).glob("*.json")):
            row = json.loads(f.read_text())
            if row.get("rate_bps") is None or row.get("k") is None:
                continue
            k, got = int(row["k"]), int(row["rate_bps"])
            want.setdefault(k, self.matrix.rate_for(k))
            if got != want[k]:
                raise RunError(
                    f"{self.path}: its k={k} runs went at {format_rate(got)}, this matrix's rate for k={k} is "
                    f"{format_rate(want[k])} today (the packet budget changed): runs at two rates would mix; choose "
                    "another --out"
                )

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
Fits = Callable[[Cell], bool]  # whether a cell's run fits the time left


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
    d: SweepDir,
    prefix: str,
    progress: Progress = lambda done, total, row: None,
    wait: bool = False,
    fits: Fits | None = None,
) -> pd.DataFrame:
    """Every pending cell on this machine, one fabric per k (and MTU); returns the whole table. With `fits`, the
    first cell it says does not fit the time left stops the sweep (its cells stay pending: a resumed sweep runs
    them)."""
    m = d.matrix
    total = len(m.cells())
    pending = d.pending()
    progress(total - len(pending), total, None)
    with run_lock(prefix, wait=wait):
        for k, mtu in dict.fromkeys((c.k, m.mtu_for(c.payload)) for c in pending):
            cells = [c for c in pending if c.k == k and m.mtu_for(c.payload) == mtu]
            if fits is not None and not fits(cells[0]):
                break
            with fabric_for(m, k, prefix, mtu) as fab:
                for cell in cells:
                    if fits is not None and not fits(cell):
                        return d.write_table()
                    row = execute_cell(fab, m, cell, d.fresh_cell_dir(cell))
                    d.write_row(row)
                    progress(len(d.done()), total, row)
    return d.write_table()
