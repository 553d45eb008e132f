"""The verdict's logic on hand-made evidence: a clean run is valid, and each
criterion, pushed just past its tolerance, invalidates it with its own reason.
(tests/system/test_fidelity_faults.py injects the same faults into real runs.)"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from testbed.fabric.qdisc_timers import TimerLateness
from testbed.measure import fidelity
from testbed.measure.cpu_windows import Busiest
from testbed.measure.fidelity import Delivery, Evidence

T = 0.00066  # one packet time, s


def clean() -> Evidence:
    return Evidence(
        pacing={"h0": 0.001, "h1": -0.004},
        service={"p0": 1.2, "p1": 0.99},
        start_skew_s=0.3 * T,
        packet_time_s=T,
        nic_burst_pkts={"h0": 0.3, "h1": 0.26},
        nic_stall_pkts={"h0": 0.5, "h1": 0.2},
        nic_back_to_back={"h0": 0, "h1": 0},
        delivery=Delivery(
            planned=100, sent=100, received=97, counted_losses=3, sender_errors=0, emulator_drops=0, drain_complete=True
        ),
        softnet_drops=0,
        cpu_busy=0.5,
        cpu_busiest=0.7,
        cpu_steal=0.01,
        max_giveups=0,
        sample_rate_hz=500.0,
        cpu_awake=True,
        nic_late_pkts={"h0": 0.4, "h1": 1.1},
        timing_excess_pkts=0.5,
        bound_pkts=254.75,
    )


def test_clean_run_is_valid() -> None:
    v = fidelity.verdict(clean())
    assert v.valid and v.reasons == []
    assert v.start_skew_pkts == pytest.approx(0.3) and v.nic_burst_pkts == 0.3 and v.nic_stall_pkts == 0.5
    assert v.delivery["unaccounted"] == 0 and v.saturated_service_min == 0.99
    assert v.tolerances["start_skew_pkts"] == fidelity.START_SKEW_MAX_PKTS


def _delivery(**kw: object) -> Delivery:
    return dataclasses.replace(clean().delivery, **kw)  # type: ignore[arg-type]


FAULTS = {
    "late start": ({"start_skew_s": 1.2 * T}, "senders started"),
    "pacing": ({"pacing": {"h0": 0.021}}, "host pacing off by +2.1 % at h0"),
    "burst": (
        {"nic_burst_pkts": {"h0": 0.3, "h1": 1.02}, "nic_back_to_back": {"h1": 1}},
        "NIC of h1 ran 1.0 frames ahead",
    ),
    "stall": ({"nic_stall_pkts": {"h1": fidelity.STALL_MAX_PKTS + 0.1}}, "NIC of h1 stalled"),
    "service": ({"service": {"p0": 1.0, "p1": 0.969}}, "busy link p1 served at 96.9 %"),
    "lost": ({"delivery": _delivery(received=96)}, "1 of 100 data packets lost without a trace"),
    "counted beyond": ({"delivery": _delivery(received=98)}, "3 data packets counted lost but only 2 missing"),
    "duplicated": ({"delivery": _delivery(over_received=1)}, "1 packets received beyond what their flows sent"),
    "short send": ({"delivery": _delivery(sent=90, received=87)}, "sent 90 of 100 packets"),
    "sender errors": ({"delivery": _delivery(sender_errors=2)}, "2 send() calls failed"),
    "drain": ({"delivery": _delivery(drain_complete=False)}, "the drain gave up"),
    "softnet": ({"softnet_drops": 3, "delivery": _delivery(emulator_drops=3)}, "3 packets dropped by the per-CPU"),
    "data plane": ({"delivery": _delivery(emulator_drops=1)}, "1 packets dropped by the data plane's error paths"),
    "busy CPU": ({"cpu_busiest": 0.99}, "a CPU was 99 % busy"),
    "busy CPU window": (
        {"cpu_window": Busiest(0.99, 1, 0.25, 0.1)},
        "a CPU was 99 % busy over 100 ms (CPU 1, 0.25 s into the run; maximum 98 %)",
    ),
    "CPU gap": (
        {"timers": TimerLateness(2000, 20e-6, 5e-3, 1, 3), "link_packet_time_s": 1e-3},
        "a qdisc timer fired 5.0 ms late on CPU 1, 5.0 packet times (maximum 4)",
    ),
    "give-ups": ({"max_giveups": 2}, "2 queue-maximum updates gave up"),
    "late NICs": (
        {"timing_excess_pkts": 1.6, "nic_late_pkts": {"h0": 0.4, "h1": 1.3}},
        "can have added 0.6 % to the CCT (1.6 packet times; maximum 0.5 %); latest NIC h1, 1.3",
    ),
    "late NICs, short run": ({"timing_excess_pkts": 1.6, "bound_pkts": 14.75}, "can have added 10.8 %"),
    "REPS feedback lost": ({"feedback_lost": 3}, "3 REPS entropies were lost in a full delay line"),
    "outside": (
        {"outside_cpu": 0.3, "outside_worst": "cc1 (pid 7)", "window_s": 1.0},
        "processes outside the run took 30 % of a CPU during it (maximum 5 %; the busiest cc1 (pid 7))",
    ),
}


@pytest.mark.parametrize(
    ("dry", "cause"),
    [
        (4.1, "no data frame waited in its queue: its sender was late"),
        (0.3, "with frames waiting: its timer or its CPU was late"),
    ],
)
def test_a_stall_names_who_was_late(dry: float, cause: str) -> None:
    """A gap that began with the NIC's queue empty is its sender's; with frames waiting, the NIC's own."""
    stall = {"h0": 0.5, "h1": fidelity.STALL_MAX_PKTS + 0.1}
    v = fidelity.verdict(dataclasses.replace(clean(), nic_stall_pkts=stall, nic_dry_pkts={"h0": 0.0, "h1": dry}))
    assert v.reasons == [f"NIC of h1 stalled for 4.1 packet times (maximum 4; {cause})"]
    assert v.nic_dry_pkts == dry and v.nic_dry_by_host["h1"] == dry
    assert v.latest_nic == "h1" and v.latest_nic_gap_cause == ("sender" if dry > 4 else "nic")  # h1 latest in clean()
    late = fidelity.verdict(
        dataclasses.replace(
            clean(),
            nic_stall_pkts={"h1": 1.2},
            nic_dry_pkts={"h1": 1.2},
            timing_excess_pkts=1.6,
            nic_late_pkts={"h1": 1.3},
        )
    )
    assert late.reasons[0].endswith(
        "latest NIC h1, 1.3 packet times, its longest gap 1.2 packet times beyond one "
        "(no data frame waited in its queue: its sender was late)"
    )


