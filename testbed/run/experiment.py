"""One run: a workload over a fabric that is up, measured end to end.

`run(fabric, params, out_dir)` paces the host NICs, sets the scheme on every
LB switch (or keeps each switch's current scheme, for mixed deployments),
gives every switch fresh random pointer state drawn from the seed, resets the
counters, sends the collective while sampling every queue, waits until every
packet (and ACK) is delivered or the fabric is drained, and returns a
`Result`. With `out_dir` it also writes the run's directory (testbed.measure.results).
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from traffic.packet import ACK_FRAME_BYTES, Packetizer
from traffic.sender import Endpoint, RepsFreeze, Senders, SendReport
from traffic.transport import Transport, n_paths
from traffic.workloads import Flow

from ..dataplane import switches
from ..models import control, sampled
from ..dataplane.maps import (ECN_BYTES, ECN_OFF, ECN_PKTS, HOST_LB_COUNTER_NAMES, N_SEEN, NOT_DROPS, RINGBUF_MAPS, Maps,
                              RunCfg, pin_dir)
from ..dataplane.compile import Dims
from ..models.schemes import Scheme, SchemeConfig, select_switches
from ..fabric import cpu_latency, links, netns, qdisc_timers, rx_timestamps, state
from ..fabric.build import NIC_BUCKET_FRAMES, NIC_PEAK_RATIO, Fabric, FabricSpec, host_rate_bps, set_host_rate
from ..fabric.links import SETTLE_S
from ..fabric.lock import run_lock
from ..fabric.observe import qdisc_stats
from ..measure import collector, cpu_windows, envelope, fidelity, metrics, outside, provenance, results
from ..measure import transport as tmeasure
from ..topology import FatTree, Stage
from ..topology.timebase import Propagation, path_links, reps_freeze_s
from . import faults
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


def run(fab: Fabric, p: RunParams, out_dir: Path | None = None,
        discarded: list[dict[str, Any]] | None = None) -> Result:
    """One run, holding the fabric's run lock (FabricBusy if another process holds it)."""
    with run_lock(fab.spec.prefix):
        return _run(fab, p, out_dir, discarded)


