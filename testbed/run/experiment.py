"""One run: a workload over a fabric that is up, measured end to end.

`run(fabric, params, out_dir)` paces the host NICs, sets the scheme on every
LB switch (or keeps each switch's current scheme, for mixed deployments),
gives every switch fresh random pointer state drawn from the seed, resets the
counters, sends the collective while sampling every queue, waits until every
packet (and ACK) is delivered or the fabric is drained, and returns a
`Result`. With `out_dir` it also writes the run's directory (testbed.measure.results).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from traffic.faults import Deadline, Fault, NicBurst, NicSlow, for_sender
from traffic.faults import parse as parse_fault
from traffic.packet import ACK_FRAME_BYTES, Packetizer
from traffic.sender import Endpoint, RepsFreeze, Senders, SendReport, source_port
from traffic.transport import Transport, n_paths
from traffic.workloads import Flow

from ..dataplane import switches
from ..dataplane.compile import Dims
from ..dataplane.maps import (
    ECN_BYTES,
    ECN_OFF,
    ECN_PKTS,
    HOST_LB_COUNTER_NAMES,
    N_SEEN,
    NOT_DROPS,
    RINGBUF_MAPS,
    Maps,
    RunCfg,
    pin_dir,
)
from ..fabric import cpu_latency, links, netns, qdisc_timers, rx_timestamps, softirq, state
from ..fabric.build import NIC_BUCKET_FRAMES, NIC_PEAK_RATIO, Fabric, FabricSpec, host_rate_bps, set_host_rate
from ..fabric.links import SETTLE_S
from ..fabric.lock import run_lock
from ..fabric.observe import qdisc_stats
from ..fabric.qdisc_timers import TimerLateness
from ..measure import collector, cpu_windows, envelope, fidelity, metrics, outside, provenance, queue_model, results
from ..measure import transport as tmeasure
from ..models import control, ideal, sampled
from ..models.schemes import Scheme, SchemeConfig, select_switches
from ..topology import FatTree, Level, Link, Node, Stage
from ..topology.timebase import Propagation, path_links, reps_freeze_s
from . import faults
from .options import record
from .params import Result, RunError, RunParams

DRAIN_IDLE_S = 0.5  # give up waiting for stragglers after this long without progress
ECN_UNITS = {"off": ECN_OFF, "bytes": ECN_BYTES, "packets": ECN_PKTS}
SAMPLE_HZ = 500.0


def endpoints(tree: FatTree) -> list[Endpoint]:
    """Every host as the senders see it (namespace path and address), by host id."""
    return [Endpoint(netns.path_of(tree.ns(h.name)), str(tree.host_ip(h))) for h in tree.hosts]


def nic_burst_of(spec: FabricSpec, pk: Packetizer) -> int:
    """The host NICs' bucket during a run: NIC_BUCKET_FRAMES frames of the run's own payload, on the wire (a
    fabric built for bigger packets would otherwise let a NIC burst several small ones), at most the links'
    bucket."""
    return min(spec.burst, round(NIC_BUCKET_FRAMES * pk.wire_len(pk.payload)))


def run(
    fab: Fabric, p: RunParams, out_dir: Path | None = None, discarded: list[dict[str, Any]] | None = None
) -> Result:
    """One run, holding the fabric's run lock (FabricBusy if another process holds it)."""
    with run_lock(fab.spec.prefix):
        return _run(fab, p, out_dir, discarded)


def _run(fab: Fabric, p: RunParams, out_dir: Path | None, discarded: list[dict[str, Any]] | None) -> Result:
    """One run, step by step: check it, pace the NICs, set the schemes, configure the data plane, the CCT's
    bounds, the run's directory, then measure it."""
    fault = parse_fault(p.inject) if p.inject is not None else None  # the one parse of the injected fault
    checked = _check(fab, p)
    actions = faults.parse_timeline(p.events, fab.tree) if p.events else []
    routes = _routes(fab, p, checked.flows)
    host_rate, rho = _host_rate(fab, p, checked.flows, routes)
    started_at = datetime.now(UTC).isoformat()
    _pace_nics(fab, p, checked.pk, host_rate, fault)
    configs = _set_schemes(fab, p)
    prop, lb_settings = _configure(fab, p, checked, host_rate, configs)
    plan = Plan(
        fab=fab,
        p=p,
        flows=checked.flows,
        pk=checked.pk,
        host_rate=host_rate,
        bounds=_bounds(fab, p, checked, host_rate, prop),
        prop=prop,
        rtts=checked.rtts,
        configs=configs,
        scheme_label=_scheme_label(p, configs),
        run_dir=None,
        discarded=list(discarded or []),
        rho=rho,
        timeline=faults.Timeline(fab.tree, actions),
        tp=checked.tp,
        fault=fault,
        routes=routes,
    )
    if out_dir is not None:
        plan = replace(plan, run_dir=results.RunDir(out_dir, _manifest(plan, started_at, lb_settings)))
    with _lp_weights(fab, routes, configs):
        return _measure_run(plan)


@dataclass(frozen=True)
class Checked:
    """What checking a run found: its packets, its flows and their base RTTs, its transport, and the words of
    the receivers' seen-bitmaps its flows take (a transport run's; empty without one)."""

    pk: Packetizer
    flows: list[Flow]
    rtts: dict[int, int]
    tp: Transport
    seen_words: list[tuple[int, int]]


def _check(fab: Fabric, p: RunParams) -> Checked:
    """Everything the run needs of the fabric, checked before the kernel is touched (RunError otherwise)."""
    spec, tree = fab.spec, fab.tree
    assert fab.maps is not None
    pk = Packetizer(p.payload, spec.wire_overhead)
    if pk.frame_len(p.payload) > spec.mtu + 14:
        raise RunError(f"payload {p.payload} does not fit the fabric MTU {spec.mtu}")
    if p.scheme is not None:
        SchemeConfig(p.scheme.switch_scheme, p.pipe_size).validate(tree.switch_ports)
        if p.mix != "none":
            SchemeConfig.parse(p.mix_base).validate(tree.switch_ports)
    p.check_fabric(tree)
    p.check_propagation(tree, spec.rate_bps, spec.wire_overhead)
    flows = p.flow_list(tree)
    if not flows:
        raise RunError("the workload has no flow")
    rtts = p.flow_base_rtts_ns(tree, flows, spec.rate_bps, spec.wire_overhead)
    tp = p.transport(spec.rate_bps, max(rtts.values()), spec.wire_overhead)
    seen_words = [(f.fid, math.ceil(pk.count(f.size_bytes) / 64)) for f in flows] if tp.on else []
    if sum(n for _, n in seen_words) > N_SEEN:
        raise RunError(
            f"--cc: the receivers track {N_SEEN * 64:,} packets per run; this workload has "
            f"{sum(pk.count(f.size_bytes) for f in flows):,}"
        )
    return Checked(pk=pk, flows=flows, rtts=rtts, tp=tp, seen_words=seen_words)


@dataclass(frozen=True)
class Routes:
    """The control plane as a run sees it, computed once: the links down, their routing, the LP's solution
    when the run needs it (pacing at rho_max or rho_even, or links down), and weighted Ofan's rounds for this
    run's flows: the LP's split where it sends traffic, the routing's path counts elsewhere (docs/schemes.md)."""

    failed: list[Link]
    routing: control.Routing
    best: control.RhoMax | None
    rounds: dict[tuple[int, int], tuple[int, ...]]


