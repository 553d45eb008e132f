"""The collector: everything a run reads from the kernel, as plain samples.

Per-port queue and link counters (`reset_ports`, `read_ports`), per-flow
receive counters (`read_flows`), the queue time series (`Sampler`), the
per-CPU backlog drops and the Ofan/pOfan pointer values (packets per size
class). Map reads only; the arithmetic on the samples is
testbed.measure.metrics, unit-tested without a kernel.

Queue averages are exact, not sampled: each port keeps the integral of its
occupancy over time (see ebpf/include/queue.h), so the time-weighted average
over the collective is integral / CCT. Queues are empty before the first
packet is sent and after the last one is received, so the integral since the
reset equals the integral over the collective. The paper's mean queue (Thm.
1-2) is over the sending window instead: its integral is read exactly as the
senders return, and the few milliseconds between that read and the last data
frame out are taken from the time series (testbed.measure.metrics.area_at).
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dataplane.compile import Dims
from ..dataplane.maps import (
    HOST_LB_COUNTER_NAMES,
    HOST_LB_COUNTERS,
    RX_ACKS,
    RX_DATA,
    U64,
    AckRx,
    FlowRx,
    Maps,
    PortQ,
    signed,
)
from ..dataplane.switches import lb_switches, n_keys
from ..topology import FatTree, Level
from .metrics import FlowSample, PortSample


def reset_ports(maps: Maps, tree: FatTree) -> int:
    """Start a measurement window on every port: keep the current occupancy,
    zero everything else, restart the integral. Returns the reset time (ns)."""
    now = time.monotonic_ns()
    for p in tree.ports:
        q = maps.port_q.get(p.ifindex)
        occ_p = signed(q.pkts) if q is not None else 0
        occ_b = signed(q.bytes) if q is not None else 0
        maps.port_q.set(
            p.ifindex,
            PortQ(
                pkts=occ_p % U64,
                bytes=occ_b % U64,
                max_pkts=max(occ_p, 0),
                max_bytes=max(occ_b, 0),
                area_pkts=(-occ_p * now) % U64,
                area_bytes=(-occ_b * now) % U64,
            ),
        )
    return now


def read_ports(maps: Maps, tree: FatTree) -> dict[int, PortSample]:
    now = time.monotonic_ns()
    qs = maps.port_q.read_array(Dims.of(tree).n_ifindex)
    out = {}
    for p in tree.ports:
        q = qs[p.ifindex]
        occ_p, occ_b = signed(q.pkts), signed(q.bytes)
        busy = q.busy_ns + (now - q.busy_since if occ_p > 0 and q.busy_since else 0)
        out[p.ifindex] = PortSample(
            ifindex=p.ifindex,
            pkts=occ_p,
            bytes=occ_b,
            max_pkts=q.max_pkts,
            max_bytes=q.max_bytes,
            integral_pkts_ns=signed(q.area_pkts + occ_p * now),
            integral_bytes_ns=signed(q.area_bytes + occ_b * now),
            tx_pkts=q.tx_pkts,
            tx_bytes=q.tx_bytes,
            rx_pkts=q.rx_pkts,
            rx_bytes=q.rx_bytes,
            first_rx_ns=q.first_rx_ns,
            last_rx_ns=q.last_rx_ns,
            first_tx_ns=q.first_tx_ns,
            last_tx_ns=q.last_tx_ns,
            busy_ns=busy,
            busy_periods=q.busy_periods,
            max_giveups=q.max_giveups,
            nic_work_max_ns=q.nic_work_max_ns,
            nic_gap_max_ns=q.nic_gap_max_ns,
            nic_b2b=q.nic_b2b,
            ecn_marked=q.ecn_marked,
            nic_last_data_ns=q.nic_last_data_ns,
            nic_data_bytes=q.nic_data_bytes,
            buf_drops=q.buf_drops,
            buf_ack_drops=q.buf_ack_drops,
            nic_dry_gap_max_ns=q.nic_dry_gap_max_ns,
            nic_held_gap_max_ns=q.nic_held_gap_max_ns,
        )
    return out


ALL_PORT_READINGS_PER_S = 200_000  # budget of the every-port series: k=4 keeps 500 Hz, k=16 (6,144 ports) 32 Hz
WATCH_PORTS = 32  # ports sampled at the full rate between every-port reads
READINGS_PER_HALVING = 20_000_000  # every so many readings the every-port rate halves (a long run stays in memory)


@dataclass
class Sampler:
    """Samples port occupancy (packets, bytes) in a thread, at up to two rates.

    Every port is read every 1/all_hz seconds (one batched map read): all_hz =
    hz while the fabric has at most ALL_PORT_READINGS_PER_S / hz ports (192 at
    500 Hz), lower above that. Between those reads, the `watch` ports with the
    largest exact maximum so far (the kernel's max_pkts, re-ranked at every
    every-port read, ties kept) are read at the full hz, so the busiest queues keep a
    full-rate series on any fabric. Both read the queue map in place (it is
    memory-mapped: no system call per reading) and land in one long series
    of (time, port, packets, bytes), 8 bytes a reading (two int32).

    Memory stays bounded on long runs: after every READINGS_PER_HALVING
    readings the every-port rate halves (the watched ports keep theirs), so a
    run keeps at most about 2 x READINGS_PER_HALVING readings per doubling of
    its length beyond the first (the k=64 leaf-spine's 400 s ECMP run: about
    55 M readings, 0.4 GB, where keeping each reading's whole map entry took
    23 GB and the run was killed). `halvings_s` says when each halving came."""

    maps: Maps
    tree: FatTree
    hz: float = 500.0
    watch: int = WATCH_PORTS
    times_ns: list[int] = field(default_factory=list)
    positions: list[Any] = field(default_factory=list)  # per sample: indices into tree.ports
    pkts: list[Any] = field(default_factory=list)
    bytes: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="queue-sampler", daemon=True)
        self._n = Dims.of(self.tree).n_ifindex
        self._ifx = np.array([p.ifindex for p in self.tree.ports])
        self._all = np.arange(len(self._ifx), dtype=np.int32)
        self.every = max(1, math.ceil(self.hz * len(self._ifx) / ALL_PORT_READINGS_PER_S))
        self.all_hz = self.hz / self.every
        self._watched = self._all[: self.watch]
        self._ticks = 0
        self._readings = 0  # since the last halving
        self.halvings_s: list[float] = []  # seconds after the first reading
        self._view = self.maps.port_q_view(self._n)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop, with one last reading of every port: the series ends on the state after delivery."""
        self._stop.set()
        self._thread.join()
        self._sample(True)

    def _sample(self, every_port: bool) -> None:
        pos = self._all if every_port else self._watched
        idx = self._ifx[pos]
        # only the fields read, gathered column by column (8 bytes a port, not its whole 224-byte entry: at
        # k=16 an every-port read took 1.4 ms, now 40 us), as int32 copies
        pk = self._view["pkts"][idx].view(np.int64).astype(np.int32)
        by = self._view["bytes"][idx].view(np.int64).astype(np.int32)
        t = time.monotonic_ns()
        if every_port:  # the largest maxima; on a tie a port watched already stays, so its series stays whole
            score = 2 * self._view["max_pkts"][idx].astype(np.int64)
            score[self._watched] += 1
            self._watched = np.argsort(-score, kind="stable")[: self.watch].astype(np.int32)
        self.times_ns.append(t)
        self.positions.append(pos)
        self.pkts.append(pk)
        self.bytes.append(by)
        self._readings += len(pos)
        if self._readings >= READINGS_PER_HALVING and not self._stop.is_set():
            self._readings = 0
            self.every *= 2
            self.halvings_s.append((t - self.times_ns[0]) / 1e9)

    def _loop(self) -> None:
        period = 1.0 / self.hz
        nxt = time.monotonic()
        while not self._stop.is_set():
            self._sample(self._ticks % self.every == 0)
            self._ticks += 1
            nxt += period
            delay = nxt - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            else:
                nxt = time.monotonic()

    @property
    def rate_hz(self) -> float:
        """Samples per second achieved (of the watched ports at least)."""
        if len(self.times_ns) < 2:
            return 0.0
        return (len(self.times_ns) - 1) / ((self.times_ns[-1] - self.times_ns[0]) / 1e9)

    def describe(self) -> dict[str, Any]:
        """What the time series holds, for the manifest."""
        return {
            "every_port_hz": self.all_hz,
            "watched_hz": self.hz,
            "watched_ports": min(self.watch, len(self._ifx)),
            "watched_by": "largest exact maximum so far, re-ranked at every every-port reading",
            "achieved_hz": self.rate_hz,
            "ports": len(self._ifx),
            "every_port_hz_halved_at_s": self.halvings_s,
            "readings": sum(len(p) for p in self.positions),
        }

    def port_samples(self, lo_ns: int, hi_ns: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Each port's readings (times, packets) from the last reading at or before `lo_ns` through `hi_ns`,
        by ifindex (a port not read there is absent)."""
        first = max(0, bisect.bisect_right(self.times_ns, lo_ns) - 1)
        last = bisect.bisect_right(self.times_ns, hi_ns)
        got: dict[int, tuple[list[int], list[int]]] = {}
        for i in range(first, last):
            for pos, pk in zip(self.positions[i], self.pkts[i], strict=True):
                ts, ps = got.setdefault(int(self._ifx[pos]), ([], []))
                ts.append(self.times_ns[i])
                ps.append(int(pk))
        return {ifx: (np.array(ts, dtype=np.int64), np.array(ps, dtype=np.int64)) for ifx, (ts, ps) in got.items()}

    def series(self, t0_ns: int) -> dict[str, Any]:
        """The long series as columns: t_s (since t0_ns), position (index into tree.ports), pkts, bytes."""
        if not self.times_ns:
            return {
                "t_s": np.zeros(0),
                "position": np.zeros(0, dtype=np.int32),
                "pkts": np.zeros(0, dtype=np.int32),
                "bytes": np.zeros(0, dtype=np.int32),
            }
        counts = [len(p) for p in self.positions]
        return {
            "t_s": np.repeat((np.array(self.times_ns, dtype=np.int64) - t0_ns) / 1e9, counts),
            "position": np.concatenate(self.positions),
            "pkts": np.concatenate(self.pkts),
            "bytes": np.concatenate(self.bytes),
        }


def read_flows(maps: Maps, max_fid: int) -> dict[int, FlowSample]:
    """Receive counters of flow ids 1..max_fid that received anything (one batched read)."""
    arr = maps.flow_rx.read_array(max_fid + 1)
    out = {}
    for fid in range(1, max_fid + 1):
        f = arr[fid]
        if f.pkts:
            out[fid] = FlowSample(
                fid=fid,
                pkts=f.pkts,
                bytes=f.bytes,
                first_ns=f.first_ns,
                last_ns=f.last_ns,
                ooo=f.ooo,
                max_disp=f.max_disp,
                ce=f.ce,
                uniq=f.uniq,
                dups=f.dups,
            )
    return out


def read_acks(maps: Maps, max_fid: int) -> dict[int, AckRx]:
    """ACK counters (at the senders) of flow ids 1..max_fid that got any ACK."""
    arr = maps.ack_rx.read_array(max_fid + 1)
    return {fid: AckRx.from_buffer_copy(arr[fid]) for fid in range(1, max_fid + 1) if arr[fid].acks}


def reset_flows(maps: Maps, max_fid: int) -> None:
    """Zero the receive and ACK counters of flow ids 0..max_fid and the totals."""
    maps.flow_rx.zero(max_fid + 1)
    maps.ack_rx.zero(max_fid + 1)
    for i in (RX_DATA, RX_ACKS):
        maps.rx_total.set(i, [0] * maps.rx_total.ncpu)


def prepare_transport(maps: Maps, words: list[tuple[int, int]]) -> None:
    """A transport run's receivers: flow fid gets rx_seen words [base, base + n) for `(fid, n)` in `words`,
    zeroed, and fresh receive counters (one batched write of flow_rx)."""
    maps.zero_seen(sum(n for _, n in words))
    rx = (FlowRx * (max(fid for fid, _ in words) + 1))()
    base = 0
    for fid, n in words:
        rx[fid].seen_base, rx[fid].seen_words = base, n
        base += n
    maps.flow_rx.write(rx)


def reset_host_counters(maps: Maps, tree: FatTree) -> None:
    """Zero the host NICs' load-balancing counters and the per (top switch, destination) packet counts."""
    maps.host_lb_cnt.zero(tree.n_hosts * HOST_LB_COUNTERS)
    maps.top_dst_pkts.zero(tree.n_switches * tree.n_hosts)


def read_host_lb(maps: Maps, tree: FatTree) -> dict[str, dict[str, int]]:
    """Per host (that counted anything): its NIC's REPS and labelling counters (shared.h HLB_*)."""
    arr = maps.host_lb_cnt.read_array(tree.n_hosts * HOST_LB_COUNTERS)
    out = {}
    for h in tree.hosts:
        vals = [int(arr[h.nid * HOST_LB_COUNTERS + i]) for i in range(HOST_LB_COUNTERS)]
        if any(vals):
            out[h.name] = dict(zip(HOST_LB_COUNTER_NAMES, vals, strict=False))
    return out


def read_top_dst(maps: Maps, tree: FatTree) -> Any:
    """Packets each top-tier switch (core, or spine of a leaf-spine) forwarded to each host: an array
    [switch id, host id]; rows of other switches are 0."""
    arr = maps.top_dst_pkts.read_array(tree.n_switches * tree.n_hosts)
    return np.ctypeslib.as_array(arr).astype(np.int64).reshape(tree.n_switches, tree.n_hosts)


def received(maps: Maps) -> tuple[int, int]:
    """Data packets and ACKs the hosts have received since the reset (two per-CPU counters)."""
    return maps.rx_total.total(RX_DATA), maps.rx_total.total(RX_ACKS)


def buffer_drops(maps: Maps, tree: FatTree) -> tuple[int, int]:
    """Data packets and ACKs the finite port buffers have dropped since the reset (read in place)."""
    view = maps.port_q_view(Dims.of(tree).n_ifindex)
    return int(view["buf_drops"].sum()), int(view["buf_ack_drops"].sum())


def softnet_drops() -> int:
    """Packets dropped by the per-CPU backlog queues (all namespaces share them)."""
    total = 0
    with open("/proc/net/softnet_stat") as f:
        for line in f:
            total += int(line.split()[1], 16)
    return total


def pointer_values(maps: Maps, tree: FatTree) -> dict[int, list[int]]:
    """All Ofan/pOfan pointer values by switch id: (pipe, pointer id) flattened, per-CPU copies summed."""
    dims = Dims.of(tree)
    shared = maps.ofan_ptr.read_array(tree.n_switches * tree.switch_ports * dims.n_ptr)
    out = {}
    for sw in lb_switches(tree):
        base = sw.nid * tree.switch_ports * dims.n_ptr
        vals = [int(shared[base + i]) for i in range(tree.switch_ports * dims.n_ptr)]
        vals += [sum(maps.ofan_ptr_cpu.get(sw.nid * dims.n_ptr + pid)) for pid in range(dims.n_ptr)]
        out[sw.nid] = vals
    return out


def class_counts(tree: FatTree, before: list[int], after: list[int], sw_level: Level) -> dict[str, int]:
    """Packets per size class through one switch's pointers (each packet advances its pointer by one)."""
    dims = Dims.of(tree)
    nk = n_keys(tree, sw_level)
    data = small = 0
    for block in range(tree.switch_ports + 1):  # every pipe, then the per-CPU set
        for pid in range(2 * nk):
            i = block * dims.n_ptr + pid
            delta = after[i] - before[i]
            if pid < nk:
                data += delta
            else:
                small += delta
    return {"data": data, "small": small}
