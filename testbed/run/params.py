"""What one run is asked to do (`RunParams`, checked when made) and what it
reports (`Result`: the fields of `testbed run --json`, in that order)."""

from __future__ import annotations

import resource
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from traffic import faults
from traffic.packet import DEFAULT_PAYLOAD, WIRE_EXTRA, Packetizer
from traffic.transport import CC_BUFFER_BYTES, CCAS, DEFAULT_BASE_RTT_PKTS, Transport
from traffic.workloads import ORDERS, WORKLOADS, Flow, WorkloadError, WorkloadSpec, make_spec

from ..dataplane.compile import Dims
from ..dataplane.maps import REPS_DELAY_SLOTS
from ..dataplane.switches import host_routable
from ..models.sampled import SampledParams
from ..models.schemes import PIPES_PER_CPU, Scheme, SchemeConfig, SchemeError, check_mix, parse_pipe_size
from ..topology import FatTree
from ..topology.timebase import PAPER, PAPER_LINK_DELAY_PKTS, Propagation, parse_propagation, path_links
from ..topology.units import (
    QueueThreshold,
    format_rate,
    format_size,
    parse_duration,
    parse_list,
    parse_rate,
    parse_seeds,
    parse_size,
    parse_threshold,
)
from .options import (
    Sweep,
    nonnegative_int,
    option,
    parse_float_pair,
    parse_load,
    parse_size_pair,
    positive_int,
)

BUFFER_REF_BYTES = 800 * 1024  # the paper's per-port buffer (section 6): ECN thresholds in percent refer to it


REPS_RTT_PKTS_MAX = 0.75 * REPS_DELAY_SLOTS  # REPS's delay line must hold a round trip of ACKs (check_propagation)


class RunError(ValueError):
    """Invalid run parameters."""


# a sweep's workloads beyond traffic's: the workload and the options it sets
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "moe-eplb": ("moe", {"eplb": True}),  # MoE with EPLB (Fig. 13 b, d)
    "all-to-all-host": ("all-to-all", {"size_per_host": True}),  # SIZE is each host's total (Fig. 5 c)
}
SWEEP_WORKLOADS = (*WORKLOADS, *VARIANTS)


def _workloads(text: str) -> tuple[str, ...]:
    return parse_list(text, lambda w: _one_of("workload", SWEEP_WORKLOADS, w), "workloads")


def _duration(text: str) -> float:
    return parse_duration(text, allow_zero=True)


def _one_of(what: str, allowed: tuple[str, ...], text: str) -> str:
    if text not in allowed:
        raise ValueError(f"unknown {what} {text!r} (choose from {', '.join(allowed)})")
    return text


def _scheme_items(text: str) -> tuple[str, ...]:
    """A sweep's schemes: 'ecmp,pofan:4,pofan:cpu', each a scheme and, for pofan, its pipe size."""
    items = parse_list(text, str, "schemes")
    for item in items:
        SchemeConfig.parse(item)
    if len(set(items)) != len(items):
        raise ValueError(f"a scheme is listed twice in {text!r}")
    return items


def _mix(text: str) -> str:
    check_mix(text)
    return text


def _scheme_config(text: str) -> str:
    SchemeConfig.parse(text)
    return text


def _ecn(text: str) -> str:
    parse_threshold(text, 1)
    return text


def _pace(text: str) -> str:
    return _one_of("pacing", PACES, text)


PACES = ("load", "rho_max", "rho_even")
W, S, H, T, E, L, F = "workload", "scheme", "hosts", "transport", "ECN", "sampled schemes", "faults"