def _routes(fab: Fabric, p: RunParams, flows: list[Flow]) -> Routes:
    failed = faults.current_failed(fab.tree)
    routing = control.routing(fab.tree, failed)
    if p.pace == "load" and not failed:
        return Routes(failed, routing, None, routing.rounds)
    best, lp = control.lp_rounds(fab.tree, flows, failed)
    return Routes(failed, routing, best, routing.rounds | lp)


def _host_rate(fab: Fabric, p: RunParams, flows: list[Flow], routes: Routes) -> tuple[int, dict[str, Any]]:
    """The hosts' paced rate: load x line rate, or with --pace rho_max (rho_even) at most the best split's
    (an even split's) rate over the links that are up; and what the manifest says of every reading."""
    if p.pace == "load":
        return host_rate_bps(fab.spec.rate_bps, p.load), {"paced": False}
    failed_now, best = routes.failed, routes.best
    assert best is not None  # _routes solves the LP for every paced run
    even = control.even_split_rho(fab.tree, flows, failed_now)
    weighted = control.split_rho(fab.tree, flows, failed_now, routes.rounds)
    chosen = best if p.pace == "rho_max" else even
    if chosen.rho <= 0:
        raise RunError(f"{p.pace} is 0: no flow of this workload can be carried over the links that are up")
    rho = {
        "paced": True,
        "paced_at": p.pace,
        "rho_max": best.rho,
        "rho_even": even.rho,
        "rho_weighted": weighted.rho,
        "bottlenecks": chosen.bottlenecks,
        "unreachable_flows": best.unreachable_flows,
        "failed_links": [ln.name for ln in failed_now],
    }
    return host_rate_bps(fab.spec.rate_bps, min(p.load, chosen.rho)), rho


@contextlib.contextmanager
def _lp_weights(fab: Fabric, routes: Routes, configs: dict[str, SchemeConfig]) -> Iterator[bool]:
    """With weighted Ofan on a switch and links down, its rounds follow the LP's split of this run's flows for
    the run (the watcher, which knows no traffic, writes path counts), and the control plane's again after it,
    so no later run inherits them. Yields whether it wrote any."""
    maps, tree = fab.maps, fab.tree
    assert maps is not None
    if not routes.failed or all(c.scheme is not Scheme.WOFAN for c in configs.values()):
        yield False
        return
    switches.set_wofan_rounds(maps, tree, routes.rounds)
    try:
        yield True
    finally:
        switches.set_wofan_rounds(maps, tree, control.routing(tree, faults.current_failed(tree)).rounds)


def _pace_nics(fab: Fabric, p: RunParams, pk: Packetizer, host_rate: int, fault: Fault | None) -> None:
    """Pace every host NIC at `host_rate` with its run's bucket (the faults nic-burst and nic-slow: a NIC
    allowed to burst, one paced slower than it should be)."""
    spec, tree = fab.spec, fab.tree
    if isinstance(fault, NicBurst):  # a NIC allowed to burst: eight frames of tokens, no peak rate
        set_host_rate(tree, host_rate, 8 * spec.max_frame, spec.buffer_bytes, overhead=spec.wire_overhead)
        return

    def pace(rate_bps: int, hosts: list[Node] | None = None) -> None:
        set_host_rate(
            tree,
            rate_bps,
            nic_burst_of(spec, pk),
            spec.buffer_bytes,
            frame_bytes=pk.wire_len(p.payload),
            overhead=spec.wire_overhead,
            hosts=hosts,
        )

    pace(host_rate)
    if isinstance(fault, NicSlow):  # one NIC paced slower than it should be
        pace(round(host_rate * (1 - fault.pct / 100)), hosts=[tree.hosts[fault.host]])


def _set_schemes(fab: Fabric, p: RunParams) -> dict[str, SchemeConfig]:
    """Fresh pointer state drawn from the seed (unless kept), the run's scheme on every LB switch (with --mix on
    the chosen ones, the base scheme on the others; none: each keeps its own); the schemes then in place."""
    maps, tree = fab.maps, fab.tree
    assert maps is not None
    if p.reset_pointers:
        switches.reset_state(maps, tree, p.seed)
    if p.scheme is not None:
        config = SchemeConfig(p.scheme.switch_scheme, p.pipe_size)
        assignment = {sw.name: config for sw in switches.lb_switches(tree)}
        if p.mix != "none":  # Fig. 11: the scheme on the chosen switches, the base scheme on the others
            chosen = set(select_switches(tree, p.mix, p.seed))
            base = SchemeConfig.parse(p.mix_base)
            assignment = {name: config if name in chosen else base for name in assignment}
        switches.apply_schemes(maps, tree, assignment)
    return switches.current_schemes(maps, tree)


def _scheme_label(p: RunParams, configs: dict[str, SchemeConfig]) -> str:
    """The run's scheme as results name it: the switches' one, "mixed", or the host scheme's."""
    if p.scheme is not None and p.scheme.host_lb:
        return p.scheme.label
    labels = {c.label for c in configs.values()}
    return labels.pop() if len(labels) == 1 else "mixed"


def _configure(
    fab: Fabric, p: RunParams, checked: Checked, host_rate: int, configs: dict[str, SchemeConfig]
) -> tuple[Propagated, sampled.Settings]:
    """The data plane's run settings: the sampled schemes' intervals and bands, the run's configuration (ACKs,
    the NICs' rate, host LB, ECN, the transport, the buffers, propagation), the flows' and hosts' state zeroed;
    the run's propagation and sampled settings."""
    spec, tree, maps, pk, tp = fab.spec, fab.tree, fab.maps, checked.pk, checked.tp
    assert maps is not None
    lb_settings = sampled.settings(
        p.sampled(),
        spec.rate_bps,
        pk.wire_len(p.payload),
        tree.edges_per_pod,
        sampled.active_bits([c.scheme for c in configs.values()]),
    )
    switches.set_sampled(maps, tree, lb_settings)
    ecn = p.ecn()
    prop = _propagation(p, tree, checked.flows, spec.rate_bps, pk)
    maps.run_cfg.set(
        0,
        RunCfg(
            acks=int(p.acks),
            nic_ps_per_byte=round(8e12 / host_rate),
            host_lb=p.scheme.host_lb if p.scheme is not None else 0,
            ecn_unit=ECN_UNITS[ecn.unit],
            ecn_thresh=ecn.value,
            cc=int(tp.on),
            buffer_bytes=p.port_buffer(),
            prop_ns=round(prop.link_s * 1e9),
            wire_overhead=spec.wire_overhead,
        ),
    )
    max_fid = max(f.fid for f in checked.flows)
    collector.reset_flows(maps, max_fid)
    if tp.on:
        collector.prepare_transport(maps, checked.seen_words)
    switches.reset_host_state(maps, tree, p.seed, max_fid)
    return prop, lb_settings


@dataclass(frozen=True)
class Bounds:
    """The CCT's lower bounds (metrics.cct_lower_bound_s) a run is judged against."""

    bound: float  # propagation included: the run's reference
    fault_free: float  # the same with hosts paced at load x line rate (not rho_max)
    no_propagation: float  # without propagation: the timing criterion's reference


