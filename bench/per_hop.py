"""CPU per packet-hop: what the kernel spends to carry one packet across one
port of the fabric, per fabric, at a fixed host rate, as JSON.

What limits every paper-scale run is the packet rate the fabric carries
faithfully on two cores, and that is CPU per hop times hops per second. For
each fabric this builds it at `--rate-factor` of its auto rate (a rate the
verdict accepts, so the figure is of a faithful run), runs an Ofan 1 MB
permutation per seed, and divides the CPU time the machine spent during the
run's data window, from the first frame leaving a NIC to the last arriving
(/proc/stat sampled every 5 ms: kernel = system + irq + softirq; busy =
every non-idle field; set-up and collection before and after it are not
counted) by the packet-hops it carried (every port's transmitted packets,
host NICs and ACKs included). `testbed_share` is the CPU this process (the
run's own sampler of every queue) took meanwhile, in CPUs.
`qdisc_timers_per_hop` is how many qdisc watchdog timers fired per hop (the
run's timer probe): a port that must wait for its tokens sends its next
frame from such a timer, and on this machine kind each costs about 9 us
(bench/timer_cost.py). `busy_cpuidle_us_per_hop` is the busy CPU by cpuidle's
residency instead of /proc/stat's ticks; cpuidle counts an interrupt taken
while a CPU polls as idle, so it reads lower (4-28 % in
docs/results/per-hop.md's runs). With `--perf`,
one extra run per fabric, four times as long, is sampled by `perf record
-a` and the top symbols are given with their share of the samples (the run
that perf slows down is not in the figures).

Arms (`--arm NAME:KEY=VALUE[,KEY=VALUE]`) compare fabric settings
(FabricSpec fields such as ack_priority=0), sysctls (sysctl.net.core.X=V)
the run's queue sampler (collector.ALL_PORT_READINGS_PER_S=N) or ksoftirqd's priority during a
run (softirq.PRIORITY=0: the kernel's own policy)
within one run of the bench: each arm gets its own fabric at the same rate
and the runs are interleaved seed by seed, so both see the same hours of a
noisy machine. The default arm is the fabric as the testbed builds it.

Usage: sudo .venv/bin/python bench/per_hop.py [--fabrics fattree:4,fattree:8,fattree:12,fattree:16,leafspine:16,
         leafspine:32,leafspine:64] [--rate-factor 0.5] [--seeds 1-3] [--size 1MB] [--scheme ofan] [--perf]
         [--arm NAME:KEY=VALUE,...]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from fractions import Fraction
from pathlib import Path
from typing import Any

from testbed.fabric.budget import auto_rate_bps, round_down
from testbed.fabric.build import Fabric, FabricSpec
from testbed.measure import cpu_windows
from testbed.models.schemes import Scheme
from testbed.run.experiment import run
from testbed.run.params import RunParams
from testbed.topology import FatTree
from testbed.topology.units import format_rate, parse_seeds, parse_size

DEFAULT_FABRICS = "fattree:4,fattree:8,fattree:12,fattree:16,leafspine:16,leafspine:32,leafspine:64"
PERF_TOP = 15


def cpu_jiffies() -> tuple[int, int, int]:
    """All CPUs' kernel and busy jiffies so far, and this process's."""
    kernel, busy = cpu_windows.machine_jiffies()
    with open("/proc/self/stat") as f:
        own = f.read().rsplit(")", 1)[1].split()
    return kernel, busy, int(own[11]) + int(own[12])  # utime + stime


class CpuTrace:
    """/proc/stat and cpuidle every 5 ms in a thread: CLOCK_MONOTONIC ns, cpu_jiffies() and cpuidle in us."""

    def __init__(self) -> None:
        import threading

        self.samples: list[tuple[int, int, int, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic_ns(), *cpu_jiffies(), round(cpu_windows.machine_cpuidle_s() * 1e6)))
            self._stop.wait(0.005)

    def __enter__(self) -> CpuTrace:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def between(self, t0_ns: int, t1_ns: int) -> tuple[float, int, int, int, float]:
        """Seconds between the samples nearest t0 and t1, the jiffies spent in between, and the CPU-seconds
        not in an idle state by cpuidle's count."""
        a = min(self.samples, key=lambda s: abs(s[0] - t0_ns))
        b = min(self.samples, key=lambda s: abs(s[0] - t1_ns))
        window = (b[0] - a[0]) / 1e9
        return window, b[1] - a[1], b[2] - a[2], b[3] - a[3], window * (os.cpu_count() or 1) - (b[4] - a[4]) / 1e6


