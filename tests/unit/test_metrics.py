from __future__ import annotations

import math

import numpy as np
import pytest

from testbed.dataplane.maps import signed
from testbed.measure import metrics
from testbed.measure.metrics import PortQueue, PortSample
from testbed.topology import FatTree
from traffic.packet import Packetizer
from traffic.workloads import Flow


def test_signed_wraps() -> None:
    assert signed(5) == 5
    assert signed((1 << 64) - 3) == -3
    # the kernel keeps sum(t_out - t_in) modulo 2^64; the integral survives the wrap
    t_in, t_out = 7_000_000_000_000, 7_000_000_500_000
    area = (-t_in) % (1 << 64)
    area = (area + t_out) % (1 << 64)
    assert signed(area) == 500_000


def test_lower_bound_permutation() -> None:
    pk = Packetizer(4096)
    flows = [Flow(1, 0, 1, 1 << 20), Flow(2, 1, 0, 1 << 20)]
    frame_bytes = pk.frame_bytes(1 << 20)
    burst = 2 * 4214
    lb = metrics.cct_lower_bound_s(flows, pk, 100_000_000, 100_000_000, burst)
    assert lb == pytest.approx((frame_bytes - burst) * 8 / 1e8)
    # slower NICs bound the sender side
    lb_half = metrics.cct_lower_bound_s(flows, pk, 100_000_000, 50_000_000, burst)
    assert lb_half == pytest.approx(2 * lb)


def test_lower_bound_incast_is_the_receiver() -> None:
    pk = Packetizer(4096)
    flows = [Flow(1, 0, 2, 1 << 20), Flow(2, 1, 2, 1 << 20)]
    lb = metrics.cct_lower_bound_s(flows, pk, 10**8, 10**8, 0)
    assert lb == pytest.approx(2 * pk.frame_bytes(1 << 20) * 8 / 1e8)


def _sample(ifindex: int, **kw: int) -> PortSample:
    base = dict(
        pkts=0,
        bytes=0,
        max_pkts=0,
        max_bytes=0,
        integral_pkts_ns=0,
        integral_bytes_ns=0,
        tx_pkts=0,
        tx_bytes=0,
        rx_pkts=0,
        rx_bytes=0,
        first_rx_ns=0,
        last_rx_ns=0,
        first_tx_ns=0,
        last_tx_ns=0,
    )
    base.update(kw)
    return PortSample(ifindex=ifindex, **base)


def test_port_and_stage_queues() -> None:
    t = FatTree(4)
    ports = {p.ifindex: _sample(p.ifindex) for p in t.ports}
    up = t.port("e0_0", "a0_0")
    ports[up.ifindex] = _sample(up.ifindex, max_pkts=3, integral_pkts_ns=2_000_000)
    qs = metrics.port_queues(t, ports, window_ns=1_000_000)
    by = {q.port: q for q in qs}
    assert by["e0_0->a0_0"].avg_pkts == pytest.approx(2.0)
    st = metrics.stage_queues(qs)
    n_edge_agg = sum(1 for q in qs if q.stage == "edge_agg")
    assert st["edge_agg"]["max_pkts"] == 3
    assert st["edge_agg"]["avg_pkts"] == pytest.approx(2.0 / n_edge_agg)
    assert st["core_agg"] == {"avg_pkts": 0.0, "avg_sending_pkts": 0.0, "max_pkts": 0}


def test_stage_queues_of_empty_input() -> None:
    st = metrics.stage_queues([PortQueue("x", "edge_agg", 1.0, 2, 10.0, 20, 5)])
    assert st["edge_agg"]["max_pkts"] == 2 and st["host_edge"]["max_pkts"] == 0


