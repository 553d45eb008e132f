"""What one run is asked to do (`RunParams`, checked when made) and what it
reports (`Result`: the fields of `testbed run --json`, in that order)."""

from __future__ import annotations

import re
import resource
from dataclasses import asdict, dataclass, field
from typing import Any

from traffic.packet import WIRE_EXTRA, Packetizer
from traffic.transport import CC_BUFFER_BYTES, CCAS, DEFAULT_BASE_RTT_PKTS, Transport
from traffic.workloads import Flow, WorkloadError, WorkloadSpec, make_spec

from ..dataplane.compile import Dims
from ..dataplane.maps import REPS_DELAY_SLOTS
from ..dataplane.switches import host_routable
from ..models.sampled import SampledParams
from ..models.schemes import Scheme, SchemeConfig, SchemeError, check_mix
from ..topology import FatTree
from ..topology.timebase import PAPER, Propagation, path_links
from ..topology.units import QueueThreshold, parse_threshold

INJECT = re.compile(
    r"late:\d+:\d+|stall:\d+:\d+:\d+|wake:\d+|nic-burst|ackstall:\d+:\d+|ackring:\d+|deadline:\d+|nic-slow:\d+:\d+(\.\d+)?"
)
BUFFER_REF_BYTES = 800 * 1024  # the paper's per-port buffer (section 6): ECN thresholds in percent refer to it


