"""What one qdisc timer costs this machine: the same packets through the same
two links, once with the second link's TBF sending each frame as it arrives
and once with it waiting for its tokens, that is, dequeuing every frame from
its watchdog timer, as a busy port of the fabric does. Prints JSON.

The chain is three namespaces, `tbtc-a` -> `tbtc-b` -> `tbtc-c`, joined by
two veth pairs. A C sender in `a` keeps the first link's TBF (the NIC, at
--rate) backlogged through a small blocking send buffer, so that link
dequeues every frame from its timer in both arms; `b` forwards by its IP
routes; `c` drops every frame at once (addressed to another host's MAC). The
second link's TBF runs at 4x the NIC rate in arm `inline` (a frame never
waits: it leaves inside the NIC timer's softirq) and at 0.995x in arm
`timer` (a queue builds, one frame in 200, and every frame leaves from that
link's own timer). The arms carry the same frames at the same rate through
the same code; what differs is one timer expiry per frame: arming it, the
interrupt, and a softirq of its own. Arms alternate round by round.

Per arm and round: kernel and busy CPU per frame (/proc/stat, tick-sampled:
the kernel here accounts CPU time by its 250 Hz tick) and local timer
interrupts per frame (/proc/interrupts LOC); beside them the busy CPU by
cpuidle's residency, which counts an interrupt taken while a CPU polls as
idle and so misses most of what a timer costs. `timer_minus_inline_us` is the
cost of one timer-driven dequeue. On this machine kind (a virtual machine
whose guest programs its TSC-deadline timer through the hypervisor) that is
about 10 us, against a few for everything else a frame costs; on a host
with virtualised timers it should be far less.

Usage: sudo .venv/bin/python bench/timer_cost.py [--rounds 3] [--seconds 4] [--rate 80mbit] [--frame 1000]
`testbed clean --prefix tbtc` removes what an interrupted run left.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from testbed.fabric import cpu_latency
from testbed.measure import cpu_windows
from testbed.topology.units import parse_rate

PREFIX = "tbtc"
ARMS = {"inline": 4.0, "timer": 0.995}  # the second link's rate, of the NIC's
SENDER_C = r"""
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {  /* DST SECONDS PAYLOAD: blocking sends, a send buffer of a few frames */
    int s = socket(AF_INET, SOCK_DGRAM, 0), sb = 20000;
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sb, sizeof sb);
    struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons(9)};
    inet_pton(AF_INET, argv[1], &d.sin_addr);
    static char buf[65536];
    int len = atoi(argv[3]);
    long n = 0;
    for (double end = now() + atof(argv[2]); now() < end;)
        n += sendto(s, buf, len, 0, (struct sockaddr *)&d, sizeof d) > 0;
    printf("%ld\n", n);
    return 0;
}
"""


def sh(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def ns(name: str, *args: str) -> str:
    return sh("ip", "netns", "exec", f"{PREFIX}-{name}", *args)


def stat() -> tuple[int, int, float, int]:
    """Kernel and busy jiffies of all CPUs, their idle-state residency (s), and local timer interrupts so far."""
    kernel, busy = cpu_windows.machine_jiffies()
    loc = 0
    with open("/proc/interrupts") as f:
        for line in f:
            if line.split(":")[0].strip() == "LOC":
                loc = sum(int(x) for x in line.split()[1:] if x.isdigit())
    return kernel, busy, cpu_windows.machine_cpuidle_s(), loc


def build(nic_bps: int, port_bps: int, frame: int) -> None:
    for n in "abc":
        sh("ip", "netns", "add", f"{PREFIX}-{n}")
    sh(
        "ip",
        "link",
        "add",
        f"{PREFIX}a0",
        "netns",
        f"{PREFIX}-a",
        "type",
        "veth",
        "peer",
        f"{PREFIX}b0",
        "netns",
        f"{PREFIX}-b",
    )
    sh(
        "ip",
        "link",
        "add",
        f"{PREFIX}b1",
        "netns",
        f"{PREFIX}-b",
        "type",
        "veth",
        "peer",
        f"{PREFIX}c0",
        "netns",
        f"{PREFIX}-c",
    )
    for n, dev, addr in (
        ("a", "a0", "10.9.0.1/24"),
        ("b", "b0", "10.9.0.2/24"),
        ("b", "b1", "10.9.1.1/24"),
        ("c", "c0", "10.9.1.2/24"),
    ):
        ns(n, "ip", "addr", "add", addr, "dev", f"{PREFIX}{dev}")
        ns(n, "ip", "link", "set", f"{PREFIX}{dev}", "up")
    ns("b", "sysctl", "-qw", "net.ipv4.ip_forward=1")
    ns("a", "ip", "route", "add", "default", "via", "10.9.0.2")
    # the frames' next hop is a MAC no device in c has: c drops each on arrival, and sends nothing back
    ns("b", "ip", "neigh", "add", "10.9.1.99", "lladdr", "02:00:00:00:00:99", "dev", f"{PREFIX}b1")
    for n, dev, bps, burst in (("a", "a0", nic_bps, frame * 5 // 4), ("b", "b1", port_bps, 2 * frame)):
        ns(
            n,
            "tc",
            "qdisc",
            "add",
            "dev",
            f"{PREFIX}{dev}",
            "root",
            "tbf",
            "rate",
            f"{bps}bit",
            "burst",
            str(burst),
            "limit",
            str(4 << 20),
        )


def teardown() -> None:
    for n in "abc":
        subprocess.run(["ip", "netns", "del", f"{PREFIX}-{n}"], check=False, capture_output=True)


def one(sender: Path, arm: str, a: argparse.Namespace, nic_bps: int) -> dict[str, Any]:
    build(nic_bps, round(nic_bps * ARMS[arm]), a.frame)
    try:
        time.sleep(0.3)
        t0, (k0, b0, i0, l0) = time.monotonic(), stat()
        sent = int(ns("a", str(sender), "10.9.1.99", str(a.seconds), str(a.frame - 42)))  # 42: Ethernet, IP, UDP
        t1, (k1, b1, i1, l1) = time.monotonic(), stat()
        carried = int(ns("b", "cat", f"/sys/class/net/{PREFIX}b1/statistics/tx_packets"))
    finally:
        teardown()
    hz = os.sysconf("SC_CLK_TCK")
    return {
        "arm": arm,
        "sent": sent,
        "carried": carried,
        "kernel_us_per_frame": (k1 - k0) / hz / carried * 1e6,
        "busy_us_per_frame": (b1 - b0) / hz / carried * 1e6,
        # cpuidle's view: an interrupt taken while a CPU polls is idle there, so it misses most of a timer's cost
        "busy_cpuidle_us_per_frame": ((t1 - t0) * (os.cpu_count() or 1) - (i1 - i0)) / carried * 1e6,
        "timer_irqs_per_frame": (l1 - l0) / carried,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--rate", default="80mbit", help="the NIC's rate (default 80mbit: 10,000 frames/s of 1000 bytes)")
    ap.add_argument("--frame", type=int, default=1000, help="bytes a frame, Ethernet header included (100-9000)")
    a = ap.parse_args()
    try:
        nic_bps = parse_rate(a.rate)
    except ValueError as e:
        print(f"timer_cost: {e}", file=sys.stderr)
        return 2
    if not 100 <= a.frame <= 9000 or a.rounds < 1 or not 0.5 <= a.seconds <= 60:
        print("timer_cost: --frame in [100, 9000], --rounds >= 1, --seconds in [0.5, 60]", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("timer_cost: needs root (namespaces and qdiscs)", file=sys.stderr)
        return 2
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        print("timer_cost: needs a C compiler (cc)", file=sys.stderr)
        return 2
    teardown()
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, cpu_latency.awake():
        src, sender = Path(tmp) / "send.c", Path(tmp) / "send"
        src.write_text(SENDER_C)
        subprocess.run([cc, "-O2", "-o", str(sender), str(src)], check=True)
        for r in range(a.rounds):
            for arm in ARMS if r % 2 == 0 else reversed(ARMS):
                runs.append({"round": r + 1, **one(sender, arm, a, nic_bps)})
                x = runs[-1]
                print(
                    f"round {r + 1} {arm}: {x['kernel_us_per_frame']:.2f} us kernel, "
                    f"{x['timer_irqs_per_frame']:.2f} timer interrupts a frame",
                    file=sys.stderr,
                    flush=True,
                )
    by_arm = {arm: [x for x in runs if x["arm"] == arm] for arm in ARMS}
    diffs = [
        t["kernel_us_per_frame"] - i["kernel_us_per_frame"]
        for i, t in zip(by_arm["inline"], by_arm["timer"], strict=True)
    ]
    out = {
        "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "nic_bps": nic_bps,
        "frame_bytes": a.frame,
        "seconds": a.seconds,
        "clocksource": Path("/sys/devices/system/clocksource/clocksource0/current_clocksource").read_text().strip(),
        "clockevent": Path("/sys/devices/system/clockevents/clockevent0/current_device").read_text().strip(),
        "arms": {
            arm: {
                "kernel_us_per_frame": statistics.median(x["kernel_us_per_frame"] for x in xs),
                "busy_us_per_frame": statistics.median(x["busy_us_per_frame"] for x in xs),
                "busy_cpuidle_us_per_frame": statistics.median(x["busy_cpuidle_us_per_frame"] for x in xs),
                "timer_irqs_per_frame": statistics.median(x["timer_irqs_per_frame"] for x in xs),
            }
            for arm, xs in by_arm.items()
        },
        "timer_minus_inline_us": statistics.median(diffs),
        "timer_over_inline": statistics.median(
            t["kernel_us_per_frame"] / i["kernel_us_per_frame"]
            for i, t in zip(by_arm["inline"], by_arm["timer"], strict=True)
        ),
        "runs": runs,
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
