"""The ideal fabric: the same topology, workload and switch decisions as a
run, played out in exact time with no emulator in between. It answers "what
would a perfect emulation of this network give?", so a run's CCT increase can
be split into the network's share and the emulator's.

Time is counted in packet times at the line rate (all frames of the modelled
workloads are full; a frame's line time counts the wire's overhead,
Packetizer.wire_overhead, as the fabric's links charge it). Every directed link, the hosts' NICs included, is a
FIFO token bucket like the fabric's TBFs: rate one frame per packet time, a
bucket of `link_bucket` maximum-size frames (`nic_bucket` for the NICs; about
2.03 and 1.27 of the workload's 4,154-byte frames), full at the start,
and a frame leaves as soon as the bucket holds a whole frame. So, as in the
kernel, a hop adds no serialisation delay of its own and the CCT bound has no
per-hop term (testbed.measure.metrics.cct_lower_bound_s). A frame that leaves
a link is at the next switch at that instant, where the scheme picks its
egress; frames that reach one switch at the same instant are taken in a
random order, or by source host (`order="fixed"`: the near-fixed order in
which the kernel serves NICs released in lockstep; it matters to RR). Each NIC's queue is full at the start, as a run's is when the NICs are
released; `start_jitter` spreads the releases uniformly over that many packet
times.

Propagation: every link, the NICs' included, adds `propagation` packet times
between a frame's departure and its arrival at the next node, exactly, in
the event times. Every random choice is drawn from its switch's own stream
and ties at one instant are broken by a hash of the frame and its hop, so a
delay that shifts every arrival at a switch alike changes no decision: the
inter-pod permutation's CCT then grows by exactly 6 links x the delay, and
`flow_done` (each flow's last delivery) gives the analytic shift that
testbed.measure.metrics applies to a kernel run, to compare (docs/methods/timebase.md).

Two link models. The one above (`link="emulator"`, the default) is the
emulator's. `link="paper"` is the paper's simulator's (htsim's queues and
pipes): every port serves one frame at a time, for one packet time, FIFO; a
frame reaches the next node when its last bit has crossed the link (its
wire time, then `propagation`), and a switch sends it on only then
(store-and-forward), so each hop adds a packet time. Its bound is
paper_bound_pkts: N + (L - 1) + L x propagation for a flow of N frames over
L links. Neither model has ACKs: a flow is done when its last frame is
delivered.

Schemes: ECMP (one uplink per flow and switch: the switches' own hash of the
flow's 5-tuple when the run's EcmpInputs are given, so every draw takes the
uplinks the kernel took; else uniform), RPS (uniform per
packet; or, `spray="entropies"`, htsim's oblivious spraying: each flow's frames
carry a shuffled round robin over `entropies` values and each switch hashes
(flow, entropy) onto an uplink), RR (one pointer per switch), JSQ (fewest frames waiting, random
among ties), Ofan and pOfan (the pointers of decisions.ofan_port per switch or
pipe, destination key and size class, their start drawn as switches.py
draws it, from this module's seed),
with every uplink valid. Workloads: one flow per host (permutation,
inter-pod permutation, ring, stride, or a connection matrix of such flows
all starting at 0, as the htsim twin's) in full frames. Pure Python, no kernel:
k=16 (262,144 frames) takes about 8 s, the k=64 leaf-spine 13 s.
"""

from __future__ import annotations

import heapq
import random
import struct
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from traffic.packet import ROCE_PORT, Packetizer
from traffic.workloads import Flow

from ..topology import FatTree, Level, Stage
from ..topology.timebase import path_links
from . import decisions
from .schemes import Scheme, SchemeConfig, SchemeError

