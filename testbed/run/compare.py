"""Compare schemes: a matrix of runs (schemes x seeds) on one fabric, one
summary table. Every run writes its own result directory; the summary is
`summary.csv` beside them, one row per run, and `compare_summary` turns it
into one row per scheme (mean, standard error of the mean, worst case)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..models.schemes import SchemeConfig, SchemeError


def parse_schemes(text: str) -> list[SchemeConfig]:
    """'ecmp,ofan,pofan:4,pofan:cpu' -> scheme configurations."""
    out = [SchemeConfig.parse(item) for item in text.split(",")]
    if len({c.label for c in out}) != len(out):
        raise SchemeError(f"a scheme is listed twice in {text!r}")
    return out


@dataclass(frozen=True)
class Cell:
    config: SchemeConfig
    seed: int


def row_of(r: dict[str, Any]) -> dict[str, Any]:
    """The summary row of one run."""
    q = r["queues"]
    return {
        "scheme": r["scheme"],
        "seed": r["seed"],
        "workload": r["workload"],
        "size_bytes": r["size_bytes"],
        "load": r["load"],
        "cct_s": r["cct_s"],
        "cct_increase": r["cct_increase"],
        "max_queue_pkts": max(q[s]["max_pkts"] for s in ("edge_agg", "agg_core", "core_agg", "agg_edge", "edge_host")),
        **{f"max_{s}": q[s]["max_pkts"] for s in q},
        **{f"avg_{s}": q[s]["avg_pkts"] for s in q},
        "utilisation": r["utilisation"],
        "drops": r["drops"],
        "valid": r["fidelity"]["valid"],
        "out_dir": r["out_dir"],
    }


def run_matrix(cells: list[Cell], one: Callable[[Cell, Path], dict[str, Any]], out: Path) -> pd.DataFrame:
    """Run every cell (into out/<scheme>-s<seed>) and write out/summary.csv (with each run's attempts, invalid
    ones included, and wall time, retries included)."""
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for c in cells:
        t0 = time.monotonic()
        r = one(c, out / f"{c.config.label}-s{c.seed}")
        rows.append(
            {**row_of(r), "attempts": 1 + len(r.get("discarded_attempts") or []), "wall_s": time.monotonic() - t0}
        )
    df = pd.DataFrame(rows)
    df.to_csv(out / "summary.csv", index=False)
    return df


def compare_summary(df: pd.DataFrame) -> pd.DataFrame:
    """One row per scheme, in the order first seen: mean and SEM of the CCT
    increase over its valid runs only, worst max queue and drops over the
    valid runs (all three NaN when none is valid: a 0 would read as a
    measurement), runs, valid runs and how many invalid runs were left out."""
    rows = []
    for scheme in dict.fromkeys(df["scheme"]):
        every = df[df["scheme"] == scheme]
        d = every[every["valid"].astype(bool)]
        n = len(d)
        inc = d["cct_increase"]
        sem = float(inc.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0
        rows.append(
            {
                "scheme": scheme,
                "runs": len(every),
                "valid": n,
                "left_out": len(every) - n,
                "cct_increase_mean": float(inc.mean()) if n else math.nan,
                "cct_increase_sem": sem,
                "max_queue_pkts": int(d["max_queue_pkts"].max()) if n else math.nan,
                "drops": int(d["drops"].sum()) if n else math.nan,
            }
        )
    return pd.DataFrame(rows)