REPS_RTT_PKTS_MAX = 0.75 * REPS_DELAY_SLOTS  # REPS's delay line must hold a round trip of ACKs (check_propagation)


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
    acks: bool = False
    inter_pod: bool = False
    gpus_per_server: int = 8
    stride: int = 0
    matrix: str | None = None
    moe_skew: float = 0.0  # moe: the busiest GPU's fabric bytes over the mean (0: 1.48, or 1.13 with eplb)
    eplb: bool = False  # moe: experts replicated over two slots per GPU (traffic.workloads)
    order: str = "staggered"  # all-to-all, moe: traffic.workloads.destinations
    size_per_host: bool = False  # all-to-all: size_bytes is each host's total, split over its n - 1 flows
    layers: int = 1  # fsdp: layers of the backward pass (each a ring ReduceScatter and AllGather)
    steps: int = 0  # fsdp: the pass's first STEPS ring steps only (0: all)
    # A mixed deployment (Fig. 11): `scheme` on the LB switches `mix` chooses (schemes.check_mix; drawn from the
    # seed), `mix_base` on the others; "none": `scheme` on every one
    mix: str = "none"
    mix_base: str = "ar"
    events: str | None = None  # timeline of link faults (testbed.run.faults), applied during the run
    pace_rho_max: bool = False  # pace hosts at min(load, rho_max) for the links that are up
    # A fault injected on purpose, for the tests of the fidelity verdict only: "late:G:US" (the G-th sending
    # host starts US us late), "stall:G:N:US" (it sleeps US us after N packets), "wake:US" (every sender thread
    # wakes US us after the release), "nic-burst" (host NICs get an 8-frame bucket and no peak rate),
    # "nic-slow:H:PCT" (host H's NIC paced PCT percent below the others); with --cc, "ackstall:N:US" (the
    # transport's ACK thread sleeps US us after its N-th ACK) and "ackring:N" (it holds N ACK events at most);
    # "deadline:MS" (the senders give up MS ms after they start: flows left unsent or incomplete).
    inject: str | None = None
    # ECN: switches mark CE when the queue a packet joins holds more than this (units.parse_threshold: bytes,
    # packets, percent of buffer_ref, or "off"); the paper's section 6: 80 KB, 10 % of an 800 KB port buffer
    ecn_threshold: str = "10%"
    buffer_ref: int = BUFFER_REF_BYTES
    flows_file: str | None = None  # cm: a flow list in htsim's connection-matrix format
    cm_rate_bps: int = 100_000_000_000  # cm: the line rate its start times were written for
    # Congestion control (traffic/transport.py): "none" is the paced blast. A CCA turns ACKs on.
    cc: str = "none"
    base_rtt_pkts: float | None = None  # emulated base RTT in packet times at line rate (default 150 with a CCA)
    base_rtt_s: float | None = None  # or in seconds (one of the two)
    buffer_bytes: int | None = None  # per switch port; default 800 KB with a CCA, unlimited without
    # The sampled schemes' intervals, in packet times at line rate (testbed.models.sampled)
    sample_pkts: float = SampledParams.sample_pkts  # DLB, SGLB: sampling
    flood_pkts: float = SampledParams.flood_pkts  # SGLB: flood
    dre_pkts: float = SampledParams.dre_pkts  # CONGA: T_dre
    load_band: tuple[float, float] = SampledParams.load_band  # DLB: load thresholds, fractions of the line rate
    queue_band: tuple[int, int] = SampledParams.queue_band  # DLB: queue thresholds, bytes
    drill_d: int = SampledParams.drill_d  # the drill scheme's DRILL(d, m)
    drill_m: int = SampledParams.drill_m
    # Propagation per link (testbed.topology.timebase): added to each flow's completion and its bound, and to
    # every feedback loop in the data plane (a signal is usable one propagation round trip after it arrives)
    propagation: Propagation = PAPER

    def __post_init__(self) -> None:
        if not 0 < self.load <= 1:
            raise RunError(f"load must be in (0, 1], got {self.load}")
        if self.fan_in < 1:
            raise RunError(f"fan-in must be >= 1, got {self.fan_in}")
        if self.pipe_size < 0:
            raise RunError(f"pipe size must be >= 1 (or per-CPU), got {self.pipe_size}")
        if self.inject is not None and not INJECT.fullmatch(self.inject):
            raise RunError(
                f"unknown fault {self.inject!r} (late:G:US, stall:G:N:US, wake:US, nic-burst, nic-slow:H:PCT, ackstall:N:US, ackring:N or deadline:MS)"
            )
        if not 1 <= self.payload <= 65000:
            raise RunError(f"payload must be in [1, 65000] bytes, got {self.payload}")
        if self.buffer_ref <= 0:
            raise RunError(f"the reference buffer must be > 0 bytes, got {self.buffer_ref}")
        self.ecn()  # validates the threshold
        if self.cc not in CCAS:
            raise RunError(f"--cc: unknown congestion control {self.cc!r} (one of {', '.join(CCAS)})")
        if self.base_rtt_pkts is not None and self.base_rtt_s is not None:
            raise RunError("give the base RTT once: --base-rtt or --base-rtt-pkts")
        if (self.base_rtt_pkts or 0) < 0 or (self.base_rtt_s or 0) < 0:
            raise RunError("the base RTT must be >= 0")
        if (self.base_rtt_pkts is not None or self.base_rtt_s is not None) and self.cc == "none":
            raise RunError("a base RTT delays the feedback of a congestion controller: give --cc too")
        if self.buffer_bytes is not None and self.buffer_bytes < 2 * 1500:
            raise RunError(f"--buffer must hold at least two frames, got {self.buffer_bytes} bytes")
        if self.cc != "none" and not self.acks:
            object.__setattr__(self, "acks", True)  # a congestion controller is clocked by its ACKs
        if self.inject is not None and self.inject.startswith(("ackstall:", "ackring:")) and self.cc == "none":
            raise RunError(f"{self.inject.split(':')[0]} faults the transport's ACK thread: give --cc too")
        if self.scheme is Scheme.REPS and not self.acks:
            raise RunError("reps recycles the entropies its ACKs bring back: run it with --acks")
        if self.scheme is Scheme.CONGA and not self.acks:
            raise RunError("conga feeds path congestion back on the reverse traffic: run it with --acks")
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
        try:
            load_lo, load_hi = self.load_band  # as tuple() did, any two-item sequence becomes a pair
            queue_lo, queue_hi = self.queue_band
            return SampledParams(
                self.sample_pkts,
                self.flood_pkts,
                self.dre_pkts,
                (load_lo, load_hi),
                (queue_lo, queue_hi),
                self.drill_d,
                self.drill_m,
            )
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
        if self.buffer_bytes is not None:
            return self.buffer_bytes
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
        if self.base_rtt_s is not None or self.base_rtt_pkts is not None or self.propagation.off:
            base = (
                self.base_rtt_s * 1e9
                if self.base_rtt_s is not None
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
        return WorkloadSpec(
            self.workload,
            self.size_bytes,
            self.seed,
            self.fan_in,
            self.inter_pod,
            self.gpus_per_server,
            self.stride,
            self.matrix,
            self.moe_skew,
            self.eplb,
            self.order,
            self.flows_file,
            self.cm_rate_bps,
            self.size_per_host,
            self.layers,
            self.steps,
        )

    def check_fabric(self, tree: FatTree) -> None:
        """What this run needs of the fabric, checked before anything is built: its flows fit (flows()), and a
        host-routed scheme can label every path (64 path bits per pair of edge switches)."""
        self.flows(tree)
        if self.scheme is not None and self.scheme.switch_scheme is Scheme.HOST_ROUTED and not host_routable(tree):
            raise RunError(
                f"{self.scheme.label} labels every path of a pair of edge switches in 64 bits: this "
                f"fabric has {tree.w * tree.w} between pods (fat trees up to k=16, leaf-spines up to "
                f"k=64)"
            )

    def flows(self, tree: FatTree) -> list[Flow]:
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
    cct_end_ns: int  # last packet (or ACK, with ACKs on) reaching its destination, plus its flow's propagation
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
    utilisation: float
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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