def _bounds(fab: Fabric, p: RunParams, checked: Checked, host_rate: int, prop: Propagated) -> Bounds:
    spec, flows = fab.spec, checked.flows
    ack_bytes = ACK_FRAME_BYTES + spec.wire_overhead if p.acks else 0  # bytes of line time
    waits = metrics.chain_wait_s(fab.tree, flows, prop.link_s)  # chained flows: their input's propagation

    def bound(rate_bps: int, propagation: bool) -> float:
        return metrics.cct_lower_bound_s(
            flows=flows,
            pk=checked.pk,
            rate_bps=spec.rate_bps,
            host_rate_bps=rate_bps,
            burst_bytes=spec.burst,
            ack_frame_bytes=ack_bytes,
            nic_burst_bytes=nic_burst_of(spec, checked.pk),
            shift_s=prop.shift_s if propagation else None,
            after_s=waits if propagation else None,
        )

    return Bounds(
        bound=bound(host_rate, propagation=True),
        fault_free=bound(host_rate_bps(spec.rate_bps, p.load), propagation=True),
        no_propagation=bound(host_rate, propagation=False),
    )


def _manifest(plan: Plan, started_at: str, lb_settings: sampled.Settings) -> dict[str, Any]:
    """The run's manifest as it starts (testbed.measure.results): every run option by name
    (testbed.run.options), the fabric, the schemes, the bound, propagation, the transport."""
    spec, tree, p, tp = plan.fab.spec, plan.fab.tree, plan.p, plan.tp
    return {
        "params": record(p),
        "scheme": plan.scheme_label,
        "k": tree.k,
        "topology": tree.kind,
        "hosts": tree.n_hosts,
        "prefix": spec.prefix,
        "fabric": {
            "rate_bps": spec.rate_bps,
            "host_rate_bps": plan.host_rate,
            "mtu": spec.mtu,
            "wire_overhead_bytes": spec.wire_overhead,
            "ack_priority": spec.ack_priority,
            "burst_bytes": spec.burst,
            "nic_burst_bytes": nic_burst_of(spec, plan.pk),
            "nic_peak_ratio": NIC_PEAK_RATIO,
            "buffer_bytes": spec.buffer_bytes,
        },
        "switch_schemes": {n: c.label for n, c in plan.configs.items()},
        "started_at": started_at,
        "provenance": provenance.describe(),
        "flows": len(plan.flows),
        "cct_lower_bound_s": plan.bounds.bound,
        "propagation": plan.prop.describe(),
        "port_buffer_bytes": p.port_buffer(),
        "transport": tp.describe() if tp.on else None,
        "sampled_schemes": lb_settings.describe(),
    }


def _measure_run(plan: Plan) -> Result:
    """Measure the run with its instruments on (idle CPUs kept polling, ksoftirqd real-time, the NICs' stamps,
    the qdisc timers' probe, a directory for a transport's window trace); its directory marked interrupted or
    failed if it did not finish."""
    try:
        with (
            cpu_latency.awake() as awake,
            softirq.raised() as softirq_first,
            rx_timestamps.on() as stamped,
            qdisc_timers.watch() as timers,
            tempfile.TemporaryDirectory(prefix="testbed-windows-") as trace_dir,
        ):  # a transport's window trace
            probes = Probes(
                cpu_awake=awake,
                softirq_first=softirq_first,
                stamped=stamped,
                timers=timers,
                trace_path=Path(trace_dir) / "windows.bin",
            )
            return _measure(plan, probes)
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (the CLI raises it as a KeyboardInterrupt)
        if plan.run_dir is not None:
            plan.run_dir.abort(
                "interrupted",
                "terminated (SIGTERM)" if type(e).__name__ == "Terminated" else "interrupted by the user (Ctrl-C)",
            )
        raise
    except BaseException as e:
        if plan.run_dir is not None:
            plan.run_dir.abort("failed", f"{type(e).__name__}: {e}")
        raise


def run_valid(fab: Fabric, p: RunParams, out_dir: Path | None = None, attempts: int = 1) -> Result:
    """Run up to `attempts` times (same parameters, same seed) until the
    fidelity verdict is valid; the last run is returned (and written to
    `out_dir`), with the verdicts of the discarded ones in
    `discarded_attempts` and in its manifest."""
    if attempts < 1:
        raise RunError(f"attempts must be >= 1, got {attempts}")
    discarded: list[dict[str, Any]] = []
    for i in range(attempts):
        last = i == attempts - 1
        target = out_dir
        if out_dir is not None and not last:
            target = out_dir.parent / f".{out_dir.name}.attempt{i + 1}"
        r = run(fab, p, target, discarded=discarded)
        if r.fidelity["valid"] or last:
            if target is not None and target != out_dir:
                assert out_dir is not None
                os.replace(target, out_dir)
                r.out_dir = str(out_dir)
            return r
        discarded.append(
            {
                "attempt": i + 1,
                "reasons": r.fidelity["reasons"],
                "cct_s": r.cct_s,
                "cct_increase": r.cct_increase,
                "cpu_steal": r.fidelity["cpu_steal"],
            }
        )
        if target is not None:
            shutil.rmtree(target, ignore_errors=True)
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Plan:
    """What `_run` prepared for the measurement: the run, its flows and bounds, the schemes in place, where its
    results go."""

    fab: Fabric
    p: RunParams
    flows: list[Flow]
    pk: Packetizer
    host_rate: int
    bounds: Bounds
    prop: Propagated
    rtts: dict[int, int]
    configs: dict[str, SchemeConfig]
    scheme_label: str
    run_dir: results.RunDir | None
    discarded: list[dict[str, Any]]
    rho: dict[str, Any]
    timeline: faults.Timeline
    tp: Transport
    fault: Fault | None  # the fault injected on purpose (traffic.faults), parsed once
    routes: Routes  # the control plane as the run found it


@dataclass(frozen=True)
class Probes:
    """The run's instruments besides the maps: idle CPUs kept polling, the NICs' hand-over stamps, the qdisc
    timers' probe, and where a transport run's window trace goes."""

    cpu_awake: bool
    softirq_first: bool  # every ksoftirqd real-time during the run (testbed.fabric.softirq)
    stamped: bool
    timers: qdisc_timers.Watch | None
    trace_path: Path


@dataclass(frozen=True)
class Counters:
    """The kernel's counters that a run reads as differences: qdisc statistics, softnet drops, the data plane's
    counters, uplink and pointer counts, and link events so far."""

    qdisc: dict[int, Any]
    softnet: int
    data_plane: dict[str, int]
    uplinks: list[int]
    pointers: Any
    events: int

    @classmethod
    def read(cls, fab: Fabric) -> Counters:
        maps, tree = fab.maps, fab.tree
        assert maps is not None
        return cls(
            qdisc=qdisc_stats(tree),
            softnet=collector.softnet_drops(),
            data_plane=maps.counter_values(),
            uplinks=list(maps.uplink_pkts.read_array(tree.n_switches * tree.w)),
            pointers=collector.pointer_values(maps, tree),
            events=len(links.read_events(fab.spec.prefix)),
        )


@dataclass(frozen=True)
class Machine:
    """What the machine did during the run: CPU busy shares, the busiest window, other processes' CPU time and
    the qdisc timers' lateness."""

    busy: float
    steal: float
    busiest: float
    window: cpu_windows.Busiest | None
    outside: float
    outside_worst: str
    outside_window_s: float
    timers: TimerLateness | None


