"""Watch the qdisc timers during a run: how late the kernel fired them.

Every host NIC and link of the fabric is a TBF, and a TBF that must wait for
tokens arms a hard-interrupt timer (the qdisc watchdog) for its next frame.
While a run measures, ebpf/timers.c counts each expiry per CPU with its
lateness. Those timers fire about 10 us late at the median on this machine
kind; a timer milliseconds late means its CPU took no interrupt for that
long: on a virtual machine, the hypervisor was running something else there
(bench/cpu_gaps.py measures how often that happens on an idle machine).
Every NIC and link whose timer was on that CPU stalled with frames waiting,
and the verdict names the lateness next to the stall it caused.

The probe is attached through a file descriptor this process holds: it goes
when the run ends, also when the process is killed. Nothing is pinned, so
nothing is left to clean up. It needs tracefs (mounted here if missing, as
the data plane mounts bpffs) and root's view of /proc/kallsyms.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..dataplane.compile import TimerProbe
from ..dataplane.maps import PercpuU64Map

TRACEFS = "/sys/kernel/tracing"
TL_FIRED, TL_SUM_NS, TL_MAX_NS, TL_OVER = range(4)  # ebpf/timers.c's keys


@dataclass(frozen=True)
class TimerLateness:
    """The qdisc timers of one run: how many fired, and how late."""

    fired: int
    mean_s: float
    max_s: float
    max_cpu: int  # the CPU of the latest timer
    over_100us: int  # timers more than 100 us late

    @classmethod
    def of(cls, per_key: list[list[int]]) -> TimerLateness:
        """From the per-CPU values of each key of timer_late."""
        fired, total, late, over = (per_key[k] for k in (TL_FIRED, TL_SUM_NS, TL_MAX_NS, TL_OVER))
        cpu = max(range(len(late)), key=lambda c: late[c]) if late else 0
        n = sum(fired)
        return cls(n, sum(total) / n / 1e9 if n else 0.0, late[cpu] / 1e9 if late else 0.0, cpu, sum(over))


class Watch:
    """An attached probe: `zero()` its counts, `read()` what it counted since."""

    def __init__(self, probe: TimerProbe) -> None:
        self._map = PercpuU64Map(os.dup(probe.map_fd))

    def zero(self) -> None:
        for k in range(4):
            self._map.set(k, [0] * self._map.ncpu)

    def read(self) -> TimerLateness:
        return TimerLateness.of([self._map.get(k) for k in range(4)])

    def close(self) -> None:
        self._map.close()


def ensure_tracefs() -> None:
    if not os.path.isdir(os.path.join(TRACEFS, "events")):
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], check=True, capture_output=True)


@contextmanager
def watch() -> Iterator[Watch | None]:
    """The probe attached while inside (a new map: its counts start at zero);
    None where it cannot be (no tracefs, no symbol, no clang, a kernel that
    refuses it): the run goes on without it, and its verdict says the timers
    were not observed."""
    try:
        ensure_tracefs()
        probe = TimerProbe()
    except Exception:
        yield None
        return
    try:
        probe.attach()
        w = Watch(probe)
    except OSError:
        probe.close()
        yield None
        return
    try:
        yield w
    finally:
        w.close()
        probe.close()