SCHEMES = tuple(s for s in Scheme if s.traits.ideal)  # the registry says which (testbed.models.schemes)
# The fabric's buckets, in maximum-size frames (MTU + Ethernet header), as testbed.fabric.build counts them
# (DEFAULT_BURST_FRAMES, NIC_BUCKET_FRAMES, DEFAULT_MTU; tests/unit/test_ideal.py keeps these copies equal).
LINK_BUCKET = 2.0
NIC_BUCKET = 1.25
MAX_FRAME_BYTES = 4200 + 14
ORDERS = ("random", "fixed")  # of frames reaching one switch at one instant
LINKS = ("emulator", "paper")
START_JITTER = 1.0  # packet times over which a run's NICs are released: the kernel's (the verdict's envelope)  # the link models: the fabric's token buckets, or htsim's serialising ports
SPRAYS = ("switch", "entropies")  # RPS: each switch's own draw, or the host's entropy hashed by each switch
ENTROPIES = 8192  # htsim's -paths as the twin ran it (testbed.measure.htsim.ENTROPIES)


IPPROTO_UDP = 17


@dataclass(frozen=True)
class EcmpInputs:
    """What a run's switches hash for ECMP (ebpf/include/lb_ecmp.h): each LB switch's seed (switch_cfg.seed)
    and each flow's UDP source port (traffic.sender.source_port), to RoCEv2's port. With them the ideal fabric
    takes, by decisions.ecmp_port, the uplinks the kernel took: a run's collisions are its hash's, not a
    uniform draw's."""

    seeds: Mapping[str, int]  # switch name -> its ECMP seed
    sports: Mapping[int, int]  # flow id -> UDP source port

    def slot(self, tree: FatTree, switch: str, src: str, dst: str, fid: int) -> int:
        """The uplink slot the switch's hash gives the flow (every uplink valid)."""
        l4 = struct.pack("!HH", self.sports[fid], ROCE_PORT)
        saddr, daddr = tree.host_ip(tree.by_name[src]).packed, tree.host_ip(tree.by_name[dst]).packed
        return decisions.ecmp_port(tree.w, self.seeds[switch], saddr, daddr, l4, IPPROTO_UDP)


@dataclass(frozen=True)
class IdealResult:
    cct_pkts: float  # first NIC departure to last delivery, in packet times
    bound_pkts: float  # the CCT lower bound, in packet times
    frames: int
    delivered: int
    max_queue: dict[str, int]  # per stage label: the most frames waiting at any link of that stage
    flow_done: dict[int, float] = field(default_factory=dict)  # flow id -> its last delivery, from the first departure
    # per stage label: frames waiting, time-averaged over the sending window (the first departure to the last
    # frame out of a NIC; Thm. 1-2's q(m), as the kernel's avg_sending_pkts) and over the stage's links; the
    # NICs' own stage (host_edge) is 0, as in max_queue: every frame waits there from its release
    mean_queue_sending: dict[str, float] = field(default_factory=dict)

    @property
    def cct_increase(self) -> float:
        return self.cct_pkts / self.bound_pkts - 1


class _Bucket:
    """A FIFO token bucket of one frame per packet time."""

    __slots__ = ("size", "t", "tokens", "waiting")
    service = 0.0  # a frame leaves at once: no serialisation of its own

    def __init__(self, size: float) -> None:
        self.size, self.tokens, self.t = size, size, 0.0
        self.waiting: deque[float] = deque()  # departure times of frames not yet gone

    def send(self, arrival: float) -> tuple[float, int]:
        """(departure of a frame that arrives now, frames waiting once it joined)."""
        while self.waiting and self.waiting[0] <= arrival:
            self.waiting.popleft()
        t = max(arrival, self.t)
        tokens = min(self.size, self.tokens + (t - self.t))
        if tokens < 1.0:
            t += 1.0 - tokens
            tokens = 1.0
        self.tokens, self.t = tokens - 1.0, t
        if t > arrival:
            self.waiting.append(t)
        return t, len(self.waiting)

    def queued(self, now: float) -> int:
        return sum(1 for d in self.waiting if d > now)

    def start_at(self, t: float) -> None:
        """Nothing leaves before t (a NIC's release); the bucket stays full."""
        self.t = t


