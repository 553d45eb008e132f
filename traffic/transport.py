"""The user-space transport's configuration: which congestion controller,
the emulated base RTT, and every constant, scaled to the emulated line rate.

With `--cc none` (the default) none of this exists: the senders blast at
the paced rate as before. With a CCA, each flow is window-limited and
ACK-clocked (traffic/transport.h, traffic/cca.h): the kernel hands every
ACK to the sender through a ring buffer (ebpf/include/transport.h) and the
sender acts on it its flow's base RTT after it reached the sender's NIC (its
path's propagation round trip by default, testbed.run.params).

Units: windows in packets of the run's payload (the MSS), times in ns. The
paper's baselines (section 6) are kept in packets and packet times, not in
absolute time: a base RTT of 150 packet times, 800 KB buffers, ECN at 80 KB.

Constants (docs/traffic.md, "Congestion control", gives the reasons):
- every CCA: the window starts at one BDP (line rate x the flow's base RTT)
  and stays within [1 packet, 1.5 BDP]; minimum retransmission timeout two
  base RTTs plus the time to drain two full port buffers.
- dctcp: g = 1/16, alpha starts at 1 (as Linux), one cut per RTT, additive
  increase of one packet per RTT, duplicate-ACK threshold 3 + the flow's
  number of paths (the paper's htsim setup).
- swift, nscc: loss is declared after a quarter of a BDP of duplicate
  ACKs (at least dctcp's threshold), as a transport built for spraying
  tolerates reordering (RACK's quarter-RTT window); dctcp keeps 3 + paths.
- swift: target RTT = base RTT + 20 packet times of queueing (the 80 KB ECN
  threshold at 4 KB packets, so that DCTCP and Swift aim at the same
  standing queue), ai = 1 packet per RTT, beta = 0.8, max_mdf = 0.5; no flow
  or hop scaling (every flow of a collective has the same size and path
  length class).
- nscc: HOST-SCHEMES.md's constants, from uet-htsim's reference (100 Gbit/s,
  12 us): a = BDP / 150 KB, b = target / base RTT (12 us of the reference
  maps to our base RTT), target queueing delay = one base RTT (no trimming),
  alpha = 4 a b / target, fi = 5 a, eta = 0.15 a, gamma = 0.8,
  fi_scale = 0.25 a, delay EWMA 0.0125, fast-increase delay base RTT / 12.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .packet import Packetizer

CCAS = ("none", "dctcp", "swift", "nscc")
DEFAULT_BASE_RTT_PKTS = 150.0  # the paper's propagation RTT, in packet times (section 6)
CC_BUFFER_BYTES = 800 * 1024  # the paper's per-port buffer: the default with a CCA
DUPACK_BASE = 3  # dctcp's duplicate-ACK threshold: 3 + the number of paths
MAX_CWND_BDP = 1.5
SWIFT_TARGET_Q_PKTS = 20.0
NSCC_REF_BDP_BYTES = 100e9 / 8 * 12e-6  # uet-htsim's reference: 100 Gbit/s x 12 us = 150 KB
TRACE_CAP = 2_000_000  # window-trace records per run (32 bytes each, written as they come)
RING_BYTES = 256 * 4096  # ack_events (ebpf/include/shared.h ACK_EVENT_PAGES)


class TransportError(ValueError):
    """Invalid transport parameters."""


@dataclass(frozen=True)
class Transport:
    """One run's transport: `cc` and the emulated base RTT, on a fabric of `rate_bps` carrying `payload`-byte
    packets, with port buffers of `buffer_bytes`."""

    cc: str
    base_rtt_ns: int
    rate_bps: int
    payload: int
    buffer_bytes: int
    wire_overhead: int = 0  # bytes a link charges per frame beyond its length (packet.WIRE_EXTRA)

    def __post_init__(self) -> None:
        if self.cc not in CCAS:
            raise TransportError(f"unknown congestion control {self.cc!r} (one of {', '.join(CCAS)})")
        if self.base_rtt_ns < 0:
            raise TransportError(f"the base RTT must be >= 0, got {self.base_rtt_ns} ns")

    @property
    def on(self) -> bool:
        return self.cc != "none"

    @property
    def pkt_ns(self) -> float:
        """One data frame's line time at line rate."""
        return Packetizer(self.payload, self.wire_overhead).wire_len(self.payload) * 8 / self.rate_bps * 1e9

    @property
    def bdp_pkts(self) -> float:
        return max(1.0, self.base_rtt_ns / self.pkt_ns)

    def dupthresh(self, paths: int) -> int:
        """Duplicate ACKs that declare a packet lost: dctcp 3 + the flow's paths (the paper's htsim setup);
        swift and nscc, built for spraying, tolerate a quarter of a BDP of reordering (RACK's reordering
        window of a quarter RTT), and never less than dctcp."""
        base = DUPACK_BASE + paths
        return base if self.cc == "dctcp" else max(base, math.ceil(self.bdp_pkts / 4))

    def min_rto_ns(self) -> float:
        drain_ns = self.buffer_bytes * 8 / self.rate_bps * 1e9
        return 2 * self.base_rtt_ns + 2 * drain_ns

    def options(self) -> list[str]:
        """The sender's KEY=VALUE arguments (traffic/sender.c)."""
        bdp = self.bdp_pkts
        base = max(float(self.base_rtt_ns), self.pkt_ns)
        a = bdp * self.payload / NSCC_REF_BDP_BYTES
        target = base  # nscc: one base RTT of queueing delay (b = 1)
        opts = {
            "cc": self.cc,
            "ring_bytes": RING_BYTES,
            "base_ns": self.base_rtt_ns,
            "pkt_ns": round(self.pkt_ns),
            "min_rto_ns": round(self.min_rto_ns()),
            "trace_cap": TRACE_CAP,
            "init_cwnd": f"{bdp:.4f}",
            "min_cwnd": "1",
            "max_cwnd": f"{MAX_CWND_BDP * bdp:.4f}",
            "dctcp_g": f"{1 / 16:.6f}",
            "swift_target_q_ns": round(SWIFT_TARGET_Q_PKTS * self.pkt_ns),
            "swift_ai": "1",
            "swift_beta": "0.8",
            "swift_max_mdf": "0.5",
            "nscc_target_ns": round(target),
            "nscc_alpha": f"{4 * a / target:.6g}",
            "nscc_fi": f"{5 * a:.6g}",
            "nscc_eta": f"{0.15 * a:.6g}",
            "nscc_gamma": "0.8",
            "nscc_fi_scale": f"{0.25 * a:.6g}",
            "nscc_ewma": "0.0125",
            "nscc_fast_ns": round(base / 12),
        }
        return [f"{k}={v}" for k, v in opts.items()]

    def describe(self) -> dict[str, object]:
        """For the manifest: what the sender was told, and the equivalences it rests on."""
        return {
            "cc": self.cc,
            "base_rtt_ns": self.base_rtt_ns,
            "base_rtt_pkts": self.base_rtt_ns / self.pkt_ns,
            "bdp_pkts": self.bdp_pkts,
            "buffer_bytes": self.buffer_bytes,
            "min_rto_ns": self.min_rto_ns(),
            "base_rtt_where": "return path: each ACK is acted on its flow's base RTT after it reached its sender "
            "(its path's propagation round trip, or one --base-rtt for all); the constants "
            "(window bounds, timeouts, NSCC's scaling) from the longest, base_rtt_ns",
            "options": self.options(),
        }


def n_paths(same_edge: bool, same_pod: bool, w: int) -> int:
    """Equal-cost paths between two hosts of a fat tree (leaf-spines are one pod): 1 under one edge switch,
    w within a pod, w * w between pods."""
    return 1 if same_edge else w if same_pod else w * w
