"""CPU time that processes outside the run took during its window.

On two cores, any other process that runs while a fabric sends takes CPU
from the softirqs and timers that emulate the links (a second fabric's run,
a compiler, a browser). The run lock keeps other runs out; this measures
what is left: the user and system time of every process that is neither
the run's own (this process and its descendants, the fabric's link
watcher) nor a kernel thread (the softirq threads carry the fabric's own
packets), from /proc/PID/stat at the start and the end of the window.
A process that started and ended inside the window is not seen; one that
ended is counted up to its last snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from ..fabric import procs

CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Snapshot:
    """Per process: (ppid, utime + stime in clock ticks, command); kernel threads left out."""

    procs: dict[int, tuple[int, int, str]]

    @classmethod
    def now(cls, proc: str = "/proc") -> Snapshot:
        out: dict[int, tuple[int, int, str]] = {}
        for pid, comm, fields in procs.stats(proc):
            if not procs.is_kernel_thread(fields):
                out[pid] = (int(fields[1]), int(fields[11]) + int(fields[12]), comm)
        return cls(out)

    def descendants(self, roots: Iterable[int]) -> set[int]:
        """`roots` and every process below them."""
        mine = set(roots)
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in self.procs.items():
            children.setdefault(ppid, []).append(pid)
        todo = list(mine)
        while todo:
            for c in children.get(todo.pop(), []):
                if c not in mine:
                    mine.add(c)
                    todo.append(c)
        return mine


def outside_cpu(before: Snapshot, after: Snapshot, window_s: float, own: Iterable[int]) -> tuple[float, str]:
    """(CPU-seconds per second of window taken by processes not the run's, the busiest of them)."""
    if window_s <= 0:
        return 0.0, ""
    mine = before.descendants(own) | after.descendants(own)
    total, worst, worst_ticks = 0, "", 0
    for pid, (_, ticks, comm) in after.procs.items():
        if pid in mine:
            continue
        used = ticks - before.procs[pid][1] if pid in before.procs else ticks  # a new one: all of it inside
        if used > 0:
            total += used
            if used > worst_ticks:
                worst, worst_ticks = f"{comm} (pid {pid})", used
    return total / CLK_TCK / window_s, worst