def _run(fab: Fabric, p: RunParams, out_dir: Path | None, discarded: list[dict[str, Any]] | None) -> Result:
    spec, tree, maps = fab.spec, fab.tree, fab.maps
    assert maps is not None
    pk = Packetizer(p.payload, spec.wire_overhead)
    if pk.frame_len(p.payload) > spec.mtu + 14:
        raise RunError(f"payload {p.payload} does not fit the fabric MTU {spec.mtu}")
    if p.scheme is not None:
        SchemeConfig(p.scheme.switch_scheme, p.pipe_size).validate(tree.switch_ports)
        if p.mix != "none":
            SchemeConfig.parse(p.mix_base).validate(tree.switch_ports)
    p.check_fabric(tree)
    p.check_propagation(tree, spec.rate_bps, spec.wire_overhead)
    flows = p.flows(tree)
    if not flows:
        raise RunError("the workload has no flow")
    rtts = p.flow_base_rtts_ns(tree, flows, spec.rate_bps, spec.wire_overhead)
    tp = p.transport(spec.rate_bps, max(rtts.values()), spec.wire_overhead)
    seen_words = [(f.fid, math.ceil(pk.count(f.size_bytes) / 64)) for f in flows] if tp.on else []
    if sum(n for _, n in seen_words) > N_SEEN:
        raise RunError(f"--cc: the receivers track {N_SEEN * 64:,} packets per run; this workload has "
                       f"{sum(pk.count(f.size_bytes) for f in flows):,}")
    actions = faults.parse_timeline(p.events, tree) if p.events else []
    failed_now = faults.current_failed(tree)
    rho: dict[str, Any] = {"paced": False}
    pace = p.load
    if p.pace_rho_max:
        rm = control.rho_max(tree, flows, failed_now)
        if rm.rho <= 0:
            raise RunError("rho_max is 0: no flow of this workload can be carried over the links that are up")
        pace = min(p.load, rm.rho)
        rho = {"paced": True, "rho_max": rm.rho, "bottlenecks": rm.bottlenecks,
               "unreachable_flows": rm.unreachable_flows, "failed_links": [ln.name for ln in failed_now]}
    host_rate = host_rate_bps(spec.rate_bps, pace)
    started_at = datetime.now(timezone.utc).isoformat()

    if p.inject == "nic-burst":  # a NIC allowed to burst: eight frames of tokens, no peak rate
        set_host_rate(tree, host_rate, 8 * spec.max_frame, spec.buffer_bytes, overhead=spec.wire_overhead)
    else:
        set_host_rate(tree, host_rate, nic_burst_of(spec, pk), spec.buffer_bytes, frame_bytes=pk.wire_len(p.payload),
                      overhead=spec.wire_overhead)
    if p.inject is not None and p.inject.startswith("nic-slow:"):  # one NIC paced slower than it should be
        _, h, pct = p.inject.split(":")
        set_host_rate(tree, round(host_rate * (1 - float(pct) / 100)), nic_burst_of(spec, pk), spec.buffer_bytes,
                      frame_bytes=pk.wire_len(p.payload), overhead=spec.wire_overhead, hosts=[tree.hosts[int(h)]])
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
    configs = switches.current_schemes(maps, tree)
    lb_settings = sampled.settings(p.sampled(), spec.rate_bps, pk.wire_len(p.payload), tree.edges_per_pod,
                                   sampled.active_bits([c.scheme for c in configs.values()]))
    switches.set_sampled(maps, tree, lb_settings)
    labels = {c.label for c in configs.values()}
    scheme_label = labels.pop() if len(labels) == 1 else "mixed"
    host_lb = p.scheme.host_lb if p.scheme is not None else 0
    if host_lb:
        assert p.scheme is not None
        scheme_label = p.scheme.label
    ecn = p.ecn()
    prop = _propagation(p, tree, flows, spec.rate_bps, pk)
    maps.run_cfg.set(0, RunCfg(acks=int(p.acks), nic_ps_per_byte=round(8e12 / host_rate), host_lb=host_lb,
                               ecn_unit=ECN_UNITS[ecn.unit], ecn_thresh=ecn.value, cc=int(tp.on),
                               buffer_bytes=p.port_buffer(), prop_ns=round(prop.link_s * 1e9),
                               wire_overhead=spec.wire_overhead))
    max_fid = max(f.fid for f in flows)
    collector.reset_flows(maps, max_fid)
    if tp.on:
        collector.prepare_transport(maps, seen_words)
    switches.reset_host_state(maps, tree, p.seed, max_fid)

    ack_bytes = ACK_FRAME_BYTES + spec.wire_overhead if p.acks else 0  # bytes of line time
    waits = metrics.chain_wait_s(tree, flows, prop.link_s)  # chained flows: their input's propagation
    bound0 = metrics.cct_lower_bound_s(flows, pk, spec.rate_bps, host_rate, spec.burst, ack_frame_bytes=ack_bytes,
                                       nic_burst_bytes=nic_burst_of(spec, pk))
    bound = metrics.cct_lower_bound_s(flows, pk, spec.rate_bps, host_rate, spec.burst, ack_frame_bytes=ack_bytes,
                                      nic_burst_bytes=nic_burst_of(spec, pk), shift_s=prop.shift_s, after_s=waits)
    bound_ff = metrics.cct_lower_bound_s(flows, pk, spec.rate_bps, host_rate_bps(spec.rate_bps, p.load),
                                         spec.burst, ack_frame_bytes=ack_bytes,
                                         nic_burst_bytes=nic_burst_of(spec, pk), shift_s=prop.shift_s, after_s=waits)
    params = {**asdict(p), "scheme": p.scheme.label if p.scheme is not None else None}
    run_dir = None
    if out_dir is not None:
        run_dir = results.RunDir(out_dir, {
            "params": params, "scheme": scheme_label, "k": tree.k, "topology": tree.kind, "hosts": tree.n_hosts,
            "prefix": spec.prefix,
            "fabric": {"rate_bps": spec.rate_bps, "host_rate_bps": host_rate, "mtu": spec.mtu,
                       "wire_overhead_bytes": spec.wire_overhead, "ack_priority": spec.ack_priority,
                       "burst_bytes": spec.burst, "nic_burst_bytes": nic_burst_of(spec, pk),
                       "nic_peak_ratio": NIC_PEAK_RATIO, "buffer_bytes": spec.buffer_bytes},
            "switch_schemes": {n: c.label for n, c in configs.items()}, "started_at": started_at,
            "provenance": provenance.describe(), "flows": len(flows), "cct_lower_bound_s": bound,
            "propagation": prop.describe(),
            "port_buffer_bytes": p.port_buffer(), "transport": tp.describe() if tp.on else None,
            "sampled_schemes": lb_settings.describe()})
    try:
        with cpu_latency.awake() as awake, rx_timestamps.on() as stamped, qdisc_timers.watch() as timers, \
                tempfile.TemporaryDirectory(prefix="testbed-windows-") as trace_dir:  # a transport's window trace
            return _measure(fab, p, flows, pk, host_rate, (bound, bound_ff, bound0), prop, rtts, configs,
                            scheme_label, run_dir,
                            list(discarded or []), rho, faults.Timeline(tree, actions), awake, stamped, tp,
                            Path(trace_dir) / "windows.bin", timers)
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (the CLI raises it as a KeyboardInterrupt)
        if run_dir is not None:
            run_dir.abort("interrupted", "terminated (SIGTERM)" if type(e).__name__ == "Terminated"
                          else "interrupted by the user (Ctrl-C)")
        raise
    except BaseException as e:
        if run_dir is not None:
            run_dir.abort("failed", f"{type(e).__name__}: {e}")
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
        discarded.append({"attempt": i + 1, "reasons": r.fidelity["reasons"], "cct_s": r.cct_s,
                          "cct_increase": r.cct_increase, "cpu_steal": r.fidelity["cpu_steal"]})
        if target is not None:
            shutil.rmtree(target, ignore_errors=True)
    raise AssertionError("unreachable")