class _Port:
    """htsim's queue and its link's serialisation: one frame in service at a time, for one packet time, FIFO."""

    __slots__ = ("free", "starts")
    service = 1.0  # a full frame occupies its port for its wire time

    def __init__(self) -> None:
        self.free = 0.0  # when the frame last in line has left
        self.starts: deque[float] = deque()  # service starts of the frames not yet fully sent, in order

    def send(self, arrival: float) -> tuple[float, int]:
        """(when the last bit of a frame that arrives now has left, frames waiting for service once it joined:
        the one in service not counted). Arrivals come in time order."""
        self._drop(arrival)
        start = max(arrival, self.free)
        self.free = start + 1.0
        self.starts.append(start)
        return self.free, len(self.starts) - (1 if self.starts[0] <= arrival else 0)

    def queued(self, now: float) -> int:
        """Frames at the port, the one in service included (htsim's queue size, in frames)."""
        self._drop(now)
        return len(self.starts)

    def start_at(self, t: float) -> None:
        self.free = t

    def _drop(self, now: float) -> None:
        while self.starts and self.starts[0] + 1.0 <= now:
            self.starts.popleft()


_Server = _Bucket | _Port


def check(config: SchemeConfig, flows: list[Flow], pk: Packetizer) -> None:
    """SchemeError for what the ideal fabric does not model."""
    if config.scheme not in SCHEMES:
        raise SchemeError(f"the ideal fabric models {', '.join(s.label for s in SCHEMES)}, not {config.label}")
    if config.scheme is Scheme.POFAN and config.pipe_size < 1:
        raise SchemeError("the ideal fabric models pOfan with pipes of ports, not per-CPU pointers")
    if len({f.src for f in flows}) != len(flows) or any(f.start_bits for f in flows):
        raise SchemeError("the ideal fabric models workloads of one flow per host, all starting together")
    if any(f.size_bytes % pk.payload for f in flows):
        raise SchemeError(f"the ideal fabric models full frames: sizes must be multiples of {pk.payload} B")


def simulate(
    tree: FatTree,
    config: SchemeConfig,
    flows: list[Flow],
    seed: int,
    pk: Packetizer | None = None,
    link_bucket: float = LINK_BUCKET,
    nic_bucket: float = NIC_BUCKET,
    start_jitter: float = 0.0,
    order: str = "random",
    propagation: float = 0.0,
    buckets_bytes: tuple[int, int] | None = None,
    ecmp: EcmpInputs | None = None,
    link: str = "emulator",
    spray: str = "switch",
    entropies: int = ENTROPIES,
) -> IdealResult:
    """Play `flows` through `tree` under `config`; `seed` draws the initial
    pointers and the random choices. Frames at one switch at one instant are
    taken in a random order (`order="random"`: a hash of the seed, the frame
    and its hop) or by their source host's number (`"fixed"`: the same phase
    every packet time, as NICs released in lockstep and served in a fixed
    order are). Every link delays a frame by `propagation` packet times. `buckets_bytes` (the links' and the
    NICs' buckets in bytes of line time, a fabric's own: FabricSpec.burst and the run's NIC bucket) overrides
    `link_bucket` and `nic_bucket`, which count maximum-size frames of the default MTU. `ecmp` (a run's hash
    inputs) makes ECMP take the switches' own choices instead of uniform ones. `link="paper"` serialises
    every frame at every port instead (htsim's links: no buckets), and `spray="entropies"` makes RPS spray
    as htsim's oblivious load balancer does, over `entropies` values per flow."""
    check_options(config, order, link, spray, entropies)
    if propagation < 0:
        raise SchemeError(f"propagation must be >= 0 packet times, got {propagation}")
    if link == "paper" and buckets_bytes is not None:
        raise SchemeError("the paper's link model serialises every frame: it has no buckets to give")
    pk = pk or Packetizer()
    check(config, flows, pk)
    link_bucket, nic_bucket = _buckets(pk, link_bucket, nic_bucket, buckets_bytes)
    rng = random.Random(seed)  # the round-robin pointers' starts, then the NICs' releases, in that order
    links = _Links.of(tree, config, (link_bucket, nic_bucket) if link == "emulator" else None)
    inputs = _SchemeInputs(flows=flows, seed=seed, rng=rng, pk=pk, ecmp=ecmp)
    spray_slot = _entropy_slots(tree, inputs, entropies) if spray == "entropies" else None
    next_hop = _router(tree, config, links, inputs, spray_slot)
    tie_of = _tie_order(seed) if order == "random" else None
    events, first, sent = _release(flows, links, rng, pk.count, start_jitter, _Hop(propagation, tie_of))
    frames = len(events)
    done, delivered, max_queue, area = _play(events, next_hop, links, _Hop(propagation, tie_of), (first, sent))
    if link == "emulator":
        bound = _bound_pkts(tree, flows, pk, link_bucket, nic_bucket, propagation)
    else:
        bound = paper_bound_pkts(tree, flows, pk, propagation)
    last = max(done.values(), default=first)
    return IdealResult(
        cct_pkts=last - first,
        bound_pkts=bound,
        frames=frames,
        delivered=delivered,
        max_queue=max_queue,
        flow_done={f: t - first for f, t in done.items()},
        mean_queue_sending=_means(area, links, sent - first),
    )