def parse_arm(text: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    """NAME:KEY=VALUE,...: FabricSpec fields (ints, or 0/1 for booleans), sysctl.KEY=VALUE and
    collector.NAME=VALUE (the second dict: what is set around each run)."""
    name, _, rest = text.partition(":")
    spec: dict[str, Any] = {}
    sysctls: dict[str, str] = {}
    fields = {f.name: f for f in dataclasses.fields(FabricSpec)}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        if key.startswith(("sysctl.", "collector.", "softirq.")):
            sysctls[key] = value
        elif key in fields:
            spec[key] = bool(int(value)) if fields[key].type in ("bool", bool) else int(value)
        else:
            raise SystemExit(f"per_hop: unknown arm setting {key!r} (a FabricSpec field or sysctl.NAME)")
    return name, spec, sysctls


def sysctl(name: str, value: str | None = None) -> str:
    """Set a sysctl.NAME, collector.NAME or softirq.NAME (an int constant of testbed.measure.collector or
    testbed.fabric.softirq); the old value."""
    if name.startswith(("collector.", "softirq.")):
        from testbed.fabric import softirq
        from testbed.measure import collector

        module, attr = name.split(".", 1)
        mod = collector if module == "collector" else softirq
        was = getattr(mod, attr)
        if value is not None:
            setattr(mod, attr, int(value))
        return str(was)
    path = Path("/proc/sys") / name[len("sysctl.") :].replace(".", "/")
    old = path.read_text().strip()
    if value is not None:
        path.write_text(value)
    return old


def perf_top(fab: Fabric, params: RunParams, seconds_hint: float) -> list[dict[str, Any]]:
    """The top kernel symbols over one run, sampled by perf record -a (empty without perf)."""
    perf = shutil.which("perf")
    if perf is None:
        return []
    with tempfile.TemporaryDirectory(prefix="per-hop-perf-") as d:
        data = os.path.join(d, "perf.data")
        proc = subprocess.Popen(
            [perf, "record", "-a", "-F", "1999", "-o", data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            time.sleep(0.5)
            run(fab, params)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60 + seconds_hint)
        rep = subprocess.run(
            [perf, "report", "-i", data, "--stdio", "--sort", "symbol", "--no-children"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    out = []
    for line in rep.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].endswith("%") and parts[1] in ("[k]", "[.]"):
            out.append(
                {
                    "share": float(parts[0].rstrip("%")) / 100,
                    "where": "kernel" if parts[1] == "[k]" else "user",
                    "symbol": parts[2],
                }
            )
        if len(out) == PERF_TOP:
            break
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fabrics", default=DEFAULT_FABRICS, help="topology:k, comma-separated")
    ap.add_argument("--rate-factor", type=float, default=0.5, help="of each fabric's auto rate (default 0.5)")
    ap.add_argument("--seeds", type=parse_seeds, default=[1, 2, 3])
    ap.add_argument("--size", default="1MB")
    ap.add_argument("--scheme", default="ofan")
    ap.add_argument("--perf", action="store_true", help="one more run per fabric, sampled by perf record")
    ap.add_argument("--arm", action="append", default=[], help="NAME:KEY=VALUE,... (repeatable)")
    a = ap.parse_args()
    arms: list[tuple[str, dict[str, Any], dict[str, str]]] = [("default", {}, {})] + [parse_arm(x) for x in a.arm]
    scheme, size = Scheme.parse(a.scheme), parse_size(a.size)
    out: dict[str, Any] = {
        "scheme": scheme.label,
        "size_bytes": size,
        "rate_factor": a.rate_factor,
        "seeds": a.seeds,
        "cpus": os.cpu_count(),
        "arms": {n: {**s, **c} for n, s, c in arms},
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "fabrics": {},
    }
    hz = os.sysconf("SC_CLK_TCK")
    for item in a.fabrics.split(","):
        topology, _, k_text = item.partition(":")
        k = int(k_text)
        tree = FatTree(k, "bph", topology)
        rate = round_down(Fraction(auto_rate_bps(tree, 4096, False, False)) * Fraction(a.rate_factor))
        runs: dict[str, list[dict[str, Any]]] = {n: [] for n, _, _ in arms}
        top: list[dict[str, Any]] = []
        with ExitStack() as stack:
            fabs = {
                n: stack.enter_context(
                    Fabric(
                        FabricSpec(
                            k=k, rate_bps=rate, prefix=f"bph{i}", topology=topology, **{"ack_priority": False, **spec}
                        )
                    )
                )
                for i, (n, spec, _) in enumerate(arms)
            }
            for seed in a.seeds:
                for n, _, sysctls in arms:
                    old = {key: sysctl(key, v) for key, v in sysctls.items()}
                    try:
                        with CpuTrace() as trace:
                            res = run(fabs[n], RunParams("permutation", size, 1.0, scheme, seed=seed)).to_json()
                    finally:
                        for key, v in old.items():
                            sysctl(key, v)
                    end = max(fl["last_rx_ns"] for fl in res["flow_stats"])  # the kernel's last arrival
                    window, kernel, busy, own, busy_cpuidle = trace.between(res["cct_start_ns"], end)
                    hops = sum(int(p["tx_pkts"]) for p in res["ports"])
                    f = res["fidelity"]
                    runs[n].append(
                        {
                            "seed": seed,
                            "hops": hops,
                            "window_s": window,
                            "kernel_us_per_hop": kernel / hz / hops * 1e6,
                            "busy_us_per_hop": busy / hz / hops * 1e6,
                            "busy_cpuidle_us_per_hop": busy_cpuidle / hops * 1e6,
                            # None where the run could not watch its qdisc timers (no tracefs)
                            "qdisc_timers_per_hop": f["timers"]["fired"] / hops if f.get("timers") else None,
                            "testbed_share": own / hz / window if window > 0 else 0.0,
                            "valid": f["valid"],
                            "reasons": f["reasons"],
                            "cct_increase": res["cct_increase"],
                            "cpu_busiest": f["cpu_busiest"],
                            "cpu_busiest_window": f["cpu_busiest_window"],
                        }
                    )
                    print(
                        f"{topology} k={k} {format_rate(rate)} {n} seed {seed}: "
                        f"{runs[n][-1]['kernel_us_per_hop']:.2f} us kernel per hop (busy {runs[n][-1]['busy_us_per_hop']:.2f} "
                        f"by /proc/stat, {runs[n][-1]['busy_cpuidle_us_per_hop']:.2f} by cpuidle), "
                        f"{'?' if (t := runs[n][-1]['qdisc_timers_per_hop']) is None else f'{t:.2f}'} qdisc timers per hop, "
                        f"{'valid' if f['valid'] else f['reasons']}",
                        file=sys.stderr,
                        flush=True,
                    )
            if a.perf:
                top = perf_top(
                    fabs["default"],
                    RunParams("permutation", 4 * size, 1.0, scheme, seed=a.seeds[0]),
                    4 * max(r["window_s"] for r in runs["default"]),
                )
        out["fabrics"][f"{topology} k={k}"] = {
            "hosts": tree.n_hosts,
            "ports": len(tree.ports),
            "rate_bps": rate,
            "host_pkts_per_s": round(tree.n_hosts * rate / (8 * (4096 + 82))),
            "arms": {
                n: {
                    "kernel_us_per_hop": statistics.median(r["kernel_us_per_hop"] for r in rs),
                    "busy_us_per_hop": statistics.median(r["busy_us_per_hop"] for r in rs),
                    "busy_cpuidle_us_per_hop": statistics.median(r["busy_cpuidle_us_per_hop"] for r in rs),
                    "qdisc_timers_per_hop": statistics.median(timers)
                    if (timers := [r["qdisc_timers_per_hop"] for r in rs if r["qdisc_timers_per_hop"] is not None])
                    else None,
                    "testbed_share": statistics.median(r["testbed_share"] for r in rs),
                    "valid": sum(r["valid"] for r in rs),
                    "runs": rs,
                }
                for n, rs in runs.items()
            },
            "perf_top": top,
        }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