@dataclass(frozen=True)
class RunParams:
    """What one run is asked to do: every run option, declared once (testbed.run.options). The command line
    of run, compare, sweep and paper, the API's keyword arguments, a sweep's matrix, the manifest and
    docs/cli.md are made from these fields; docs/adding-an-option.md says how to add one."""

    workload: str = option(
        help="the collective",
        choices=WORKLOADS,
        group=W,
        sweep_parse=_workloads,
        sweep_default="permutation",
        sweep_items=True,
    )
    size: int = option(
        help="bytes per flow (KB, MB); every workload but cm needs it",
        parse=parse_size,
        show=format_size,
        group=W,
        sweep_default=1 << 20,
    )
    load: float = option(1.0, "host pacing as a fraction of the line rate", parse=parse_load, group=H)
    scheme: Scheme | None = option(
        Scheme.ECMP,
        "LB scheme of every switch, or a host scheme (default: keep each switch's scheme on a fabric that is up, "
        "ecmp on an ephemeral one); a sweep's and compare's items may carry a pipe size: pofan:4, pofan:cpu",
        parse=Scheme.parse,
        group=S,
        cli_default=None,
        sweep_parse=_scheme_items,
        sweep_default="ecmp,rps,ar,ofan,pofan:4",
        sweep_items=True,
    )
    seed: int = option(
        1, "the seed of the workload, the pointers and every random draw", group=W, sweep_parse=parse_seeds
    )
    fan_in: int = option(2, "incast: senders", parse=positive_int, group=W)
    payload: int = option(DEFAULT_PAYLOAD, "payload bytes per packet", parse=parse_size, group=W)
    pipe_size: int = option(
        4,
        "pofan: ports per pipe (1 = 1Ofan, 4 = 4Ofan; must divide k) or 'cpu' for per-CPU pointers",
        parse=parse_pipe_size,
        show=lambda v: "cpu" if v == PIPES_PER_CPU else str(v),
        group=S,
        sweep=Sweep.NONE,
    )
    reset_pointers: bool = option(True, "fresh random pointer state from --seed before the run", group=S)
    acks: bool = option(
        False,
        "receivers answer every data packet with a 62-byte ACK (turned on by a scheme that needs them and by --cc)",
        group=T,
    )
    inter_pod: bool = option(False, "permutation: every flow crosses pods", group=W)
    gpus_per_server: int = option(
        8, "ring, fsdp: host i sends to i+G; moe: GPUs per server", parse=positive_int, group=W
    )
    stride: int = option(0, "stride: host i sends to i+S (0: hosts per pod)", parse=nonnegative_int, group=W)
    matrix: str | None = option(None, "moe: n x n traffic matrix in bytes (.csv or .npy)", group=W, sweep=Sweep.FIXED)
    skew: float = option(
        0.0,
        "moe: the busiest GPU receives F x the mean over the fabric (0: 1.48, 1.13 with --eplb: the paper's)",
        group=W,
    )
    eplb: bool = option(False, "moe: two expert slots per GPU, popular experts replicated", group=W)
    order: str = option(
        "staggered",
        "all-to-all, moe: host s serves s+1, s+2, ... (staggered) or 0, 1, ... (sorted)",
        choices=ORDERS,
        group=W,
    )
    size_per_host: bool = option(False, "all-to-all: --size is each host's total, split over its n - 1 flows", group=W)
    layers: int = option(
        1, "fsdp: layers of the backward pass, each a ring ReduceScatter and AllGather", parse=positive_int, group=W
    )
    steps: int = option(
        0, "fsdp: only the pass's first N ring steps (0: all; 1 needs no --cc)", parse=nonnegative_int, group=W
    )
    mix: str = option(
        "none",
        "Fig. 11: --scheme on the LB switches this picks (random:F, pods:F drawn from --seed, agg, edge), "
        "--mix-base on the others; none: --scheme on every one",
        parse=_mix,
        group=S,
    )
    mix_base: str = option(
        "ar", "with --mix: the other switches' scheme", parse=_scheme_config, group=S, sweep=Sweep.FIXED
    )
    events: str | None = option(
        None, "timeline of link faults (JSON) applied during the run", group=F, sweep=Sweep.FIXED
    )
    pace: str = option(
        "load",
        "load: hosts paced at --load; rho_max: at min(load, rho_max) of the links that are up, the best split's "
        "rate (a sweep's cells with failures are, unless it says rho_even); rho_even: at min(load, the rate at "
        "which an even split over each switch's valid uplinks keeps every link within capacity)",
        choices=PACES,
        parse=_pace,
        group=H,
    )
    # A fault injected on purpose, for the tests of the fidelity verdict only: "late:G:US" (the G-th sending
    # host starts US us late), "stall:G:N:US" (it sleeps US us after N packets), "wake:US" (every sender thread
    # wakes US us after the release), "nic-burst" (host NICs get an 8-frame bucket and no peak rate),
    # "nic-slow:H:PCT" (host H's NIC paced PCT percent below the others); with --cc, "ackstall:N:US" (the
    # transport's ACK thread sleeps US us after its N-th ACK) and "ackring:N" (it holds N ACK events at most);
    # "deadline:MS" (the senders give up MS ms after they start: flows left unsent or incomplete).
    inject: str | None = option(
        None, "a fault injected on purpose (the verdict's tests)", group=F, cli=False, sweep=Sweep.NONE
    )
    ecn_threshold: str = option(
        "10%",
        "switches mark CE when the queue a packet joins holds more than this: bytes (80KB), packets (20pkts), "
        "percent of --buffer-ref or off (the paper's section 6: 10 % of an 800 KB port buffer)",
        parse=_ecn,
        group=E,
    )
    buffer_ref: int = option(
        BUFFER_REF_BYTES,
        "the port buffer a threshold in percent refers to (the paper's)",
        parse=parse_size,
        show=format_size,
        group=E,
    )
    flows: str | None = option(None, "cm: a flow list in htsim's connection-matrix format", group=W, sweep=Sweep.FIXED)
    cm_rate: int = option(
        100_000_000_000,
        "cm: the line rate the flow list's start times were written for",
        parse=parse_rate,
        show=format_rate,
        group=W,
    )
    cc: str = option(
        "none",
        "congestion control at the hosts: window-limited, ACK-clocked flows (turns --acks on); none: the paced blast",
        choices=CCAS,
        group=T,
    )
    reps_freeze: bool = option(
        True,
        "with --cc, REPS: a retransmission timeout freezes the connection on its stored entropies (REPS's "
        "freezing mode); --no-reps-freeze leaves it out (Fig. 7(a)'s conjecture)",
        group=T,
        sweep=Sweep.DIMENSION,
    )
    base_rtt_pkts: float | None = option(
        None, "with --cc: the base RTT in packet times at line rate (default 150, the paper's)", group=T
    )
    base_rtt: float | None = option(
        None,
        "with --cc: emulated base RTT in seconds or a duration (100ms), a fixed delay on the feedback",
        parse=_duration,
        group=T,
    )
    buffer: int | None = option(
        None,
        "bytes per switch port; a full buffer drops (default 800KB with --cc, unlimited without)",
        parse=parse_size,
        show=format_size,
        group=T,
    )
    sample_interval: float = option(
        SampledParams.sample_interval,
        "dlb, sglb: sampling interval of the port loads and queues, in packet times at line rate",
        group=L,
    )
    flood_interval: float = option(
        SampledParams.flood_interval,
        "sglb: how often switches flood their link qualities to their neighbours, in packet times",
        group=L,
    )
    dre_interval: float = option(
        SampledParams.dre_interval,
        "conga: T_dre, the DRE's decay period (alpha 0.2, so tau = 5 T_dre), in packet times",
        group=L,
    )
    load_bands: tuple[float, float] = option(
        SampledParams.load_bands,
        "dlb, sglb: a port's load EWMA is in band 0 at or below LO and 7 at or above HI, fractions of the line rate",
        parse=parse_float_pair,
        metavar="LO,HI",
        group=L,
    )
    queue_bands: tuple[int, int] = option(
        SampledParams.queue_bands,
        "dlb, sglb: likewise for its queue EWMA, bytes",
        parse=parse_size_pair,
        show=lambda v: ",".join(format_size(x) for x in v),
        metavar="LO,HI",
        group=L,
    )
    drill_d: int = option(SampledParams.drill_d, "drill: DRILL(d, m)'s random samples per packet, 1-4", group=L)
    drill_m: int = option(
        SampledParams.drill_m, "drill: DRILL(d, m)'s remembered uplinks, 0-2 (0 with d=2 is choice)", group=L
    )
    propagation: Propagation = option(
        PAPER,
        f"propagation delay per link: paper (0.5 us at 800 Gbit/s, {PAPER_LINK_DELAY_PKTS:.2f} packet times at the "
        "emulated rate), packet times (12pkts), a duration at the emulated rate (2ms), or 0 (none). Added to each "
        "flow's completion and bound, and to every feedback loop (docs/methods/timebase.md)",
        parse=parse_propagation,
        metavar="D",
        group="time base",
    )

    def __post_init__(self) -> None:
        if not 0 < self.load <= 1:
            raise RunError(f"load must be in (0, 1], got {self.load}")
        if self.fan_in < 1:
            raise RunError(f"fan-in must be >= 1, got {self.fan_in}")
        if self.pipe_size < 0:
            raise RunError(f"pipe size must be >= 1 (or per-CPU), got {self.pipe_size}")
        try:
            fault = faults.parse(self.inject) if self.inject is not None else None  # traffic/faults.py
        except faults.FaultError as e:
            raise RunError(str(e)) from None
        if not 1 <= self.payload <= 65000:
            raise RunError(f"payload must be in [1, 65000] bytes, got {self.payload}")
        if self.buffer_ref <= 0:
            raise RunError(f"the reference buffer must be > 0 bytes, got {self.buffer_ref}")
        self.ecn()  # validates the threshold
        if self.cc not in CCAS:
            raise RunError(f"--cc: unknown congestion control {self.cc!r} (one of {', '.join(CCAS)})")
        if self.base_rtt_pkts is not None and self.base_rtt is not None:
            raise RunError("give the base RTT once: --base-rtt or --base-rtt-pkts")
        if (self.base_rtt_pkts or 0) < 0 or (self.base_rtt or 0) < 0:
            raise RunError("the base RTT must be >= 0")
        if (self.base_rtt_pkts is not None or self.base_rtt is not None) and self.cc == "none":
            raise RunError("a base RTT delays the feedback of a congestion controller: give --cc too")
        if self.buffer is not None and self.buffer < 2 * 1500:
            raise RunError(f"--buffer must hold at least two frames, got {self.buffer} bytes")
        if self.cc != "none" and not self.acks:
            object.__setattr__(self, "acks", True)  # a congestion controller is clocked by its ACKs
        if isinstance(fault, faults.TRANSPORT_KINDS) and self.cc == "none":
            raise RunError(f"{fault.KEYWORD} faults the transport's ACK thread: give --cc too")
        if self.scheme is not None and self.scheme.needs_acks and not self.acks:
            object.__setattr__(self, "acks", True)  # the scheme needs them (testbed.models.schemes)
        self.sampled()  # validates the intervals
        self.workload_spec()  # validates the workload's own parameters
        if self.mix != "none":
            try:
                check_mix(self.mix)
                base = SchemeConfig.parse(self.mix_base)
            except SchemeError as e:
                raise RunError(str(e)) from None
            if self.scheme is None or self.scheme.is_host or base.scheme.is_host:
                raise RunError(
                    "--mix deploys one switch scheme among another's: give --scheme and --mix-base switch schemes"
                )

    def sampled(self) -> SampledParams:
        """The sampled schemes' settings (the fields of the same names)."""
        try:
            return SampledParams(**{f.name: getattr(self, f.name) for f in fields(SampledParams)})
        except SchemeError as e:
            raise RunError(str(e)) from None

    def check_propagation(self, tree: FatTree, rate_bps: int, wire_overhead: int = WIRE_EXTRA) -> None:
        """A RunError if this fabric cannot carry the run's propagation: REPS holds the entropies of a
        propagation round trip in delay lines of REPS_DELAY_SLOTS ACKs per host and path class, and a host
        gets up to one ACK per packet time back, so the longest round trip must stay within 3/4 of that."""
        if self.scheme is not Scheme.REPS or self.propagation.off:
            return
        pk = Packetizer(self.payload, wire_overhead)
        links = 6 if tree.pods > 1 else 4  # the longest path
        rtt_pkts = 2 * links * self.propagation.link_pkts(rate_bps, pk.wire_len(self.payload))
        if rtt_pkts > REPS_RTT_PKTS_MAX:
            raise RunError(
                f"--propagation {self.propagation.label}: REPS holds a propagation round trip of ACKs "
                f"in {REPS_DELAY_SLOTS} slots per host; this path's round trip is {rtt_pkts:.0f} packet "
                f"times, at most {REPS_RTT_PKTS_MAX:.0f} fit "
                f"({REPS_RTT_PKTS_MAX / 2 / links:.1f} packet times per link here)"
            )

    def link_delay_s(self, rate_bps: int, wire_overhead: int = WIRE_EXTRA) -> float:
        """The propagation delay of one link on a fabric of `rate_bps` whose links charge `wire_overhead` bytes per
        frame."""
        return self.propagation.link_s(rate_bps, Packetizer(self.payload, wire_overhead).wire_len(self.payload))

    def port_buffer(self) -> int:
        """Bytes per switch port for this run (0: unlimited)."""
        if self.buffer is not None:
            return self.buffer
        return CC_BUFFER_BYTES if self.cc != "none" else 0

    def flow_base_rtts_ns(
        self, tree: FatTree, flows: list[Flow], rate_bps: int, wire_overhead: int = WIRE_EXTRA
    ) -> dict[int, int]:
        """Each flow's base RTT with a CCA: how long after it reached its sender's NIC the transport acts on an
        ACK. --base-rtt (or --base-rtt-pkts) for every flow if given; else its path's propagation round trip
        (2 x links x the per-link delay); with no propagation, 150 packet times (the paper's, section 6.5)."""
        if self.cc == "none":
            return {f.fid: 0 for f in flows}
        pkt_ns = Transport(self.cc, 0, rate_bps, self.payload, self.port_buffer(), wire_overhead).pkt_ns
        if self.base_rtt is not None or self.base_rtt_pkts is not None or self.propagation.off:
            base = (
                self.base_rtt * 1e9
                if self.base_rtt is not None
                else (DEFAULT_BASE_RTT_PKTS if self.base_rtt_pkts is None else self.base_rtt_pkts) * pkt_ns
            )
            return {f.fid: round(base) for f in flows}
        link_ns = self.link_delay_s(rate_bps, wire_overhead) * 1e9
        return {f.fid: round(2 * path_links(tree, f.src, f.dst) * link_ns) for f in flows}

    def transport(self, rate_bps: int, base_rtt_ns: int, wire_overhead: int = WIRE_EXTRA) -> Transport:
        """The run's transport on a fabric of `rate_bps` (off with cc none); its constants (window bounds,
        timeouts, NSCC's scaling) from `base_rtt_ns`, the longest of the flows' base RTTs."""
        return Transport(
            self.cc, base_rtt_ns if self.cc != "none" else 0, rate_bps, self.payload, self.port_buffer(), wire_overhead
        )

    def ecn(self) -> QueueThreshold:
        try:
            return parse_threshold(self.ecn_threshold, self.buffer_ref)
        except ValueError as e:
            raise RunError(f"--ecn-threshold: {e}") from None

    def workload_spec(self) -> WorkloadSpec:
        """The workload's description (traffic.workloads.WorkloadSpec: the fields of the same names)."""
        return WorkloadSpec(**{f.name: getattr(self, f.name) for f in fields(WorkloadSpec)})

    def check_fabric(self, tree: FatTree) -> None:
        """What this run needs of the fabric, checked before anything is built: its flows fit (flows()), and a
        host-routed scheme can label every path (64 path bits per pair of edge switches)."""
        self.flow_list(tree)
        if self.scheme is not None and self.scheme.switch_scheme is Scheme.HOST_ROUTED and not host_routable(tree):
            raise RunError(
                f"{self.scheme.label} labels every path of a pair of edge switches in 64 bits: this "
                f"fabric has {tree.w * tree.w} between pods (fat trees up to k=16, leaf-spines up to "
                f"k=64)"
            )

    def flow_list(self, tree: FatTree) -> list[Flow]:
        """The workload's flows on `tree`; a RunError if the fabric cannot carry them (see check_flows)."""
        try:
            flows = make_spec(self.workload_spec(), tree.n_hosts, tree.hosts_per_pod)
        except WorkloadError as e:
            raise RunError(str(e)) from None
        if self.cc == "none" and any(f.after for f in flows):
            raise RunError(
                f"{self.workload} chains its ring steps (a step starts when its input arrived, which the "
                f"sender learns from ACKs): give --cc, or --steps 1 for one step"
            )
        check_flows(tree, flows)
        return flows


