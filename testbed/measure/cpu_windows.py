"""The busiest CPU over sliding windows of a run.

A CPU saturated for part of a run distorts it as much as one saturated
throughout, but an average over the run (drain and start included) hides
it. A thread samples every CPU's idle time every PERIOD_S while the run
goes; the verdict judges the busiest CPU over any window of WINDOW_S, or of
as many packet times of the run as the verdict lets a NIC or a link be late
(the stall and CPU-gap criteria's 4), whichever is longer.

Why: a CPU busy throughout a window delayed the work queued on it by up to
the window's length, so a window as long as the lateness the other criteria
allow is the shortest in which saturation is more than what they already
judge directly (a late dequeue, a stalled NIC). 100 ms holds about 75-150
packet times at k=4's rates, so there the floor rules; at the paper-scale
rates a packet time is 22-140 ms (k=12 to the k=64 leaf-spine with ACKs)
and 100 ms would be one or two packet times, a burst that the CPU-gap and
stall criteria see for what it did. The window stays short against a run
(a k=4 1 MB run lasts about 0.2 s, a paper-scale one many seconds), so a
pegged stretch of a tenth of a run is seen.

Two clocks of idle time, because neither alone is exact over 100 ms:
/proc/stat's idle (and iowait) includes the idle period in progress but
counts in 10 ms units (USER_HZ); cpuidle's residency
(/sys/devices/system/cpu/cpuN/cpuidle/state*/time) counts microseconds but
only when an idle period ends, the whole period at once. A window's idle
time is cpuidle's, clamped to within one /proc/stat unit of /proc/stat's:
exact when idle comes in short pieces (a busy CPU's), within 10 ms when
one long idle period straddles an edge. Without cpuidle (other machines)
/proc/stat alone is used and the window is FALLBACK_WINDOW_S.
"""

from __future__ import annotations

import functools
import glob
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

WINDOW_S = 0.1
FALLBACK_WINDOW_S = 0.5  # /proc/stat alone: 10 ms units, so 2 % at each edge of half a second
PERIOD_S = 0.01
USER_HZ = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Sample:
    t: float  # monotonic seconds
    stat_idle_s: tuple[float, ...]  # per CPU, /proc/stat idle + iowait
    cpuidle_s: tuple[float, ...] | None  # per CPU, summed cpuidle residency; None: no cpuidle


@dataclass(frozen=True)
class Busiest:
    share: float  # busy share of the busiest CPU over its busiest window
    cpu: int
    start_s: float  # the window's start, seconds after the first sample
    window_s: float


def _stat_idle(path: str = "/proc/stat", fd: int | None = None) -> tuple[float, ...]:
    """Per CPU, /proc/stat's idle + iowait seconds; read through `fd` (kept open, read from offset 0) if given."""
    if fd is None:
        with open(path) as f:
            text = f.read()
    else:
        text = os.pread(fd, 1 << 16, 0).decode()
    out = []
    for line in text.splitlines():
        if not line.startswith("cpu"):
            break
        if line.startswith("cpu "):
            continue
        v = line.split()
        out.append((int(v[4]) + int(v[5])) / USER_HZ)
    return tuple(out)


KERNEL_FIELDS = (2, 5, 6)  # /proc/stat cpu line, after the name: system, irq, softirq
IDLE_FIELDS = (3, 4, 7)  # idle, iowait, steal (steal is the hypervisor's, not ours)


def machine_jiffies(path: str = "/proc/stat") -> tuple[int, int]:
    """All CPUs' kernel (system + irq + softirq) and busy (all but idle, iowait and steal) jiffies so far:
    the machine-wide figures the benches divide by packets or hops."""
    with open(path) as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v[i] for i in KERNEL_FIELDS), sum(v) - sum(v[i] for i in IDLE_FIELDS if i < len(v))


@functools.cache
def _all_cpuidle_files() -> tuple[str, ...]:
    """Every CPU's idle-state files, found once (the Sampler's per-CPU lists, flattened; none without cpuidle)."""
    return tuple(path for cpu in _cpuidle_files(len(_stat_idle())) or [] for path in cpu)


