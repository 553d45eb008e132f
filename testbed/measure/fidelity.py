"""Can a run be trusted? The verdict every run carries.

A run is valid when the emulation did what it claims. The criteria are one table, CRITERIA (below): each row
names the verdict's figures it judges (and so `run --json`'s and the manifest's `fidelity`), its tolerance in
words and its entries of TOLERANCES (`fidelity.tolerances`), the check that gives its reasons when it fails
(naming the worst offender), and why the tolerance is what it is. The verdict's reasons come from that table in
its order, and so does the criteria table of docs/measurement.md's "Fidelity" section: `python -m
testbed.measure.fidelity` rewrites it there, and tests/unit/test_fidelity_docs.py fails when the page and the
table disagree. What a run reports but does not judge is NOT_JUDGED.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..fabric.qdisc_timers import TimerLateness
from . import cpu_windows, envelope
from .cpu_windows import Busiest
from .transport import LoopTiming

PACING_TOLERANCE = 0.02
SERVICE_MIN = 0.97
START_SKEW_MAX_PKTS = 1.0
NIC_BURST_MAX_PKTS = 0.5
STALL_MAX_PKTS = 4.0
CPU_BUSIEST_MAX = 0.98
# The machine's own CPU gaps, judged in place of steal: the qdisc timers' worst lateness in packet times of the
# links. Measured over 392 runs (k=4 to 16, 0.56 to 100 Mbit/s, 2026-12-04): valid runs 0.09 at the median,
# 0.95 at the 90th percentile, 4.9 at the 99th (congestion-control runs, whose NIC stalls were not judged); a
# link whose timer is later than a NIC may stall is as distorted as that NIC.
TIMER_LATE_MAX_PKTS = STALL_MAX_PKTS
# CPU time of processes that are not the run's, per second of the run: an idle machine of this kind reads
# about 1 % (its agent and journald); a compiler or a second fabric tens of percent.
OUTSIDE_CPU_MAX = 0.05
OUTSIDE_CPU_FLOOR_S = 0.02  # and more than this in all: the VM's agent takes a few ms now and then (a 45 ms run
# at k=16 read 11 % from it); what a short burst does to the timers, the CPU-gap criterion judges
TIMING_EXCESS_MAX = 0.005  # share of the CCT bound
TIMING_EXCESS_FLOOR_PKTS = START_SKEW_MAX_PKTS + 0.5
TIMER_LATE_NOTE_S = 200e-6  # a stall's reason names the timers' lateness from here (they fire ~10 us late)
# The transport's lateness, as a share of the emulated base RTT (every window's round trip is that much
# longer than the model's), with a floor in packet times for runs with little or no base RTT: median (a
# systematic lateness slows every window-limited flow by its share), 99th percentile, worst.
LATE_SHARE = {"p50": 0.0025, "p99": 0.01, "max": 0.05}
LATE_FLOOR_PKTS = {"p50": 0.25, "p99": 1.0, "max": STALL_MAX_PKTS}


def pacing_tolerance(span_pkts: float) -> float:
    """Largest |pacing error| a NIC may have over a span of `span_pkts` packet times (0: unknown, 2 %)."""
    return max(PACING_TOLERANCE, 1 / span_pkts if span_pkts > 0 else 0.0)


def late_tolerance(which: str, base_rtt_pkts: float) -> float:
    """Largest lateness (packet times) a valid transport run may have at percentile `which`."""
    return max(LATE_FLOOR_PKTS[which], LATE_SHARE[which] * base_rtt_pkts)


@dataclass(frozen=True)
class CpuTimes:
    """/proc/stat: busy, steal and total jiffies, all CPUs and each CPU."""

    busy: tuple[int, ...]  # [0] all CPUs, then cpu0, cpu1, ...
    steal: tuple[int, ...]
    total: tuple[int, ...]

    @classmethod
    def now(cls, path: str = "/proc/stat") -> CpuTimes:
        busy, steal, total = [], [], []
        with open(path) as f:
            for line in f:
                if not line.startswith("cpu"):
                    break
                v = [int(x) for x in line.split()[1:]]
                idle = v[3] + v[4]  # idle + iowait
                st = v[7] if len(v) > 7 else 0
                busy.append(sum(v) - idle - st)
                steal.append(st)
                total.append(sum(v))
        return cls(tuple(busy), tuple(steal), tuple(total))

    def _share(self, mine: tuple[int, ...], before: CpuTimes, theirs: tuple[int, ...], i: int) -> float:
        dt = self.total[i] - before.total[i]
        return (mine[i] - theirs[i]) / dt if dt > 0 else 0.0

    def busy_since(self, before: CpuTimes) -> float:
        """Share of all CPUs' time spent busy (steal not counted as busy)."""
        return self._share(self.busy, before, before.busy, 0)

    def busiest_since(self, before: CpuTimes) -> float:
        """The busiest single CPU's busy share."""
        return max(
            (self._share(self.busy, before, before.busy, i) for i in range(1, len(self.busy))),
            default=self.busy_since(before),
        )

    def steal_since(self, before: CpuTimes) -> float:
        """Share of CPU time a hypervisor gave to someone else."""
        return self._share(self.steal, before, before.steal, 0)


