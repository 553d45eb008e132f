"""Result directories: one per run, readable with one call.

    DIR/manifest.json      every parameter, the seed, per-switch schemes,
                           kernel release, package versions, project commit,
                           start time, fidelity verdict, summary numbers
    DIR/flows.parquet      one row per flow: sent, received, first/last
                           arrival, ACKs, reordering
    DIR/ports.parquet      one row per port (egress queue): stage, exact
                           average and maximum occupancy, bytes, utilisation
    DIR/timeseries.parquet occupancy of every port, sampled (long format)
    DIR/stages.parquet     one row per stage: queues, worst link overload
    DIR/windows.parquet    transport runs (--cc): one row per ACK acted on,
                           fast retransmission and timeout: time, flow,
                           PSN, window, round trip, CE echo, the rule fired

The manifest is written first with "complete": false and rewritten (by an
atomic rename) only after every data file is in place, so a run stopped by
Ctrl-C or an error leaves a manifest that says so ("status": "interrupted"
or "failed") and never a directory that looks complete.

`load(DIR)` returns the manifest and the tables as pandas DataFrames.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

MANIFEST = "manifest.json"
TABLES = ("flows", "ports", "timeseries", "stages", "windows")


class ResultsError(RuntimeError):
    """A result directory is missing, incomplete or unreadable."""


def write_json(path: Path, obj: Any) -> None:
    """Write `obj` as JSON to `path` whole or not at all (a hidden temporary file, then a rename): a reader, or
    a run killed mid-write, never sees half a file."""
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_text(json.dumps(obj, indent=1, default=str))
    os.replace(tmp, path)


class RunDir:
    """The directory of one run being written."""

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.path = Path(path)
        if (self.path / MANIFEST).exists():
            raise ResultsError(f"{self.path} already holds a run")
        self.path.mkdir(parents=True, exist_ok=True)
        self.manifest = {**manifest, "complete": False, "status": "running"}
        write_json(self.path / MANIFEST, self.manifest)

    def abort(self, status: str, error: str) -> None:
        self.manifest.update(complete=False, status=status, error=error)
        write_json(self.path / MANIFEST, self.manifest)

    def finish(self, manifest: dict[str, Any], tables: dict[str, pd.DataFrame]) -> None:
        for name in TABLES:
            if name not in tables:
                continue  # windows: transport runs only
            tmp = self.path / f".{name}.parquet.tmp"
            tables[name].to_parquet(tmp, index=False)
            os.replace(tmp, self.path / f"{name}.parquet")
        self.manifest.update(manifest, complete=True, status="complete")
        write_json(self.path / MANIFEST, self.manifest)


@dataclass(frozen=True)
class RunResults:
    manifest: dict[str, Any]
    flows: pd.DataFrame
    ports: pd.DataFrame
    timeseries: pd.DataFrame
    stages: pd.DataFrame
    windows: pd.DataFrame  # empty unless the run had a transport (--cc)


def load(path: str | Path, allow_incomplete: bool = False) -> RunResults:
    """The manifest and tables of a run directory."""
    d = Path(path)
    try:
        manifest = json.loads((d / MANIFEST).read_text())
    except FileNotFoundError:
        raise ResultsError(f"{d} has no {MANIFEST}: not a run directory") from None
    if not manifest.get("complete") and not allow_incomplete:
        raise ResultsError(f"run in {d} is incomplete (status {manifest.get('status')!r})")
    tables = {}
    for name in TABLES:
        f = d / f"{name}.parquet"
        tables[name] = pd.read_parquet(f) if f.exists() else pd.DataFrame()
    return RunResults(manifest, **tables)
