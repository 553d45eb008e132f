"""Measurements as arithmetic: from the collector's samples to the numbers
a run reports (CCT lower bound, queues per port and stage, worst link
overload, utilisation, host pacing, service of busy links). Pure: no kernel,
unit-tested on hand-made samples.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from traffic.packet import Packetizer
from traffic.workloads import Flow

from ..topology import FatTree, Stage
from ..topology.timebase import CCT_LEGS, path_links


@dataclass(frozen=True)
class PortSample:
    ifindex: int
    pkts: int
    bytes: int
    max_pkts: int
    max_bytes: int
    integral_pkts_ns: int  # occupancy-time integral since the reset
    integral_bytes_ns: int
    tx_pkts: int
    tx_bytes: int
    rx_pkts: int
    rx_bytes: int
    first_rx_ns: int
    last_rx_ns: int
    first_tx_ns: int
    last_tx_ns: int
    busy_ns: int = 0
    busy_periods: int = 0
    max_giveups: int = 0
    nic_work_max_ns: int = 0  # host NIC queues only: see ebpf/include/queue.h, queue_nic_depart
    nic_gap_max_ns: int = 0
    nic_b2b: int = 0
    ecn_marked: int = 0  # packets marked CE as they joined this queue
    nic_last_data_ns: int = 0  # host NIC queues: the last data frame's arrival at the switch (0: no data frame)
    nic_data_bytes: int = 0  # the bytes the NIC had sent up to it, ACKs included
    buf_drops: int = 0  # data packets dropped because the port's finite buffer was full
    buf_ack_drops: int = 0  # ACKs dropped so
    nic_dry_gap_max_ns: int = 0  # host NIC queues: longest gap between data frames that began with no data frame queued
    nic_held_gap_max_ns: int = 0  # and the longest that began with data frames waiting (the NIC's own)

    def nic_span(self, overhead: int = 0) -> tuple[int, int]:
        """A NIC's own sending: from its first frame to its last data frame, and the bytes of line time it sent
        in between (ACKs sent after its last data frame left are not its lateness; the kernel counts that
        record's bytes with the wire's overhead); all frames without that record, `overhead` bytes each."""
        if self.nic_last_data_ns:
            return self.nic_last_data_ns - self.first_rx_ns, self.nic_data_bytes
        return self.last_rx_ns - self.first_rx_ns, self.rx_bytes + self.rx_pkts * overhead


@dataclass(frozen=True)
class FlowSample:
    fid: int
    pkts: int
    bytes: int
    first_ns: int
    last_ns: int
    ooo: int
    max_disp: int
    ce: int = 0  # arrivals marked CE
    uniq: int = 0  # transport runs: distinct PSNs received (what the application got)
    dups: int = 0  # transport runs: arrivals of a PSN received before


def cct_lower_bound_s(
    flows: list[Flow],
    pk: Packetizer,
    rate_bps: int,
    host_rate_bps: int,
    burst_bytes: int,
    ack_frame_bytes: int = 0,
    nic_burst_bytes: int | None = None,
    shift_s: Mapping[int, float] | None = None,
    after_s: Mapping[int, float] | None = None,
) -> float:
    """No collective can finish sooner: each host's NIC (a token bucket of
    `burst_bytes` at the paced rate) sends at most burst + rate * t bytes in
    time t, and each host's last link (a token bucket at line rate) delivers at
    most as much. A TBF with tokens releases a packet at once, so an emulated
    hop adds no serialisation delay of its own: the bound has no per-hop term
    (docs/measurement.md). The same bound serves every
    workload (the paper uses naive bounds beyond permutations). The NICs'
    bucket is `nic_burst_bytes` (default: the links' `burst_bytes`). Bytes are
    of line time: each frame's and ACK's (`ack_frame_bytes`) with the wire's
    overhead (pk.wire_overhead).

    Flows that start late (start_bits: their start at line rate): a host
    cannot send, nor its link deliver, a flow's bytes before it starts, so for
    each start time t the bytes of the flows starting at t or later need t
    plus their sending time.

    `shift_s` (flow id -> seconds): what propagation adds to that flow's
    completion (propagation_shift_s). The last of a host's bytes completes a
    flow at least the smallest shift among the flows it carries later, so
    each host's term grows by that; without it every shift is 0.

    Chained flows (`Flow.after`, FSDP's ring steps): a flow cannot start
    before the flow it waits for was delivered (its own sending time after
    its own start) plus `after_s[fid]` (the propagation its input still had
    to cross), so the chain's critical path is a bound too: the latest, over
    chained flows, of its earliest delivery plus its shift."""
    nic_burst = burst_bytes if nic_burst_bytes is None else nic_burst_bytes
    shift = shift_s or {}
    out: dict[int, list[tuple[float, int, float]]] = {}  # host -> (start, bytes, shift) it sends
    into: dict[int, list[tuple[float, int, float]]] = {}  # and receives
    for f in flows:
        t = f.start_bits / rate_bps
        b = pk.wire_bytes(f.size_bytes)
        a = pk.count(f.size_bytes) * ack_frame_bytes
        d = shift.get(f.fid, 0.0)
        out.setdefault(f.src, []).append((t, b, d))
        into.setdefault(f.dst, []).append((t, b, d))
        if a:
            out.setdefault(f.dst, []).append((t, a, d))
            into.setdefault(f.src, []).append((t, a, d))

    def need(items: list[tuple[float, int, float]], burst: int, rate: int) -> float:
        best, later, least = 0.0, 0, float("inf")
        for t, b, d in sorted(items, key=lambda x: x[0], reverse=True):  # latest start first
            later += b  # bytes starting at t or after
            least = min(least, d)
            best = max(best, t + max(0, later - burst) * 8 / rate + least)
        return best

    hosts = max(
        *(need(v, nic_burst, host_rate_bps) for v in out.values()),
        *(need(v, burst_bytes, rate_bps) for v in into.values()),
    )
    if not any(f.after for f in flows):
        return hosts
    wait = after_s or {}
    delivered: dict[int, float] = {}  # fid -> earliest delivery of its last byte, without its shift
    for f in sorted(flows, key=lambda x: x.fid):  # a chain's flows come after the flows they wait for
        b = pk.wire_bytes(f.size_bytes)
        before = delivered.get(f.after)  # a flow it waits for that is not among these: no wait
        ready = max(f.start_bits / rate_bps, before + wait.get(f.fid, 0.0) if before is not None else 0.0)
        delivered[f.fid] = ready + max(
            max(0, b - nic_burst) * 8 / host_rate_bps, max(0, b - burst_bytes) * 8 / rate_bps
        )
    return max(hosts, *(t + shift.get(fid, 0.0) for fid, t in delivered.items()))


def propagation_shift_s(tree: FatTree, flows: Iterable[Flow], link_s: float) -> dict[int, float]:
    """What propagation adds to each flow's completion: its path's links x the per-link delay, twice
    (CCT_LEGS: the CCT ends at the last ACK, the paper's, with or without ACKs in the run). Exact where every
    packet reaching a queue crossed as many links before it as the others there (inter-pod permutations);
    elsewhere an approximation whose error the ideal fabric measures (docs/methods/timebase.md)."""
    return {f.fid: CCT_LEGS * path_links(tree, f.src, f.dst) * link_s for f in flows}


def chain_wait_s(tree: FatTree, flows: Iterable[Flow], link_s: float) -> dict[int, float]:
    """Chained flows: how long after the flow it waits for arrived in full (as the kernel delivered it) each may
    start: that flow's one-way propagation, which its last packet had still to cross."""
    by_fid = {f.fid: f for f in flows}
    return {
        f.fid: path_links(tree, by_fid[f.after].src, by_fid[f.after].dst) * link_s for f in by_fid.values() if f.after
    }


def completion_ns(ends_ns: Mapping[int, int], shift_s: Mapping[int, float]) -> int:
    """The collective's last completion (CLOCK_MONOTONIC ns): each flow's last arrival plus its shift (flows
    that delivered nothing have no end)."""
    return max((round(t + shift_s.get(fid, 0.0) * 1e9) for fid, t in ends_ns.items() if t), default=0)


@dataclass(frozen=True)
class PortQueue:
    port: str
    stage: str
    avg_pkts: float
    max_pkts: int
    avg_bytes: float
    max_bytes: int
    tx_pkts: int
    ecn_marked: int = 0
    drops: int = 0  # packets (data and ACKs) its finite buffer dropped
    avg_sending_pkts: float = 0.0  # time-averaged over the sending window (Thm. 1-2's q(m)); 0: not known


@dataclass(frozen=True)
class SendingWindow:
    """The window over which the paper averages a queue (Thm. 1-2: until every host has finished sending):
    from the first frame out to the last data frame leaving a sender's NIC (`span_ns`), with each port's
    occupancy-time integral at its end (packet-ns, by ifindex)."""

    span_ns: int
    area_pkts_ns: Mapping[int, float]


def step_integral(times: np.ndarray, occ: np.ndarray, before: float, a: int, b: int) -> float:
    """The integral over [a, b] of a step function sampled at `times` (sorted; each sample holds until the
    next), worth `before` until the first sample."""
    if b <= a:
        return 0.0
    inside = (times > a) & (times < b)
    t = np.concatenate(([a], times[inside], [b])).astype(np.float64)
    earlier = occ[times <= a]
    v = np.concatenate(([earlier[-1] if len(earlier) else before], occ[inside])).astype(np.float64)
    return float(np.sum(v * np.diff(t)))


def area_at(
    sample: PortSample, t_read_ns: int, t_ns: int, times: np.ndarray, occ: np.ndarray, max_pkts: int | None = None
) -> float:
    """A port's occupancy-time integral at `t_ns`, from the exact one read at `t_read_ns` (`sample`): the
    stretch between the two is taken from the sampled occupancy (`times`, `occ`), closed by the exact
    occupancy read. The stretch is the lag between the last frame out and the read, milliseconds against a
    window of hundreds, so the sampling's error on it is small next to the exact rest. A sampled reading outside
    [0, `max_pkts`] (the port's exact maximum) cannot be its occupancy and is clipped into it: an unlocked read
    of the queue map was once seen at -123,000 packets on a host port, 1 run in 3."""
    if max_pkts is not None:
        occ = np.clip(occ, 0, max_pkts)
    t = np.concatenate((times, [t_read_ns]))
    v = np.concatenate((occ, [sample.pkts]))
    order = np.argsort(t, kind="stable")  # the read after a sample of the same time: it is the later
    t, v = t[order], v[order]
    a, b = sorted((t_ns, t_read_ns))
    stretch = step_integral(t, v, float(v[0]), a, b)
    return sample.integral_pkts_ns + stretch if t_ns >= t_read_ns else sample.integral_pkts_ns - stretch


def port_queues(
    tree: FatTree, ports: Mapping[int, PortSample], window_ns: int, sending: SendingWindow | None = None
) -> list[PortQueue]:
    out = []
    for p in tree.ports:
        s = ports[p.ifindex]
        out.append(
            PortQueue(
                port=p.label,
                stage=p.stage.label,
                avg_pkts=s.integral_pkts_ns / window_ns if window_ns > 0 else 0.0,
                avg_sending_pkts=sending.area_pkts_ns[p.ifindex] / sending.span_ns
                if sending is not None and sending.span_ns > 0
                else 0.0,
                max_pkts=s.max_pkts,
                avg_bytes=s.integral_bytes_ns / window_ns if window_ns > 0 else 0.0,
                max_bytes=s.max_bytes,
                tx_pkts=s.tx_pkts,
                ecn_marked=s.ecn_marked,
                drops=s.buf_drops + s.buf_ack_drops,
            )
        )
    return out


def stage_queues(queues: Iterable[PortQueue]) -> dict[str, dict[str, float]]:
    """Per stage: mean of the ports' time-averaged queues (over the kernel's window, and over the sending
    window), and the largest maximum."""
    acc: dict[str, list[PortQueue]] = {s.label: [] for s in Stage}
    for q in queues:
        acc[q.stage].append(q)
    return {
        st: {
            "avg_pkts": sum(q.avg_pkts for q in qs) / len(qs) if qs else 0.0,
            "avg_sending_pkts": sum(q.avg_sending_pkts for q in qs) / len(qs) if qs else 0.0,
            "max_pkts": max((q.max_pkts for q in qs), default=0),
        }
        for st, qs in acc.items()
    }


def pacing_errors(
    tree: FatTree,
    flows: Iterable[Flow],
    ports: Mapping[int, PortSample],
    host_rate_bps: int,
    burst_bytes: int,
    overhead: int = 0,
) -> dict[str, float]:
    """Achieved / configured rate - 1 for each sending host NIC, measured from
    the arrival times of its frames at its edge switch, from its first frame to
    its last data frame (nic_span): the time a strictly periodic NIC (a token
    bucket of `burst_bytes` at the paced rate, which starts full) needs for
    those bytes, over the time it took."""
    out = {}
    for src in sorted({f.src for f in flows}):
        host = tree.hosts[src]
        s = ports[tree.host_port(host.name).ifindex]
        span, sent = s.nic_span(overhead)
        if s.rx_pkts < 2 or span <= 0:
            continue
        ideal = max(0, sent - burst_bytes) * 8e9 / host_rate_bps  # ns a strictly periodic NIC needs
        out[host.name] = ideal / span - 1.0
    return out


def pacing_spans_pkts(
    tree: FatTree, flows: Iterable[Flow], ports: Mapping[int, PortSample], pk: Packetizer, host_rate_bps: int
) -> dict[str, float]:
    """Each sending NIC's span (nic_span) in packet times at the paced rate: how much time its pacing error is
    over."""
    t = packet_time_ns(pk, host_rate_bps)
    return {
        name: s.nic_span(pk.wire_overhead)[0] / t
        for name, s in _source_ports(tree, flows, ports).items()
        if s.rx_pkts >= 2 and t > 0
    }


SWITCH_STAGES = (Stage.EDGE_AGG, Stage.AGG_CORE, Stage.CORE_AGG, Stage.AGG_EDGE)


def worst_overload(tree: FatTree, ports: Mapping[int, PortSample]) -> dict[str, float]:
    """Per stage, the paper's Fig. 3 metric: each link's bytes divided by the
    ideal uniform share of its stage (the stage's bytes over its links), minus
    one; the worst link of the stage. 0 means perfectly even."""
    out = {}
    for st in Stage:
        carried = [ports[p.ifindex].tx_bytes for p in tree.ports if p.stage is st]
        total = sum(carried)
        out[st.label] = max(c / (total / len(carried)) - 1.0 for c in carried) if total else 0.0
    return out


def utilisation(
    tree: FatTree, ports: Mapping[int, PortSample], rate_bps: int, window_ns: int, overhead: int = 0
) -> dict[str, float]:
    """Per port: bytes of line time carried (`overhead` per frame) / (line rate x the window)."""
    if window_ns <= 0:
        return {p.label: 0.0 for p in tree.ports}
    cap = rate_bps / 8 * window_ns / 1e9
    return {p.label: (ports[p.ifindex].tx_bytes + ports[p.ifindex].tx_pkts * overhead) / cap for p in tree.ports}


def delivered_utilisation(
    tree: FatTree,
    flows: Iterable[Flow],
    ports: Mapping[int, PortSample],
    rate_bps: int,
    window_ns: int,
    overhead: int = 0,
    burst_bytes: int = 0,
) -> float:
    """Network-wide utilisation (paper Fig. 1a): bytes delivered to the
    receivers over what their links could carry during the kernel's window
    (first send to last arrival). A token-bucket link carries at most
    rate x T plus its bucket (`burst_bytes`, which a port starts a window
    with) in a time T, so that is the capacity here and a faithful link
    reads at most 100 % (with rate x T alone a run read up to 101 %)."""
    receivers = {f.dst for f in flows}
    if window_ns <= 0 or not receivers:
        return 0.0
    last = [ports[tree.port(tree.edge_of(tree.hosts[d].name), tree.hosts[d].name).ifindex] for d in receivers]
    got = sum(s.tx_bytes + s.tx_pkts * overhead for s in last)  # bytes of line time
    return got / (len(receivers) * (rate_bps / 8 * window_ns / 1e9 + burst_bytes))


MIN_PKTS_PER_BUSY_PERIOD = 20


def saturated_service(
    tree: FatTree,
    ports: Mapping[int, PortSample],
    rate_bps: int,
    burst_bytes: int,
    host_rate_bps: int,
    overhead: int = 0,
) -> dict[str, float]:
    """For every port that carried traffic: achieved / configured rate while
    busy. A TBF that keeps up delivers rate x T bytes in a busy time T, plus
    the tokens it starts a busy period with (at most one burst). On a port that
    stayed busy (>= 20 packets per busy period on average) the ratio is (bytes
    - burst) / (rate x busy time); on a port with short busy periods (every
    switch link under Ofan) the tokens are not removed, bytes / (rate x busy
    time): each short period is then at least its serialisation time shorter
    than its work, so a faithful port reads well above 1 and only a port whose
    dequeues came late, in total by more than its tokens, reads below. A ratio
    below 1 means the kernel dequeued late and the emulated link lost capacity."""
    out = {}
    for p in tree.ports:
        s = ports[p.ifindex]
        if s.busy_periods == 0 or s.busy_ns <= 0 or s.rx_pkts == 0:
            continue
        rate = host_rate_bps if p.stage is Stage.HOST_EDGE else rate_bps
        long_periods = s.rx_pkts >= MIN_PKTS_PER_BUSY_PERIOD * s.busy_periods
        wire = s.rx_bytes + s.rx_pkts * overhead  # bytes of line time
        work = max(0, wire - burst_bytes) if long_periods else wire
        out[p.label] = work * 8 / (s.busy_ns / 1e9) / rate
    return out


def _source_ports(tree: FatTree, flows: Iterable[Flow], ports: Mapping[int, PortSample]) -> dict[str, PortSample]:
    out = {}
    for src in sorted({f.src for f in flows}):
        host = tree.hosts[src]
        out[host.name] = ports[tree.host_port(host.name).ifindex]
    return out


def intended_starts_ns(tree: FatTree, flows: Iterable[Flow], line_rate_bps: int) -> dict[str, float]:
    """Per sending host, when the workload means it to start: its earliest flow's start (0 for every workload
    but cm, whose flows start at their own times)."""
    out: dict[str, float] = {}
    for f in flows:
        t = f.start_bits / line_rate_bps * 1e9 if f.start_bits and line_rate_bps else 0.0
        name = tree.hosts[f.src].name
        out[name] = min(out.get(name, t), t)
    return out


def start_skew_ns(tree: FatTree, flows: Iterable[Flow], ports: Mapping[int, PortSample], line_rate_bps: int = 0) -> int:
    """Spread of the sending NICs' first frames (their arrival at the edge
    switch), each counted from when the workload means it to start: 0 when
    every sender started at its instant."""
    flows = list(flows)
    starts = intended_starts_ns(tree, flows, line_rate_bps)
    firsts = [
        s.first_rx_ns - starts.get(name, 0.0) for name, s in _source_ports(tree, flows, ports).items() if s.first_rx_ns
    ]
    return int(max(firsts) - min(firsts)) if firsts else 0


def timing_excess_pkts(
    tree: FatTree,
    flows: Iterable[Flow],
    ports: Mapping[int, PortSample],
    pk: Packetizer,
    host_rate_bps: int,
    nic_burst_bytes: int,
    line_rate_bps: int = 0,
) -> tuple[dict[str, float], float]:
    """How much the emulator's own timing can have added to the CCT, in packet times.

    Per sending host, its NIC's lateness: how much later its last frame reached
    the edge switch than a strictly periodic NIC (a token bucket of
    `nic_burst_bytes` at the paced rate, never late) started at the same first
    frame would have sent it; a late NIC timer, a sender that woke late or a
    saturated CPU all show here, and a late last frame delays its flows by as
    much. Then, over hosts, the largest start offset (first frame against the
    first sender's) plus lateness: the CCT of the same run with every NIC on
    time from one instant could be shorter by at most this much."""
    t = packet_time_ns(pk, host_rate_bps)
    flows = list(flows)
    src = _source_ports(tree, flows, ports)
    starts = intended_starts_ns(tree, flows, line_rate_bps)
    firsts = [s.first_rx_ns - starts.get(name, 0.0) for name, s in src.items() if s.first_rx_ns]
    if not firsts or t <= 0:
        return {}, 0.0
    t0 = min(firsts)
    late, excess = {}, 0.0
    for name, s in src.items():
        if not s.rx_pkts:
            continue
        span, sent = s.nic_span(pk.wire_overhead)
        ideal_ns = max(0, sent - nic_burst_bytes) * 8e9 / host_rate_bps
        late[name] = (span - ideal_ns) / t
        excess = max(excess, (s.first_rx_ns - starts.get(name, 0.0) - t0) / t + late[name])
    return late, excess


def packet_time_ns(pk: Packetizer, host_rate_bps: int) -> float:
    """One full data frame's line time at the paced host rate."""
    return pk.wire_len(pk.payload) * 8e9 / host_rate_bps


@dataclass(frozen=True)
class NicTiming:
    """Per sending host, in full data frames at the paced rate."""

    burst: dict[str, float]  # how far its NIC ran ahead of a strictly periodic source in its worst window
    stall: dict[str, float]  # its longest gap between two data frames, minus one packet time
    dry: dict[str, float]  # the longest of those gaps that began with no data frame queued (its sender was late)
    held: dict[str, float]  # the longest that began with data frames waiting (the NIC's own: its timer, its CPU)
    back_to_back: dict[str, int]  # its data frames sent less than half a packet time apart


def nic_periodicity(
    tree: FatTree, flows: Iterable[Flow], ports: Mapping[int, PortSample], pk: Packetizer, host_rate_bps: int
) -> NicTiming:
    """The sending NICs' timing (NicTiming) from the kernel's per-NIC
    records: the burst is the periodic-server work maximum minus one frame
    (ebpf/include/queue.h, queue_nic_depart)."""
    t = packet_time_ns(pk, host_rate_bps)
    out = NicTiming({}, {}, {}, {}, {})
    for name, s in _source_ports(tree, flows, ports).items():
        if s.rx_pkts < 2:
            continue
        out.burst[name] = max(0.0, (s.nic_work_max_ns - t) / t)
        out.stall[name] = max(0.0, (s.nic_gap_max_ns - t) / t)
        out.dry[name] = max(0.0, (s.nic_dry_gap_max_ns - t) / t)
        out.held[name] = max(0.0, (s.nic_held_gap_max_ns - t) / t)
        out.back_to_back[name] = s.nic_b2b
    return out