def _means(area: dict[str, float], links: _Links, span: float) -> dict[str, float]:
    """Each stage's frame-time area over its links' count and the window's span."""
    count: dict[str, int] = {}
    for st in links.stage_of.values():
        count[st.label] = count.get(st.label, 0) + 1
    return {st: a / count[st] / span if span > 0 and count.get(st) else 0.0 for st, a in area.items()}


def check_options(
    config: SchemeConfig,
    order: str = "random",
    link: str = "emulator",
    spray: str = "switch",
    entropies: int = ENTROPIES,
) -> None:
    """SchemeError for an option of simulate() that it does not know, or that does not apply to `config`."""
    if order not in ORDERS:
        raise SchemeError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    if link not in LINKS:
        raise SchemeError(f"link must be one of {', '.join(LINKS)}, got {link!r}")
    if spray not in SPRAYS:
        raise SchemeError(f"spray must be one of {', '.join(SPRAYS)}, got {spray!r}")
    if spray == "entropies" and config.scheme is not Scheme.RPS:
        raise SchemeError(f"spraying over entropies is a way of doing rps, not {config.label}")
    if not (1 <= entropies <= 1 << 16) or entropies & (entropies - 1):
        raise SchemeError(f"entropies must be a power of two from 1 to 65536 (htsim's), got {entropies}")