@dataclass(frozen=True)
class Delivery:
    planned: int  # data packets the senders had to send (flows with a route at the source)
    sent: int
    received: int
    counted_losses: int  # every counter of a lost packet: queues, failures, strandings, emulator errors
    sender_errors: int
    emulator_drops: int  # softnet + the data plane's error counters
    drain_complete: bool
    over_received: int = 0  # packets received beyond what their flow sent, summed over the flows
    ack_losses_possible: int = 0  # of counted_losses, those that may have been ACKs (a dead link's queue)

    @property
    def balance(self) -> int:
        """sent - received - counted losses: 0 when every data packet is accounted for exactly once."""
        return self.sent - self.received - self.counted_losses

    @property
    def unaccounted(self) -> int:
        """Data packets sent that neither arrived nor show in any loss counter."""
        return max(0, self.balance)

    @property
    def overcounted(self) -> int:
        """Losses counted beyond the packets missing: a counter counts what was not a lost data packet."""
        return max(0, -self.balance - self.ack_losses_possible)


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """What a run measured about itself; `verdict` judges it. Built by name only: a field added in the middle
    cannot shift the others."""

    pacing: Mapping[str, float]  # host -> achieved / paced rate - 1
    pacing_span_pkts: Mapping[str, float] = field(default_factory=dict)  # host -> its span, packet times
    service: Mapping[str, float]  # port -> achieved / configured rate while busy
    start_skew_s: float
    packet_time_s: float  # one data frame at the paced host rate
    nic_burst_pkts: Mapping[str, float]  # host -> frames beyond strict periodicity, worst window
    nic_stall_pkts: Mapping[str, float]  # host -> longest gap between data frames, in packet times, minus one
    nic_back_to_back: Mapping[str, int]  # host -> data frames sent less than half a packet time apart
    delivery: Delivery
    softnet_drops: int
    cpu_busy: float
    cpu_busiest: float
    cpu_steal: float
    max_giveups: int
    sample_rate_hz: float
    cpu_awake: bool = False  # idle CPUs polled rather than halted (testbed.fabric.cpu_latency)
    softirq_first: bool = False  # deferred softirq work served before other threads (testbed.fabric.softirq)
    nic_late_pkts: Mapping[str, float] = field(default_factory=dict)  # host -> last frame behind a periodic NIC
    timing_excess_pkts: float = 0.0  # largest start offset + NIC lateness (metrics.timing_excess_pkts)
    bound_pkts: float = 0.0  # the CCT lower bound in packet times
    nic_stamped: bool = False  # NIC departures from the kernel's hand-over stamps (testbed.fabric.rx_timestamps)
    loop: LoopTiming | None = None  # transport runs: how late the user-space transport acted
    nic_dry_pkts: Mapping[str, float] = field(default_factory=dict)  # host -> longest gap begun with no data queued
    nic_held_pkts: Mapping[str, float] = field(default_factory=dict)  # host -> longest gap begun with data waiting
    timers: TimerLateness | None = None  # the qdisc timers' lateness (testbed.fabric.qdisc_timers); None: not observed
    feedback_lost: int = 0  # REPS entropies overwritten in a full delay line before they were usable (host_lb.h)
    ideal: dict[str, Any] | None = None  # the run's place in the ideal fabric's distribution (measure.envelope)
    link_packet_time_s: float = 0.0  # one data frame at the links' rate (0: timers' lateness not judged)
    outside_cpu: float = 0.0  # CPU-seconds per second that processes not the run's took (measure.outside)
    outside_worst: str = ""  # the busiest of them
    window_s: float = 0.0  # the window those were measured over
    cpu_window: Busiest | None = None  # the busiest CPU over sliding windows (measure.cpu_windows); None: too short

    @property
    def timing_excess_share(self) -> float:
        return self.timing_excess_pkts / self.bound_pkts if self.bound_pkts > 0 else 0.0


@dataclass
class Verdict:
    valid: bool
    reasons: list[str]
    pacing_error_max: float
    pacing_error_mean: float
    saturated_links: int
    saturated_service_min: float
    softnet_drops: int
    cpu_busy: float
    cpu_busiest: float
    cpu_steal: float
    sample_rate_hz: float
    start_skew_s: float
    start_skew_pkts: float
    nic_burst_pkts: float
    nic_stall_pkts: float
    nic_dry_pkts: float
    nic_held_pkts: float
    nic_back_to_back: int
    delivery: dict[str, Any]
    max_giveups: int
    cpu_awake: bool
    softirq_first: bool
    nic_stamped: bool
    nic_late_pkts: float
    timing_excess_pkts: float
    timing_excess_share: float
    tolerances: dict[str, float]
    pacing_error_by_host: dict[str, float] = field(default_factory=dict)
    saturated_service_by_port: dict[str, float] = field(default_factory=dict)
    nic_burst_by_host: dict[str, float] = field(default_factory=dict)
    nic_stall_by_host: dict[str, float] = field(default_factory=dict)
    nic_dry_by_host: dict[str, float] = field(default_factory=dict)
    nic_late_by_host: dict[str, float] = field(default_factory=dict)
    transport: dict[str, Any] | None = None  # transport runs: LoopTiming
    timers: dict[str, Any] | None = None  # TimerLateness; None: not observed
    latest_nic: str = ""  # the NIC latest at its end (nic_late_by_host)
    latest_nic_gap_cause: str = ""  # whose its longest gap was (gap_cause: sender, cpu, nic)
    ideal: dict[str, Any] | None = None  # the run's place in the ideal fabric's distribution (measure.envelope)
    outside_cpu: float = 0.0  # CPU-seconds per second taken by processes not the run's
    outside_worst: str = ""
    cpu_busiest_window: float = 0.0  # the busiest CPU's busy share over its busiest window (cpu_windows)
    cpu_busiest_window_detail: dict[str, Any] | None = None  # which CPU, when, how long; None: run too short

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _worst(values: Mapping[str, float], key: Callable[[float], float] = lambda v: v) -> tuple[str, float]:
    if not values:
        return "", 0.0
    name = max(values, key=lambda n: key(values[n]))
    return name, values[name]