SOCKETS_SPARE = 256  # descriptors the sender needs beside its flows' sockets


def check_flows(tree: FatTree, flows: list[Flow]) -> None:
    """Flows this fabric can carry: the receivers count flow ids below Dims.n_flows, and the sender opens one
    socket per flow, within the machine's limit on open files (the hard limit, which the sender raises to)."""
    if not flows:
        return
    cap = Dims.of(tree).n_flows
    top = max(f.fid for f in flows)
    if top >= cap:
        raise RunError(
            f"{len(flows):,} flows (ids up to {top:,}): the receivers of this {tree.n_hosts}-host fabric "
            f"count flow ids below {cap:,}"
        )
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if limit != resource.RLIM_INFINITY and len(flows) + SOCKETS_SPARE > limit:
        raise RunError(
            f"{len(flows):,} flows need {len(flows):,} sockets (one per flow); this machine allows "
            f"{limit:,} open files (ulimit -Hn)"
        )


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
    rho_max: dict[str, Any]
    seed: int
    flows: int
    acks: bool
    cct_s: float
    cct_start_ns: int  # first packet leaving a sender (CLOCK_MONOTONIC)
    cct_end_ns: int  # last arrival (an ACK's with ACKs on) plus its path's propagation there and back
    cct_lower_bound_s: float
    cct_increase: float
    cct_lower_bound_fault_free_s: float  # the same bound with hosts paced at load x line rate
    cct_increase_fault_free: float
    packets_sent: int
    packets_received: int
    acks_received: int
    drops: int
    drops_detail: dict[str, int]
    switch_counters: dict[str, int]  # the data plane's counters over the run, by name (drops_detail["switch"] sums
    # all but "unreachable" and those that lose no packet, maps.NOT_DROPS: labels ECMP replaced, timer runs)
    queues: dict[str, dict[str, float]]
    overload: dict[str, float]
    utilisation: float  # delivered over the receivers' capacity, first frame out to the last arrival
    ports: list[dict[str, Any]]
    fidelity: dict[str, Any]
    switches: dict[str, dict[str, Any]] = field(default_factory=dict)
    flow_stats: list[dict[str, Any]] = field(default_factory=list)
    out_dir: str | None = None
    discarded_attempts: list[dict[str, Any]] = field(default_factory=list)
    link_events: list[dict[str, Any]] = field(default_factory=list)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    ecn: dict[str, Any] = field(default_factory=dict)  # the marking threshold of the run (unit, value)
    ecn_marked: int = 0  # packets the switches marked CE (counted at each queue that marked one)
    host_lb: dict[str, Any] = field(default_factory=dict)  # host NIC scheme and its counters, total and per host
    port_buffer_bytes: int = 0  # per switch port (0: unlimited)
    transport: dict[str, Any] = field(default_factory=dict)  # --cc: the loop's figures (measure.transport)
    propagation: dict[str, Any] = field(default_factory=dict)  # per link, and where it is added (experiment.py)
    drops_by_port: dict[str, dict[str, int]] = field(default_factory=dict)  # port -> kind -> packets (nonzero)
    # the same over the sending window, first frame out to the senders' return (Fig. 1(a)'s utilisation; 0: none)
    utilisation_sending: float = 0.0
    sending_window: dict[str, float] = field(default_factory=dict)  # its span and lags, seconds (experiment.py)
    # weighted Ofan without ACKs: its edge uplinks' largest queues against their bound (experiment._edge_bound)
    edge_bound: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