@dataclass(frozen=True)
class Readings:
    """Everything read from the kernel after the run."""

    ports: dict[int, metrics.PortSample]
    rx: dict[int, metrics.FlowSample]
    acks: dict[int, Any]
    after: Counters
    host_counts: dict[str, dict[str, int]]
    configs_end: dict[str, SchemeConfig]
    link_events: list[dict[str, Any]]
    reach_end: control.Reach


@dataclass(frozen=True)
class Timing:
    """The collective's window: first frame out, each flow's end as the kernel saw it, the CCT (each end plus
    its propagation) and the window the queues and links were measured over."""

    t_first: int
    ends: dict[int, int]
    t_last: int
    cct_ns: int
    window_ns: int


@dataclass(frozen=True)
class AtSent:
    """The ports read as the senders returned, and when."""

    t_ns: int
    ports: dict[int, metrics.PortSample]


@dataclass(frozen=True)
class Sending:
    """The sending window (Thm. 1-2's: until the last data frame has left its sender's NIC, which the edge switch
    sees arrive) with every port's occupancy integral at its end, Fig. 1(a)'s utilisation over the window up to
    the senders' return, and how long after the last data frame out that read came (ns)."""

    window: metrics.SendingWindow
    utilisation: float
    lag_ns: int

    def describe(self) -> dict[str, float]:
        return {"span_s": self.window.span_ns / 1e9, "lag_after_last_data_s": self.lag_ns / 1e9}


def _delivered(plan: Plan, ports: dict[int, metrics.PortSample], window_ns: int) -> float:
    """Bytes delivered to the receivers over what their links could carry in `window_ns` (paper Fig. 1a)."""
    spec = plan.fab.spec
    return metrics.delivered_utilisation(
        tree=plan.fab.tree,
        flows=plan.flows,
        ports=ports,
        rate_bps=spec.rate_bps,
        window_ns=window_ns,
        overhead=spec.wire_overhead,
        burst_bytes=spec.burst,
    )


def _sending(plan: Plan, got: Readings, timing: Timing, at_sent: AtSent, sampler: collector.Sampler) -> Sending:
    """The sending window's figures: the exact read as the senders returned, each port's integral moved along the
    sampled series to the window's end; the utilisation read exactly then (the drain, whose length is the last
    straggler's, left out)."""
    tree, ports = plan.fab.tree, got.ports
    src = {tree.host_port(tree.hosts[f.src].name).ifindex for f in plan.flows}
    t_end = max((ports[i].nic_last_data_ns or ports[i].last_rx_ns for i in src), default=0)
    if not timing.t_first or t_end <= timing.t_first:
        return Sending(metrics.SendingWindow(0, {}), 0.0, 0)
    lo, hi = sorted((t_end, at_sent.t_ns))
    series = sampler.port_samples(lo, hi)
    empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    areas = {
        p.ifindex: metrics.area_at(
            at_sent.ports[p.ifindex], at_sent.t_ns, t_end, *series.get(p.ifindex, empty), ports[p.ifindex].max_pkts
        )
        for p in tree.ports
    }
    window = metrics.SendingWindow(t_end - timing.t_first, areas)
    return Sending(window, _delivered(plan, at_sent.ports, at_sent.t_ns - timing.t_first), at_sent.t_ns - t_end)


def _measure(plan: Plan, probes: Probes) -> Result:
    """One run, step by step: counters before, send and drain, the machine's figures, counters after, the
    CCT, drops, the verdict, the result (and its directory)."""
    before = _prepare_counters(plan, probes)
    sampler = collector.Sampler(plan.fab.maps, plan.fab.tree, SAMPLE_HZ)  # type: ignore[arg-type]
    sent, drained, machine, at_sent = _send_and_drain(plan, probes, sampler)
    got = _read_after(plan, before)
    timing = _timing(plan, got)
    sending = _sending(plan, got, timing, at_sent, sampler)
    drops = _drops(plan, before, got, sent)
    verdict = _verdict(
        plan,
        probes,
        sent=sent,
        drained=drained,
        got=got,
        timing=timing,
        drops=drops,
        machine=machine,
        sample_rate_hz=sampler.rate_hz,
    )
    windows = tmeasure.read_trace(probes.trace_path, timing.t_first, plan.tp.pkt_ns) if plan.tp.on else None
    result = _result(
        plan,
        sent=sent,
        got=got,
        timing=timing,
        sending=sending,
        drops=drops,
        before=before,
        verdict=verdict,
        windows=windows,
    )
    if plan.run_dir is not None:
        _write(plan, result, sampler, timing, windows)
    return result


def _prepare_counters(plan: Plan, probes: Probes) -> Counters:
    """The counters before the run, then the per-run ones zeroed (ports, host NIC counters, the timers)."""
    maps = plan.fab.maps
    assert maps is not None
    before = Counters.read(plan.fab)
    collector.reset_ports(maps, plan.fab.tree)
    collector.reset_host_counters(maps, plan.fab.tree)
    if probes.timers is not None:
        probes.timers.zero()
    return before


def _send_and_drain(plan: Plan, probes: Probes, sampler: collector.Sampler) -> tuple[SendReport, bool, Machine, AtSent]:
    """Send the collective while sampling the queues and the CPUs, wait until it is delivered (or the fabric
    is drained), and what the machine did meanwhile; the ports are read once as the senders return."""
    fab, p, pk = plan.fab, plan.p, plan.pk
    maps, tree = fab.maps, fab.tree
    assert maps is not None
    cpu0 = fidelity.CpuTimes.now()
    procs0, t_procs0 = outside.Snapshot.now(), time.monotonic()
    sampler.start()
    link_pkt_s = pk.wire_len(pk.payload) * 8 / fab.spec.rate_bps  # windows as long as the lateness allowed
    cpu_sampler = cpu_windows.Sampler(min_window_s=fidelity.STALL_MAX_PKTS * link_pkt_s).start()
    try:
        sent = _send(plan, probes.trace_path)
        at_sent = AtSent(time.monotonic_ns(), collector.read_ports(maps, tree))
        drained = _wait_delivered(maps, sent.packets, p.acks, lambda: collector.buffer_drops(maps, tree))
        plan.timeline.join()
        time.sleep(2 * SETTLE_S if plan.timeline.actions else 0)  # let the watcher record its last losses
    finally:
        sampler.stop()
        cpu_window = cpu_sampler.stop()
    cpu1 = fidelity.CpuTimes.now()
    st_now = state.load(fab.spec.prefix)
    window_s = time.monotonic() - t_procs0
    share, worst = outside.outside_cpu(
        procs0, outside.Snapshot.now(), window_s, [os.getpid(), *(st_now.pids if st_now else [])]
    )
    machine = Machine(
        busy=cpu1.busy_since(cpu0),
        steal=cpu1.steal_since(cpu0),
        busiest=cpu1.busiest_since(cpu0),
        window=cpu_window,
        outside=share,
        outside_worst=worst,
        outside_window_s=window_s,
        timers=probes.timers.read() if probes.timers is not None else None,
    )
    return sent, drained, machine, at_sent


def _read_after(plan: Plan, before: Counters) -> Readings:
    fab, tree = plan.fab, plan.fab.tree
    maps = fab.maps
    assert maps is not None
    max_fid = max(f.fid for f in plan.flows)
    return Readings(
        ports=collector.read_ports(maps, tree),
        rx=collector.read_flows(maps, max_fid),
        acks=collector.read_acks(maps, max_fid),
        after=Counters.read(fab),
        host_counts=collector.read_host_lb(maps, tree),
        configs_end=switches.current_schemes(maps, tree),
        link_events=[e for e in links.read_events(fab.spec.prefix) if e["seq"] > before.events],
        reach_end=control.Reach(tree, faults.current_failed(tree)),
    )