def gap_cause(e: Evidence, host: str) -> str:
    """Whose a NIC's longest gap was: "sender" when no data frame was in the NIC's queue as the gap began; else the NIC's
    own, with frames waiting: "cpu" when the run's qdisc timers fired TIMER_LATE_NOTE_S late or more (a CPU
    took no interrupt that long), "nic" when they were on time; "" when the NIC's queue was not observed."""
    if host not in e.nic_dry_pkts:
        return ""
    if e.nic_dry_pkts[host] >= e.nic_stall_pkts.get(host, 0.0):
        return "sender"
    return "cpu" if e.timers is not None and e.timers.max_s >= TIMER_LATE_NOTE_S else "nic"


def _held_cause(e: Evidence) -> str:
    if e.timers is not None and e.timers.max_s >= TIMER_LATE_NOTE_S:
        return (
            f"with data frames waiting; the run's qdisc timers fired up to {1e3 * e.timers.max_s:.1f} ms late "
            f"on CPU {e.timers.max_cpu}"
        )
    return "with data frames waiting: its timer or its CPU was late"


def _gap_cause(e: Evidence, host: str) -> str:
    cause = gap_cause(e, host)
    if cause == "sender":
        return "no data frame waited in its queue: its sender was late"
    if cause == "cpu":
        assert e.timers is not None
        return (
            f"with frames waiting; the run's qdisc timers fired up to {1e3 * e.timers.max_s:.1f} ms late "
            f"on CPU {e.timers.max_cpu}, which took no interrupt that long"
        )
    return "with frames waiting: its timer or its CPU was late" if cause == "nic" else "its queue was not observed"


def _longest_gap(e: Evidence, host: str) -> str:
    if host not in e.nic_stall_pkts:
        return ""
    return f", its longest gap {e.nic_stall_pkts[host]:.1f} packet times beyond one ({_gap_cause(e, host)})"


def _start(e: Evidence) -> list[str]:
    skew = e.start_skew_s / e.packet_time_s if e.packet_time_s > 0 else 0.0
    if skew > START_SKEW_MAX_PKTS:
        return [
            f"senders started {1e3 * e.start_skew_s:.2f} ms apart, {skew:.1f} packet times (maximum "
            f"{START_SKEW_MAX_PKTS:g})"
        ]
    return []


def _pacing(e: Evidence) -> list[str]:
    beyond = {h: v for h, v in e.pacing.items() if abs(v) > pacing_tolerance(e.pacing_span_pkts.get(h, 0.0))}
    host, err = _worst(beyond, abs)
    if e.loop is None and beyond:  # transport runs send what their windows allow
        return [
            f"host pacing off by {100 * err:+.1f} % at {host} (tolerance "
            f"{100 * pacing_tolerance(e.pacing_span_pkts.get(host, 0.0)):.1f} %)"
        ]
    return []


def _timing(e: Evidence) -> list[str]:
    share, pkts = e.timing_excess_share, e.timing_excess_pkts
    if e.loop is None and share > TIMING_EXCESS_MAX and pkts > TIMING_EXCESS_FLOOR_PKTS:
        host, late = _worst(e.nic_late_pkts)
        return [
            f"start offsets and late NICs can have added {100 * share:.1f} % to the CCT ({pkts:.1f} packet "
            f"times; maximum {100 * TIMING_EXCESS_MAX:g} %); latest NIC {host}, {late:.1f} packet times"
            f"{_longest_gap(e, host)}"
        ]
    return []


def _periodicity(e: Evidence) -> list[str]:
    host, burst = _worst(e.nic_burst_pkts)
    if burst > NIC_BURST_MAX_PKTS:
        return [
            f"NIC of {host} ran {burst:.1f} frames ahead of strict periodicity (maximum "
            f"{NIC_BURST_MAX_PKTS:g}; {e.nic_back_to_back.get(host, 0)} frames back to back)"
        ]
    return []


def _stalls(e: Evidence) -> list[str]:
    # in transport runs a NIC waits for its window or its chain (no data queued: the sender's); a gap with data
    # waiting is the emulator's in every run (the NIC's longest such gap, not only its longest gap: a chain's
    # waits are longer than any stall)
    paced = e.loop is None
    held = (
        e.nic_held_pkts
        if e.nic_held_pkts
        else {h: v for h, v in e.nic_stall_pkts.items() if gap_cause(e, h) in ("cpu", "nic")}
    )
    host, stall = _worst(e.nic_stall_pkts if paced else held)
    if stall > STALL_MAX_PKTS:
        cause = _gap_cause(e, host) if paced else _held_cause(e)
        return [f"NIC of {host} stalled for {stall:.1f} packet times (maximum {STALL_MAX_PKTS:g}; {cause})"]
    return []


def _service(e: Evidence) -> list[str]:
    port, service = _worst(e.service, lambda v: -v)
    if e.service and service < SERVICE_MIN:
        return [f"busy link {port} served at {100 * service:.1f} % of its rate (minimum {100 * SERVICE_MIN:.0f} %)"]
    return []


