"""The record of a fabric that is up, kept under /run so other invocations find it."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

STATE_DIR = "/run/testbed"


@dataclass(frozen=True)
class FabricState:
    prefix: str
    k: int
    rate_bps: int
    mtu: int
    burst_bytes: int
    buffer_bytes: int
    scheme: str
    created: float
    prog_ids: dict[str, int] = field(default_factory=dict)
    pids: list[int] = field(default_factory=list)
    complete: bool = False
    topology: str = "fattree"
    wire_overhead: int = 0  # bytes every link charges per frame beyond its length (FabricSpec.wire_overhead)
    ack_priority: bool = False  # queues serve ACKs first (FabricSpec.ack_priority)


def path(prefix: str) -> str:
    return os.path.join(STATE_DIR, f"{prefix}.json")


def save(state: FabricState) -> None:
    os.makedirs(STATE_DIR, exist_ok=True)
    tmp = path(state.prefix) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(asdict(state), f, indent=1)
    os.replace(tmp, path(state.prefix))


def load(prefix: str) -> FabricState | None:
    try:
        with open(path(prefix)) as f:
            return FabricState(**json.load(f))
    except FileNotFoundError:
        return None


def remove(prefix: str) -> bool:
    try:
        os.unlink(path(prefix))
        return True
    except FileNotFoundError:
        return False


def record_pid(prefix: str, pid: int, add: bool = True) -> None:
    """Add (or remove) a process the tool started, so `clean` can kill it by PID."""
    st = load(prefix)
    if st is None:
        return
    pids = [p for p in st.pids if p != pid] + ([pid] if add else [])
    save(FabricState(**{**asdict(st), "pids": pids}))


class SideFiles(NamedTuple):
    """Files kept beside the state, by what they hold."""

    events: str  # the link watcher's events, one JSON object per line (testbed.fabric.links)
    controld_log: str  # the watcher daemon's output (testbed.fabric.controld)
    controld_ready: str  # written by the daemon once it watches
    lock: str  # the run lock (testbed.fabric.lock)


def side_files(prefix: str) -> SideFiles:
    """The files kept beside a fabric's state."""
    return SideFiles(
        *(
            os.path.join(STATE_DIR, f"{prefix}.{suffix}")
            for suffix in ("events.jsonl", "controld.log", "controld.ready", "lock")
        )
    )