def _timing(plan: Plan, got: Readings) -> Timing:
    tree, ports = plan.fab.tree, got.ports
    src_ports = {tree.host_port(tree.hosts[f.src].name).ifindex for f in plan.flows}
    t_first = min((ports[i].first_tx_ns for i in src_ports if ports[i].first_tx_ns), default=0)
    ends = {f.fid: _flow_end(got.rx.get(f.fid), got.acks.get(f.fid), plan.p.acks) for f in plan.flows}
    t_last = metrics.completion_ns(ends, plan.prop.shift_s)  # each flow's last arrival plus its propagation
    cct_ns = max(0, t_last - t_first) if t_first and t_last else 0
    t_seen = max(ends.values(), default=0)  # what the kernel saw: the queues' and links' window
    window_ns = max(0, t_seen - t_first) if t_first and t_seen else 0
    return Timing(t_first=t_first, ends=ends, t_last=t_last, cct_ns=cct_ns, window_ns=window_ns)


def _drops(plan: Plan, before: Counters, got: Readings, sent: SendReport) -> dict[str, int]:
    """Packets lost, by where: qdiscs (data; their ACK class apart), the per-CPU backlog, the data plane's error
    paths, unreachable destinations, the senders, failed links, full port buffers (data and ACKs)."""
    q0, q1, c0, c1 = before.qdisc, got.after.qdisc, before.data_plane, got.after.data_plane
    counters = {n: c1[n] - c0.get(n, 0) for n in c1}
    return {
        # data packets a qdisc dropped (its ACK class's drops apart, below: an ACK is not a data packet lost)
        "qdisc": sum(_delta(q0, q1, i, "drops") - _delta(q0, q1, i, "ack_drops") for i in q1),
        "qdisc_acks": sum(_delta(q0, q1, i, "ack_drops") for i in q1),
        "softnet": got.after.softnet - before.softnet,
        # the data plane's error paths
        "switch": sum(v for n, v in counters.items() if n != "unreachable" and n not in NOT_DROPS),
        # routed toward a link before it failed, dropped by the first switch without a route (or, with
        # hosts cut off, sent to an unreachable destination)
        "unreachable": counters["unreachable"],
        "sender_errors": sent.errors,
        "link_failures": sum(e["lost_pkts"] for e in got.link_events),  # died in a link's queues when it failed
        "buffer": sum(s.buf_drops for s in got.ports.values()),
        "buffer_acks": sum(s.buf_ack_drops for s in got.ports.values()),
    }


def _delivery(plan: Plan, sent: SendReport, drained: bool, got: Readings, drops: dict[str, int]) -> fidelity.Delivery:
    """Where every packet went: planned, sent, received, counted lost (testbed.measure.fidelity.Delivery)."""
    flows, rx = plan.flows, got.rx
    # a flow cannot receive more packets than it sent: an emulator that duplicated packets would otherwise
    # cancel as many untraced losses in the totals
    over_received = sum(max(0, (rx[f.fid].pkts if f.fid in rx else 0) - sent.flows[f.fid].packets) for f in flows)
    return fidelity.Delivery(
        planned=sum(plan.pk.count(f.size_bytes) for f in flows if not sent.flows[f.fid].noroute),
        sent=sent.packets,
        received=sum(r.pkts for r in rx.values()),
        counted_losses=sum(drops[n] for n in ("qdisc", "softnet", "switch", "unreachable", "link_failures", "buffer")),
        sender_errors=sent.errors,
        emulator_drops=drops["softnet"] + drops["switch"],
        drain_complete=drained,
        over_received=over_received,
        ack_losses_possible=drops["link_failures"] if plan.p.acks else 0,  # a dead queue held ACKs too
    )


def _verdict(
    plan: Plan,
    probes: Probes,
    *,
    sent: SendReport,
    drained: bool,
    got: Readings,
    timing: Timing,
    drops: dict[str, int],
    machine: Machine,
    sample_rate_hz: float,
) -> fidelity.Verdict:
    """Every figure the verdict judges, from the readings, then the verdict (testbed.measure.fidelity)."""
    pk, flows, spec, tree, ports = plan.pk, plan.flows, plan.fab.spec, plan.fab.tree, got.ports
    host_rate, nic_burst = plan.host_rate, nic_burst_of(spec, pk)
    nic = metrics.nic_periodicity(tree, flows, ports, pk, host_rate)
    late, excess = metrics.timing_excess_pkts(
        tree=tree,
        flows=flows,
        ports=ports,
        pk=pk,
        host_rate_bps=host_rate,
        nic_burst_bytes=nic_burst,
        line_rate_bps=spec.rate_bps,
    )
    t_pkt = metrics.packet_time_ns(pk, host_rate) / 1e9
    evidence = fidelity.Evidence(
        pacing=metrics.pacing_errors(tree, flows, ports, host_rate, nic_burst, spec.wire_overhead),
        pacing_span_pkts=metrics.pacing_spans_pkts(tree, flows, ports, pk, host_rate),
        service=metrics.saturated_service(tree, ports, spec.rate_bps, spec.burst, host_rate, spec.wire_overhead),
        start_skew_s=metrics.start_skew_ns(tree, flows, ports, spec.rate_bps) / 1e9,
        packet_time_s=t_pkt,
        nic_burst_pkts=nic.burst,
        nic_stall_pkts=nic.stall,
        nic_back_to_back=nic.back_to_back,
        nic_dry_pkts=nic.dry,
        nic_held_pkts=nic.held,
        delivery=_delivery(plan, sent, drained, got, drops),
        softnet_drops=drops["softnet"],
        cpu_busy=machine.busy,
        cpu_busiest=machine.busiest,
        cpu_steal=machine.steal,
        cpu_window=machine.window,
        max_giveups=sum(s.max_giveups for s in ports.values()),
        sample_rate_hz=sample_rate_hz,
        cpu_awake=probes.cpu_awake,
        softirq_first=probes.softirq_first,
        nic_late_pkts=late,
        timing_excess_pkts=excess,
        bound_pkts=plan.bounds.no_propagation / t_pkt,
        nic_stamped=probes.stamped,
        loop=_loop(plan, sent, got.rx),
        timers=machine.timers,
        feedback_lost=sum(c["delay_lost"] for c in got.host_counts.values()),
        link_packet_time_s=pk.wire_len(pk.payload) * 8 / spec.rate_bps,
        outside_cpu=machine.outside,
        outside_worst=machine.outside_worst,
        window_s=machine.outside_window_s,
    )
    bound = plan.bounds.bound
    ideal_place = _ideal_place(
        plan,
        configs=list(plan.configs.values()) + list(got.configs_end.values()),
        failures=bool(got.link_events or plan.timeline.applied),
        cct_increase=(timing.cct_ns / 1e9 - bound) / bound if bound > 0 else 0.0,
        stages=metrics.stage_queues(metrics.port_queues(tree, ports, timing.window_ns)),
        allowance=evidence.timing_excess_share,
    )
    return fidelity.verdict(replace(evidence, ideal=ideal_place))


