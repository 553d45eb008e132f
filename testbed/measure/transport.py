"""What a transport run (--cc) measured about its own loop: the window
traces, per-flow recovery counters, and how late the user-space transport
acted, for the results and the verdict.

The sender writes one 32-byte record per ACK it acted on, per fast
retransmission and per timeout (traffic/lateness.c; struct trace_rec in traffic/sender.h); here
they become the run's `windows` table. Lateness comes from the sender's
histograms (1 us buckets): ACKs against their due time (arrival at the NIC
plus the emulated base RTT), and packets against the moment an ACK opened
their window. Together they are how far the loop's round trip strayed from
the model's: an ACK acted on d late, whose packet left s after the window
opened, made that round trip d + s longer than the fabric and the base RTT
alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from traffic.sender import FlowSent, Lateness

TRACE_DTYPE = np.dtype(
    [
        ("t_ns", "<u8"),
        ("fid", "<u4"),
        ("psn", "<u4"),
        ("cwnd", "<f4"),
        ("rtt_ns", "<u4"),
        ("inflight", "<u4"),
        ("ecn", "u1"),
        ("rule", "u1"),
        ("pad", "<u2"),
    ]
)
# traffic/cca.h CCA_R_*; 255: an ACK that fed nothing (its packet had been acknowledged before)
RULES = {
    0: "increase",
    1: "decrease",
    2: "held",
    3: "fair",
    4: "proportional",
    5: "fast",
    6: "no-change",
    7: "loss",
    8: "timeout",
    9: "quick-adapt",
    255: "ignored",
}


def read_trace(path: Path, t0_ns: int, pkt_ns: float) -> pd.DataFrame:
    """The window trace: one row per record, times from the run's first packet, round trips in packet times."""
    raw = np.fromfile(path, dtype=TRACE_DTYPE) if path.exists() else np.zeros(0, dtype=TRACE_DTYPE)
    return pd.DataFrame(
        {
            "t_s": (raw["t_ns"].astype(np.int64) - t0_ns) / 1e9,
            "fid": raw["fid"],
            "psn": raw["psn"],
            "cwnd_pkts": raw["cwnd"].astype(np.float64),
            "rtt_pkts": raw["rtt_ns"] / pkt_ns,
            "inflight": raw["inflight"],
            "ecn": raw["ecn"].astype(bool),
            "rule": pd.Categorical([RULES.get(int(r), str(r)) for r in raw["rule"]], categories=list(RULES.values())),
        }
    )


@dataclass(frozen=True)
class LoopTiming:
    """The transport's lateness in packet times at line rate (the verdict's figures)."""

    ack_late_p50_pkts: float
    ack_late_p99_pkts: float
    ack_late_max_pkts: float
    send_late_p50_pkts: float
    send_late_p99_pkts: float
    send_late_max_pkts: float
    ring_overflow: int  # ACK events the transport could not hold
    incomplete_flows: int  # flows whose every packet was not received (deadline reached)
    base_rtt_pkts: float  # the emulated base RTT the tolerances scale with

    @classmethod
    def of(cls, lat: Lateness, pkt_ns: float, incomplete: int, base_rtt_ns: float) -> LoopTiming:
        return cls(
            ack_late_p50_pkts=lat.ack_p50_ns / pkt_ns,
            ack_late_p99_pkts=lat.ack_p99_ns / pkt_ns,
            ack_late_max_pkts=lat.ack_max_ns / pkt_ns,
            send_late_p50_pkts=lat.send_p50_ns / pkt_ns,
            send_late_p99_pkts=lat.send_p99_ns / pkt_ns,
            send_late_max_pkts=lat.send_max_ns / pkt_ns,
            ring_overflow=lat.ring_overflow,
            incomplete_flows=incomplete,
            base_rtt_pkts=base_rtt_ns / pkt_ns,
        )


def summary(
    trace: pd.DataFrame,
    sent: dict[int, FlowSent],
    timing: LoopTiming,
    described: dict[str, Any],
    rx_uniq: int,
    rx_dups: int,
    buffer_drops: int,
    ack_drops: int,
) -> dict[str, Any]:
    """One run's transport figures (the Result's `transport`)."""
    rules = trace["rule"].value_counts() if len(trace) else pd.Series(dtype=int)
    return {
        **{k: v for k, v in described.items() if k != "options"},
        "retransmits": sum(f.retransmits for f in sent.values()),
        "fast_retransmits": sum(f.fast_retransmits for f in sent.values()),
        "timeouts": sum(f.timeouts for f in sent.values()),
        "spurious_retransmits": sum(f.spurious for f in sent.values()),
        "received_unique": rx_uniq,
        "received_duplicates": rx_dups,
        "buffer_drops": buffer_drops,
        "buffer_ack_drops": ack_drops,
        "rules": {str(k): int(v) for k, v in rules.items() if v},
        "cwnd_final_mean_pkts": float(np.mean([f.final_cwnd for f in sent.values()])) if sent else 0.0,
        "cwnd_min_pkts": float(trace["cwnd_pkts"].min()) if len(trace) else 0.0,
        "timing": timing.__dict__,
    }
