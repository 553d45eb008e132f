"""Where a run's NIC time goes, traced: one k=4 Ofan run under kernel
tracepoints, the figures behind docs/methods/choosing-the-rate.md's "Sender threads waking after
the start" (Choosing the rate).

It traces the qdisc watchdog timers (hrtimer_start / hrtimer_expire_entry
for qdisc_watchdog: how late each fired), the host NICs' dequeues
(qdisc_dequeue of a packet that still has its socket: only a host NIC's
egress TBF holds those), and pairs each watchdog with its qdisc (the
dequeue that armed it). It prints one JSON object: the NICs' watchdog
lateness (median, 99th percentile, maximum, in us), and per NIC the gap
between its first and second frame and its lateness at the end against a
strictly periodic NIC started at its first frame (packet times), with the
run's own verdict. Tracing costs CPU per packet, so the run it watches is
slower than an untraced one: read the figures as where time goes, not as a
fidelity measurement.

Usage: sudo .venv/bin/python bench/trace_start.py [--rate 100mbit] [--seed 1] [--size 1MB]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import threading
from collections import Counter, defaultdict
from typing import Any

from bcc import BPF

from testbed.dataplane.compile import QDISC_WATCHDOG_SYMBOL, kernel_symbol
from testbed.fabric.build import Fabric, FabricSpec
from testbed.models.schemes import Scheme
from testbed.run.experiment import run
from testbed.run.params import RunParams
from testbed.topology.units import parse_rate, parse_size
from traffic.packet import DEFAULT_PAYLOAD, FRAME_OVERHEAD

WD, DEQ, ARMED = 0, 1, 2  # event kinds: a watchdog fired; a NIC dequeued; a dequeue that armed a watchdog

PROG = r"""
#include <linux/skbuff.h>
struct ev { u64 ts; u64 a; u64 b; s64 late; u32 kind; u32 pad; };
BPF_RINGBUF_OUTPUT(out, 1 << 14);
BPF_HASH(expiry, u64, s64, 65536);
BPF_PERCPU_ARRAY(armed, u64, 1);
static __always_inline void emit(u32 kind, u64 a, u64 b, s64 late) {
    struct ev *e = out.ringbuf_reserve(sizeof(struct ev));
    if (!e) return;
    e->ts = bpf_ktime_get_ns(); e->kind = kind; e->a = a; e->b = b; e->late = late;
    out.ringbuf_submit(e, 0);
}
TRACEPOINT_PROBE(timer, hrtimer_start) {
    if ((u64)args->function != WDFN) return 0;
    u64 t = (u64)args->hrtimer; s64 x = args->softexpires; int z = 0;
    expiry.update(&t, &x);
    u64 *l = armed.lookup(&z); if (l) *l = t;
    return 0;
}
TRACEPOINT_PROBE(timer, hrtimer_expire_entry) {
    if ((u64)args->function != WDFN) return 0;
    u64 t = (u64)args->hrtimer; s64 *x = expiry.lookup(&t);
    if (x) emit(0, t, 0, args->now - *x);
    return 0;
}
TRACEPOINT_PROBE(qdisc, qdisc_dequeue) {
    struct sk_buff *skb = (struct sk_buff *)args->skbaddr;
    int z = 0;
    if (!skb) {  /* nothing dequeued: the TBF armed its watchdog just before */
        u64 *l = armed.lookup(&z);
        if (l && *l) { emit(2, (u64)args->qdisc, *l, 0); *l = 0; }
        return 0;
    }
    struct sock *sk = NULL;
    bpf_probe_read_kernel(&sk, sizeof(sk), &skb->sk);
    if (sk) emit(1, (u64)args->qdisc, 0, 0);
    return 0;
}
"""


class Ev(ctypes.Structure):
    _fields_ = [
        ("ts", ctypes.c_uint64),
        ("a", ctypes.c_uint64),
        ("b", ctypes.c_uint64),
        ("late", ctypes.c_int64),
        ("kind", ctypes.c_uint32),
        ("pad", ctypes.c_uint32),
    ]


def trace_run(fab: Fabric, p: RunParams) -> tuple[dict[str, Any], list[tuple[int, int, int, int, int]]]:
    b = BPF(text=PROG.replace("WDFN", f"{kernel_symbol(QDISC_WATCHDOG_SYMBOL)}ULL"))
    events: list[tuple[int, int, int, int, int]] = []

    def keep(ctx: Any, data: Any, size: int) -> None:
        e = ctypes.cast(data, ctypes.POINTER(Ev)).contents
        events.append((e.ts, e.kind, e.a, e.b, e.late))

    b["out"].open_ring_buffer(keep)
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            b.ring_buffer_poll(50)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        result = run(fab, p).to_json()
    finally:
        done.set()
        poller.join()
        b.ring_buffer_consume()
        b.cleanup()
    return result, events


def analyse(events: list[tuple[int, int, int, int, int]], pkt_ns: float) -> dict[str, Any]:
    departures: dict[int, list[int]] = defaultdict(list)
    for ts, kind, a, _, _ in events:
        if kind == DEQ:
            departures[a].append(ts)
    nics = {q for q, d in departures.items() if len(d) > 1}
    # a watchdog lives inside its TBF's private data: one fixed offset from the qdisc
    offset = Counter(timer - q for _, kind, q, timer, _ in events if kind == ARMED and q in nics).most_common(1)
    nic_timers = {q + offset[0][0] for q in nics} if offset else set()
    late_us = sorted(late / 1e3 for _, kind, a, _, late in events if kind == WD and a in nic_timers)
    per_nic = []
    for q in nics:
        d = sorted(departures[q])
        per_nic.append(
            {
                "first_frame_us": d[0],
                "second_frame_gap_pkts": (d[1] - d[0]) / pkt_ns,
                "late_at_end_pkts": (d[-1] - d[0]) / pkt_ns - (len(d) - 1),
            }
        )
    t0 = min(x["first_frame_us"] for x in per_nic)
    for x in per_nic:
        x["first_frame_us"] = round((x["first_frame_us"] - t0) / 1e3, 1)
    per_nic.sort(key=lambda x: x["first_frame_us"])
    gaps = [x["second_frame_gap_pkts"] for x in per_nic]
    return {
        "nics": len(nics),
        "nic_watchdog_late_us": {
            "count": len(late_us),
            "median": statistics.median(late_us) if late_us else None,
            "p99": late_us[int(0.99 * (len(late_us) - 1))] if late_us else None,
            "max": late_us[-1] if late_us else None,
        },
        "second_frame_gap_pkts": {"min": min(gaps), "median": statistics.median(gaps), "max": max(gaps)},
        "per_nic": per_nic,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=parse_rate, default=100_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--size", type=parse_size, default=1 << 20)
    a = ap.parse_args()
    pkt_ns = (DEFAULT_PAYLOAD + FRAME_OVERHEAD) * 8e9 / a.rate
    with Fabric(FabricSpec(k=4, prefix="btrace", rate_bps=a.rate)) as fab:
        result, events = trace_run(fab, RunParams("permutation", a.size, 1.0, Scheme.OFAN, a.seed))
    f = result["fidelity"]
    print(
        json.dumps(
            {
                "bench": "trace_start",
                "rate_bps": a.rate,
                "seed": a.seed,
                "packet_us": pkt_ns / 1e3,
                "verdict": {
                    "valid": f["valid"],
                    "reasons": f["reasons"],
                    "nic_stall_pkts": f["nic_stall_pkts"],
                    "start_skew_pkts": f["start_skew_pkts"],
                },
                **analyse(events, pkt_ns),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
