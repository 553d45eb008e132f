"""One run: a workload over a fabric that is up, measured end to end.

`run(fabric, params)` paces the host NICs, sets the scheme on every LB switch
(or keeps each switch's current scheme, for mixed deployments), gives every
switch fresh random pointer state drawn from the seed, resets the counters, sends the collective, waits until
every packet is delivered or the fabric is drained, and returns a `Result`
whose `to_json()` is the record the CLI prints and saves.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from . import collector, dataplane, fabric, state
from .fabric import Fabric
from .schemes import Scheme, SchemeConfig
from .traffic import workloads
from .traffic.generator import Senders
from .traffic.packet import Packetizer

DRAIN_IDLE_S = 0.5  # give up waiting for stragglers after this long without progress


class RunError(ValueError):
    """Invalid run parameters."""


@dataclass(frozen=True)
class RunParams:
    workload: str
    size_bytes: int
    load: float = 1.0
    scheme: Scheme | None = Scheme.ECMP  # None: keep each switch's current scheme
    seed: int = 1
    fan_in: int = 2
    payload: int = 4096
    pipe_size: int = 4  # pOfan ports per pipe, or schemes.PIPES_PER_CPU
    reset_pointers: bool = True

    def __post_init__(self) -> None:
        if self.workload not in workloads.WORKLOADS:
            raise RunError(f"unknown workload {self.workload!r} (choose from {', '.join(workloads.WORKLOADS)})")
        if self.size_bytes <= 0:
            raise RunError(f"size must be > 0 bytes, got {self.size_bytes}")
        if not 0 < self.load <= 1:
            raise RunError(f"load must be in (0, 1], got {self.load}")
        if self.fan_in < 1:
            raise RunError(f"fan-in must be >= 1, got {self.fan_in}")
        if self.pipe_size < 0:
            raise RunError(f"pipe size must be >= 1 (or per-CPU), got {self.pipe_size}")


@dataclass
class Result:
    scheme: str
    workload: str
    k: int
    hosts: int
    size_bytes: int
    load: float
    rate_bps: int
    host_rate_bps: int
    seed: int
    flows: int
    cct_s: float
    cct_lower_bound_s: float
    cct_increase: float
    packets_sent: int
    packets_received: int
    drops: int
    drops_detail: dict[str, int]
    queues: dict[str, dict[str, float]]
    ports: list[dict[str, Any]]
    fidelity: dict[str, Any]
    switches: dict[str, dict[str, Any]] = field(default_factory=dict)
    flow_stats: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def softnet_drops() -> int:
    """Packets dropped by the per-CPU backlog queues (all namespaces share them)."""
    total = 0
    with open("/proc/net/softnet_stat") as f:
        for line in f:
            total += int(line.split()[1], 16)
    return total


def run(fab: Fabric, p: RunParams) -> Result:
    spec, tree, maps = fab.spec, fab.tree, fab.maps
    assert maps is not None
    pk = Packetizer(p.payload)
    if pk.frame_len(p.payload) > spec.mtu + 14:
        raise RunError(f"payload {p.payload} does not fit the fabric MTU {spec.mtu}")
    flows = workloads.make(p.workload, tree.n_hosts, p.size_bytes, p.seed, p.fan_in)
    host_rate = fabric.host_rate_bps(spec.rate_bps, p.load)

    fabric.set_host_rate(tree, host_rate, spec.burst, spec.buffer_bytes)
    if p.reset_pointers:
        dataplane.reset_state(maps, tree, p.seed)
    if p.scheme is not None:
        config = SchemeConfig(p.scheme, p.pipe_size)
        config.validate(tree.switch_ports)
        dataplane.apply_schemes(maps, tree, {sw.name: config for sw in dataplane.lb_switches(tree)})
    configs = dataplane.current_schemes(maps, tree)
    labels = {c.label for c in configs.values()}
    maps.flow_rx.clear()
    qdisc0 = fabric.qdisc_stats(tree)
    soft0 = softnet_drops()
    cnt0 = maps.counter_values()
    up0 = {i: int(v.value) for i in range(tree.n_switches * tree.w) if (v := maps.uplink_pkts.get(i)) is not None}
    collector.reset_ports(maps, tree)

    bound = collector.cct_lower_bound_s(flows, pk, spec.rate_bps, host_rate, spec.burst)
    senders = Senders(tree, flows, pk, p.seed)
    pids: list[int] = []

    def started(pid: int) -> None:  # recorded so that `testbed clean` can kill it after a crash
        pids.append(pid)
        state.record_pid(spec.prefix, pid)

    try:
        sent = senders.run(timeout_s=10 * bound + 10, on_start=started)
    finally:
        for pid in pids:
            state.record_pid(spec.prefix, pid, add=False)
    _wait_delivered(maps, sent.packets)

    ports = collector.read_ports(maps, tree)
    rx = collector.read_flows(maps)
    qdisc1 = fabric.qdisc_stats(tree)
    cnt1 = maps.counter_values()
    soft1 = softnet_drops()

    src_ports = {tree.host_port(tree.hosts[f.src].name).ifindex for f in flows}
    t_first = min((ports[i].first_tx_ns for i in src_ports if ports[i].first_tx_ns), default=0)
    t_last = max((r.last_ns for r in rx.values()), default=0)
    cct_ns = max(0, t_last - t_first) if t_first and t_last else 0
    queues = collector.port_queues(tree, ports, cct_ns)
    drops = {
        "qdisc": sum(qdisc1[i].drops - qdisc0.get(i, qdisc1[i]).drops for i in qdisc1),
        "softnet": soft1 - soft0,
        "switch": sum(cnt1[n] - cnt0.get(n, 0) for n in cnt1),
        "sender_errors": sent.errors,
    }
    received = sum(r.pkts for r in rx.values())
    pacing = collector.pacing_errors(tree, flows, ports, host_rate, spec.burst)
    cct_s = cct_ns / 1e9
    switches: dict[str, dict[str, Any]] = {}
    configs_end = dataplane.current_schemes(maps, tree)
    for sw in dataplane.lb_switches(tree):
        counts = []
        for slot in range(tree.w):
            v = maps.uplink_pkts.get(sw.nid * tree.w + slot)
            counts.append(int(v.value) - up0.get(sw.nid * tree.w + slot, 0) if v is not None else 0)
        switches[sw.name] = {"scheme": configs[sw.name].label, "uplink_pkts": counts}
        if configs_end[sw.name] != configs[sw.name]:  # changed live during the run
            switches[sw.name]["scheme_at_end"] = configs_end[sw.name].label
    return Result(
        scheme=labels.pop() if len(labels) == 1 else "mixed", workload=p.workload, k=tree.k, hosts=tree.n_hosts, size_bytes=p.size_bytes,
        load=p.load, rate_bps=spec.rate_bps, host_rate_bps=host_rate, seed=p.seed, flows=len(flows),
        cct_s=cct_s, cct_lower_bound_s=bound, cct_increase=(cct_s - bound) / bound if bound > 0 else 0.0,
        packets_sent=sent.packets, packets_received=received, drops=sum(drops.values()), drops_detail=drops,
        queues=collector.stage_queues(queues), ports=[asdict(q) for q in queues],
        fidelity={
            "pacing_error_max": max((abs(v) for v in pacing.values()), default=0.0),
            "pacing_error_mean": sum(pacing.values()) / len(pacing) if pacing else 0.0,
            "pacing_error_by_host": pacing,
        },
        switches=switches,
        flow_stats=[{"fid": f.fid, "src": tree.hosts[f.src].name, "dst": tree.hosts[f.dst].name,
                     "sent": sent.flows[f.fid].packets, "received": rx[f.fid].pkts if f.fid in rx else 0,
                     "out_of_order": rx[f.fid].ooo if f.fid in rx else 0,
                     "max_psn_displacement": rx[f.fid].max_disp if f.fid in rx else 0} for f in flows],
    )


def _wait_delivered(maps: dataplane.Maps, expected: int) -> None:
    last, last_change = -1, time.monotonic()
    while True:
        got = collector.received_packets(maps)
        if got >= expected:
            return
        now = time.monotonic()
        if got != last:
            last, last_change = got, now
        elif now - last_change > DRAIN_IDLE_S:
            return
        time.sleep(0.005)