def machine_cpuidle_s() -> float:
    """Every CPU's idle-state residency so far, summed, in seconds (0 without cpuidle). An interrupt taken
    while a CPU polls counts as idle here, and /proc/stat's ticks see it as busy: docs/results/per-hop.md."""
    total = 0
    for path in _all_cpuidle_files():
        with open(path) as f:
            total += int(f.read())
    return total / 1e6


def _cpuidle_files(n: int) -> list[list[str]] | None:
    files = [sorted(glob.glob(f"/sys/devices/system/cpu/cpu{i}/cpuidle/state*/time")) for i in range(n)]
    return files if all(files) else None


def _cpuidle(fds: list[list[int]]) -> tuple[float, ...]:
    """Per CPU, the summed residency of its idle states, in seconds, from their `time` files kept open."""
    return tuple(sum(int(os.pread(fd, 64, 0)) for fd in per_cpu) / 1e6 for per_cpu in fds)


def busiest(samples: Sequence[Sample], window_s: float | None = None) -> Busiest | None:
    """The busiest CPU over any window of `window_s` (default WINDOW_S, or FALLBACK_WINDOW_S without
    cpuidle) between two samples, or over all of them if they span less than one window; None with fewer
    than two samples. Windows are taken from each sample to the first sample at least `window_s` later."""
    if len(samples) < 2:
        return None
    exact = samples[0].cpuidle_s is not None
    window = window_s if window_s is not None else WINDOW_S if exact else FALLBACK_WINDOW_S
    window = min(window, samples[-1].t - samples[0].t)
    unit = 1 / USER_HZ
    best: Busiest | None = None
    j = 0
    for i, a in enumerate(samples):
        j = max(j, i + 1)
        while j < len(samples) and samples[j].t - a.t < window - 1e-9:
            j += 1
        if j == len(samples):
            break
        b = samples[j]
        span = b.t - a.t
        for cpu in range(len(a.stat_idle_s)):
            stat = b.stat_idle_s[cpu] - a.stat_idle_s[cpu]
            if a.cpuidle_s is not None and b.cpuidle_s is not None:
                idle = min(max(b.cpuidle_s[cpu] - a.cpuidle_s[cpu], stat - unit), stat + unit)
            else:
                idle = stat
            share = 1 - min(max(idle, 0.0), span) / span
            if best is None or share > best.share:
                best = Busiest(share, cpu, a.t - samples[0].t, span)
    return best


class Sampler:
    """Samples every CPU's idle time every PERIOD_S in a thread, from `start()` to `stop()`."""

    def __init__(self, period_s: float = PERIOD_S, min_window_s: float = 0.0) -> None:
        """`min_window_s`: windows at least this long (the run's allowed lateness; the module's doc)."""
        self.period_s = period_s
        self.min_window_s = min_window_s
        self.samples: list[Sample] = []
        self._files = _cpuidle_files(len(_stat_idle()))
        self.exact = self._files is not None  # cpuidle's clock: WINDOW_S windows; else FALLBACK_WINDOW_S
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cpu-windows", daemon=True)
        self._stat_fd = -1  # the files stay open from start() to stop(): a sample is a few preads, no open
        self._idle_fds: list[list[int]] = []

    def _sample(self) -> Sample:
        cpuidle = _cpuidle(self._idle_fds) if self._idle_fds else None
        return Sample(time.monotonic(), _stat_idle(fd=self._stat_fd), cpuidle)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.samples.append(self._sample())
            self._stop.wait(self.period_s)

    def start(self) -> Sampler:
        self._stat_fd = os.open("/proc/stat", os.O_RDONLY)
        self._idle_fds = [[os.open(p, os.O_RDONLY) for p in per_cpu] for per_cpu in self._files or []]
        self._thread.start()
        return self

    def stop(self) -> Busiest | None:
        self._stop.set()
        self._thread.join()
        try:
            self.samples.append(self._sample())
        finally:
            for fd in [self._stat_fd, *(fd for per_cpu in self._idle_fds for fd in per_cpu)]:
                os.close(fd)
            self._stat_fd, self._idle_fds = -1, []
        return busiest(self.samples, max(WINDOW_S if self.exact else FALLBACK_WINDOW_S, self.min_window_s))