@dataclass(frozen=True)
class _Links:
    """The fabric as simulate() walks it: each directed link's bucket (by its two ends) and stage, the
    switches' uplinks and the cores' downlink per pod, pOfan's pipe of each switch port, and the hosts' names,
    pods and edge switches."""

    buckets: dict[tuple[str, str], _Server]
    stage_of: dict[tuple[str, str], Stage]
    up: dict[str, list[str]]  # LB switch -> the peers of its uplinks, by slot
    core_down: dict[str, dict[int, str]]  # core -> pod -> its aggregation switch there
    pipe_of: dict[tuple[str, str], int]  # pOfan: (switch, ingress peer) -> pipe
    host_name: dict[int, str]
    pod_of: dict[str, int]
    edge_of: dict[str, str]

    @classmethod
    def of(cls, tree: FatTree, config: SchemeConfig, sizes: tuple[float, float] | None) -> _Links:
        """`sizes`: the links' and the NICs' buckets (the emulator's links), or None (the paper's ports)."""
        by_name = tree.by_name
        hosts = tree.hosts
        buckets: dict[tuple[str, str], _Server] = {}
        stage_of: dict[tuple[str, str], Stage] = {}
        for p in tree.ports:
            if sizes is None:
                buckets[(p.node, p.peer)] = _Port()
            else:
                buckets[(p.node, p.peer)] = _Bucket(sizes[1] if by_name[p.node].is_host else sizes[0])
            stage_of[(p.node, p.peer)] = p.stage
        pipe_of: dict[tuple[str, str], int] = {}
        if config.scheme is Scheme.POFAN:
            for p in tree.ports:
                if not by_name[p.node].is_host:
                    pipe_of[(p.node, p.peer)] = tree.local_index(p) // config.pipe_size
        return cls(
            buckets=buckets,
            stage_of=stage_of,
            up={sw.name: [p.peer for p in tree.uplinks(sw.name)] for sw in tree.switches if sw.level is not Level.CORE},
            core_down={
                sw.name: {by_name[p.peer].pod: p.peer for p in tree.downlinks(sw.name)}
                for sw in tree.switches
                if sw.level is Level.CORE
            },
            pipe_of=pipe_of,
            host_name={h.nid: h.name for h in hosts},
            pod_of={h.name: h.pod for h in hosts},
            edge_of={h.name: tree.edge_of(h.name) for h in hosts},
        )


@dataclass(frozen=True)
class _SchemeInputs:
    """What the switches' decisions draw on beyond the fabric: the flows (their sources, for ECMP's hash), the
    seed and the simulation's own random stream (the round-robin pointers' starts), the frames' size class
    and a run's ECMP hash inputs."""

    flows: list[Flow]
    seed: int
    rng: random.Random
    pk: Packetizer
    ecmp: EcmpInputs | None


# (at, from, destination host, flow id, frame number, now) -> next node
_NextHop = Callable[[str, str, str, int, int, float], str]
_SpraySlot = Callable[[str, int, int], int]  # (switch, flow id, frame number) -> uplink slot