def _loop(plan: Plan, sent: SendReport, rx: dict[int, metrics.FlowSample]) -> tmeasure.LoopTiming | None:
    """A transport run's loop timing (how late it acted, flows left incomplete); None in paced runs."""
    tp, pk = plan.tp, plan.pk
    if not tp.on or sent.lateness is None:
        return None
    incomplete = sum(
        1
        for f in plan.flows
        if not sent.flows[f.fid].noroute and (rx[f.fid].uniq if f.fid in rx else 0) < pk.count(f.size_bytes)
    )
    return tmeasure.LoopTiming.of(sent.lateness, tp.pkt_ns, incomplete, tp.base_rtt_ns)


def _per_switch(plan: Plan, before: Counters, got: Readings) -> dict[str, dict[str, Any]]:
    """Each LB switch's scheme (and the one at the end if it changed live), uplink and pointer counts."""
    tree = plan.fab.tree
    per_switch: dict[str, dict[str, Any]] = {}
    for sw in switches.lb_switches(tree):
        base = sw.nid * tree.w
        up0, up1 = before.uplinks, got.after.uplinks
        per_switch[sw.name] = {
            "scheme": plan.configs[sw.name].label,
            "uplink_pkts": [int(up1[base + s]) - int(up0[base + s]) for s in range(tree.w)],
            "pointer_pkts": collector.class_counts(tree, before.pointers[sw.nid], got.after.pointers[sw.nid], sw.level),
        }
        if got.configs_end[sw.name] != plan.configs[sw.name]:  # changed live during the run
            per_switch[sw.name]["scheme_at_end"] = got.configs_end[sw.name].label
    return per_switch


def _flow_stats(plan: Plan, sent: SendReport, got: Readings, timing: Timing) -> list[dict[str, Any]]:
    """Each flow's row of the flows table: what was sent and received, its ACKs, its completion."""
    tree, tp, pk = plan.fab.tree, plan.tp, plan.pk
    flow_stats = []
    for f in plan.flows:
        r, a = got.rx.get(f.fid), got.acks.get(f.fid)
        end = timing.ends[f.fid]
        flow_stats.append(
            {
                "fid": f.fid,
                "src": tree.hosts[f.src].name,
                "dst": tree.hosts[f.dst].name,
                "size_bytes": f.size_bytes,
                "sent": sent.flows[f.fid].packets,
                "received": r.pkts if r else 0,
                "shortfall": sent.flows[f.fid].packets - (r.pkts if r else 0),
                "no_route_at_source": sent.flows[f.fid].noroute,
                "complete": ((r.uniq if tp.on else r.pkts) if r else 0) == pk.count(f.size_bytes),
                "reachable_at_end": got.reach_end.reachable(tree.hosts[f.src], tree.hosts[f.dst]),
                "first_rx_ns": r.first_ns if r else 0,
                "last_rx_ns": r.last_ns if r else 0,
                "acks": int(a.acks) if a else 0,
                "last_ack_ns": int(a.last_ns) if a else 0,
                "out_of_order": r.ooo if r else 0,
                "max_psn_displacement": r.max_disp if r else 0,
                "ce": r.ce if r else 0,
                "acks_ecn": int(a.ecn) if a else 0,
                "path_links": path_links(tree, f.src, f.dst),
                "completion_ns": round(end + plan.prop.shift_s[f.fid] * 1e9) if end else 0,
                **(_flow_transport(sent.flows[f.fid], r) if tp.on else {}),
            }
        )
    return flow_stats


def _transport_summary(
    plan: Plan, sent: SendReport, got: Readings, drops: dict[str, int], windows: pd.DataFrame | None
) -> dict[str, Any]:
    """A transport run's summary (testbed.measure.transport.summary); {"cc": "none"} without one."""
    tp, rx = plan.tp, got.rx
    loop = _loop(plan, sent, rx)
    if not tp.on or loop is None or windows is None:
        return {"cc": "none"}
    return tmeasure.summary(
        trace=windows,
        sent=sent.flows,
        timing=loop,
        described=tp.describe(),
        rx_uniq=sum(r.uniq for r in rx.values()),
        rx_dups=sum(r.dups for r in rx.values()),
        buffer_drops=drops["buffer"],
        ack_drops=drops["buffer_acks"],
    )


def _result(
    plan: Plan,
    *,
    sent: SendReport,
    got: Readings,
    timing: Timing,
    sending: Sending,
    drops: dict[str, int],
    before: Counters,
    verdict: fidelity.Verdict,
    windows: pd.DataFrame | None,
) -> Result:
    """The run's result (`testbed run --json`), from the readings and the verdict."""
    p, flows, spec, tree, ports = plan.p, plan.flows, plan.fab.spec, plan.fab.tree, got.ports
    queues = metrics.port_queues(tree, ports, timing.window_ns, sending.window)
    util = metrics.utilisation(tree, ports, spec.rate_bps, timing.window_ns, spec.wire_overhead)
    cct_s, bound, bound_ff = timing.cct_ns / 1e9, plan.bounds.bound, plan.bounds.fault_free
    c0, c1 = before.data_plane, got.after.data_plane
    return Result(
        scheme=plan.scheme_label,
        workload=p.workload,
        k=tree.k,
        hosts=tree.n_hosts,
        size_bytes=p.size,
        load=p.load,
        rate_bps=spec.rate_bps,
        host_rate_bps=plan.host_rate,
        rho_max=plan.rho,
        seed=p.seed,
        flows=len(flows),
        acks=p.acks,
        cct_s=cct_s,
        cct_start_ns=timing.t_first,
        cct_end_ns=timing.t_last,
        cct_lower_bound_s=bound,
        cct_lower_bound_fault_free_s=bound_ff,
        cct_increase_fault_free=(cct_s - bound_ff) / bound_ff if bound_ff > 0 else 0.0,
        cct_increase=(cct_s - bound) / bound if bound > 0 else 0.0,
        packets_sent=sent.packets,
        packets_received=sum(r.pkts for r in got.rx.values()),
        acks_received=sum(int(a.acks) for a in got.acks.values()),
        drops=sum(drops.values()),
        drops_detail=drops,
        drops_by_port=_drops_by_port(tree, before.qdisc, got.after.qdisc, ports),
        switch_counters={n: c1[n] - c0.get(n, 0) for n in c1},
        queues=metrics.stage_queues(queues),
        overload=metrics.worst_overload(tree, ports),
        utilisation=_delivered(plan, ports, timing.window_ns),
        utilisation_sending=sending.utilisation,
        sending_window=sending.describe(),
        ports=[{**asdict(q), "utilisation": util[q.port]} for q in queues],
        fidelity=verdict.to_json(),
        switches=_per_switch(plan, before, got),
        flow_stats=_flow_stats(plan, sent, got, timing),
        out_dir=str(plan.run_dir.path) if plan.run_dir is not None else None,
        discarded_attempts=plan.discarded,
        link_events=got.link_events,
        timeline=[
            {**a.action, "applied_at_s": [(t - timing.t_first) / 1e9 for t in a.t_applied_ns]}
            for a in plan.timeline.applied
        ],
        ecn={"unit": p.ecn().unit, "threshold": p.ecn().value, "buffer_ref_bytes": p.buffer_ref},
        ecn_marked=sum(q.ecn_marked for q in queues),
        host_lb={
            "scheme": p.scheme.label if p.scheme is not None and p.scheme.is_host else None,
            **{n: sum(c[n] for c in got.host_counts.values()) for n in HOST_LB_COUNTER_NAMES},
            "by_host": got.host_counts,
        },
        port_buffer_bytes=p.port_buffer(),
        transport=_transport_summary(plan, sent, got, drops, windows),
        propagation=plan.prop.describe(),
        edge_bound=_edge_bound(plan, queues),
    )


