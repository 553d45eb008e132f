"""Can a run be trusted? The verdict every run carries.

A run is valid when the emulation did what it claims. Each criterion below
has its figure in the verdict (and so in `run --json` and the manifest), a
tolerance, and a reason naming the worst offender when it fails:

- start: every sender's first frame left its NIC within one packet time of
  the first sender's (`start_skew_s`);
- pacing: every sending NIC kept its paced rate on average (|error| <= 2 %,
  or one packet time over its span, whichever is more: on a span of a few
  packets 2 % is a fraction of a packet time, which periodicity and timing
  judge);
- timing: the senders' start offsets plus their NICs' lateness can have
  added at most 0.5 % to the CCT (`timing_excess_share`), or 1.5 packet
  times on runs too short for 0.5 % to allow one packet time of start skew;
- periodicity: no NIC ran ahead of a strictly periodic source by more than
  NIC_BURST_MAX frames in any window (`nic_burst_pkts`);
- stalls: no NIC left a gap longer than STALL_MAX_PKTS packet times between
  two of its data frames (`nic_stall_pkts`); the longest gap that began with
  no data frame in the NIC's queue (`nic_dry_pkts`; its ACKs, served first,
  do not count) says whether its sender or the NIC itself was late, in this
  reason and the timing one;
- service: every link that carried traffic served at >= 97 % of its rate
  while busy, its starting tokens removed: otherwise the kernel dequeued late;
- delivery: an exact balance, every data packet sent was received or counted
  as lost once (untraced losses and losses counted beyond the missing
  packets are both rejected; ACKs a qdisc dropped are counted apart), no flow
  received more than it sent, the senders sent every packet they had,
  without errors, and the drain completed;
- emulator losses: none in the per-CPU backlog (softnet) or in the data
  plane's own error counters (packets the programs could not route or send);
- CPU: no CPU saturated: the busiest CPU below 98 % busy over every
  100 ms window of the run (`cpu_busiest_window`, testbed.measure.cpu_windows;
  over the whole run when it is shorter); the whole run's figure is
  `cpu_busiest`; steal is reported, not judged (it reads 0 % here while the
  hypervisor takes CPUs away);
- other processes: those not the run's took at most 5 % of a CPU during it,
  or 20 ms in all (testbed.measure.outside);
- CPU gaps: no qdisc timer, a NIC's or a link's, fired more than
  TIMER_LATE_MAX_PKTS packet times of the links late (a CPU taken away);
- exact maxima: no queue-maximum update gave up (else the maxima may be low).
- the ideal fabric: a run the ideal fabric models lies within its
  distribution for the same flows (testbed.measure.envelope: CCT increase
  and each stage's largest queue, Z standard deviations plus allowances).
- qdisc timers: how late the kernel fired the TBFs' watchdog timers
  (`timers`, testbed.fabric.qdisc_timers), judged above (CPU gaps); a
  stall's reason names them when they were 0.2 ms late or more.
- transport (--cc runs): the user-space transport acted on ACKs, and sent
  what an ACK let it send, late by at most 0.25 % of the emulated base RTT
  at the median, 1 % at the 99th percentile and 5 % at worst (floors 0.25,
  1 and 4 packet times), held every ACK event the kernel gave it, and every
  flow was received in full. In these
  runs the hosts send what their windows allow, not at the paced rate, so
  pacing, NIC lateness and timing excess are not judged, and a NIC's stall
  only when it began with frames waiting (an empty queue is a closed window).

Drops in a switch queue, packets stranded by a failure and packets that died
in a failed link are results of the network being emulated: reported, and
counted in delivery, but they do not invalidate a run. docs/measurement.md's
"Fidelity" section gives the reason for each tolerance and the measurements
behind it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ..fabric.qdisc_timers import TimerLateness
from .cpu_windows import Busiest
from .transport import LoopTiming

PACING_TOLERANCE = 0.02
SERVICE_MIN = 0.97
START_SKEW_MAX_PKTS = 1.0
NIC_BURST_MAX_PKTS = 0.5
STALL_MAX_PKTS = 4.0
CPU_BUSIEST_MAX = 0.98
STEAL_MAX = 0.05  # reported, no longer judged: steal reads 0.0 % on this machine kind while CPUs are taken away
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


GAP_CAUSES = ("sender", "cpu", "nic")  # whose a NIC's longest gap was: see gap_cause


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


def _reasons(e: Evidence) -> list[str]:
    out = []
    skew = e.start_skew_s / e.packet_time_s if e.packet_time_s > 0 else 0.0
    if skew > START_SKEW_MAX_PKTS:
        out.append(
            f"senders started {1e3 * e.start_skew_s:.2f} ms apart, {skew:.1f} packet times (maximum "
            f"{START_SKEW_MAX_PKTS:g})"
        )
    paced = e.loop is None  # transport runs send what their windows allow
    beyond = {h: v for h, v in e.pacing.items() if abs(v) > pacing_tolerance(e.pacing_span_pkts.get(h, 0.0))}
    host, err = _worst(beyond, abs)
    if paced and beyond:
        out.append(
            f"host pacing off by {100 * err:+.1f} % at {host} (tolerance "
            f"{100 * pacing_tolerance(e.pacing_span_pkts.get(host, 0.0)):.1f} %)"
        )
    share, pkts = e.timing_excess_share, e.timing_excess_pkts
    if paced and share > TIMING_EXCESS_MAX and pkts > TIMING_EXCESS_FLOOR_PKTS:
        host, late = _worst(e.nic_late_pkts)
        out.append(
            f"start offsets and late NICs can have added {100 * share:.1f} % to the CCT ({pkts:.1f} packet "
            f"times; maximum {100 * TIMING_EXCESS_MAX:g} %); latest NIC {host}, {late:.1f} packet times"
            f"{_longest_gap(e, host)}"
        )
    host, burst = _worst(e.nic_burst_pkts)
    if burst > NIC_BURST_MAX_PKTS:
        out.append(
            f"NIC of {host} ran {burst:.1f} frames ahead of strict periodicity (maximum "
            f"{NIC_BURST_MAX_PKTS:g}; {e.nic_back_to_back.get(host, 0)} frames back to back)"
        )
    # in transport runs a NIC waits for its window or its chain (no data queued: the sender's); a gap with data waiting is
    # the emulator's in every run
    # (the NIC's longest such gap, not only its longest gap: a chain's waits are longer than any stall)
    held = (
        e.nic_held_pkts
        if e.nic_held_pkts
        else {h: v for h, v in e.nic_stall_pkts.items() if gap_cause(e, h) in ("cpu", "nic")}
    )
    host, stall = _worst(e.nic_stall_pkts if paced else held)
    if stall > STALL_MAX_PKTS:
        cause = _gap_cause(e, host) if paced else _held_cause(e)
        out.append(f"NIC of {host} stalled for {stall:.1f} packet times (maximum {STALL_MAX_PKTS:g}; {cause})")
    port, service = _worst(e.service, lambda v: -v)
    if e.service and service < SERVICE_MIN:
        out.append(f"busy link {port} served at {100 * service:.1f} % of its rate (minimum {100 * SERVICE_MIN:.0f} %)")
    d = e.delivery
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
    if e.softnet_drops > 0:
        out.append(f"{e.softnet_drops} packets dropped by the per-CPU backlog (emulator overload)")
    if d.emulator_drops - e.softnet_drops > 0:
        out.append(
            f"{d.emulator_drops - e.softnet_drops} packets dropped by the data plane's error paths "
            f"(see switch_counters)"
        )
    w = e.cpu_window
    if w is not None and w.share > CPU_BUSIEST_MAX:
        out.append(
            f"a CPU was {100 * w.share:.0f} % busy over {1e3 * w.window_s:.0f} ms (CPU {w.cpu}, "
            f"{w.start_s:.2f} s into the run; maximum {100 * CPU_BUSIEST_MAX:.0f} %)"
        )
    elif e.cpu_busiest > CPU_BUSIEST_MAX:
        out.append(f"a CPU was {100 * e.cpu_busiest:.0f} % busy over the run (maximum {100 * CPU_BUSIEST_MAX:.0f} %)")
    if e.outside_cpu > OUTSIDE_CPU_MAX and e.outside_cpu * e.window_s > OUTSIDE_CPU_FLOOR_S:
        out.append(
            f"processes outside the run took {100 * e.outside_cpu:.0f} % of a CPU during it (maximum "
            f"{100 * OUTSIDE_CPU_MAX:.0f} %; the busiest {e.outside_worst}): they took it from the links"
        )
    late = e.timers.max_s / e.link_packet_time_s if e.timers is not None and e.link_packet_time_s > 0 else 0.0
    if late > TIMER_LATE_MAX_PKTS:
        assert e.timers is not None
        out.append(
            f"a qdisc timer fired {1e3 * e.timers.max_s:.1f} ms late on CPU {e.timers.max_cpu}, "
            f"{late:.1f} packet times (maximum {TIMER_LATE_MAX_PKTS:g}): a link or NIC there stalled with "
            f"frames waiting while the CPU was taken away"
        )
    if e.max_giveups:
        out.append(f"{e.max_giveups} queue-maximum updates gave up under contention: the maxima may be low")
    if e.feedback_lost:
        out.append(
            f"{e.feedback_lost} REPS entropies were lost in a full delay line before their propagation "
            f"round trip was over: the feedback the paper's REPS would have had is missing"
        )
    if e.loop is not None:
        out += _transport_reasons(e.loop)
    if e.ideal is not None and e.ideal.get("placed"):
        out += [f"against the ideal fabric: {r}" for r in e.ideal["reasons"]]
    return out


def _transport_reasons(t: LoopTiming) -> list[str]:
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


TOLERANCES = {
    "pacing": PACING_TOLERANCE,
    "service_min": SERVICE_MIN,
    "start_skew_pkts": START_SKEW_MAX_PKTS,
    "nic_burst_pkts": NIC_BURST_MAX_PKTS,
    "nic_stall_pkts": STALL_MAX_PKTS,
    "cpu_busiest": CPU_BUSIEST_MAX,
    "timer_late_pkts": TIMER_LATE_MAX_PKTS,
    "outside_cpu": OUTSIDE_CPU_MAX,
    "timing_excess_share": TIMING_EXCESS_MAX,
    "timing_excess_floor_pkts": TIMING_EXCESS_FLOOR_PKTS,
    **{f"transport_late_{w}_share_of_base_rtt": v for w, v in LATE_SHARE.items()},
    **{f"transport_late_{w}_floor_pkts": v for w, v in LATE_FLOOR_PKTS.items()},
}


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