def _measure(fab: Fabric, p: RunParams, flows: list[Flow], pk: Packetizer, host_rate: int,
             bounds: tuple[float, float, float], prop: Propagated, rtts: dict[int, int], configs: dict[str, SchemeConfig], scheme_label: str,
             run_dir: results.RunDir | None, discarded: list[dict[str, Any]], rho: dict[str, Any],
             timeline: faults.Timeline, cpu_awake: bool, stamped: bool, tp: Transport, trace_path: Path,
             timers: qdisc_timers.Watch | None) -> Result:
    spec, tree, maps = fab.spec, fab.tree, fab.maps
    assert maps is not None
    bound, bound_ff, bound0 = bounds
    events0 = len(links.read_events(spec.prefix))
    n_up = tree.n_switches * tree.w
    qdisc0 = qdisc_stats(tree)
    soft0 = collector.softnet_drops()
    cnt0 = maps.counter_values()
    up0 = list(maps.uplink_pkts.read_array(n_up))
    ptr0 = collector.pointer_values(maps, tree)
    collector.reset_ports(maps, tree)
    collector.reset_host_counters(maps, tree)
    cpu0 = fidelity.CpuTimes.now()
    procs0, t_procs0 = outside.Snapshot.now(), time.monotonic()
    if timers is not None:
        timers.zero()
    sampler = collector.Sampler(maps, tree, SAMPLE_HZ).start()
    link_pkt_s = pk.wire_len(pk.payload) * 8 / spec.rate_bps  # windows as long as the lateness the verdict allows
    cpu_sampler = cpu_windows.Sampler(min_window_s=fidelity.STALL_MAX_PKTS * link_pkt_s).start()
    try:
        sent = _send(fab, flows, pk, p.seed, bound, timeline, _sender_fault(p.inject),
                     tp, rtts, trace_path, p.scheme is Scheme.REPS, metrics.chain_wait_s(tree, flows, prop.link_s))
        drained = _wait_delivered(maps, sent.packets, p.acks, lambda: collector.buffer_drops(maps, tree))
        timeline.join()
        time.sleep(2 * SETTLE_S if timeline.actions else 0)  # let the watcher record its last losses
    finally:
        sampler.stop()
        cpu_window = cpu_sampler.stop()
    cpu1 = fidelity.CpuTimes.now()
    st_now = state.load(spec.prefix)
    outside_window_s = time.monotonic() - t_procs0
    outside_share, outside_worst = outside.outside_cpu(procs0, outside.Snapshot.now(), outside_window_s,
                                                       [os.getpid(), *(st_now.pids if st_now else [])])
    timer_lateness = timers.read() if timers is not None else None
    cpu_busy, cpu_steal, cpu_busiest = cpu1.busy_since(cpu0), cpu1.steal_since(cpu0), cpu1.busiest_since(cpu0)

    ports = collector.read_ports(maps, tree)
    max_fid = max(f.fid for f in flows)
    rx = collector.read_flows(maps, max_fid)
    acks = collector.read_acks(maps, max_fid)
    qdisc1 = qdisc_stats(tree)
    cnt1 = maps.counter_values()
    soft1 = collector.softnet_drops()
    up1 = list(maps.uplink_pkts.read_array(n_up))
    host_counts = collector.read_host_lb(maps, tree)
    ptr1 = collector.pointer_values(maps, tree)
    configs_end = switches.current_schemes(maps, tree)
    link_events = [e for e in links.read_events(spec.prefix) if e["seq"] > events0]
    reach_end = control.Reach(tree, faults.current_failed(tree))

    src_ports = {tree.host_port(tree.hosts[f.src].name).ifindex for f in flows}
    t_first = min((ports[i].first_tx_ns for i in src_ports if ports[i].first_tx_ns), default=0)
    ends = {f.fid: _flow_end(rx.get(f.fid), acks.get(f.fid), p.acks) for f in flows}
    t_last = metrics.completion_ns(ends, prop.shift_s)  # each flow's last arrival plus its propagation
    cct_ns = max(0, t_last - t_first) if t_first and t_last else 0
    t_seen = max(ends.values(), default=0)  # what the kernel saw: the queues' and links' window
    window_ns = max(0, t_seen - t_first) if t_first and t_seen else 0
    queues = metrics.port_queues(tree, ports, window_ns)
    counters = {n: cnt1[n] - cnt0.get(n, 0) for n in cnt1}
    drops = {
        # data packets a qdisc dropped (its ACK class's drops apart, below: an ACK is not a data packet lost)
        "qdisc": sum(_delta(qdisc0, qdisc1, i, "drops") - _delta(qdisc0, qdisc1, i, "ack_drops") for i in qdisc1),
        "qdisc_acks": sum(_delta(qdisc0, qdisc1, i, "ack_drops") for i in qdisc1),
        "softnet": soft1 - soft0,
        # the data plane's error paths
        "switch": sum(v for n, v in counters.items() if n != "unreachable" and n not in NOT_DROPS),
        # routed toward a link before it failed, dropped by the first switch without a route (or, with
        # hosts cut off, sent to an unreachable destination)
        "unreachable": cnt1["unreachable"] - cnt0.get("unreachable", 0),
        "sender_errors": sent.errors,
        "link_failures": sum(e["lost_pkts"] for e in link_events),  # died in a link's queues when it failed
    }
    buf_data, buf_acks = (sum(s.buf_drops for s in ports.values()), sum(s.buf_ack_drops for s in ports.values()))
    drops["buffer"] = buf_data
    drops["buffer_acks"] = buf_acks
    drops_by_port = _drops_by_port(tree, qdisc0, qdisc1, ports)
    received = sum(r.pkts for r in rx.values())
    # a flow cannot receive more packets than it sent: an emulator that duplicated packets would otherwise
    # cancel as many untraced losses in the totals
    over_received = sum(max(0, (rx[f.fid].pkts if f.fid in rx else 0) - sent.flows[f.fid].packets) for f in flows)
    acks_received = sum(int(a.acks) for a in acks.values())
    pacing = metrics.pacing_errors(tree, flows, ports, host_rate, nic_burst_of(spec, pk), spec.wire_overhead)
    service = metrics.saturated_service(tree, ports, spec.rate_bps, spec.burst, host_rate, spec.wire_overhead)
    nic = metrics.nic_periodicity(tree, flows, ports, pk, host_rate)
    planned = sum(pk.count(f.size_bytes) for f in flows if not sent.flows[f.fid].noroute)
    losses = sum(drops[n] for n in ("qdisc", "softnet", "switch", "unreachable", "link_failures", "buffer"))
    incomplete = sum(1 for f in flows if not sent.flows[f.fid].noroute
                     and (rx[f.fid].uniq if f.fid in rx else 0) < pk.count(f.size_bytes)) if tp.on else 0
    loop = None
    if tp.on and sent.lateness is not None:
        loop = tmeasure.LoopTiming.of(sent.lateness, tp.pkt_ns, incomplete, tp.base_rtt_ns)
    delivery = fidelity.Delivery(planned, sent.packets, received, losses, sent.errors,
                                 drops["softnet"] + drops["switch"], drained, over_received,
                                 drops["link_failures"] if p.acks else 0)  # a dead queue held ACKs too
    late, excess = metrics.timing_excess_pkts(tree, flows, ports, pk, host_rate, nic_burst_of(spec, pk),
                                              spec.rate_bps)
    t_pkt = metrics.packet_time_ns(pk, host_rate) / 1e9
    evidence = fidelity.Evidence(
        pacing=pacing, pacing_span_pkts=metrics.pacing_spans_pkts(tree, flows, ports, pk, host_rate), service=service, start_skew_s=metrics.start_skew_ns(tree, flows, ports, spec.rate_bps) / 1e9,
        packet_time_s=t_pkt, nic_burst_pkts=nic.burst, nic_stall_pkts=nic.stall, nic_back_to_back=nic.back_to_back,
        delivery=delivery, softnet_drops=drops["softnet"], cpu_busy=cpu_busy, cpu_busiest=cpu_busiest,
        cpu_steal=cpu_steal, max_giveups=sum(s.max_giveups for s in ports.values()), sample_rate_hz=sampler.rate_hz,
        cpu_awake=cpu_awake, nic_late_pkts=late, timing_excess_pkts=excess, bound_pkts=bound0 / t_pkt,
        nic_stamped=stamped, loop=loop, nic_dry_pkts=nic.dry, timers=timer_lateness,
        feedback_lost=sum(c["delay_lost"] for c in host_counts.values()),
        link_packet_time_s=pk.wire_len(pk.payload) * 8 / spec.rate_bps, outside_cpu=outside_share,
        outside_worst=outside_worst, window_s=outside_window_s, cpu_window=cpu_window, nic_held_pkts=nic.held)
    evidence = replace(evidence, ideal=_ideal_place(
        fab, p, flows, pk, list(configs.values()) + list(configs_end.values()), prop, tp.on, bool(link_events or timeline.applied),
        (cct_ns / 1e9 - bound) / bound if bound > 0 else 0.0, metrics.stage_queues(queues),
        evidence.timing_excess_share))
    verdict = fidelity.verdict(evidence)
    util = metrics.utilisation(tree, ports, spec.rate_bps, window_ns, spec.wire_overhead)
    overload = metrics.worst_overload(tree, ports)
    cct_s = cct_ns / 1e9

    per_switch: dict[str, dict[str, Any]] = {}
    for sw in switches.lb_switches(tree):
        base = sw.nid * tree.w
        per_switch[sw.name] = {"scheme": configs[sw.name].label,
                               "uplink_pkts": [int(up1[base + s]) - int(up0[base + s]) for s in range(tree.w)],
                               "pointer_pkts": collector.class_counts(tree, ptr0[sw.nid], ptr1[sw.nid], sw.level)}
        if configs_end[sw.name] != configs[sw.name]:  # changed live during the run
            per_switch[sw.name]["scheme_at_end"] = configs_end[sw.name].label
    flow_stats = []
    for f in flows:
        r, a = rx.get(f.fid), acks.get(f.fid)
        flow_stats.append({
            "fid": f.fid, "src": tree.hosts[f.src].name, "dst": tree.hosts[f.dst].name, "size_bytes": f.size_bytes,
            "sent": sent.flows[f.fid].packets, "received": r.pkts if r else 0,
            "shortfall": sent.flows[f.fid].packets - (r.pkts if r else 0),
            "no_route_at_source": sent.flows[f.fid].noroute,
            "complete": ((r.uniq if tp.on else r.pkts) if r else 0) == pk.count(f.size_bytes),
            "reachable_at_end": reach_end.reachable(tree.hosts[f.src], tree.hosts[f.dst]),
            "first_rx_ns": r.first_ns if r else 0, "last_rx_ns": r.last_ns if r else 0,
            "acks": int(a.acks) if a else 0, "last_ack_ns": int(a.last_ns) if a else 0,
            "out_of_order": r.ooo if r else 0, "max_psn_displacement": r.max_disp if r else 0,
            "ce": r.ce if r else 0, "acks_ecn": int(a.ecn) if a else 0,
            "path_links": path_links(tree, f.src, f.dst),
            "completion_ns": round(ends[f.fid] + prop.shift_s[f.fid] * 1e9) if ends[f.fid] else 0,
            **(_flow_transport(sent.flows[f.fid], r) if tp.on else {})})
    port_rows = [{**asdict(q), "utilisation": util[q.port]} for q in queues]
    windows = tmeasure.read_trace(trace_path, t_first, tp.pkt_ns) if tp.on else None
    transport = tmeasure.summary(windows, sent.flows, loop, tp.describe(), sum(r.uniq for r in rx.values()),
                                 sum(r.dups for r in rx.values()), buf_data, buf_acks) \
        if tp.on and windows is not None and loop is not None else {"cc": "none"}
    result = Result(
        scheme=scheme_label, workload=p.workload, k=tree.k, hosts=tree.n_hosts, size_bytes=p.size_bytes,
        load=p.load, rate_bps=spec.rate_bps, host_rate_bps=host_rate, rho_max=rho, seed=p.seed, flows=len(flows),
        acks=p.acks, cct_s=cct_s, cct_start_ns=t_first, cct_end_ns=t_last, cct_lower_bound_s=bound,
        cct_lower_bound_fault_free_s=bound_ff,
        cct_increase_fault_free=(cct_s - bound_ff) / bound_ff if bound_ff > 0 else 0.0, cct_increase=(cct_s - bound) / bound if bound > 0 else 0.0,
        packets_sent=sent.packets, packets_received=received, acks_received=acks_received,
        drops=sum(drops.values()), drops_detail=drops, drops_by_port=drops_by_port, switch_counters=counters, queues=metrics.stage_queues(queues), overload=overload,
        utilisation=metrics.delivered_utilisation(tree, flows, ports, spec.rate_bps, window_ns, spec.wire_overhead,
                                                  spec.burst),
        ports=port_rows, fidelity=verdict.to_json(), switches=per_switch, flow_stats=flow_stats,
        out_dir=str(run_dir.path) if run_dir is not None else None, discarded_attempts=discarded,
        link_events=link_events,
        timeline=[{**a.action, "applied_at_s": [(t - t_first) / 1e9 for t in a.t_applied_ns]}
                  for a in timeline.applied],
        ecn={"unit": p.ecn().unit, "threshold": p.ecn().value, "buffer_ref_bytes": p.buffer_ref},
        ecn_marked=sum(q.ecn_marked for q in queues),
        host_lb={"scheme": p.scheme.label if p.scheme is not None and p.scheme.is_host else None,
                 **{n: sum(c[n] for c in host_counts.values()) for n in HOST_LB_COUNTER_NAMES},
                 "by_host": host_counts},
        port_buffer_bytes=p.port_buffer(), transport=transport, propagation=prop.describe())
    if run_dir is not None:
        tables = _tables(tree, result, sampler, t_first)
        if windows is not None:
            tables["windows"] = windows
        run_dir.finish({**_manifest_summary(result), "timeseries": sampler.describe()}, tables)
    return result