def test_pacing_error() -> None:
    t = FatTree(4)
    frame = 4154
    n = 101
    rate = 50_000_000
    span = int((n - 1) * frame * 8 / rate * 1e9)
    ports = {p.ifindex: _sample(p.ifindex) for p in t.ports}
    hp = t.host_port("h0_0_0")
    ports[hp.ifindex] = _sample(hp.ifindex, rx_pkts=n, rx_bytes=n * frame, first_rx_ns=10, last_rx_ns=10 + span)
    slow = t.host_port("h0_0_1")
    ports[slow.ifindex] = _sample(
        slow.ifindex, rx_pkts=n, rx_bytes=n * frame, first_rx_ns=10, last_rx_ns=10 + int(span * 1.25)
    )
    flows = [Flow(1, 0, 5, 1), Flow(2, 1, 6, 1)]
    err = metrics.pacing_errors(t, flows, ports, rate, burst_bytes=frame)
    assert err["h0_0_0"] == pytest.approx(0.0, abs=1e-6)
    assert err["h0_0_1"] == pytest.approx(-0.2, abs=1e-6)
    # a two-frame bucket sends two frames at once: the rate counts from the second
    burst_span = int((n - 2) * frame * 8 / rate * 1e9)
    ports[hp.ifindex] = _sample(hp.ifindex, rx_pkts=n, rx_bytes=n * frame, first_rx_ns=0, last_rx_ns=burst_span)
    err2 = metrics.pacing_errors(t, flows, ports, rate, burst_bytes=2 * frame)
    assert err2["h0_0_0"] == pytest.approx(0.0, abs=1e-6)
    # ACKs the host sent after its last data frame are not its NIC's lateness: only the bytes up to that frame
    ports[hp.ifindex] = _sample(
        hp.ifindex,
        rx_pkts=n + 30,
        rx_bytes=n * frame + 30 * 62,
        first_rx_ns=0,
        last_rx_ns=burst_span * 3,
        nic_last_data_ns=burst_span,
        nic_data_bytes=n * frame,
    )
    err3 = metrics.pacing_errors(t, flows, ports, rate, burst_bytes=2 * frame)
    assert err3["h0_0_0"] == pytest.approx(0.0, abs=1e-6)


def test_timing_excess_counts_start_offset_and_lateness() -> None:
    """h0 is a perfect NIC (token bucket of 1.25 frames: its last of n frames at n - 1.25 packet times);
    h1 starts half a packet time later and sends its last frame two packet times late."""
    t = FatTree(4)
    pk = Packetizer(4096)
    frame = pk.frame_len(4096)
    rate = 50_000_000
    pt = frame * 8e9 / rate
    n = 256
    ports = {p.ifindex: _sample(p.ifindex) for p in t.ports}
    on_time = t.host_port("h0_0_0")
    ports[on_time.ifindex] = _sample(
        on_time.ifindex, rx_pkts=n, rx_bytes=n * frame, first_rx_ns=1000, last_rx_ns=1000 + round((n - 1.25) * pt)
    )
    late = t.host_port("h0_0_1")
    start = 1000 + round(0.5 * pt)
    ports[late.ifindex] = _sample(
        late.ifindex, rx_pkts=n, rx_bytes=n * frame, first_rx_ns=start, last_rx_ns=start + round((n - 1.25 + 2) * pt)
    )
    flows = [Flow(1, 0, 5, n * 4096), Flow(2, 1, 6, n * 4096)]
    by_host, excess = metrics.timing_excess_pkts(t, flows, ports, pk, rate, round(1.25 * frame))
    assert by_host["h0_0_0"] == pytest.approx(0.0, abs=1e-3)
    assert by_host["h0_0_1"] == pytest.approx(2.0, abs=1e-3)
    assert excess == pytest.approx(2.5, abs=1e-3)