def test_a_transport_runs_own_stall_is_judged_beside_longer_waits() -> None:
    """In a transport run a NIC's longest gap can be its sender's (a closed window, a chain's step waiting for
    its input): the NIC's own longest gap, begun with data frames waiting, is judged on its own."""
    from testbed.measure.transport import LoopTiming

    loop = LoopTiming(*([0.0] * len(dataclasses.fields(LoopTiming))))  # type: ignore[arg-type]
    waits = dataclasses.replace(
        clean(), loop=loop, nic_stall_pkts={"h0": 70.0}, nic_dry_pkts={"h0": 70.0}, nic_held_pkts={"h0": 1.0}
    )
    v = fidelity.verdict(waits)
    assert v.valid and v.nic_held_pkts == 1.0
    own = fidelity.verdict(dataclasses.replace(waits, nic_held_pkts={"h0": 4.5}))
    assert own.reasons == [
        "NIC of h0 stalled for 4.5 packet times (maximum 4; with data frames waiting: its timer or its CPU was late)"
    ]


def test_a_stall_with_late_timers_names_them() -> None:
    """Timers fired milliseconds late: the CPU took no interrupt, and the stall's reason says so."""
    timers = TimerLateness.of([[3000, 2000], [30_000_000, 900_000_000], [40_000, 7_000_000], [0, 9]])
    assert (timers.fired, timers.max_cpu, timers.over_100us) == (5000, 1, 9)
    assert timers.max_s == pytest.approx(7e-3) and timers.mean_s == pytest.approx(0.93 / 5000)
    e = dataclasses.replace(clean(), nic_stall_pkts={"h1": 21.0}, nic_dry_pkts={"h1": 0.2}, timers=timers)
    v = fidelity.verdict(e)
    assert v.reasons == [
        (
            "NIC of h1 stalled for 21.0 packet times (maximum 4; with frames waiting; the run's qdisc "
            "timers fired up to 7.0 ms late on CPU 1, which took no interrupt that long)"
        )
    ]
    assert v.timers is not None and v.timers["over_100us"] == 9
    assert v.latest_nic_gap_cause == "cpu"
    on_time = dataclasses.replace(timers, max_s=fidelity.TIMER_LATE_NOTE_S / 2)
    assert "its timer or its CPU was late" in fidelity.verdict(dataclasses.replace(e, timers=on_time)).reasons[0]


