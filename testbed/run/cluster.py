"""Sweeps over several machines: each cell a Ray task on a node of a Ray
cluster, the results back in the driver's sweep directory.

A node is a whole quiet machine with root and the project's setup, started
with a custom resource that says it can hold one fabric:

    sudo RAY_AUTH_MODE=token .venv/bin/ray start --address HEAD:6379 --resources '{"testbed_fabric": 1}'

(token authentication: docs/sweeps.md, "A sweep over several machines"),

so each node runs one cell at a time (a cell needs the machine to itself:
two fabrics on two cores would distort each other's timing). A task builds
the cell's fabric on its node, runs the cell into a node-local staging
directory (/run/testbed/ray/SWEEP/CELL, with the worker's pid), and returns
the row and the cell's directory as a tar archive; the driver unpacks it
into DIR/cells and writes the row, exactly as the local runner does, so
resuming is the same. A task whose worker dies (the node is lost, the
process killed) is re-run by Ray elsewhere or on the same node; the fabric
the dead worker left under the node's prefix is cleaned by the next task
(its run lock is free).

Nothing of Ray is imported unless a sweep asks for a cluster.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import socket
import tarfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from ..fabric.lock import run_lock
from ..fabric.state import STATE_DIR
from .params import RunError
from .sweep import Cell, Matrix, Progress, SweepDir, execute_cell, fabric_for

RESOURCE = "testbed_fabric"
NODE_PREFIX = "tbr"  # the prefix of the fabric a node builds for a task (one task per node at a time)
STAGING = Path(STATE_DIR) / "ray"
TASK_RETRIES = 3


def run_cell_on_node(matrix: dict[str, Any], cell: dict[str, Any], sweep_id: str) -> tuple[dict[str, Any], bytes]:
    """The body of a task, on a node: one cell on a fabric of its own; (row, the cell's directory as tar)."""
    m, c = Matrix.from_json(matrix), Cell.from_json(cell)
    _remove_dead_stages()
    stage = STAGING / sweep_id / c.name
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    (stage / "worker.pid").write_text(str(os.getpid()))
    try:
        # a node waits for any other run on its machine (a local run, or the retry of a killed worker)
        with run_lock(NODE_PREFIX, wait=True), fabric_for(m, c.k, NODE_PREFIX, m.mtu_for(c.payload)) as fab:
            row = execute_cell(fab, m, c, stage / "run")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(stage / "run", arcname=c.name)
        return row, buf.getvalue()
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _remove_dead_stages() -> None:
    """Staging directories of tasks whose worker died (killed, or its driver gone) on this node."""
    for pidfile in STAGING.glob("*/*/worker.pid"):
        try:
            os.kill(int(pidfile.read_text()), 0)
        except (ProcessLookupError, ValueError):
            shutil.rmtree(pidfile.parent, ignore_errors=True)
        except (FileNotFoundError, PermissionError):
            continue


PROBE_S = 10.0  # a cluster address must accept a TCP connection within this
WAIT_S = 1.0  # the driver waits for a task at most this long at a time, so SIGINT and SIGTERM are handled


def probe(address: str, timeout_s: float = PROBE_S) -> None:
    """Refuse, in one line and within `timeout_s`, a HOST:PORT (or ray://HOST:PORT) that does not accept a
    TCP connection: Ray's own connect retries for minutes and, blocked in its C++ core, ignores signals."""
    if address == "auto":
        return
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise RunError(f"cluster address {address!r}: expected HOST:PORT, ray://HOST:PORT or auto")
    result: list[OSError | None] = []

    def connect() -> None:
        try:
            socket.create_connection((host, int(port)), timeout=timeout_s).close()
            result.append(None)
        except OSError as e:
            result.append(e)

    t = threading.Thread(target=connect, daemon=True)  # name resolution has no timeout of its own
    t.start()
    t.join(timeout_s)
    if not result:
        raise RunError(f"the Ray cluster at {address} does not answer (no connection within {timeout_s:g} s)")
    if result[0] is not None:
        raise RunError(f"the Ray cluster at {address} does not answer: {result[0].strerror or result[0]}")


def run_ray(
    d: SweepDir,
    address: str,
    progress: Progress = lambda done, total, row: None,
    init: Callable[..., Any] | None = None,
) -> pd.DataFrame:
    """Every pending cell as a Ray task on the cluster at `address` ("auto": the one this machine is part
    of; or HOST:PORT, ray://HOST:PORT); returns the whole table."""
    import logging

    ray: Any = __import__("ray")  # untyped for mypy: Ray's own annotations are partial

    if not ray.is_initialized():
        probe(address)
        host = address.removeprefix("ray://").rsplit(":", 1)[0]
        local: dict[str, Any] = {"_node_ip_address": host} if host.startswith("127.") else {}  # loopback only
        on_term = signal.getsignal(signal.SIGTERM)
        try:
            (init or ray.init)(address=address, logging_level=logging.WARNING, log_to_driver=False, **local)
        except ConnectionError as e:  # Ray says "failed to connect" for a wrong or missing token too
            auth = os.environ.get("RAY_AUTH_MODE") == "token"
            raise RunError(
                f"the Ray cluster at {address} refused this driver ({e}): "
                + (
                    "is the token (RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token) the cluster's?"
                    if auth
                    else "a cluster with token authentication needs RAY_AUTH_MODE=token and its token"
                )
            ) from None
        finally:  # Ray's driver installs its own SIGTERM handler (sys.exit): the command's comes back
            if on_term is not None and threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, on_term)
    if not ray.cluster_resources().get(RESOURCE):
        raise RuntimeError(
            f"the Ray cluster at {address} has no node with the {RESOURCE!r} resource: start "
            f"nodes with ray start --resources '{{\"{RESOURCE}\": 1}}'"
        )
    task = ray.remote(resources={RESOURCE: 1}, max_retries=TASK_RETRIES, num_cpus=0)(run_cell_on_node)
    m = d.matrix
    total = len(m.cells())
    pending = d.pending()
    progress(total - len(pending), total, None)
    sweep_id = m.fingerprint()
    futures = {task.remote(m.to_json(), cell.to_json(), sweep_id): cell for cell in pending}
    while futures:
        ready, _ = ray.wait(list(futures), num_returns=1, timeout=WAIT_S)  # a timeout lets signals in
        if not ready:
            continue
        cell = futures.pop(ready[0])
        row, archive = ray.get(ready[0])
        target = d.fresh_cell_dir(cell)
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            members = tar.getmembers()
            for mem in members:  # only the cell's own files, no links, nothing outside its directory
                if not (mem.isfile() or mem.isdir()) or Path(mem.name).parts[0] != cell.name or ".." in mem.name:
                    raise RuntimeError(f"unexpected entry {mem.name!r} in the archive of cell {cell.name}")
            tar.extractall(target.parent, members=members)
        row["run_dir"] = str(target)
        d.write_row(row)
        progress(len(d.done()), total, row)
    return d.write_table()
