"""A claims check's data as the repository keeps it (docs/reproduction/): every run's row, the ideal fabric's
rows of the link-model column, and the parts (invocations) that made them, so that the page is regenerated from
what is committed, on any machine and without root, and a check resumes on any machine where the last one
stopped.

    DIR/SCALE/check.json               the check: scale, propagation, rate factor, each experiment's matrix (with
                                       the seeds it reached) and the line rates it resolved to, and every part
                                       (its commit, day, machine, runs and wall time)
    DIR/SCALE/runs/NAME.jsonl.gz       an experiment's rows, one JSON object a line, in the matrix's cell order
                                       (its parameters, the resolved rate, the verdict, every metric, the commit
                                       and day it ran; not the run's directory, which is the machine's)
    DIR/SCALE/ideal/NAME.jsonl.gz      the ideal fabric's rows of the experiment's cells, under each link model

Everything is written whole or not at all and byte-for-byte the same for the same content (keys sorted, gzip
without a time stamp), so that regenerating changes nothing git sees. A check run with `--from DIR` starts by
copying DIR's rows into its sweep directories (they are done: only what is missing runs), adds each finished
run's row to DIR as it goes, and judges the claims on DIR's rows alone; `--no-run --from DIR` only judges."""

from __future__ import annotations

import gzip
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..params import RunError
from ..sweep import ROWS, Matrix, SweepDir

CHECK, RUNS, IDEAL = "check.json", "runs", "ideal"
LOCAL = ("run_dir",)  # a row's fields that name this machine's files, not kept


@dataclass(frozen=True)
class Part:
    """One invocation that ran cells: what ran it, where, and how long it took (its wall time, judging
    included)."""

    commit: str
    date: str
    machine: str
    runs: int
    wall_s: float
    command: str

    def to_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "date": self.date,
            "machine": self.machine,
            "runs": self.runs,
            "wall_s": round(self.wall_s, 1),
            "command": self.command,
        }


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _write_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    text = "".join(_dumps(r) + "\n" for r in rows)
    _write(path, gzip.compress(text.encode(), compresslevel=9, mtime=0))


def _read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in gzip.decompress(path.read_bytes()).decode().splitlines() if line]


def origin(row: dict[str, Any]) -> dict[str, Any]:
    """The row with the commit and day it ran: its own (rows carry them since 2026-12-08), else its run's
    manifest's, else "unknown"."""
    if "commit" in row:
        return row
    try:
        m = json.loads((Path(row["run_dir"]) / "manifest.json").read_text())
        commit, day = str(m["provenance"]["project_commit"]), str(m["started_at"])[:10]
    except (KeyError, OSError, ValueError, TypeError):
        commit, day = "unknown", "unknown"
    return {**row, "commit": commit, "date": day}


def frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows as the rules read them (one DataFrame, columns in the rows' own order)."""
    return pd.DataFrame(rows)


class Store:
    """One scale's data under a directory (DIR/SCALE)."""

    def __init__(self, root: Path, scale: str) -> None:
        self.root = Path(root)
        self.scale = scale
        self.path = self.root / scale

    # -- the check ------------------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        try:
            return dict(json.loads((self.path / CHECK).read_text()))
        except FileNotFoundError:
            return {}

    def exists(self) -> bool:
        return (self.path / CHECK).exists()

    def check_matches(self, propagation: str, rate_factor: float) -> None:
        """Refuse (one RunError line) data made with another propagation or rate factor than this check's."""
        m = self.meta()
        for name, want in (("propagation", propagation), ("rate_factor", rate_factor)):
            if name in m and m[name] != want:
                raise RunError(
                    f"--from {self.root}: its {self.scale} data was made with {name} {m[name]}, this check's is "
                    f"{want}: choose another directory"
                )

    def matrices(self) -> dict[str, Matrix]:
        """Each experiment's matrix as the data holds it (with the seeds the check reached)."""
        return {n: Matrix.from_json(d) for n, d in (self.meta().get("experiments") or {}).items()}

    def parts(self) -> list[Part]:
        return [Part(**p) for p in self.meta().get("parts", [])]

    def save_meta(self, propagation: str, rate_factor: float, mats: dict[str, Matrix], parts: list[Part]) -> None:
        held = self.meta().get("experiments") or {}
        experiments = {**held, **{n: m.to_json() for n, m in mats.items()}}
        rates = {**(self.meta().get("rates") or {}), **{n: m.rates() for n, m in mats.items()}}
        body = {
            "scale": self.scale,
            "propagation": propagation,
            "rate_factor": rate_factor,
            "experiments": dict(sorted(experiments.items())),
            "rates": dict(sorted(rates.items())),
            "parts": [p.to_json() for p in parts],
        }
        _write(self.path / CHECK, (json.dumps(body, indent=1, sort_keys=True) + "\n").encode())

    # -- the runs -------------------------------------------------------------------------------------
    def rows(self, name: str) -> list[dict[str, Any]]:
        return _read_lines(self.path / RUNS / f"{name}.jsonl.gz")

    def save_rows(self, name: str, rows: list[dict[str, Any]]) -> None:
        _write_lines(
            self.path / RUNS / f"{name}.jsonl.gz", [{k: v for k, v in r.items() if k not in LOCAL} for r in rows]
        )

    def export(self, name: str, d: SweepDir) -> int:
        """The sweep directory's rows (its matrix's cells, in order) as the experiment's data, with the rows the
        data has of cells d does not (another matrix's seeds); how many rows are new to the data."""
        had = {r["cell"]: r for r in self.rows(name)}
        mine = [origin(r) for r in d.rows()]
        cells = {r["cell"] for r in mine}
        self.save_rows(name, mine + [r for c, r in had.items() if c not in cells])
        return len(cells - set(had))

    def seed(self, name: str, d: SweepDir) -> int:
        """Copy the experiment's rows of d's cells that d does not have into d (they count as done); how many."""
        have, want = d.done(), {c.name for c in d.matrix.cells()}
        new = [r for r in self.rows(name) if r["cell"] in want and r["cell"] not in have]
        for r in new:
            (d.path / ROWS / f"{r['cell']}.json").write_text(json.dumps(r, indent=1))
        if new:
            d.write_table()
        return len(new)

    def frames(self, names: list[str]) -> dict[str, pd.DataFrame]:
        out = {}
        for n in names:
            rows = self.rows(n)
            if rows:
                out[n] = frame(rows)
        return out

    # -- the ideal fabric's rows ----------------------------------------------------------------------
    def ideal_rows(self, name: str) -> list[dict[str, Any]]:
        return _read_lines(self.path / IDEAL / f"{name}.jsonl.gz")

    def save_ideal_rows(self, name: str, rows: list[dict[str, Any]]) -> None:
        _write_lines(self.path / IDEAL / f"{name}.jsonl.gz", sorted(rows, key=lambda r: (r["cell"], r["link"])))


def open_matrix(store: Store, name: str, m: Matrix) -> Matrix:
    """The experiment's matrix: the catalogue's `m`, or the data's if it is m grown by seeds (a later check
    keeps the seeds an earlier one reached); data of another matrix is refused in one line."""
    held = store.matrices().get(name)
    if held is None or held.fingerprint() == m.fingerprint():
        return m
    if held.replace(seed=m.values("seed")).fingerprint() == m.fingerprint():
        return held if set(m.values("seed")) <= set(held.values("seed")) else m
    raise RunError(
        f"--from {store.root}: its {store.scale} data of {name} holds another matrix than this check's (the "
        "catalogue changed): choose another directory, or move its data aside"
    )


def total_wall_s(parts: list[Part]) -> float:
    return math.fsum(p.wall_s for p in parts)
