"""The arithmetic of a sweep's report, from its files alone (no kernel, no
root): the rows of results.parquet grouped into cells (mean and standard
error over the valid seeds, with how many were left out), and the growth of
a metric with the message size fitted on log-log axes (the exponent that
separates Theta(m), Theta(sqrt m) and Theta(1), paper section 3.5, Fig. 4).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

TABLE, SPEC = "results.parquet", "sweep.json"
# what distinguishes one cell from another, besides the seed
CELL_KEYS = (
    "topology",
    "k",
    "workload",
    "size_bytes",
    "load",
    "cell_failure",
    "cell_payload",
    "cell_cc",
    "cell_mix",
    "cell_label",
)


class SweepError(RuntimeError):
    """Not a sweep directory, or one with no rows yet."""


@dataclass(frozen=True)
class Sweep:
    path: Path
    matrix: dict[str, Any]
    rows: pd.DataFrame  # one row per cell and seed (testbed.run.sweep.flatten)


def load(path: str | Path) -> Sweep:
    d = Path(path)
    try:
        spec = json.loads((d / SPEC).read_text())
    except FileNotFoundError:
        raise SweepError(f"{d} has no {SPEC}: not a sweep directory") from None
    if not (d / TABLE).exists():
        raise SweepError(f"{d} has no {TABLE} yet: no cell has finished")
    return Sweep(d, spec["matrix"], pd.read_parquet(d / TABLE))


def varying(rows: pd.DataFrame) -> list[str]:
    """The cell keys that take more than one value in this sweep."""
    return [k for k in CELL_KEYS if k in rows and rows[k].nunique() > 1]


def summarise(
    rows: pd.DataFrame, metrics: tuple[str, ...] = ("cct_increase", "max_queue_pkts", "utilisation")
) -> pd.DataFrame:
    """One row per cell (every cell key, the scheme label last): runs, valid runs, left out, and for each
    metric the mean and standard error of the mean over the valid runs (NaN with no valid run; SEM 0 with
    one)."""
    keys = [k for k in CELL_KEYS if k in rows]
    out = []
    for key, g in rows.groupby(keys, sort=False, dropna=False):
        valid = g[g["fidelity_valid"].astype(bool)]
        n = len(valid)
        r: dict[str, Any] = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=False))
        r.update(runs=len(g), valid=n, left_out=len(g) - n)
        for m in metrics:
            v = valid[m].astype(float)
            r[f"{m}_mean"] = float(v.mean()) if n else math.nan
            r[f"{m}_sem"] = float(v.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0
        out.append(r)
    return pd.DataFrame(out)


@dataclass(frozen=True)
class Growth:
    """metric ~ size^exponent, fitted by least squares on log-log axes over every valid run."""

    scheme: str
    metric: str
    exponent: float
    ci95: tuple[float, float]
    points: int
    sizes: int


def growth(rows: pd.DataFrame, metric: str, scheme: str) -> Growth | None:
    """The exponent of `metric` against the message size for one scheme label, with its 95 % confidence
    interval (Student's t on the slope's standard error; NaN from two runs, which fix a line but not its
    error); None with fewer than two sizes. Zero values (a queue that never formed) are left out of the
    logarithm."""
    from scipy import stats

    d = rows[(rows["cell_label"] == scheme) & rows["fidelity_valid"].astype(bool)]
    d = d[d[metric].astype(float) > 0]
    if d["size_bytes"].nunique() < 2:
        return None
    x, y = np.log(d["size_bytes"].astype(float)), np.log(d[metric].astype(float))
    fit = stats.linregress(x, y)
    if len(d) == 2:
        return Growth(scheme, metric, float(fit.slope), (math.nan, math.nan), 2, 2)
    t = float(stats.t.ppf(0.975, len(d) - 2))
    err = float(fit.stderr) if math.isfinite(float(fit.stderr)) else 0.0  # a perfect fit (a constant queue)
    return Growth(
        scheme,
        metric,
        float(fit.slope),
        (float(fit.slope) - t * err, float(fit.slope) + t * err),
        len(d),
        int(d["size_bytes"].nunique()),
    )


def growths(rows: pd.DataFrame, metrics: tuple[str, ...] = ("max_queue_pkts", "cct_increase")) -> list[Growth]:
    out = []
    for scheme in dict.fromkeys(rows["cell_label"]):
        for m in metrics:
            g = growth(rows, m, scheme)
            if g is not None:
                out.append(g)
    return out


def provenance(sweep: Sweep) -> dict[str, Any]:
    """Where the results came from, from the first cell directory with a manifest (found by the cell's name
    under the sweep's own directory, so a copied sweep reads its own): kernel, commit, machine."""
    for cell in sweep.rows.get("cell", []):
        m = sweep.path / "cells" / str(cell) / "manifest.json"
        if m.exists():
            man = json.loads(m.read_text())
            return {**man.get("provenance", {}), "started_at": man.get("started_at"), "fabric": man.get("fabric", {})}
    return {}
