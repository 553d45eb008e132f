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
reset equals the integral over the collective.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ..dataplane.compile import Dims
from ..dataplane.maps import U64, Maps, PortQ, signed
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
        maps.port_q.set(p.ifindex, PortQ(pkts=occ_p % U64, bytes=occ_b % U64, max_pkts=max(occ_p, 0),
                                         max_bytes=max(occ_b, 0), area_pkts=(-occ_p * now) % U64,
                                         area_bytes=(-occ_b * now) % U64))
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
            p.ifindex, occ_p, occ_b, q.max_pkts, q.max_bytes,
            signed(q.area_pkts + occ_p * now), signed(q.area_bytes + occ_b * now),
            q.tx_pkts, q.tx_bytes, q.rx_pkts, q.rx_bytes, q.first_rx_ns, q.last_rx_ns, q.first_tx_ns, q.last_tx_ns,
            busy, q.busy_periods)
    return out


@dataclass
class Sampler:
    """Samples every port's occupancy (packets, bytes) at `hz` in a thread,
    one batched map read per sample."""

    maps: Maps
    tree: FatTree
    hz: float = 500.0
    times_ns: list[int] = field(default_factory=list)
    pkts: list[list[int]] = field(default_factory=list)
    bytes: list[list[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="queue-sampler", daemon=True)
        self._n = Dims.of(self.tree).n_ifindex
        self._idx = [p.ifindex for p in self.tree.ports]

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop, with one last sample: the series ends on the state after delivery."""
        self._stop.set()
        self._thread.join()
        self._sample()

    def _sample(self) -> None:
        qs = self.maps.port_q.read_array(self._n)
        self.times_ns.append(time.monotonic_ns())
        self.pkts.append([signed(qs[i].pkts) for i in self._idx])
        self.bytes.append([signed(qs[i].bytes) for i in self._idx])

    def _loop(self) -> None:
        period = 1.0 / self.hz
        nxt = time.monotonic()
        while not self._stop.is_set():
            self._sample()
            nxt += period
            delay = nxt - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            else:
                nxt = time.monotonic()

    @property
    def rate_hz(self) -> float:
        if len(self.times_ns) < 2:
            return 0.0
        return (len(self.times_ns) - 1) / ((self.times_ns[-1] - self.times_ns[0]) / 1e9)


def read_flows(maps: Maps) -> dict[int, FlowSample]:
    out = {}
    for fid in maps.flow_rx.keys():
        f = maps.flow_rx.get(fid)
        if f is not None:
            out[fid] = FlowSample(fid, f.pkts, f.bytes, f.first_ns, f.last_ns, f.ooo, f.max_disp)
    return out


def received_packets(maps: Maps) -> int:
    total = 0
    for fid in maps.flow_rx.keys():
        f = maps.flow_rx.get(fid)
        if f is not None:
            total += f.pkts
    return total


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
