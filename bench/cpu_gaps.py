"""How often this machine takes a CPU away: one spinning process per CPU
at real-time priority reads the clock in a tight loop and records every gap
in its own running longer than --min-us. Only interrupts, softirqs and
real-time threads of the guest come before it, and on an otherwise idle
guest those take microseconds: a longer gap is the hypervisor running
something else on that CPU. Every qdisc timer on that CPU
fires late by as much, so a NIC stalls with frames waiting: the verdict's
"with frames waiting: its timer or its CPU was late".

Prints JSON: per CPU and in all, gaps per second by size, the largest gaps,
and the chance that a window of --window-ms (a 1 MB run at k=4 and
100 Mbit/s sends for about 84 ms) holds a gap of --fatal-us or more, from
the gaps' rate (as if they came independently). Run it with nothing else
running: it measures the machine, and it keeps every CPU busy while it does.

Usage: sudo .venv/bin/python bench/cpu_gaps.py [--seconds 10] [--min-us 50] [--window-ms 84] [--fatal-us 500]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing as mp
import os
import time

SIZES_US = (50, 100, 200, 500, 1000, 2000, 5000)
BURST_S, REST_S = 0.5, 0.1


def spin(cpu: int, seconds: float, min_ns: int, out: mp.Queue) -> None:  # type: ignore[type-arg]
    """On `cpu`, read the clock for `seconds`; put (cpu, [gap_ns, ...]) of the gaps of at least min_ns."""
    os.sched_setaffinity(0, {cpu})
    # above every normal thread of the guest: only interrupts, softirqs and real-time threads come first (not
    # root: the gaps then include the guest's own threads)
    with contextlib.suppress(OSError):
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    clock = time.monotonic_ns
    gaps = []
    for _ in range(math.ceil(seconds / BURST_S)):
        # bursts shorter than the kernel's real-time budget (0.95 s of every 1 s): its throttling is no gap
        end = clock() + int(BURST_S * 1e9)
        last = clock()
        while last < end:
            now = clock()
            if now - last >= min_ns:
                gaps.append(now - last)
            last = now
        time.sleep(REST_S)
    out.put((cpu, gaps))


def summary(gaps_ns: list[int], seconds: float, window_ms: float, fatal_us: float) -> dict[str, object]:
    seconds = math.ceil(seconds / BURST_S) * BURST_S  # time spent spinning
    per_s = {f">={s}us": round(sum(1 for g in gaps_ns if g >= s * 1000) / seconds, 2) for s in SIZES_US}
    fatal_rate = sum(1 for g in gaps_ns if g >= fatal_us * 1000) / seconds
    return {
        "gaps_per_s": per_s,
        "largest_us": [round(g / 1000) for g in sorted(gaps_ns, reverse=True)[:5]],
        "window_with_fatal_gap": round(1 - math.exp(-fatal_rate * window_ms / 1000), 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--min-us", type=float, default=50.0)
    ap.add_argument("--window-ms", type=float, default=84.0)
    ap.add_argument("--fatal-us", type=float, default=500.0)
    a = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    q: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    procs = [mp.Process(target=spin, args=(c, a.seconds, int(a.min_us * 1000), q)) for c in cpus]
    for p in procs:
        p.start()
    results = dict(q.get() for _ in procs)
    for p in procs:
        p.join()
    every = [g for c in cpus for g in results[c]]
    print(
        json.dumps(
            {
                "seconds": a.seconds,
                "min_us": a.min_us,
                "window_ms": a.window_ms,
                "fatal_us": a.fatal_us,
                "any_cpu": summary(every, a.seconds, a.window_ms, a.fatal_us),
                "per_cpu": {str(c): summary(results[c], a.seconds, a.window_ms, a.fatal_us) for c in cpus},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