def _edge_bound(plan: Plan, queues: list[metrics.PortQueue]) -> dict[str, Any]:
    """Weighted Ofan's edge-uplink bound (queue_model.wofan_edge_bounds) checked on the run: each edge uplink's
    largest queue against its bound, for ports whose load under the run's rounds is within capacity; {} unless
    every edge switch ran wofan, without ACKs (their small frames are not packets of a packet time) and with no
    timeline (the rounds changed mid-run)."""
    tree, p = plan.fab.tree, plan.p
    edges = [sw.name for sw in tree.switches if sw.level is Level.EDGE]
    if p.acks or plan.timeline.actions or any(plan.configs[e].scheme is not Scheme.WOFAN for e in edges):
        return {}
    routes = plan.routes
    bounds = queue_model.wofan_edge_bounds(
        tree,
        plan.flows,
        routes.rounds,
        routes.routing.masks,
        plan.host_rate / plan.fab.spec.rate_bps,
        burst=NIC_BUCKET_FRAMES,
    )
    judged = [(q.max_pkts - bounds[q.port][0], q) for q in queues if q.port in bounds and bounds[q.port][1] <= 1 + 1e-9]
    if not judged:
        return {"ports": 0}
    excess, tightest = max(judged, key=lambda x: x[0])
    fullest = max((q for _, q in judged), key=lambda q: q.max_pkts)
    return {
        "ports": len(judged),
        "over_capacity": sum(1 for b in bounds.values() if b[1] > 1 + 1e-9),
        "holds": excess <= 0,
        "largest_excess": float(excess),  # the tightest port's queue minus its bound
        "tightest_port": tightest.port,
        "largest_queue": fullest.max_pkts,
        "port": fullest.port,
        "bound": bounds[fullest.port][0],  # that port's
        "largest_bound": max(b for b, _ in bounds.values()),
    }


def _write(
    plan: Plan, result: Result, sampler: collector.Sampler, timing: Timing, windows: pd.DataFrame | None
) -> None:
    """The run's directory: the manifest's summary and the tables (ports, flows, the queue series, and a
    transport run's window trace)."""
    assert plan.run_dir is not None
    tables = _tables(plan.fab.tree, result, sampler, timing.t_first)
    if windows is not None:
        tables["windows"] = windows
    plan.run_dir.finish({**_manifest_summary(result), "timeseries": sampler.describe()}, tables)


@dataclass(frozen=True)
class Propagated:
    """A run's propagation: the delay of one link and what it adds to each flow's completion."""

    spec: Propagation
    link_s: float
    link_pkts: float
    shift_s: dict[int, float]

    def describe(self) -> dict[str, Any]:
        return {
            "asked": self.spec.label,
            "link_s": self.link_s,
            "link_pkts": self.link_pkts,
            "where": "each flow's completion and the bound gain its path's links x the delay twice (the CCT "
            "ends at the last ACK: with ACKs on the kernel saw it arrive, without them its way back is added); "
            "every feedback signal (REPS entropies, CONGA's "
            "fed-back metric, ACKs to a congestion controller) is usable one propagation round trip "
            "after it reached the data plane; queues and utilisation are over what the kernel saw",
        }


def _propagation(p: RunParams, tree: FatTree, flows: list[Flow], rate_bps: int, pk: Packetizer) -> Propagated:
    link_s = p.link_delay_s(rate_bps, pk.wire_overhead)
    return Propagated(
        spec=p.propagation,
        link_s=link_s,
        link_pkts=link_s * rate_bps / 8 / pk.wire_len(p.payload),
        shift_s=metrics.propagation_shift_s(tree, flows, link_s),
    )


def _flow_end(r: Any, a: Any, acks: bool) -> int:
    """A flow's last arrival as the kernel saw it: its last ACK with ACKs on (if any came back), else its last
    data packet (0: nothing arrived)."""
    if acks and a is not None and a.acks:
        return int(a.last_ns)
    return int(r.last_ns) if r is not None else 0


def _flow_transport(s: Any, r: Any) -> dict[str, Any]:
    """A flow's transport figures: the receiver's distinct and duplicate arrivals, the sender's recovery."""
    return {
        "received_unique": r.uniq if r else 0,
        "received_duplicates": r.dups if r else 0,
        "retransmits": s.retransmits,
        "fast_retransmits": s.fast_retransmits,
        "timeouts": s.timeouts,
        "spurious_retransmits": s.spurious,
        "acked_twice": s.acked_twice,
        "final_cwnd_pkts": s.final_cwnd,
    }