def test_pacing_is_judged_beyond_one_packet_time_of_its_span() -> None:
    """A NIC that sent 20 packet times' worth 4 % late lost 0.8 of a packet time: periodicity and timing judge
    that; 6 % over the same span is more than a packet time, and over 256 packet times 2.1 % is too."""
    short = dataclasses.replace(clean(), pacing={"h0": -0.04}, pacing_span_pkts={"h0": 20.0})
    assert fidelity.verdict(short).valid
    v = fidelity.verdict(dataclasses.replace(short, pacing={"h0": -0.06}))
    assert v.reasons == ["host pacing off by -6.0 % at h0 (tolerance 5.0 %)"]
    long = dataclasses.replace(clean(), pacing={"h0": -0.021}, pacing_span_pkts={"h0": 255.0})
    assert fidelity.verdict(long).reasons == ["host pacing off by -2.1 % at h0 (tolerance 2.0 %)"]


def test_timing_excess_within_its_floor_on_short_runs() -> None:
    """On a 16-packet flow 0.5 % is a twelfth of a packet time: up to 1.5 packet times pass."""
    v = fidelity.verdict(dataclasses.replace(clean(), timing_excess_pkts=1.5, bound_pkts=14.75))
    assert v.valid and v.timing_excess_share == pytest.approx(1.5 / 14.75)


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_fault_is_rejected_with_its_reason(fault: str) -> None:
    change, reason = FAULTS[fault]
    v = fidelity.verdict(dataclasses.replace(clean(), **change))  # type: ignore[arg-type]
    assert not v.valid
    assert len(v.reasons) == 1 and reason in v.reasons[0], v.reasons


