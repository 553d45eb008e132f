"""Serve the fabric's deferred packet work first during a run: ksoftirqd at a real-time priority.

Every hop of the fabric is softirq work (a qdisc timer's NET_TX, the backlog's
NET_RX). The kernel runs it on the way out of an interrupt, until it has run
for 2 ms or restarted ten times; then it hands the rest to the CPU's
ksoftirqd thread, an ordinary thread that waits its turn behind the sender
threads and this process. A NIC or a link whose dequeue sits in that
backlog is late by a scheduler slice, a few packet times at k=4's rates.
Measured on this machine kind, single tries of 1 MB permutations with the
two interleaved seed by seed (ECMP and Ofan at k=4 and 100-120 Mbit/s, Ofan
at k=12 and k=16 at their budget rates): 26 of 38 valid with ksoftirqd at
SCHED_FIFO, 17 of 38 as the kernel leaves it, for 2-24 % more kernel CPU
per hop (docs/results/per-hop.md).

`raised()` sets every CPU's ksoftirqd to SCHED_FIFO at PRIORITY (above the
transport's sender and ACK threads, 1 and 2: softirq work done on the way out
of an interrupt preempts them anyway) and restores each thread's own policy
after. The threads are the kernel's, found by their exact name ksoftirqd/N
with the kernel-thread flag; their policies before the change are written
to SAVED first (with the run's pid), so a run killed meanwhile leaves a file
that `restore_saved()` (called by `testbed clean` and at the next run) puts
back once that pid is gone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import procs

PRIORITY = 3
SAVED = Path("/run/testbed/ksoftirqd-policy.json")


def threads(proc: str = "/proc") -> dict[int, str]:
    """pid -> name of every CPU's ksoftirqd (kernel threads named exactly ksoftirqd/N)."""
    return {
        pid: name
        for pid, name, fields in procs.stats(proc)
        if name.startswith("ksoftirqd/") and name[len("ksoftirqd/") :].isdigit() and procs.is_kernel_thread(fields)
    }


def _set(pid: int, policy: int, priority: int) -> bool:
    try:
        os.sched_setscheduler(pid, policy, os.sched_param(priority))
    except OSError:  # gone, or not allowed (not root): the run goes on as the kernel left it
        return False
    return True


def restore_saved(saved: Path = SAVED) -> int:
    """Put back the policies saved by a run that is gone without restoring them (it was killed); how many
    threads. A file whose run is still going is left alone."""
    try:
        data = json.loads(saved.read_text())
        owner, entries = int(data["owner"]), data["threads"]
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    if owner != os.getpid() and _alive(owner):
        return 0
    now = threads()
    n = sum(_set(int(pid), e["policy"], e["priority"]) for pid, e in entries.items() if now.get(int(pid)) == e["name"])
    saved.unlink(missing_ok=True)
    return n


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def raised(priority: int | None = None, saved: Path = SAVED) -> Iterator[bool]:
    """Every ksoftirqd at SCHED_FIFO `priority` (default PRIORITY) while inside; yields whether all of them
    are (False when not root or none found: the run goes on, and its manifest says so). Priority 0 changes
    nothing (bench/per_hop.py's arm softirq.PRIORITY=0 compares with the kernel's own policy)."""
    priority = PRIORITY if priority is None else priority
    restore_saved(saved)
    if priority == 0:
        yield False
        return
    before: dict[int, dict[str, Any]] = {}
    for pid, name in threads().items():
        try:
            policy, prio = os.sched_getscheduler(pid), os.sched_getparam(pid).sched_priority
        except OSError:
            continue
        before[pid] = {"name": name, "policy": policy, "priority": prio}
    try:
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps({"owner": os.getpid(), "threads": before}))
    except OSError:
        yield False
        return
    try:
        yield bool(before) and all([_set(pid, os.SCHED_FIFO, priority) for pid in before])
    finally:
        for pid, e in before.items():
            _set(pid, e["policy"], e["priority"])
        saved.unlink(missing_ok=True)