def _delivery(e: Evidence) -> list[str]:
    d, out = e.delivery, []
    if d.unaccounted:
        out.append(f"{d.unaccounted} of {d.sent} data packets lost without a trace (no loss counter has them)")
    if d.overcounted:
        out.append(
            f"{d.counted_losses} data packets counted lost but only {d.sent - d.received} missing: a loss "
            f"counter counts packets that arrived (see drops_by_port)"
        )
    if d.over_received:
        out.append(
            f"{d.over_received} packets received beyond what their flows sent: the emulator duplicated "
            f"packets, which would cancel as many untraced losses"
        )
    if d.sent < d.planned:
        out.append(f"the senders sent {d.sent} of {d.planned} packets (deadline reached)")
    if d.sender_errors:
        out.append(f"{d.sender_errors} send() calls failed")
    if not d.drain_complete:
        out.append(f"the drain gave up: {d.received} of {d.sent} data packets received")
    return out


def _emulator_losses(e: Evidence) -> list[str]:
    out = []
    if e.softnet_drops > 0:
        out.append(f"{e.softnet_drops} packets dropped by the per-CPU backlog (emulator overload)")
    if e.delivery.emulator_drops - e.softnet_drops > 0:
        out.append(
            f"{e.delivery.emulator_drops - e.softnet_drops} packets dropped by the data plane's error paths "
            f"(see switch_counters)"
        )
    return out


def _cpu(e: Evidence) -> list[str]:
    w = e.cpu_window
    if w is not None and w.share > CPU_BUSIEST_MAX:
        return [
            f"a CPU was {100 * w.share:.0f} % busy over {1e3 * w.window_s:.0f} ms (CPU {w.cpu}, "
            f"{w.start_s:.2f} s into the run; maximum {100 * CPU_BUSIEST_MAX:.0f} %)"
        ]
    if e.cpu_busiest > CPU_BUSIEST_MAX:  # a window within, or none (a run too short), and the run's average above
        return [f"a CPU was {100 * e.cpu_busiest:.0f} % busy over the run (maximum {100 * CPU_BUSIEST_MAX:.0f} %)"]
    return []


def _outside(e: Evidence) -> list[str]:
    if e.outside_cpu > OUTSIDE_CPU_MAX and e.outside_cpu * e.window_s > OUTSIDE_CPU_FLOOR_S:
        return [
            f"processes outside the run took {100 * e.outside_cpu:.0f} % of a CPU during it (maximum "
            f"{100 * OUTSIDE_CPU_MAX:.0f} %; the busiest {e.outside_worst}): they took it from the links"
        ]
    return []


def _cpu_gaps(e: Evidence) -> list[str]:
    t = e.timers
    late = t.max_s / e.link_packet_time_s if t is not None and e.link_packet_time_s > 0 else 0.0
    if t is not None and late > TIMER_LATE_MAX_PKTS:
        return [
            f"a qdisc timer fired {1e3 * t.max_s:.1f} ms late on CPU {t.max_cpu}, "
            f"{late:.1f} packet times (maximum {TIMER_LATE_MAX_PKTS:g}): a link or NIC there stalled with "
            f"frames waiting while the CPU was taken away"
        ]
    return []


def _exact_maxima(e: Evidence) -> list[str]:
    if e.max_giveups:
        return [f"{e.max_giveups} queue-maximum updates gave up under contention: the maxima may be low"]
    return []


def _reps_feedback(e: Evidence) -> list[str]:
    if e.feedback_lost:
        return [
            f"{e.feedback_lost} REPS entropies were lost in a full delay line before their propagation "
            f"round trip was over: the feedback the paper's REPS would have had is missing"
        ]
    return []


def _transport(e: Evidence) -> list[str]:
    t = e.loop
    if t is None:
        return []
    out = []
    for what, figures in (
        ("ACKs acted on", (t.ack_late_p50_pkts, t.ack_late_p99_pkts, t.ack_late_max_pkts)),
        ("packets sent after their window opened", (t.send_late_p50_pkts, t.send_late_p99_pkts, t.send_late_max_pkts)),
    ):
        limits = [late_tolerance(w, t.base_rtt_pkts) for w in ("p50", "p99", "max")]
        if any(v > lim for v, lim in zip(figures, limits, strict=False)):
            out.append(
                f"the transport fell behind: {what} late by {figures[0]:.2f} / {figures[1]:.2f} / "
                f"{figures[2]:.1f} packet times (median / 99th percentile / worst; maximum "
                f"{limits[0]:.2f} / {limits[1]:.2f} / {limits[2]:.1f} at a base RTT of "
                f"{t.base_rtt_pkts:.0f} packet times)"
            )
    if t.ring_overflow:
        out.append(f"the transport lost {t.ring_overflow} ACK events (its queue was full)")
    if t.incomplete_flows:
        out.append(f"{t.incomplete_flows} flows were not received in full (the transport's deadline passed)")
    return out


def _ideal(e: Evidence) -> list[str]:
    if e.ideal is not None and e.ideal.get("placed") and e.ideal.get("judged", True):
        return [f"against the ideal fabric: {r}" for r in e.ideal["reasons"]]
    return []


def _pct(share: float) -> str:
    return f"{100 * share:g} %"


def _pkts(n: float) -> str:
    return f"{n:g} packet time{'' if n == 1 else 's'}"