def test_compare_parsing_and_summary() -> None:
    import pandas as pd

    from testbed.models.schemes import SchemeError
    from testbed.run.compare import compare_summary, parse_schemes

    cs = parse_schemes("ecmp, ofan,pofan:2,pofan:cpu")
    assert [c.label for c in cs] == ["ecmp", "ofan", "2ofan", "pofan-cpu"]
    for bad in ("ecmp,ecmp", "ofan:4", "warp", "pofan:x", ""):
        with pytest.raises(SchemeError):
            parse_schemes(bad)
    df = pd.DataFrame(
        [
            {"scheme": "a", "cct_increase": 0.1, "max_queue_pkts": 3, "valid": True, "drops": 0},
            {"scheme": "a", "cct_increase": 0.3, "max_queue_pkts": 5, "valid": False, "drops": 1},
            {"scheme": "b", "cct_increase": 0.0, "max_queue_pkts": 1, "valid": True, "drops": 0},
        ]
    )
    df.loc[len(df)] = {"scheme": "a", "cct_increase": 0.2, "max_queue_pkts": 4, "valid": True, "drops": 0}
    df.loc[len(df)] = {"scheme": "c", "cct_increase": 0.5, "max_queue_pkts": 9, "valid": False, "drops": 0}
    s = compare_summary(df).set_index("scheme")
    # the invalid run of a (0.3, queue 5, one drop) is left out of every figure but the counts
    assert s.loc["a", "cct_increase_mean"] == pytest.approx(0.15)
    assert s.loc["a", "cct_increase_sem"] == pytest.approx(0.05)
    assert s.loc["a", "max_queue_pkts"] == 4 and s.loc["a", "drops"] == 0
    assert (s.loc["a", "runs"], s.loc["a", "valid"], s.loc["a", "left_out"]) == (3, 2, 1)
    assert s.loc["b", "runs"] == 1 and s.loc["b", "cct_increase_sem"] == 0.0
    assert s.loc["c", "valid"] == 0 and math.isnan(s.loc["c", "cct_increase_mean"])
    assert math.isnan(s.loc["c", "max_queue_pkts"]) and math.isnan(s.loc["c", "drops"])  # not a measured 0


def test_propagation_shifts_each_flow_and_the_bound_by_its_links() -> None:
    from traffic.workloads import WorkloadSpec, make_spec

    tree, pk, rate, burst = FatTree(4, "t"), Packetizer(4096), 10**8, 2 * 4214
    d = 0.001  # one link, seconds
    inter = make_spec(WorkloadSpec("permutation", 1 << 20, 3, inter_pod=True), 16, 4)
    b0 = metrics.cct_lower_bound_s(inter, pk, rate, rate, burst)
    shift = metrics.propagation_shift_s(tree, inter, d)
    assert set(shift.values()) == {2 * 6 * d}  # every flow crosses pods: 6 links there, and the ACK's 6 back
    for acks in (False, True):  # the CCT ends at the last ACK either way (the paper's, section 6)
        b = metrics.cct_lower_bound_s(inter, pk, rate, rate, burst, ack_frame_bytes=62 if acks else 0, shift_s=shift)
        b_noprop = metrics.cct_lower_bound_s(inter, pk, rate, rate, burst, ack_frame_bytes=62 if acks else 0)
        assert b == pytest.approx(b_noprop + 2 * 6 * d)
    # a mixed permutation: every host's term is the same, so the bound grows by the longest flow's shift;
    # 2 links under one edge, 4 within a pod
    mixed = [Flow(1, 0, 1, 1 << 20), Flow(2, 1, 0, 1 << 20), Flow(3, 4, 6, 1 << 20), Flow(4, 6, 4, 1 << 20)]
    shift = metrics.propagation_shift_s(tree, mixed, d)
    assert shift == {1: 4 * d, 2: 4 * d, 3: 8 * d, 4: 8 * d}  # 2 and 4 links, there and back
    assert metrics.cct_lower_bound_s(mixed, pk, rate, rate, burst, shift_s=shift) == pytest.approx(
        metrics.cct_lower_bound_s(mixed, pk, rate, rate, burst) + 8 * d
    )
    assert b0 > 0
    # the CCT: each flow's last arrival plus its own shift, the latest; a flow that delivered nothing has none
    assert metrics.completion_ns({1: 1_000_000, 2: 0, 3: 900_000}, {1: 2e-4, 2: 9.0, 3: 4e-4}) == 1_300_000