@dataclass(frozen=True)
class Propagated:
    """A run's propagation: the delay of one link and what it adds to each flow's completion."""

    spec: Propagation
    link_s: float
    link_pkts: float
    shift_s: dict[int, float]

    def describe(self) -> dict[str, Any]:
        return {"asked": self.spec.label, "link_s": self.link_s, "link_pkts": self.link_pkts,
                "where": "each flow's completion and the bound gain its path's links x the delay (twice with "
                         "ACKs: the CCT ends at the last ACK); every feedback signal (REPS entropies, CONGA's "
                         "fed-back metric, ACKs to a congestion controller) is usable one propagation round trip "
                         "after it reached the data plane; queues and utilisation are over what the kernel saw"}


def _propagation(p: RunParams, tree: FatTree, flows: list[Flow], rate_bps: int, pk: Packetizer) -> Propagated:
    link_s = p.link_delay_s(rate_bps, pk.wire_overhead)
    return Propagated(p.propagation, link_s, link_s * rate_bps / 8 / pk.wire_len(p.payload),
                      metrics.propagation_shift_s(tree, flows, link_s, p.acks))


def _flow_end(r: Any, a: Any, acks: bool) -> int:
    """A flow's last arrival as the kernel saw it: its last ACK with ACKs on (if any came back), else its last
    data packet (0: nothing arrived)."""
    if acks and a is not None and a.acks:
        return int(a.last_ns)
    return int(r.last_ns) if r is not None else 0