@dataclass(frozen=True, kw_only=True)
class Criterion:
    """One criterion of the verdict: its check, its tolerances and its row of docs/measurement.md's table."""

    name: str
    check: Callable[[Evidence], list[str]]  # its reasons on a run's evidence, [] when it holds
    figures: tuple[str, ...]  # the verdict's fields that hold what it judges (run --json: fidelity.<field>)
    measures: str  # what those figures are (Markdown, as the rest)
    tolerance: str  # the tolerance in words
    why: str  # why this tolerance, and the measurements behind it
    limits: tuple[tuple[str, float], ...] = ()  # its entries of TOLERANCES (fidelity.tolerances)


_LATE = ("p50", "p99", "max")

CRITERIA: tuple[Criterion, ...] = (
    Criterion(
        name="start together",
        check=_start,
        figures=("start_skew_s", "start_skew_pkts"),
        measures="spread of the senders' first frames at their edge switches",
        tolerance=_pkts(START_SKEW_MAX_PKTS),
        why=(
            "a sender one packet late costs one packet time of CCT. The senders start together: once every "
            "sender thread is ready, one starter thread per CPU sends the first packet of its share of the hosts "
            "back to back, then queues their next packets (up to eight each, so that no NIC waits for its thread "
            "to wake; [Choosing the rate](methods/choosing-the-rate.md)), and only then are the sender threads "
            "released. k=4 at 50 Mbit/s (the default): 0.18-0.42 packet times over 20 seeds, median 0.25 "
            "(`bench/start_skew.py`); at 100 Mbit/s (`--rate 100mbit`) 0.37-0.87, median 0.44; k=16 at 640 "
            "kbit/s: 0.22-0.26; the k=64 leaf-spine: 0.21 (240 ms, 1.4 packet times, while the 2,048 waiting "
            "threads still spun in `sched_yield`)"
        ),
        limits=(("start_skew_pkts", START_SKEW_MAX_PKTS),),
    ),
    Criterion(
        name="pacing",
        check=_pacing,
        figures=("pacing_error_max", "pacing_error_by_host"),
        measures="each sending NIC's mean rate against its paced rate, over its span",
        tolerance=f"{_pct(PACING_TOLERANCE)}, or one packet time over the NIC's span, whichever is more",
        why=(
            f"0.1 % in valid runs at the auto rates. On a span of a few packets {_pct(PACING_TOLERANCE)} is a "
            "fraction of a packet time, which periodicity and timing judge. Not judged in transport (`--cc`) "
            "runs, whose hosts send what their windows allow"
        ),
        limits=(("pacing", PACING_TOLERANCE),),
    ),
    Criterion(
        name="emulator timing",
        check=_timing,
        figures=("timing_excess_pkts", "timing_excess_share"),
        measures=(
            "over the sending hosts, the largest start offset plus NIC lateness (how much later its last frame "
            "reached the switch than a strictly periodic NIC started at its first frame would have sent it), in "
            "packet times and as a share of the CCT bound; `nic_late_pkts` (per host: `nic_late_by_host`), the "
            "latest NIC (`latest_nic`) and whose its longest gap was (`latest_nic_gap_cause`: sender, cpu, nic)"
        ),
        tolerance=(f"{_pct(TIMING_EXCESS_MAX)} of the bound (or {_pkts(TIMING_EXCESS_FLOOR_PKTS)}, whichever is more)"),
        why=(
            "this is how much the emulator's own timing can have added to the CCT: the CCT of the same run with "
            "every NIC on time from one instant could be shorter by at most this much. A 2 % pacing tolerance "
            "alone let NICs finish 2 % late, and with them the CCT: at k=16 and 480 kbit/s, Ofan read +3.65 % "
            "while its NICs were up to 2.7 packet times late (1.2 % of the bound); at 320 kbit/s, with NICs on "
            "time, +2.4-2.9 %. In the envelope's valid runs ([results/envelopes.md](results/envelopes.md); the "
            "method: [Choosing the rate](methods/choosing-the-rate.md)) it read 0.08-0.55 %, at most 0.41 % at "
            "the auto rates. The floor is for runs too short for "
            f"{_pct(TIMING_EXCESS_MAX)} to allow one packet time of start skew. Not judged in transport runs"
        ),
        limits=(("timing_excess_share", TIMING_EXCESS_MAX), ("timing_excess_floor_pkts", TIMING_EXCESS_FLOOR_PKTS)),
    ),
    Criterion(
        name="periodicity",
        check=_periodicity,
        figures=("nic_burst_pkts", "nic_burst_by_host"),
        measures=(
            "the largest number of data frames a NIC sent beyond a strictly periodic source in any window "
            "(kernel: a periodic server's work, Lindley's recursion, at each data frame's departure; ACKs leave "
            "when data arrives and are left out); `nic_back_to_back`; `nic_stamped`"
        ),
        tolerance=f"{NIC_BURST_MAX_PKTS:g} frame",
        why=(
            "the bound of appendix F.4 needs periodic sources. A NIC's departure is the moment its link handed "
            "the frame over, from the kernel's receive stamp (a run keeps timestamping on: "
            "`testbed/fabric/rx_timestamps.py`), not the moment the switch's softirq got to it: measured at the "
            "switch, runs with ACKs read 0.5-0.7 and were rejected (softirq delays, not the NIC); from the stamps "
            "the same runs read 0.26-0.28, the NIC's own quarter-frame bucket"
        ),
        limits=(("nic_burst_pkts", NIC_BURST_MAX_PKTS),),
    ),
    Criterion(
        name="stalls",
        check=_stalls,
        figures=("nic_stall_pkts", "nic_dry_pkts", "nic_held_pkts"),
        measures=(
            "the longest gap between two data frames of a NIC, in packet times, minus one; the longest such gap "
            "that began with no data frame in the NIC's queue as its frame reached the switch (kernel: the "
            "queue's data frames at that moment; ACKs, served first, do not count); the longest that began with "
            "data frames waiting (per host: `nic_stall_by_host`, `nic_dry_by_host`)"
        ),
        tolerance=_pkts(STALL_MAX_PKTS),
        why=(
            "a stall is CCT lost for good; faithful runs read 0.1-0.7 (up to 4.4 with the old two-frame bucket). "
            'The reason (and the timing reason, for the latest NIC) says whose the longest gap was: "no data '
            'frame waited in its queue: its sender was late", or "with frames waiting", the NIC\'s own timer or '
            f"CPU, with the timers' lateness when they fired {1e3 * TIMER_LATE_NOTE_S:g} ms late or more. In a "
            "transport run only a gap begun with frames waiting is judged (an empty queue is a closed window)"
        ),
        limits=(("nic_stall_pkts", STALL_MAX_PKTS),),
    ),
    Criterion(
        name="service",
        check=_service,
        figures=("saturated_service_min", "saturated_service_by_port"),
        measures=(
            "on every link that carried traffic, bytes over busy time against the rate (the starting tokens "
            "removed on links busy for 20 packets or more per busy period)"
        ),
        tolerance=_pct(SERVICE_MIN),
        why=(
            "below that the kernel dequeued late. On links with short busy periods (every switch link under "
            "Ofan) a faithful link reads far above 1, so only lateness beyond its tokens shows"
        ),
        limits=(("service_min", SERVICE_MIN),),
    ),
    Criterion(
        name="delivery",
        check=_delivery,
        figures=("delivery",),
        measures=(
            "planned, sent, received, counted losses, `unaccounted`, `overcounted`, `over_received`, sender "
            "errors, `drain_complete`; `drops_by_port` (every port that dropped anything, by kind: qdisc data, "
            "qdisc ACKs, buffer data, buffer ACKs)"
        ),
        tolerance=(
            "an exact balance (sent = received + counted losses), no flow received more than it sent, all sent, "
            "no errors, drain complete"
        ),
        why=(
            "a packet that vanished without a counter, a counter that counts more than went missing, or a "
            "duplicate, any of which can cancel another, means the run did not measure what it claims. ACKs a "
            "qdisc dropped are counted apart"
        ),
    ),
    Criterion(
        name="emulator losses",
        check=_emulator_losses,
        figures=("softnet_drops",),
        measures=(
            "drops in the per-CPU backlog (`/proc/net/softnet_stat`); `switch_counters` (the data plane's error "
            "paths: no route, redirect failed, ...)"
        ),
        tolerance="zero",
        why="these drops belong to the emulator, not to the network",
    ),
    Criterion(
        name="CPU",
        check=_cpu,
        figures=("cpu_busiest_window", "cpu_busiest"),
        measures=(
            f"the busiest single CPU over its busiest {1e3 * cpu_windows.WINDOW_S:g} ms window of the run, or "
            "over the run when it is shorter (`cpu_busiest_window_detail` says which CPU, when and how long; "
            f"`testbed/measure/cpu_windows.py` samples cpuidle's microsecond residency every "
            f"{1e3 * cpu_windows.PERIOD_S:g} ms, bounded by `/proc/stat`'s idle; on a machine without cpuidle, "
            f"as some instances of this one are, `/proc/stat` alone over {1e3 * cpu_windows.FALLBACK_WINDOW_S:g} "
            "ms windows); the run's average (from `/proc/stat`), held to the same maximum; `cpu_busy` and "
            "`cpu_steal` reported, not judged; `cpu_awake` says whether idle CPUs were kept polling ([Choosing "
            "the rate](methods/choosing-the-rate.md), idle CPUs that halt), `softirq_first` whether every "
            "`ksoftirqd` ran real-time (same page, CPU per packet)"
        ),
        tolerance=_pct(CPU_BUSIEST_MAX),
        why=(
            "one saturated CPU delays every timer on it, and a run's average hides a stretch of it: 100 ms is "
            "about 150 packet times at k=4's auto rate, long for a late packet (the CPU gaps' business) and short "
            "against a run. `bench/validity.py --k 4 --rates 50mbit --seeds 1-12` (2026-12-04): valid runs' "
            "busiest window 33-43 %; a process spinning 1.2 windows in every 3.2 on one CPU makes a window read "
            "100 % (rejected) where the run's average does not (tests/system/test_fidelity_faults.py). Steal is "
            "not judged: it reads 0 % here while the hypervisor takes CPUs away (the CPU gaps catch that)"
        ),
        limits=(("cpu_busiest", CPU_BUSIEST_MAX),),
    ),
    Criterion(
        name="other processes",
        check=_outside,
        figures=("outside_cpu", "outside_worst"),
        measures=(
            "CPU-seconds per second of the run that processes neither the run's own (its process tree, the "
            "fabric's watcher) nor kernel threads took, from `/proc/PID/stat` at both ends "
            "(`testbed/measure/outside.py`)"
        ),
        tolerance=f"{_pct(OUTSIDE_CPU_MAX)} of a CPU and {1e3 * OUTSIDE_CPU_FLOOR_S:g} ms in all",
        why=(
            "on two cores another process takes its CPU from the links' softirqs and timers (a second fabric, a "
            "compiler, Ray's own workers starting on a cluster node: 15-45 % measured there). The VM's agent "
            "takes a few ms now and then (a 45 ms run read 11 % from it): the floor leaves such a burst to the "
            "CPU-gap criterion, which sees its effect"
        ),
        limits=(("outside_cpu", OUTSIDE_CPU_MAX),),
    ),
    Criterion(
        name="CPU gaps",
        check=_cpu_gaps,
        figures=("timers",),
        measures=(
            "how many qdisc watchdog timers fired during the run (every TBF waiting for tokens arms one, NICs' "
            "and links' alike), their mean and largest lateness, the CPU of the latest, and how many were over "
            "100 us late (`ebpf/timers.c` on the tracepoint `timer:hrtimer_expire_entry`, "
            "`testbed/fabric/qdisc_timers.py`)"
        ),
        tolerance=f"the latest {_pkts(TIMER_LATE_MAX_PKTS)} of the links (as a NIC's stall)",
        why=(
            "they fire 8-10 us late on average here; a watchdog is a hard-interrupt timer, so one milliseconds "
            "late means its CPU took no interrupt for that long: the hypervisor ran something else there "
            "(below), and the link or NIC whose timer it was stalled with frames waiting. Over 392 runs of the "
            "claims check (k=4 to 16, 0.56 to 100 Mbit/s) the valid ones read 0.09 packet times at the median, "
            "0.95 at the 90th percentile and 4.9 at the 99th (congestion-control runs, whose NIC stalls were not "
            "judged then). This replaces steal, which reads 0 % here"
        ),
        limits=(("timer_late_pkts", TIMER_LATE_MAX_PKTS),),
    ),
    Criterion(
        name="exact maxima",
        check=_exact_maxima,
        figures=("max_giveups",),
        measures="queue-maximum updates that lost 4 compare-and-swap races",
        tolerance="zero",
        why="the maxima are exact only when no update gave up",
    ),
    Criterion(
        name="REPS feedback",
        check=_reps_feedback,
        figures=(),
        measures=(
            "REPS entropies that a full delay line overwrote before their propagation round trip was over "
            "(`host_lb.delay_lost` in `run --json`; `ebpf/include/host_lb.h`); no figure of the verdict's own"
        ),
        tolerance="zero",
        why=(
            "an entropy lost there is feedback the paper's REPS would have had. A run whose propagation round "
            "trip a delay line cannot hold is refused before it starts"
        ),
    ),
    Criterion(
        name="transport",
        check=_transport,
        figures=("transport",),
        measures=(
            "`--cc` runs: how late the user-space transport acted, each ACK against its due time and each packet "
            "against the moment an ACK opened its window (median, 99th percentile, worst, in packet times), ACK "
            "events it could not hold, flows not received in full ([traffic.md](traffic.md))"
        ),
        tolerance=(
            f"late by at most {' / '.join(_pct(LATE_SHARE[w]) for w in _LATE)} of the emulated base RTT "
            f"(median / 99th percentile / worst; floors {' / '.join(f'{LATE_FLOOR_PKTS[w]:g}' for w in _LATE)} "
            "packet times), no ACK event lost, every flow received in full"
        ),
        why=(
            "a lateness d slows a window-limited flow by d / RTT: every window's round trip is that much longer "
            "than the model's. Measured at k=4, 25-50 Mbit/s, base RTT 150: median 0.02-0.06 packet times, 99th "
            "percentile 0.03-0.9, worst 1.2-3.7. In these runs the hosts send what their windows allow, not at "
            "the paced rate, so pacing and timing are not judged, and a NIC's stall only with frames waiting"
        ),
        limits=tuple(
            [(f"transport_late_{w}_share_of_base_rtt", v) for w, v in LATE_SHARE.items()]
            + [(f"transport_late_{w}_floor_pkts", v) for w, v in LATE_FLOOR_PKTS.items()]
        ),
    ),
    Criterion(
        name="the ideal fabric",
        check=_ideal,
        figures=("ideal",),
        measures=(
            "for a run the ideal fabric models (ECMP, RPS, Ofan, pOfan judged; RR and JSQ placed, not judged: their "
            "result depends on the order of simultaneous arrivals, which the kernel fixes and the draws take at "
            "random; one flow per host in full "
            "frames, load 1, no ACKs, no congestion control, no failure, at most "
            f"{envelope.MAX_FRAME_DRAWS:,} frames x draws), its CCT increase and each switch stage's largest "
            "queue (not the NICs': they hold the senders' prefill) against the ideal fabric's "
            f"{envelope.DRAWS} draws for the same flows (ECMP's draws take the uplinks the run's switches hashed "
            "them to, from their seeds and the flows' ports, not uniform ones: drawn uniformly, a three-way "
            "collision the hash made put faithful runs outside, seeds 19 and 22 at k=4): mean, standard "
            "deviation, range, the run's percentile and z (`testbed/measure/envelope.py`, cached in "
            "/var/cache/testbed/ideal)"
        ),
        tolerance=(
            f"{envelope.Z:g} standard deviations, plus the run's timing allowance and {envelope.FLOOR_PP:g} "
            f"points (queues: plus {envelope.QUEUE_FLOOR_PKTS} packets and {_pct(envelope.QUEUE_SHARE)} of the mean)"
        ),
        why=(
            "catches what keeps every part within its tolerance and still moves the result (RPS at k=12, seed 3, "
            "read +28.0 % with every figure in tolerance, outside the ideal fabric's +18.4 to +25.1 %). "
            "`tests/system/test_ideal_judge.py` slows one aggregation uplink by 2.5 % (service reads 97.5 %, "
            "allowed) and only this criterion rejects the Ofan run"
        ),
    ),
)