def _entropy_slots(tree: FatTree, inputs: _SchemeInputs, entropies: int) -> _SpraySlot:
    """htsim's oblivious spraying (UecMpOblivious, FatTreeSwitch::getNextHop): each flow's frames carry a
    shuffled round robin over `entropies` values (frame n: (n mod E) XOR a random mask, drawn anew each round
    of E frames), and each switch hashes (flow, entropy) with its own salt onto an uplink. Both from streams
    of this module's seed, none from the switches' own draws."""
    w, seed = tree.w, inputs.seed
    masks: dict[int, list[int]] = {}
    for f in inputs.flows:
        rounds = -(-inputs.pk.count(f.size_bytes) // entropies)
        draw = random.Random(f"{seed}/flow{f.fid}/entropies")
        masks[f.fid] = [draw.randrange(entropies) for _ in range(max(rounds, 1))]
    salts = {sw.name: random.Random(f"{seed}/{sw.name}/salt").getrandbits(64) for sw in tree.switches}

    def slot(sw: str, fid: int, n: int) -> int:
        entropy = (n % entropies) ^ masks[fid][n // entropies]
        return _mix(salts[sw] ^ _mix((fid << 20) ^ entropy)) % w

    return slot


def _router(
    tree: FatTree, config: SchemeConfig, links: _Links, inputs: _SchemeInputs, spray_slot: _SpraySlot | None = None
) -> _NextHop:
    """The next node of a frame at a switch: downward by destination, exactly; upward the scheme's choice
    (every uplink valid), from each switch's own random stream and state (RPS with `spray_slot`: the frame's
    entropy hashed by the switch)."""
    scheme, ecmp = config.scheme, inputs.ecmp
    w = tree.w
    n_keys = max(tree.n_edges, tree.k)
    basis = decisions.choose_basis(w)
    by_name = tree.by_name
    buckets, up, core_down, pipe_of = links.buckets, links.up, links.core_down, links.pipe_of
    pod_of, edge_of = links.pod_of, links.edge_of
    pointers: dict[tuple[str, int], list[int]] = {}
    rr: dict[str, int] = {sw: inputs.rng.randrange(w) for sw in up}
    draws = {sw: random.Random(f"{inputs.seed}/{sw}") for sw in up}  # each switch's own random stream
    ecmp_slot: dict[tuple[int, str], int] = {}
    src_of = {f.fid: links.host_name[f.src] for f in inputs.flows}
    cls = decisions.size_class(inputs.pk.frame_len(inputs.pk.payload))
    drb = _drb_paths(tree, links, inputs) if scheme is Scheme.DRB else {}

    def next_hop(sw: str, prev: str, dst: str, fid: int, n: int, now: float) -> str:
        node = by_name[sw]
        dst_edge = edge_of[dst]
        if node.level is Level.EDGE:
            if sw == dst_edge:
                return dst
            key = tree.edge_global(by_name[dst_edge])
        elif node.level is Level.AGG:
            if pod_of[dst] == node.pod:  # every spine of a leaf-spine (one pod)
                return dst_edge
            key = pod_of[dst]
        else:
            return core_down[sw][pod_of[dst]]
        peers = up[sw]
        s = scheme
        rng = draws[sw]
        if s is Scheme.ECMP and ecmp is not None:
            slot = ecmp_slot.get((fid, sw), -1)
            if slot < 0:
                slot = ecmp_slot[(fid, sw)] = ecmp.slot(tree, sw, src_of[fid], dst, fid)
        elif s is Scheme.ECMP:
            slot = ecmp_slot.setdefault((fid, sw), rng.randrange(w))
        elif spray_slot is not None:  # RPS over entropies (simulate() checks the scheme)
            slot = spray_slot(sw, fid, n)
        elif s is Scheme.RPS:
            slot = rng.randrange(w)
        elif s is Scheme.RR:
            slot = rr[sw]
            rr[sw] = (slot + 1) % w
        elif s is Scheme.DRB:  # the path label its NIC wrote: the (start + n)-th path, agg x w + core
            start, paths = drb[fid]
            bit = (start + n) % paths
            slot = (bit // w if node.level is Level.EDGE else bit % w) if paths > w else bit
        elif s is Scheme.JSQ:
            q = [buckets[(sw, p)].queued(now) for p in peers]
            best = min(q)
            slot = rng.choice([i for i, v in enumerate(q) if v == best])
        else:
            pipe = pipe_of[(sw, prev)] if s is Scheme.POFAN else 0
            ptrs = pointers.get((sw, pipe))
            if ptrs is None:
                ptrs = pointers[(sw, pipe)] = decisions.ofan_initial_pointers(n_keys, w, rng)
            pid = decisions.pointer_id(key, n_keys, cls)
            slot = decisions.ofan_port(ptrs[pid], pid, basis)
            ptrs[pid] = (ptrs[pid] + 1) % w
        return peers[slot]

    return next_hop


def _drb_paths(tree: FatTree, links: _Links, inputs: _SchemeInputs) -> dict[int, tuple[int, int]]:
    """DRB's NIC (host_lb.h, testbed.models.host.model_drb) without failures: per flow a rotation over its
    paths from a random start, one step per data frame; a path between pods is bit agg x w + core (w x w of
    them), within a pod bit agg (w). Flow -> (start, paths); a flow within one edge switch has no choice."""
    out: dict[int, tuple[int, int]] = {}
    for f in inputs.flows:
        src, dst = links.host_name[f.src], links.host_name[f.dst]
        paths = tree.w * tree.w if links.pod_of[src] != links.pod_of[dst] else tree.w
        out[f.fid] = (random.Random(f"{inputs.seed}/drb/{f.fid}").randrange(paths), paths)
    return out


_TieOf = Callable[[int, int, int], float]  # (flow id, frame number, hop) -> the frame's place among simultaneous ones


def _tie_order(seed: int) -> _TieOf:
    """The random order of frames that reach one node at one instant: a hash of the seed, the frame and its
    hop (so a delay that shifts every arrival alike changes no decision)."""
    salt = _mix(seed)

    def tie_of(fid: int, n: int, hop: int) -> float:  # random order: frame n of flow fid at its hop-th node
        return float(_mix(salt ^ (fid << 40) ^ (n << 8) ^ hop))

    return tie_of


@dataclass(frozen=True)
class _Hop:
    """What every hop adds: the link's propagation (packet times), and the tie order at the next node (None:
    the fixed order, by source host, kept from the NIC)."""

    propagation: float
    tie_of: _TieOf | None


# time, hop, tie, at, from, destination host, flow, frame number: at one instant, frames that crossed fewer
# links go first (as if every link had an infinitesimal delay), then by the tie
_Event = tuple[float, int, float, str, str, str, int, int]


def _release(
    flows: list[Flow], links: _Links, rng: random.Random, count: Callable[[int], int], jitter: float, hop: _Hop
) -> tuple[list[_Event], float, float]:
    """Every frame through its source's NIC (each NIC released at a uniform draw within `jitter` packet times,
    its queue full), as the events of their arrival at the edge switch (a heap; with the paper's links, of
    their last bit), the first departure (of a first bit) and the last."""
    events: list[_Event] = []
    first, last = float("inf"), 0.0
    buckets, host_name, edge_of = links.buckets, links.host_name, links.edge_of
    propagation, tie_of = hop.propagation, hop.tie_of
    for f in flows:
        src, dst = host_name[f.src], host_name[f.dst]
        nic = buckets[(src, edge_of[src])]
        release = rng.uniform(0.0, jitter) if jitter else 0.0
        nic.start_at(release)
        for n in range(count(f.size_bytes)):
            t, _ = nic.send(release)
            first = min(first, t - nic.service)
            last = max(last, t - nic.service)
            tie = tie_of(f.fid, n, 0) if tie_of is not None else float(f.src)  # fixed: by source host
            events.append((_at(t + propagation), 0, tie, edge_of[src], src, dst, f.fid, n))
    heapq.heapify(events)
    return events, first, last


def _play(
    events: list[_Event], next_hop: _NextHop, links: _Links, hop: _Hop, window: tuple[float, float]
) -> tuple[dict[int, float], int, dict[str, int], dict[str, float]]:
    """The frames hop by hop until every one is delivered, in time order: each flow's last delivery, the
    frames delivered, and per stage the most frames waiting at any of its links and the frame-time they spent
    waiting within `window` (from, to)."""
    buckets, stage_of = links.buckets, links.stage_of
    propagation, tie_of = hop.propagation, hop.tie_of
    max_queue = {st.label: 0 for st in Stage}
    area = {st.label: 0.0 for st in Stage}
    w0, w1 = window
    done: dict[int, float] = {}
    delivered = 0
    while events:
        now, hops, tie, at, prev, dst, fid, n = heapq.heappop(events)
        if at == dst:
            done[fid] = max(done.get(fid, now), now)
            delivered += 1
            continue
        nxt = next_hop(at, prev, dst, fid, n, now)
        link = (at, nxt)
        server = buckets[link]
        t, q = server.send(now)
        label = stage_of[link].label
        if q > max_queue[label]:
            max_queue[label] = q
        served = min(t - server.service, w1)  # it waited from its arrival until its service began
        if served > now and now < w1:
            area[label] += served - max(now, w0)
        tie = tie_of(fid, n, hops + 1) if tie_of is not None else tie
        heapq.heappush(events, (_at(t + propagation), hops + 1, tie, nxt, at, dst, fid, n))
    return done, delivered, max_queue, area


def _at(t: float) -> float:
    """An event time on a grid of 1e-9 packet times: two frames that arrive together without propagation
    still arrive together with it, whatever the rounding of their separate sums."""
    return round(t, 9)


def _mix(x: int) -> int:
    """splitmix64: a well-spread 64-bit hash of x."""
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


def links_of(tree: FatTree, flow: Flow) -> int:
    """The links of a flow's path (testbed.topology.timebase.path_links)."""
    return path_links(tree, flow.src, flow.dst)


def shifted_cct_pkts(tree: FatTree, flows: list[Flow], flow_done: dict[int, float], propagation: float) -> float:
    """The analytic shift that a kernel run applies (testbed.measure.metrics): each flow's completion without
    propagation plus its links x `propagation`, the latest of them."""
    return max(flow_done[f.fid] + links_of(tree, f) * propagation for f in flows if f.fid in flow_done)


def _buckets(
    pk: Packetizer, link_bucket: float, nic_bucket: float, buckets_bytes: tuple[int, int] | None
) -> tuple[float, float]:
    """The links' and NICs' buckets in the workload's frames."""
    frame = pk.wire_len(pk.payload)
    if buckets_bytes is not None:
        return buckets_bytes[0] / frame, buckets_bytes[1] / frame
    scale = (MAX_FRAME_BYTES + pk.wire_overhead) / frame
    return link_bucket * scale, nic_bucket * scale


def bound_pkts(
    tree: FatTree,
    flows: list[Flow],
    pk: Packetizer,
    propagation: float = 0.0,
    buckets_bytes: tuple[int, int] | None = None,
) -> float:
    """The CCT lower bound that simulate() reports for these flows with the fabric's buckets, in packet times."""
    link, nic = _buckets(pk, LINK_BUCKET, NIC_BUCKET, buckets_bytes)
    return _bound_pkts(tree, flows, pk, link, nic, propagation)


def _bound_pkts(
    tree: FatTree, flows: list[Flow], pk: Packetizer, link_bucket: float, nic_bucket: float, propagation: float = 0.0
) -> float:
    """metrics.cct_lower_bound_s in packet times, for full frames at load 1 (one flow per host: each host's
    term grows by its flow's links x `propagation`)."""
    sent: dict[int, tuple[int, int]] = {}  # host -> (frames, links of its flow)
    recv: dict[int, tuple[int, int]] = {}
    for f in flows:
        n, links = pk.count(f.size_bytes), links_of(tree, f)
        sent[f.src] = (sent.get(f.src, (0, links))[0] + n, min(links, sent.get(f.src, (0, links))[1]))
        recv[f.dst] = (recv.get(f.dst, (0, links))[0] + n, min(links, recv.get(f.dst, (0, links))[1]))
    return max(
        *(n - nic_bucket + links * propagation for n, links in sent.values()),
        *(n - link_bucket + links * propagation for n, links in recv.values()),
    )


def paper_bound_pkts(tree: FatTree, flows: list[Flow], pk: Packetizer, propagation: float = 0.0) -> float:
    """The CCT lower bound under the paper's link model, in packet times: a host's NIC sends its frames back
    to back (n packet times from the first bit of the first to the last bit of the last), and the last frame
    then crosses its path's other L - 1 ports, each serialising it whole (store-and-forward), and its L links,
    each delaying it by `propagation`: n + (L - 1) + L x propagation. A receiver's edge port carries its n
    frames back to back after the first of them crossed L - 1 ports and L - 1 links, which gives the same
    term. The largest over hosts, with the shortest path of each host's flows (one flow per host: its own)."""
    sent: dict[int, tuple[int, int]] = {}  # host -> (frames, fewest links of its flows)
    recv: dict[int, tuple[int, int]] = {}
    for f in flows:
        n, links = pk.count(f.size_bytes), links_of(tree, f)
        for host, table in ((f.src, sent), (f.dst, recv)):
            had, fewest = table.get(host, (0, links))
            table[host] = (had + n, min(fewest, links))
    return max(n + (links - 1) + links * propagation for n, links in (*sent.values(), *recv.values()))