def test_cpu_times_busiest_cpu_and_steal(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal
    stat.write_text("cpu 0 0 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0\nintr 1\n")
    a = fidelity.CpuTimes.now(str(stat))
    stat.write_text("cpu 120 0 0 60 0 0 0 20\ncpu0 98 0 0 2 0 0 0 0\ncpu1 22 0 0 58 0 0 0 20\nintr 1\n")
    b = fidelity.CpuTimes.now(str(stat))
    assert b.busy_since(a) == pytest.approx(0.6) and b.busiest_since(a) == pytest.approx(0.98)
    assert b.steal_since(a) == pytest.approx(0.1)


def test_a_run_outside_the_ideal_fabric_is_flagged() -> None:
    from testbed.measure import envelope

    env = envelope.Envelope((0.070, 0.072, 0.075, 0.068, 0.071), {"edge_agg": (20, 24, 22, 21, 23)})
    inside = envelope.place(env, 0.074, {"edge_agg": 25}, allowance=0.001)
    assert inside["reasons"] == [] and 0.6 <= inside["cct_increase_percentile"] <= 0.8
    far = envelope.place(env, 0.090, {"edge_agg": 22}, allowance=0.001)
    assert len(far["reasons"]) == 1 and far["reasons"][0].startswith("CCT increase +9.00 % is outside")
    low = envelope.place(env, 0.071, {"edge_agg": 12}, allowance=0.001)  # better than a perfect fabric: suspect
    assert low["reasons"] == [
        "largest edge_agg queue 12 packets is outside the ideal fabric's 22.0 +- 7.2 (20 to 24 over 5 draws)"
    ]
    v = fidelity.verdict(dataclasses.replace(clean(), ideal={"placed": True, **far}))
    assert not v.valid and v.reasons[0].startswith("against the ideal fabric: CCT increase +9.00 %")
    assert fidelity.verdict(dataclasses.replace(clean(), ideal={"placed": False, "why_not": "ACKs on"})).valid


def test_an_order_dependent_scheme_is_placed_but_not_judged() -> None:
    """RR and JSQ depend on the order in which a switch serves simultaneous arrivals (the registry's
    arrival_order), which the kernel fixes and the draws take at random: their place is reported, never a
    reason; the other schemes the ideal fabric models are judged."""
    from testbed.measure import envelope
    from testbed.models.schemes import Scheme, SchemeConfig

    judged = {s for s in Scheme if s.traits.ideal and not envelope.not_judged(SchemeConfig(s))}
    assert judged == {Scheme.ECMP, Scheme.RPS, Scheme.OFAN, Scheme.POFAN, Scheme.DRB, Scheme.WOFAN}  # DRB: without ACKs
    assert "placed, not judged" in envelope.not_judged(SchemeConfig(Scheme.RR))
    env = envelope.Envelope((0.10, 0.12, 0.15, 0.08, 0.11), {"edge_host": (5, 6, 4, 5, 6)})
    far = envelope.place(env, 0.90, {"edge_host": 15}, allowance=0.001)  # RR's kernel against random order
    assert len(far["reasons"]) == 2
    rr = {"placed": True, "judged": False, "why_not_judged": envelope.not_judged(SchemeConfig(Scheme.RR)), **far}
    v = fidelity.verdict(dataclasses.replace(clean(), ideal=rr))
    assert v.valid and v.reasons == [] and v.ideal is not None and v.ideal["cct_increase_z"] > 3
    assert not fidelity.verdict(dataclasses.replace(clean(), ideal={**rr, "judged": True})).valid


def test_the_envelope_is_cached_by_its_inputs(tmp_path: Path) -> None:
    from testbed.measure import envelope
    from testbed.models.schemes import Scheme, SchemeConfig
    from testbed.topology import FatTree
    from traffic.packet import Packetizer
    from traffic.workloads import WorkloadSpec, make_spec

    t = FatTree(4, "ideal")
    flows = make_spec(WorkloadSpec("permutation", 1 << 18, 3), t.n_hosts, t.hosts_per_pod)
    pk = Packetizer()
    a = envelope.envelope(t, SchemeConfig(Scheme.RPS), flows, pk, 12.0, draws=4, cache_dir=tmp_path)
    assert len(list(tmp_path.iterdir())) == 1 and len(a.cct_increase) == 4 and len(set(a.cct_increase)) > 1
    assert envelope.envelope(t, SchemeConfig(Scheme.RPS), flows, pk, 12.0, draws=4, cache_dir=tmp_path) == a
    envelope.envelope(t, SchemeConfig(Scheme.RPS), flows, pk, 0.0, draws=4, cache_dir=tmp_path)
    assert len(list(tmp_path.iterdir())) == 2  # another propagation, another entry
    assert envelope.modelled(SchemeConfig(Scheme.REPS), flows, pk).startswith("the ideal fabric models")


def test_ecmp_envelopes_are_cached_by_the_runs_hash_inputs(tmp_path: Path) -> None:
    from testbed.measure import envelope
    from testbed.models import ideal
    from testbed.models.schemes import Scheme, SchemeConfig
    from testbed.topology import FatTree
    from traffic.packet import Packetizer
    from traffic.workloads import WorkloadSpec, make_spec

    t = FatTree(4, "ideal")
    flows = make_spec(WorkloadSpec("permutation", 1 << 18, 3), t.n_hosts, t.hosts_per_pod)
    pk, ecmp = Packetizer(), SchemeConfig(Scheme.ECMP)
    sports = {f.fid: 50_000 + f.fid for f in flows}
    envs = set()
    for seed in range(1, 6):  # other switch seeds: other collisions, each its own cache entry
        inputs = ideal.EcmpInputs({sw.name: seed for sw in t.switches}, sports)
        a = envelope.envelope(t, ecmp, flows, pk, 0.0, draws=3, cache_dir=tmp_path, ecmp=inputs)
        assert envelope.envelope(t, ecmp, flows, pk, 0.0, draws=3, cache_dir=tmp_path, ecmp=inputs) == a
        envs.add(tuple(a.max_queue["edge_agg"]))
    assert len(list(tmp_path.iterdir())) == 5 and len(envs) > 1


def test_steal_is_reported_not_judged_and_cc_stalls_only_with_frames_waiting() -> None:
    assert fidelity.verdict(dataclasses.replace(clean(), cpu_steal=0.5)).valid
    from testbed.measure.transport import LoopTiming

    loop = LoopTiming(*([0.0] * len(dataclasses.fields(LoopTiming))))  # type: ignore[arg-type]
    closed = dataclasses.replace(clean(), loop=loop, nic_stall_pkts={"h1": 80.0}, nic_dry_pkts={"h1": 80.0})
    assert fidelity.verdict(closed).valid  # a closed window: the NIC's queue was empty
    waiting = dataclasses.replace(closed, nic_dry_pkts={"h1": 0.5})
    assert fidelity.verdict(waiting).reasons[0].startswith("NIC of h1 stalled for 80.0 packet times")


def test_outside_cpu_counts_other_processes_not_ours() -> None:
    import os
    import subprocess
    import sys
    import time

    from testbed.measure import outside

    spin = "import time\nt = time.time()\nwhile time.time() - t < 1.0: pass"
    before, t0 = outside.Snapshot.now(), time.monotonic()
    # a process not ours: started by a shell that exits at once (it is re-parented away from this process)
    sh = subprocess.run(
        ["sh", "-c", f"{sys.executable} -c '{spin}' >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        check=True,
    )
    other = int(sh.stdout)
    mine = subprocess.Popen([sys.executable, "-c", spin])
    time.sleep(0.9)
    after = outside.Snapshot.now()
    window = time.monotonic() - t0
    mine.wait()
    while os.path.exists(f"/proc/{other}"):
        time.sleep(0.05)
    assert other not in after.descendants([os.getpid()]) and mine.pid in after.descendants([os.getpid()])
    base, _ = outside.outside_cpu(before, after, window, [os.getpid(), other])  # whatever else runs here
    share, _ = outside.outside_cpu(before, after, window, [os.getpid()])  # `mine` is ours, `other` is not
    assert share - base >= 0.3, (share, base)  # `other` spun for most of the window, outside the run


def test_a_short_burst_of_another_process_is_left_to_the_cpu_gap_criterion() -> None:
    assert fidelity.verdict(dataclasses.replace(clean(), outside_cpu=0.11, window_s=0.045)).valid  # 5 ms in all
    assert not fidelity.verdict(dataclasses.replace(clean(), outside_cpu=0.11, window_s=1.0)).valid


def test_every_figure_of_the_verdict_has_its_results_column() -> None:
    """results.parquet carries every one-number figure of the verdict (each criterion's and those reported
    beside them), the delivery balance, the qdisc timers', the transport's and the ideal fabric's."""
    from testbed.measure import envelope
    from testbed.measure.transport import LoopTiming
    from testbed.run.sweep import SWITCH_STAGES, TRANSPORT_FIELDS, fidelity_columns

    env = envelope.Envelope((0.070, 0.072, 0.075), {s: (2, 3, 2) for s in SWITCH_STAGES})
    placed = envelope.place(env, 0.071, {s: 2 for s in SWITCH_STAGES}, allowance=0.001)
    e = dataclasses.replace(
        clean(),
        timers=TimerLateness(2000, 20e-6, 5e-4, 1, 3),
        link_packet_time_s=1e-3,
        loop=LoopTiming(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0, 0, 40.0),
        ideal={"placed": True, **placed},
        cpu_window=Busiest(0.5, 1, 0.2, 0.1),
    )
    f = fidelity.verdict(e).to_json()
    row = fidelity_columns(f)
    scalars = {k for k, v in f.items() if isinstance(v, (bool, int, float, str)) and k != "reasons"}
    assert scalars >= {
        "valid",
        "start_skew_pkts",
        "pacing_error_max",
        "timing_excess_share",
        "nic_burst_pkts",
        "nic_stall_pkts",
        "saturated_service_min",
        "softnet_drops",
        "cpu_busiest_window",
        "outside_cpu",
        "max_giveups",
    }  # each criterion's own figure is a scalar of the verdict
    for k in scalars:
        assert row[f"fidelity_{k}"] == f[k]
    for k, v in f["delivery"].items():
        assert row[f"fidelity_delivery_{k}"] == v
    assert row["fidelity_timer_late_max_s"] == 5e-4 and row["fidelity_timers_over_100us"] == 3
    assert row["fidelity_cpu_busiest_window_s"] == 0.1
    assert row["fidelity_ideal_cct_limit"] == f["ideal"]["cct_increase_limit"]
    assert all(row[f"fidelity_ideal_queue_{s}_limit"] == f["ideal"]["queues"][s]["limit"] for s in SWITCH_STAGES)
    assert [row[f"fidelity_transport_{n}"] for n in TRANSPORT_FIELDS] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0, 0]
    paced = fidelity_columns(fidelity.verdict(clean()).to_json())  # no transport, timers or ideal: NaN, not absent
    assert set(paced) == set(row)
    assert math.isnan(paced["fidelity_transport_send_late_max_pkts"]) and math.isnan(paced["fidelity_ideal_cct_z"])


def _loop(**kw: float) -> object:
    from testbed.measure.transport import LoopTiming

    zero = dict.fromkeys((f.name for f in dataclasses.fields(LoopTiming)), 0)
    return LoopTiming(**{**zero, "base_rtt_pkts": 150.0, **kw})  # type: ignore[arg-type]


def _timers(max_s: float) -> TimerLateness:
    return TimerLateness(2000, 20e-6, max_s, 1, 3)


# Each criterion of the table: its figure just past its threshold, the same figure just within (at the threshold
# where the comparison is strict), and the start of the reason it gives past it.
ACROSS: dict[str, tuple[dict[str, object], dict[str, object], str]] = {
    "start together": (
        {"start_skew_s": 1.01 * fidelity.START_SKEW_MAX_PKTS * T},
        {"start_skew_s": fidelity.START_SKEW_MAX_PKTS * T},
        "senders started 0.67 ms apart, 1.0 packet times (maximum 1)",
    ),
    "pacing": (
        {"pacing": {"h0": fidelity.PACING_TOLERANCE + 1e-4}},
        {"pacing": {"h0": -fidelity.PACING_TOLERANCE}},
        "host pacing off by +2.0 % at h0 (tolerance 2.0 %)",
    ),
    "emulator timing": (
        {"timing_excess_pkts": fidelity.TIMING_EXCESS_MAX * 400 + 0.01, "bound_pkts": 400.0},
        {"timing_excess_pkts": fidelity.TIMING_EXCESS_MAX * 400, "bound_pkts": 400.0},
        "start offsets and late NICs can have added 0.5 % to the CCT (2.0 packet times; maximum 0.5 %)",
    ),
    "periodicity": (
        {"nic_burst_pkts": {"h0": fidelity.NIC_BURST_MAX_PKTS + 0.01}},
        {"nic_burst_pkts": {"h0": fidelity.NIC_BURST_MAX_PKTS}},
        "NIC of h0 ran 0.5 frames ahead of strict periodicity (maximum 0.5; 0 frames back to back)",
    ),
    "stalls": (
        {"nic_stall_pkts": {"h0": fidelity.STALL_MAX_PKTS + 0.01}},
        {"nic_stall_pkts": {"h0": fidelity.STALL_MAX_PKTS}},
        "NIC of h0 stalled for 4.0 packet times (maximum 4; its queue was not observed)",
    ),
    "service": (
        {"service": {"p0": fidelity.SERVICE_MIN - 1e-4}},
        {"service": {"p0": fidelity.SERVICE_MIN}},
        "busy link p0 served at 97.0 % of its rate (minimum 97 %)",
    ),
    "delivery": (
        {"delivery": _delivery(received=96)},
        {"delivery": _delivery(received=96, counted_losses=4)},
        "1 of 100 data packets lost without a trace",
    ),
    "emulator losses": (
        {"softnet_drops": 1, "delivery": _delivery(emulator_drops=1)},
        {"softnet_drops": 0, "delivery": _delivery(emulator_drops=0)},
        "1 packets dropped by the per-CPU backlog (emulator overload)",
    ),
    "CPU": (
        {"cpu_busiest": fidelity.CPU_BUSIEST_MAX + 0.001},
        {"cpu_busiest": fidelity.CPU_BUSIEST_MAX},
        "a CPU was 98 % busy over the run (maximum 98 %)",
    ),
    "other processes": (
        {"outside_cpu": fidelity.OUTSIDE_CPU_MAX + 0.001, "window_s": 1.0, "outside_worst": "cc1 (pid 7)"},
        {"outside_cpu": fidelity.OUTSIDE_CPU_MAX, "window_s": 1.0, "outside_worst": "cc1 (pid 7)"},
        "processes outside the run took 5 % of a CPU during it (maximum 5 %; the busiest cc1 (pid 7))",
    ),
    "CPU gaps": (
        {"timers": _timers(fidelity.TIMER_LATE_MAX_PKTS * 0.5 + 0.001), "link_packet_time_s": 0.5},
        {"timers": _timers(fidelity.TIMER_LATE_MAX_PKTS * 0.5), "link_packet_time_s": 0.5},
        "a qdisc timer fired 2001.0 ms late on CPU 1, 4.0 packet times (maximum 4)",
    ),
    "exact maxima": ({"max_giveups": 1}, {"max_giveups": 0}, "1 queue-maximum updates gave up under contention"),
    "REPS feedback": ({"feedback_lost": 1}, {"feedback_lost": 0}, "1 REPS entropies were lost in a full delay line"),
    "transport": (
        {"loop": _loop(ack_late_p50_pkts=fidelity.late_tolerance("p50", 150.0) + 0.01)},
        {"loop": _loop(ack_late_p50_pkts=fidelity.late_tolerance("p50", 150.0))},
        "the transport fell behind: ACKs acted on late by 0.39 / 0.00 / 0.0 packet times",
    ),
    "the ideal fabric": (
        {"ideal": {"placed": True, "reasons": ["CCT increase +9.00 % is outside"]}},
        {"ideal": {"placed": True, "reasons": []}},
        "against the ideal fabric: CCT increase +9.00 % is outside",
    ),
}


def test_every_criterion_of_the_table_is_pushed_across_its_threshold() -> None:
    assert [c.name for c in fidelity.CRITERIA] == list(ACROSS)  # in the order the verdict gives their reasons


@pytest.mark.parametrize("criterion", fidelity.CRITERIA, ids=lambda c: c.name)
def test_each_criterion_gives_its_reason_past_its_threshold_and_none_within(criterion: fidelity.Criterion) -> None:
    past, within, reason = ACROSS[criterion.name]
    e = dataclasses.replace(clean(), **past)  # type: ignore[arg-type]
    v = fidelity.verdict(e)
    assert not v.valid and len(v.reasons) == 1 and v.reasons[0].startswith(reason), v.reasons
    assert criterion.check(e) == v.reasons  # the reason is this criterion's, from its own check
    ok = dataclasses.replace(clean(), **within)  # type: ignore[arg-type]
    assert criterion.check(ok) == [] and fidelity.verdict(ok).valid, fidelity.verdict(ok).reasons


# fidelity.tolerances as `run --json` reported it before the criteria became one table: result files and their
# readers rely on these keys and values
TOLERANCES_SNAPSHOT = {
    "pacing": 0.02,
    "service_min": 0.97,
    "start_skew_pkts": 1.0,
    "nic_burst_pkts": 0.5,
    "nic_stall_pkts": 4.0,
    "cpu_busiest": 0.98,
    "timer_late_pkts": 4.0,
    "outside_cpu": 0.05,
    "timing_excess_share": 0.005,
    "timing_excess_floor_pkts": 1.5,
    "transport_late_p50_share_of_base_rtt": 0.0025,
    "transport_late_p99_share_of_base_rtt": 0.01,
    "transport_late_max_share_of_base_rtt": 0.05,
    "transport_late_p50_floor_pkts": 0.25,
    "transport_late_p99_floor_pkts": 1.0,
    "transport_late_max_floor_pkts": 4.0,
}


def test_the_tolerances_are_the_tables_and_what_they_were() -> None:
    limits = [name for c in fidelity.CRITERIA for name, _ in c.limits]
    assert len(limits) == len(set(limits))  # no two criteria report one tolerance
    assert {name: v for c in fidelity.CRITERIA for name, v in c.limits} == fidelity.TOLERANCES
    assert fidelity.TOLERANCES == TOLERANCES_SNAPSHOT
    assert fidelity.verdict(clean()).tolerances == TOLERANCES_SNAPSHOT