NOT_JUDGED = (
    "Drops in a switch queue, packets stranded by a failure and packets that died in a failed link are results "
    "of the network being emulated: they count as accounted losses and do not invalidate a run."
)

TOLERANCES = {name: value for c in CRITERIA for name, value in c.limits}


def _reasons(e: Evidence) -> list[str]:
    return [reason for c in CRITERIA for reason in c.check(e)]


def verdict(e: Evidence) -> Verdict:
    reasons = _reasons(e)
    latest, _ = _worst(e.nic_late_pkts)
    return Verdict(
        valid=not reasons,
        reasons=reasons,
        pacing_error_max=max((abs(v) for v in e.pacing.values()), default=0.0),
        pacing_error_mean=sum(e.pacing.values()) / len(e.pacing) if e.pacing else 0.0,
        saturated_links=len(e.service),
        saturated_service_min=min(e.service.values(), default=1.0),
        softnet_drops=e.softnet_drops,
        cpu_busy=e.cpu_busy,
        cpu_busiest=e.cpu_busiest,
        cpu_steal=e.cpu_steal,
        sample_rate_hz=e.sample_rate_hz,
        start_skew_s=e.start_skew_s,
        start_skew_pkts=e.start_skew_s / e.packet_time_s if e.packet_time_s > 0 else 0.0,
        nic_burst_pkts=max(e.nic_burst_pkts.values(), default=0.0),
        nic_stall_pkts=max(e.nic_stall_pkts.values(), default=0.0),
        nic_dry_pkts=max(e.nic_dry_pkts.values(), default=0.0),
        nic_held_pkts=max(e.nic_held_pkts.values(), default=0.0),
        nic_back_to_back=sum(e.nic_back_to_back.values()),
        delivery={**asdict(e.delivery), "unaccounted": e.delivery.unaccounted, "overcounted": e.delivery.overcounted},
        max_giveups=e.max_giveups,
        cpu_awake=e.cpu_awake,
        softirq_first=e.softirq_first,
        nic_stamped=e.nic_stamped,
        nic_late_pkts=max(e.nic_late_pkts.values(), default=0.0),
        timing_excess_pkts=e.timing_excess_pkts,
        timing_excess_share=e.timing_excess_share,
        tolerances=dict(TOLERANCES),
        pacing_error_by_host=dict(e.pacing),
        saturated_service_by_port=dict(e.service),
        nic_burst_by_host=dict(e.nic_burst_pkts),
        nic_stall_by_host=dict(e.nic_stall_pkts),
        nic_dry_by_host=dict(e.nic_dry_pkts),
        nic_late_by_host=dict(e.nic_late_pkts),
        transport=asdict(e.loop) if e.loop is not None else None,
        timers=asdict(e.timers) if e.timers is not None else None,
        latest_nic=latest,
        latest_nic_gap_cause=gap_cause(e, latest) if latest else "",
        ideal=e.ideal,
        outside_cpu=e.outside_cpu,
        outside_worst=e.outside_worst,
        cpu_busiest_window=e.cpu_window.share if e.cpu_window is not None else e.cpu_busiest,
        cpu_busiest_window_detail=asdict(e.cpu_window) if e.cpu_window is not None else None,
    )