def test_utilisation_counts_the_bucket_as_capacity() -> None:
    """A receiver link that carried everything a token bucket allows in the window (rate x T plus its bucket)
    reads exactly 100 %; without the bucket in the capacity the same link read above 100 %."""
    t = FatTree(4)
    rate, window_ns, burst, overhead = 100_000_000, 1_000_000, 8_428, 24
    flows = [Flow(1, 0, 1, 1 << 20)]
    dst = t.hosts[1].name
    port = t.port(t.edge_of(dst), dst)
    full = rate // 8 * window_ns // 10**9 + burst  # bytes of line time
    pkts = 10
    ports = {p.ifindex: _sample(p.ifindex) for p in t.ports}
    ports[port.ifindex] = _sample(port.ifindex, tx_pkts=pkts, tx_bytes=full - pkts * overhead)
    assert metrics.delivered_utilisation(t, flows, ports, rate, window_ns, overhead, burst) == pytest.approx(1.0)
    assert metrics.delivered_utilisation(t, flows, ports, rate, window_ns, overhead) > 1.0
    half = {**ports, port.ifindex: _sample(port.ifindex, tx_pkts=pkts, tx_bytes=full // 2 - pkts * overhead)}
    assert metrics.delivered_utilisation(t, flows, half, rate, window_ns, overhead, burst) == pytest.approx(0.5)


def test_step_integral_holds_each_sample_until_the_next() -> None:
    times = np.array([10, 20, 30], dtype=np.int64)
    occ = np.array([1, 3, 0], dtype=np.int64)
    # [5, 35]: 2 before the first sample (5 ns), then 1 x 10, 3 x 10, 0 x 5
    assert metrics.step_integral(times, occ, 2.0, 5, 35) == 2 * 5 + 10 + 30
    assert metrics.step_integral(times, occ, 2.0, 15, 25) == 1 * 5 + 3 * 5  # starts from the sample before
    assert metrics.step_integral(times, occ, 2.0, 25, 25) == 0


def test_area_at_moves_the_exact_read_along_the_samples_either_way() -> None:
    read = _sample(1, pkts=2, integral_pkts_ns=1000)  # read at t=100 with 2 packets waiting
    times = np.array([60, 80, 120], dtype=np.int64)
    occ = np.array([4, 1, 5], dtype=np.int64)
    # the window ended at 70, before the read: take away 4 x 10 (60-80) + 1 x 20 (80-100)
    assert metrics.area_at(read, 100, 70, times, occ) == 1000 - (4 * 10 + 1 * 20)
    # it ended at 130, after the read: add the read's own 2 x 20 (100-120) then 5 x 10
    assert metrics.area_at(read, 100, 130, times, occ) == 1000 + 2 * 20 + 5 * 10
    assert metrics.area_at(read, 100, 100, times, occ) == 1000


def test_port_queues_average_over_the_sending_window_too() -> None:
    t = FatTree(4)
    ports = {p.ifindex: _sample(p.ifindex, integral_pkts_ns=3_000_000) for p in t.ports}
    sending = metrics.SendingWindow(500_000, {i: 1_000_000.0 for i in ports})
    qs = metrics.port_queues(t, ports, window_ns=1_000_000, sending=sending)
    assert {q.avg_pkts for q in qs} == {3.0} and {q.avg_sending_pkts for q in qs} == {2.0}
    assert metrics.stage_queues(qs)["edge_agg"]["avg_sending_pkts"] == 2.0


def test_area_at_clips_a_reading_no_occupancy_can_have() -> None:
    """A sampled reading outside [0, the port's exact maximum] is clipped into it."""
    read = _sample(1, pkts=2, integral_pkts_ns=1000)
    times = np.array([110], dtype=np.int64)
    occ = np.array([-123_000], dtype=np.int64)
    # 2 x 10 (100-110), then the bad reading, clipped to 0, for 20 (110-130)
    assert metrics.area_at(read, 100, 130, times, occ, max_pkts=10) == 1000 + 2 * 10
    assert metrics.area_at(read, 100, 130, times, np.array([50]), max_pkts=10) == 1000 + 2 * 10 + 10 * 20