def _flow_transport(s: Any, r: Any) -> dict[str, Any]:
    """A flow's transport figures: the receiver's distinct and duplicate arrivals, the sender's recovery."""
    return {"received_unique": r.uniq if r else 0, "received_duplicates": r.dups if r else 0,
            "retransmits": s.retransmits, "fast_retransmits": s.fast_retransmits, "timeouts": s.timeouts,
            "spurious_retransmits": s.spurious, "acked_twice": s.acked_twice, "final_cwnd_pkts": s.final_cwnd}


def _paths(tree: FatTree, flows: list[Flow]) -> dict[int, int]:
    """Each flow's number of equal-cost paths (the transport's duplicate-ACK threshold is 3 more)."""
    hpe, hpp = tree.hosts_per_edge, tree.hosts_per_pod
    return {f.fid: n_paths(f.src // hpe == f.dst // hpe, f.src // hpp == f.dst // hpp, tree.w) for f in flows}


def _send(fab: Fabric, flows: list[Flow], pk: Packetizer, seed: int, bound: float,
          timeline: faults.Timeline, fault: str | None, tp: Transport, rtts: dict[int, int],
          trace_path: Path, reps: bool, waits: dict[int, float]) -> SendReport:
    prefix = fab.spec.prefix
    pids: list[int] = []

    def started(pid: int) -> None:  # recorded so that `testbed clean` can kill it after a crash
        pids.append(pid)
        state.record_pid(prefix, pid)
        timeline.start()

    try:
        freeze = RepsFreeze(os.path.join(pin_dir(prefix), "reps"), Dims.of(fab.tree).n_flows,
                            round(reps_freeze_s(fab.spec.rate_bps) * 1e9)) if reps else None
        transport = {"transport": tp, "paths": _paths(fab.tree, flows), "base_rtts_ns": rtts, "reps": freeze,
                     "after_ns": {fid: round(w * 1e9) for fid, w in waits.items()},
                     "trace_path": str(trace_path),
                     "ring_path": os.path.join(pin_dir(prefix), RINGBUF_MAPS[0])} if tp.on else {}
        # a transport run can take longer: timeouts, and windows smaller than the BDP
        timeout_s = (10 * bound + 10 + max((f.start_bits for f in flows), default=0) / fab.spec.rate_bps
                     + (20 * bound + 100 * tp.base_rtt_ns / 1e9 if tp.on else 0))
        if fault is not None and fault.startswith("deadline:"):  # a fault: the senders give up that early
            timeout_s, fault = int(fault.split(":")[1]) / 1e3, None
        return Senders(endpoints(fab.tree), flows, pk, seed, fault, fab.spec.rate_bps, **transport).run(
            timeout_s=timeout_s, on_start=started)
    finally:
        for pid in pids:
            state.record_pid(prefix, pid, add=False)


def _manifest_summary(r: Result) -> dict[str, Any]:
    return {"fidelity": r.fidelity, "valid": r.fidelity["valid"], "discarded_attempts": r.discarded_attempts,
            "rho_max": r.rho_max, "timeline": r.timeline, "link_events": r.link_events,
            "switch_uplink_pkts": {
        n: s["uplink_pkts"] for n, s in r.switches.items()}, "switches": r.switches, "summary": {
        k: getattr(r, k) for k in ("cct_s", "cct_lower_bound_s", "cct_increase", "cct_lower_bound_fault_free_s",
                                   "cct_increase_fault_free", "packets_sent", "packets_received", "acks_received",
                                   "drops", "drops_detail", "switch_counters", "queues", "overload", "utilisation",
                                   "ecn", "ecn_marked", "host_lb")}}


def _tables(tree: FatTree, r: Result, sampler: collector.Sampler, t0_ns: int) -> dict[str, pd.DataFrame]:
    cols = sampler.series(t0_ns)
    stage_labels = [st.label for st in Stage]
    # categoricals: 4 bytes a reading, not a string pointer (a long series has tens of millions of readings)
    timeseries = pd.DataFrame({
        "t_s": cols["t_s"],
        "port": pd.Categorical.from_codes(cols["position"], categories=[p.label for p in tree.ports]),
        "stage": pd.Categorical.from_codes(np.array([int(p.stage) for p in tree.ports], dtype=np.int8)[cols["position"]],
                                           categories=stage_labels),
        "pkts": cols["pkts"], "bytes": cols["bytes"]})
    stage_rows = [{"stage": st, **v, "worst_overload": r.overload[st]} for st, v in r.queues.items()]
    return {"flows": pd.DataFrame(r.flow_stats), "ports": pd.DataFrame(r.ports), "timeseries": timeseries,
            "stages": pd.DataFrame(stage_rows)}


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


def _drops_by_port(tree: Any, qdisc0: dict[int, Any], qdisc1: dict[int, Any],
                   ports: dict[int, Any]) -> dict[str, dict[str, int]]:
    """Every port that dropped anything, by kind: its qdisc's data and ACK drops, its finite buffer's."""
    out = {}
    for p in tree.ports:
        i = p.ifindex
        kinds = {"qdisc": _delta(qdisc0, qdisc1, i, "drops") - _delta(qdisc0, qdisc1, i, "ack_drops")
                 if i in qdisc1 else 0,
                 "qdisc_acks": _delta(qdisc0, qdisc1, i, "ack_drops") if i in qdisc1 else 0,
                 "buffer": int(ports[i].buf_drops) if i in ports else 0,
                 "buffer_acks": int(ports[i].buf_ack_drops) if i in ports else 0}
        if any(kinds.values()):
            out[p.label] = {k: v for k, v in kinds.items() if v}
    return out


def _ideal_place(fab: Fabric, p: RunParams, flows: list[Flow], pk: Packetizer, configs: list[SchemeConfig],
                 prop: Propagated, cc: bool, failures: bool, cct_increase: float,
                 stages: dict[str, dict[str, float]], allowance: float) -> dict[str, Any]:
    """The run's place in the ideal fabric's distribution for its flows (testbed.measure.envelope), or why it
    has none."""
    schemes = set(configs)  # at the start and at the end of the run
    why = ("switches run different schemes" if len(schemes) != 1 else "ACKs on" if p.acks
           else "congestion control" if cc else "load below 1" if p.load < 1 else "link failures" if failures
           or faults.current_failed(fab.tree) else "")
    config = next(iter(schemes)) if len(schemes) == 1 else None
    if not why and config is not None:
        why = envelope.modelled(config, flows, pk)
    frames = sum(pk.count(f.size_bytes) for f in flows)
    if not why and frames * envelope.DRAWS > envelope.MAX_FRAME_DRAWS:
        why = f"{frames} frames x {envelope.DRAWS} draws is beyond {envelope.MAX_FRAME_DRAWS} (testbed ideal plays it)"
    if why or config is None:
        return {"placed": False, "why_not": why}
    env = envelope.envelope(fab.tree, config, flows, pk, prop.link_pkts,
                            buckets_bytes=(fab.spec.burst, nic_burst_of(fab.spec, pk)))  # the fabric's own
    return {"placed": True, **envelope.place(env, cct_increase, {s: q["max_pkts"] for s, q in stages.items()},
                                             allowance)}


def _sender_fault(inject: str | None) -> str | None:
    """The part of an injected fault that the senders carry out (the NICs' own are set up here)."""
    return None if inject is None or inject == "nic-burst" or inject.startswith("nic-slow:") else inject