# docs/measurement.md's criteria table, generated from CRITERIA between these two lines
DOC = Path(__file__).resolve().parents[2] / "docs" / "measurement.md"
BEGIN = "<!-- generated from testbed/measure/fidelity.py: edit the table there -->"
END = "<!-- end of the generated part -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _figure(c: Criterion) -> str:
    named = ", ".join(f"`{f}`" for f in c.figures)
    return f"{named}: {c.measures}" if named else c.measures


def criteria_markdown() -> str:
    """The criteria table of docs/measurement.md (what lies between BEGIN and END), one row per criterion in the
    order the verdict gives their reasons, then NOT_JUDGED."""
    rows = [
        "| criterion | figure | tolerance | why this tolerance |",
        "|---|---|---|---|",
        *(f"| {' | '.join(_cell(x) for x in (c.name, _figure(c), c.tolerance, c.why))} |" for c in CRITERIA),
    ]
    return "\n".join([*rows, "", NOT_JUDGED]) + "\n"


def with_criteria(page: str) -> str:
    """`page` with the part between its BEGIN and END lines replaced by criteria_markdown()."""
    head, begin, rest = page.partition(BEGIN + "\n")
    _, end, tail = rest.partition(END + "\n")
    if not begin or not end or BEGIN in tail:
        raise ValueError(f"the page needs one line {BEGIN!r} and, after it, one line {END!r}")
    return f"{head}{BEGIN}\n{criteria_markdown()}{END}\n{tail}"


def write_criteria(path: Path = DOC) -> bool:
    """Rewrite the criteria table of the page at `path` (docs/measurement.md) from CRITERIA; True if it changed."""
    page = path.read_text()
    new = with_criteria(page)
    if new != page:
        path.write_text(new)
    return new != page


if __name__ == "__main__":  # python -m testbed.measure.fidelity [PAGE]: regenerate the page's criteria table
    write_criteria(Path(sys.argv[1]) if len(sys.argv) > 1 else DOC)