def _paths(tree: FatTree, flows: list[Flow]) -> dict[int, int]:
    """Each flow's number of equal-cost paths (the transport's duplicate-ACK threshold is 3 more)."""
    hpe, hpp = tree.hosts_per_edge, tree.hosts_per_pod
    return {f.fid: n_paths(f.src // hpe == f.dst // hpe, f.src // hpp == f.dst // hpp, tree.w) for f in flows}


class _TransportArgs(TypedDict, total=False):
    """Senders' keyword arguments of a run with its transport on (none with it off)."""

    transport: Transport
    paths: dict[int, int]
    base_rtts_ns: dict[int, int] | None
    reps: RepsFreeze | None
    after_ns: dict[int, int] | None
    trace_path: str
    ring_path: str


def _send(plan: Plan, trace_path: Path) -> SendReport:
    """Send the collective (traffic.sender), the timeline started with the senders; their PIDs recorded while
    they run, so that `testbed clean` can kill them after a crash."""
    fab = plan.fab
    prefix = fab.spec.prefix
    pids: list[int] = []

    def started(pid: int) -> None:  # recorded so that `testbed clean` can kill it after a crash
        pids.append(pid)
        state.record_pid(prefix, pid)
        plan.timeline.start()

    try:
        senders = Senders(
            endpoints(fab.tree),
            plan.flows,
            plan.pk,
            seed=plan.p.seed,
            fault=for_sender(plan.fault),
            line_rate_bps=fab.spec.rate_bps,
            **_transport_args(plan, trace_path),
        )
        return senders.run(timeout_s=_send_timeout_s(plan), on_start=started)
    finally:
        for pid in pids:
            state.record_pid(prefix, pid, add=False)


def _transport_args(plan: Plan, trace_path: Path) -> _TransportArgs:
    """The senders' transport: its paths, base RTTs, REPS's freeze, chains' waits, trace and ACK ring (none
    with the transport off)."""
    fab, tp = plan.fab, plan.tp
    if not tp.on:
        return {}
    prefix = fab.spec.prefix
    freeze = (
        RepsFreeze(
            map_path=os.path.join(pin_dir(prefix), "reps"),
            entries=Dims.of(fab.tree).n_flows,
            freeze_ns=round(reps_freeze_s(fab.spec.rate_bps) * 1e9),
        )
        if plan.p.scheme is Scheme.REPS and plan.p.reps_freeze
        else None
    )
    waits = metrics.chain_wait_s(fab.tree, plan.flows, plan.prop.link_s)  # chained flows: their input's propagation
    return {
        "transport": tp,
        "paths": _paths(fab.tree, plan.flows),
        "base_rtts_ns": plan.rtts,
        "reps": freeze,
        "after_ns": {fid: round(w * 1e9) for fid, w in waits.items()},
        "trace_path": str(trace_path),
        "ring_path": os.path.join(pin_dir(prefix), RINGBUF_MAPS[0]),
    }


def _send_timeout_s(plan: Plan) -> float:
    """How long the senders may take: ten bounds and ten seconds, the latest start, and for a transport run more
    (timeouts, windows smaller than the BDP); the fault deadline:MS gives up that early."""
    if isinstance(plan.fault, Deadline):
        return plan.fault.ms / 1e3
    bound, tp = plan.bounds.bound, plan.tp
    return (
        10 * bound
        + 10
        + max((f.start_bits for f in plan.flows), default=0) / plan.fab.spec.rate_bps
        + (20 * bound + 100 * tp.base_rtt_ns / 1e9 if tp.on else 0)
    )


def _manifest_summary(r: Result) -> dict[str, Any]:
    return {
        "fidelity": r.fidelity,
        "valid": r.fidelity["valid"],
        "discarded_attempts": r.discarded_attempts,
        "rho_max": r.rho_max,
        "timeline": r.timeline,
        "link_events": r.link_events,
        "switch_uplink_pkts": {n: s["uplink_pkts"] for n, s in r.switches.items()},
        "switches": r.switches,
        "summary": {
            k: getattr(r, k)
            for k in (
                "cct_s",
                "cct_lower_bound_s",
                "cct_increase",
                "cct_lower_bound_fault_free_s",
                "cct_increase_fault_free",
                "packets_sent",
                "packets_received",
                "acks_received",
                "drops",
                "drops_detail",
                "switch_counters",
                "queues",
                "overload",
                "utilisation",
                "ecn",
                "ecn_marked",
                "host_lb",
            )
        },
    }


def _tables(tree: FatTree, r: Result, sampler: collector.Sampler, t0_ns: int) -> dict[str, pd.DataFrame]:
    cols = sampler.series(t0_ns)
    stage_labels = [st.label for st in Stage]
    # categoricals: 4 bytes a reading, not a string pointer (a long series has tens of millions of readings)
    timeseries = pd.DataFrame(
        {
            "t_s": cols["t_s"],
            "port": pd.Categorical.from_codes(cols["position"], categories=[p.label for p in tree.ports]),
            "stage": pd.Categorical.from_codes(
                np.array([int(p.stage) for p in tree.ports], dtype=np.int8)[cols["position"]], categories=stage_labels
            ),
            "pkts": cols["pkts"],
            "bytes": cols["bytes"],
        }
    )
    stage_rows = [{"stage": st, **v, "worst_overload": r.overload[st]} for st, v in r.queues.items()]
    return {
        "flows": pd.DataFrame(r.flow_stats),
        "ports": pd.DataFrame(r.ports),
        "timeseries": timeseries,
        "stages": pd.DataFrame(stage_rows),
    }


def _wait_delivered(maps: Maps, sent: int, acks: bool, lost: Callable[[], tuple[int, int]]) -> bool:
    """Wait until every data packet sent arrived or was dropped by a full buffer (`lost()`: data and ACKs
    dropped so), and with `acks` every ACK of what arrived (True), or nothing arrived for DRAIN_IDLE_S
    (False)."""
    last, last_change = (-1, -1), time.monotonic()
    while True:
        got, got_acks = collector.received(maps)
        lost_data, lost_acks = lost()
        if got + lost_data >= sent and (not acks or got_acks + lost_acks >= got):
            return True
        now = time.monotonic()
        if (got, got_acks) != last:
            last, last_change = (got, got_acks), now
        elif now - last_change > DRAIN_IDLE_S:
            return False
        time.sleep(0.005)


def _delta(before: dict[int, Any], after: dict[int, Any], i: int, what: str) -> int:
    """A qdisc counter's change over the run (a qdisc made during it counts from zero)."""
    return int(getattr(after[i], what)) - (int(getattr(before[i], what)) if i in before else 0)


def _drops_by_port(
    tree: Any, qdisc0: dict[int, Any], qdisc1: dict[int, Any], ports: dict[int, Any]
) -> dict[str, dict[str, int]]:
    """Every port that dropped anything, by kind: its qdisc's data and ACK drops, its finite buffer's."""
    out = {}
    for p in tree.ports:
        i = p.ifindex
        kinds = {
            "qdisc": _delta(qdisc0, qdisc1, i, "drops") - _delta(qdisc0, qdisc1, i, "ack_drops") if i in qdisc1 else 0,
            "qdisc_acks": _delta(qdisc0, qdisc1, i, "ack_drops") if i in qdisc1 else 0,
            "buffer": int(ports[i].buf_drops) if i in ports else 0,
            "buffer_acks": int(ports[i].buf_ack_drops) if i in ports else 0,
        }
        if any(kinds.values()):
            out[p.label] = {k: v for k, v in kinds.items() if v}
    return out


def _ideal_place(
    plan: Plan,
    *,
    configs: list[SchemeConfig],
    failures: bool,
    cct_increase: float,
    stages: dict[str, dict[str, float]],
    allowance: float,
) -> dict[str, Any]:
    """The run's place in the ideal fabric's distribution for its flows (testbed.measure.envelope), or why it
    has none."""
    fab, p, flows, pk = plan.fab, plan.p, plan.flows, plan.pk
    schemes = set(configs)  # at the start and at the end of the run
    why = (
        "switches run different schemes"
        if len(schemes) != 1
        else "ACKs on"
        if p.acks
        else "congestion control"
        if plan.tp.on
        else "load below 1"
        if p.load < 1
        else "link failures"
        if failures or faults.current_failed(fab.tree)
        else ""
    )
    config = next(iter(schemes)) if len(schemes) == 1 else None
    if not why and config is not None:
        why = envelope.modelled(config, flows, pk)
    frames = sum(pk.count(f.size_bytes) for f in flows)
    if not why and frames * envelope.DRAWS > envelope.MAX_FRAME_DRAWS:
        why = f"{frames} frames x {envelope.DRAWS} draws is beyond {envelope.MAX_FRAME_DRAWS} (testbed ideal plays it)"
    if why or config is None:
        return {"placed": False, "why_not": why}
    env = envelope.envelope(
        fab.tree,
        config,
        flows,
        pk,
        plan.prop.link_pkts,
        buckets_bytes=(fab.spec.burst, nic_burst_of(fab.spec, pk)),  # the fabric's own
        ecmp=_ecmp_inputs(fab, flows, p.seed) if config.scheme is Scheme.ECMP else None,
    )
    placed = envelope.place(env, cct_increase, {s: q["max_pkts"] for s, q in stages.items()}, allowance)
    why_not = envelope.not_judged(config)
    return {"placed": True, "judged": not why_not, **({"why_not_judged": why_not} if why_not else {}), **placed}


def _ecmp_inputs(fab: Fabric, flows: list[Flow], seed: int) -> ideal.EcmpInputs:
    """What the switches hashed during the run: their ECMP seeds as the kernel holds them, the flows' ports."""
    assert fab.maps is not None
    seeds = {}
    for sw in switches.lb_switches(fab.tree):
        cfg = fab.maps.switch_cfg.get(sw.nid)
        assert cfg is not None  # an array map: every switch id has an entry
        seeds[sw.name] = int(cfg.seed)
    return ideal.EcmpInputs(seeds, {f.fid: source_port(f.fid, seed) for f in flows})
