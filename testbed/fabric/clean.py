"""Remove every kernel object of a fabric, by its prefix, and nothing else.

Works from the names alone, so it also recovers from a tool killed with
SIGKILL half-way through a build: namespaces `/run/netns/{prefix}-*`, the
pinned maps in `/sys/fs/bpf/{prefix}-maps`, processes recorded in the state
file (the sender, the link watcher daemon; killed by PID, after checking they
are still ours), the state file and its companions (link events, daemon log).
The veths, qdiscs and filters live only inside those namespaces and go with
them. Teardown is complete when the switch programs are freed, which happens
only after every device holding a filter is gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field

from ..dataplane.maps import prog_exists, unpin
from . import netns, softirq, state


@dataclass
class CleanReport:
    namespaces: int = 0
    pinned_maps: bool = False
    killed: list[int] = field(default_factory=list)
    state_file: bool = False
    wait_s: float = 0.0
    leftover_programs: list[int] = field(default_factory=list)


def ours(pid: int) -> bool:
    """A recorded PID still runs one of our programs (not a reused PID)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
    except OSError:
        return False
    return b"testbed-sender" in cmd or (b"testbed" in cmd and b"controld" in cmd)


def clean(prefix: str, wait_prog_ids: list[int] | None = None, timeout_s: float = 20.0) -> CleanReport:
    rep = CleanReport()
    st = state.load(prefix)
    prog_ids = list(wait_prog_ids or [])
    if st is not None:
        prog_ids += list(st.prog_ids.values())
        for pid in st.pids:
            if pid != os.getpid() and ours(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                    rep.killed.append(pid)
                except ProcessLookupError:
                    pass
    for name in netns.listed(prefix):
        if netns.remove(name):
            rep.namespaces += 1
    rep.pinned_maps = unpin(prefix)
    t0 = time.perf_counter()
    left = sorted(set(prog_ids))
    while left and time.perf_counter() - t0 < timeout_s:
        left = [p for p in left if prog_exists(p)]
        if left:
            time.sleep(0.005)
    rep.wait_s = time.perf_counter() - t0
    rep.leftover_programs = left
    rep.state_file = state.remove(prefix)
    softirq.restore_saved()  # a run killed while ksoftirqd was real-time
    for extra in state.side_files(prefix):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(extra)
    return rep
