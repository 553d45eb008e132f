"""Where a sweep's pending cells run, decided in one place: on this machine (testbed.run.sweep.run_local,
root needed) or as Ray tasks on a cluster (testbed.run.cluster, imported only then). Sweeps, the paper's
figures and the claims check all run through `run_sweep`."""

from __future__ import annotations

import pandas as pd

from ..fabric.errors import require_root
from .params import RunError
from .sweep import Fits, Progress, SweepDir, run_local


def cluster_address(cluster: str | None) -> str | None:
    """The command line's --cluster as Ray takes it: 'ray' (or 'auto') is the cluster this machine is a node
    of; HOST:PORT and ray://HOST:PORT as given; None runs here."""
    if cluster is None:
        return None
    return "auto" if cluster in ("ray", "auto") else cluster


def check_can_run(cluster: str | None) -> None:
    """Before the first cell: root to build fabrics here, or a cluster that answers (its nodes build them)."""
    address = cluster_address(cluster)
    if address is None:
        require_root()
    else:
        from .cluster import probe

        probe(address)


def run_sweep(
    d: SweepDir,
    *,
    prefix: str = "tbs",
    cluster: str | None = None,
    wait: bool = False,
    progress: Progress = lambda done, total, row: None,
    fits: Fits | None = None,
) -> pd.DataFrame:
    """Every pending cell of the sweep in `d`, here or on the cluster; the whole table. A directory whose runs
    went at another rate than the matrix's today is refused before any run (SweepDir.check_rates). With `fits`
    (here only), a cell runs only if it says the cell fits the time left; the first that does not stops the
    sweep."""
    if d.pending():
        d.check_rates()
    address = cluster_address(cluster)
    if address is None:
        return run_local(d, prefix, progress, wait=wait, fits=fits)
    if fits is not None:
        raise RunError("a sweep limited in time runs here, not on a cluster")
    from .cluster import run_ray

    run_ray(d, address, progress)
    return d.write_table()
