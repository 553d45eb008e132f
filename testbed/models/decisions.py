"""A pure-Python model of every scheme's upward decision, and the parameters
the switch takes from it (Ofan's port orders and basis, AR's thresholds).

The eBPF switch (ebpf/include/lb_*.h) implements each scheme; the functions
here compute the same decisions from the same inputs (destination key, size
class, ingress port, pointer values, queue lengths, random draws), so the
differential tests can compare the two decision by decision. `MODELS` holds
one model per scheme of the registry (testbed.models.schemes); `decide()`
dispatches to it. Upward port choice only: downward forwarding is exact and
the same for every scheme.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from traffic.packet import ROCE_PORT

from ..topology import Level
from . import sampled
from .sampled import DRILL_D_MAX as DRILL_D_MAX
from .sampled import DRILL_M_MAX as DRILL_M_MAX
from .schemes import Scheme, SchemeConfig, SchemeError

# Frames shorter than this use the small (ACK) pointer class (ebpf/include/wire.h SMALL_MAX_BYTES, CLASS_*,
# N_CLASSES; checked against it by testbed.dataplane.contract).
SMALL_MAX_BYTES = 256
CLASS_DATA, CLASS_SMALL = 0, 1
N_CLASSES = 2


def size_class(frame_len: int) -> int:
    return CLASS_SMALL if frame_len < SMALL_MAX_BYTES else CLASS_DATA


# -- ECMP ------------------------------------------------------------------
_ECMP_MULT = 0x9E3779B1  # lb_ecmp.h ECMP_MULT
_M32 = 0xFFFFFFFF


def _mix(h: int, x: int) -> int:
    h = ((h ^ x) * _ECMP_MULT) & _M32
    return h ^ (h >> 16)


def ecmp_hash(seed: int, saddr: bytes, daddr: bytes, l4_first4: bytes, proto: int) -> int:
    """Mirror of lb_ecmp.h: words are the packet bytes read as little-endian u32."""
    h = _mix(seed & _M32, int.from_bytes(saddr, "little"))
    h = _mix(h, int.from_bytes(daddr, "little"))
    h = _mix(h, int.from_bytes(l4_first4, "little"))
    return _mix(h, proto)


def ecmp_port(w: int, seed: int, saddr: bytes, daddr: bytes, l4_first4: bytes, proto: int) -> int:
    return ecmp_hash(seed, saddr, daddr, l4_first4, proto) % w


# -- Ofan ------------------------------------------------------------------
def b_bits(w: int) -> int:
    """ceil(log2 w), at least 1."""
    return max(1, math.ceil(math.log2(w)))


def xor_w(v: int, x: int, w: int) -> int:
    y = v ^ x
    return y if y < w else v


def pointer_id(d: int, n_keys: int, cls: int) -> int:
    return d + n_keys * cls


def ofan_port(i: int, pid: int, basis: Sequence[int]) -> int:
    """Uplink slot for pointer value i of pointer `pid` (appendix F.2)."""
    w = len(basis)
    b = b_bits(w)
    id1 = pid & ((1 << b) - 1)
    id2 = (pid >> b) % w
    return (xor_w(basis[i % w], id1, w) + id2) % w


def ofan_order(pid: int, basis: Sequence[int]) -> tuple[int, ...]:
    return tuple(ofan_port(i, pid, basis) for i in range(len(basis)))


def canonical_cycle(order: Sequence[int]) -> tuple[int, ...]:
    """A cyclic order written from its smallest element."""
    j = list(order).index(min(order))
    return tuple(order[j:]) + tuple(order[:j])


def distinct_cycles(basis: Sequence[int]) -> int:
    """Distinct cyclic orders reachable by any pointer id with this basis
    (the orders of every (id1, id2), each written from its smallest element;
    vectorised: choose_basis scores 257 bases, and w = 32 has 1,024 ids)."""
    import numpy as np

    w = len(basis)
    p = np.asarray(basis, dtype=np.int64)[None, None, :]
    x = p ^ np.arange(1 << b_bits(w), dtype=np.int64)[:, None, None]  # id1
    v = np.where(x < w, x, p)  # xor_w
    orders = ((v + np.arange(w, dtype=np.int64)[None, :, None]) % w).reshape(-1, w)  # + id2
    start = orders.argmin(axis=1)
    canon = np.take_along_axis(orders, (start[:, None] + np.arange(w)[None, :]) % w, axis=1).astype(np.uint8)
    return len({row.tobytes() for row in canon})


@functools.cache
def choose_basis(w: int, candidates: int = 256) -> tuple[int, ...]:
    """The basis permutation P for w uplinks: the candidate (from a fixed seed)
    with the most distinct cyclic orders, so it is the same on every run."""
    if w < 1:
        raise SchemeError("w must be >= 1")
    rng = random.Random(0x0FA4 + w)
    best = tuple(range(w))
    best_n = distinct_cycles(best)
    for _ in range(candidates):
        cand = list(range(w))
        rng.shuffle(cand)
        n = distinct_cycles(cand)
        if n > best_n:
            best, best_n = tuple(cand), n
    return best


# -- weighted Ofan ----------------------------------------------------------------
WOFAN_ROUNDS = 64  # the most rounds a key's rotation has (schemes.h WOFAN_ROUNDS): weights up to 64


def wofan_weights(shares: Sequence[float], rounds: int = WOFAN_ROUNDS) -> list[int]:
    """Integer weights for fractional shares of a destination's traffic per slot: for each R up to `rounds`
    the largest share gets R and each other its share scaled alike, rounded to the nearest integer; the R whose
    weights' shares are nearest the given ones (the largest difference; the smallest R on a tie). A share below
    half a round's worth is dropped; what the rounding costs is what `control.split_rho` reports."""
    total = sum(shares)
    top = max(shares, default=0.0)
    if top <= 0 or total <= 0:
        return [0] * len(shares)
    best: tuple[float, list[int]] | None = None
    for r in range(1, rounds + 1):
        ws = [round(s / top * r) for s in shares]
        err = max(abs(c / sum(ws) - s / total) for c, s in zip(ws, shares, strict=True))
        if best is None or err < best[0] - 1e-12:
            best = (err, ws)
    assert best is not None
    return best[1]


def fit_weights(weights: Sequence[int]) -> list[int]:
    """Integer weights as the rounds can hold them: unchanged up to WOFAN_ROUNDS, else scaled (wofan_weights)."""
    return list(weights) if max(weights, default=0) <= WOFAN_ROUNDS else wofan_weights([float(c) for c in weights])


def wofan_rounds(weights: Sequence[int]) -> tuple[int, ...]:
    """The rounds of eligible uplink slots for integer weights per slot (0: not used): R = the largest weight
    over the weights' common divisor, and slot p eligible in round j when floor((j + 1) c_p / R) > floor(j c_p
    / R), so its c_p rounds of R are spread as evenly as they can be and the largest weight is eligible in
    every round. Equal weights give one round naming those slots (Ofan's rotation over them), none none."""
    ws = [max(0, int(c)) for c in weights]
    g = math.gcd(*ws)
    if g == 0:
        return ()
    ws = [c // g for c in ws]
    r = max(ws)
    if r > WOFAN_ROUNDS:
        raise SchemeError(f"weighted Ofan takes weights up to {WOFAN_ROUNDS} over their common divisor, got {ws}")
    return tuple(sum(1 << p for p, c in enumerate(ws) if (j + 1) * c // r > j * c // r) for j in range(r))


def wofan_eligible(value: int, w: int, rounds: Sequence[int], mask: int) -> int:
    """The slots pointer value `value` may take (lb_wofan_eligible): its round's, within `mask`; every valid
    slot when there are no rounds, or when the round names no valid slot."""
    if not rounds:
        return mask
    e = rounds[(value // w) % len(rounds)] & mask
    return e or mask


def wofan_counts(rounds: Sequence[int], mask: int, w: int) -> list[int]:
    """How many of a key's rounds make each slot eligible within `mask` (wofan_eligible's rounds; no rounds:
    one round of every valid slot): its weight as the switch applies it."""
    return [sum(wofan_eligible(j * w, w, rounds, mask) >> p & 1 for j in range(len(rounds) or 1)) for p in range(w)]


def wofan_port(pointer: int, pid: int, basis: Sequence[int], mask: int, rounds: Sequence[int]) -> tuple[int, int]:
    """Weighted Ofan's uplink for a pointer at `pointer`: the first of W values whose port (Ofan's order) its
    round makes eligible, and how far the pointer advanced."""
    w = len(basis)
    port = 0
    for t in range(w):
        port = ofan_port(pointer + t, pid, basis)
        if (wofan_eligible(pointer + t, w, rounds, mask) >> port) & 1:
            return port, t + 1
    return mask_draw(mask, w, port), w  # lb_mask_draw: only other CPUs' values in between get here


def ofan_initial_pointers(n_keys: int, w: int, rng: random.Random) -> list[int]:
    """Initial pointer values for ids 0..2*n_keys-1: data pointers uniform in
    [0, w), small-class pointers half a rotation (floor(w/2)) after them."""
    data = [rng.randrange(w) for _ in range(n_keys)]
    small = [(v + w // 2) % w for v in data]
    return data + small


# -- destination-oblivious schemes --------------------------------------------
def valid_slots(mask: int, w: int) -> list[int]:
    return [i for i in range(w) if (mask >> i) & 1]


def mask_draw(mask: int, w: int, draw: int) -> int:
    """The (draw mod count)-th valid slot (lb_mask_draw)."""
    v = valid_slots(mask, w)
    return v[draw % len(v)]


def rps_port(w: int, draw: int, mask: int | None = None) -> int:
    return mask_draw((1 << w) - 1 if mask is None else mask, w, draw)


def rr_port(w: int, ptr: int) -> int:
    return ptr % w


def skip_invalid(order: Any, ptr: int, mask: int, w: int) -> tuple[int, int]:
    """Advance a pointer until its port is valid: (port, pointer advances)."""
    for t in range(w):
        port = int(order(ptr + t))
        if (mask >> port) & 1:
            return port, t + 1
    return int(order(ptr + w - 1)), w


def pick_min(scores: Sequence[int], draw: int) -> int:
    """The (draw mod ties)-th slot, in slot order, among those with the minimum score."""
    best = min(scores)
    ties = [i for i, v in enumerate(scores) if v == best]
    return ties[draw % len(ties)]


def jsq_port(queue_bytes: Sequence[int], draw: int) -> int:
    return pick_min(queue_bytes, draw)


# Adaptive routing: thresholds as fractions of a reference port buffer. The
# paper quantises at 5, 10 and 20 percent of an 800 KB per-port buffer.
AR_BUFFER_BYTES = 800 * 1024
AR_PERCENTS = (5.0, 10.0, 20.0)


def ar_thresholds(buffer_bytes: int = AR_BUFFER_BYTES, percents: Sequence[float] = AR_PERCENTS) -> tuple[int, ...]:
    if len(percents) != 3 or list(percents) != sorted(percents) or not all(0 < p <= 100 for p in percents):
        raise SchemeError(f"AR needs 3 increasing percentages in (0, 100], got {list(percents)}")
    if buffer_bytes <= 0:
        raise SchemeError("AR buffer must be > 0 bytes")
    return tuple(int(buffer_bytes * p / 100) for p in percents)


def ar_level(queue_bytes: int, thresholds: Sequence[int]) -> int:
    return sum(1 for t in thresholds if queue_bytes >= t)


def ar_port(queue_bytes: Sequence[int], thresholds: Sequence[int], draw: int) -> int:
    return pick_min([ar_level(q, thresholds) for q in queue_bytes], draw)


DRILL_DEFAULT = (2, 1)  # (d, m): the DRILL paper's recommended setting; at most (DRILL_D_MAX, DRILL_M_MAX)


def drill_draw(j: int, draw0: int, draw1: int) -> int:
    """The j-th draw of a DRILL decision (lb_drill_draw): the packet's two, then a mix of both."""
    return (draw0, draw1)[j] if j < 2 else _mix(_mix(draw0, j), draw1)


def drill_port(
    w: int,
    memories: Sequence[int],
    draw0: int,
    draw1: int,
    queue_bytes: Sequence[int],
    mask: int | None = None,
    dm: tuple[int, int] = DRILL_DEFAULT,
) -> tuple[int, tuple[int, int]]:
    """DRILL(d, m): the m remembered uplinks (one no longer valid stands in as the first sample), then d
    uniformly drawn valid ones; fewest bytes wins, ties go to the earlier candidate, and becomes memory 0; with
    m = 2 the least loaded of the others (ties: earlier) becomes memory 1. Returns (uplink, the memories after)."""
    d, m = dm
    v = (1 << w) - 1 if mask is None else mask
    samples = [mask_draw(v, w, drill_draw(j, draw0, draw1)) for j in range(d)]
    remembered = [x % w if (v >> (x % w)) & 1 else samples[0] for x in memories[:m]]
    cands = remembered + samples
    first = min(range(len(cands)), key=lambda i: (queue_bytes[cands[i]], i))
    new = list(memories)
    if m >= 1:
        new[0] = cands[first]
    if m >= 2:
        second = min((i for i in range(len(cands)) if i != first), key=lambda i: (queue_bytes[cands[i]], i))
        new[1] = cands[second]
    return cands[first], (new[0], new[1])


def choice_port(w: int, draw0: int, draw1: int, queue_bytes: Sequence[int], mask: int) -> int:
    """Choice, DRILL(2, 0): of two uniformly drawn valid uplinks the one with fewer bytes, the first on a tie."""
    a, b = mask_draw(mask, w, draw0), mask_draw(mask, w, draw1)
    return b if queue_bytes[b] < queue_bytes[a] else a


# -- pOfan ----------------------------------------------------------------------
def pofan_pipe(local_port: int, pipe_size: int, n_ports: int) -> int:
    """Pipe of a switch port: groups of `pipe_size` consecutive port numbers."""
    return (local_port // pipe_size) % n_ports


# -- one decision, all schemes ---------------------------------------------------------
@dataclass(frozen=True)
class SampledInputs:
    """What the sampled schemes' timers left for a decision (testbed.models.sampled), per uplink slot: DLB's
    sampled quality band; the remote state (SGLB: the next switch's flooded quality toward the destination;
    CONGA: the Congestion-To-Leaf metric of each tag and the DRE period it was written in); CONGA's DRE; and
    CONGA's C x tau, current DRE period and ageing limit."""

    quality: tuple[int, ...] = ()
    remote: tuple[int, ...] = ()
    remote_epochs: tuple[int, ...] = ()
    dre: tuple[int, ...] = ()
    ctau: int = 1
    epoch: int = 0
    age: int = 0


@dataclass(frozen=True)
class Decision:
    """Everything one upward decision depends on (the model's inputs)."""

    config: SchemeConfig
    w: int
    n_ports: int
    d: int  # destination key: destination edge (edge switch) or pod (aggregation switch)
    n_keys: int
    cls: int
    local_port: int  # ingress port number inside the switch
    pointer: int  # Ofan/pOfan pointer value of the pointer this decision uses, or the RR pointer
    queue_bytes: tuple[int, ...]  # per uplink slot
    draws: tuple[int, int]
    memory: int  # DRILL
    thresholds: tuple[int, ...]  # AR
    ecmp_seed: int
    five_tuple: tuple[bytes, bytes, bytes, int]  # saddr, daddr, first 4 L4 bytes, protocol
    mask: int = -1  # valid uplink slots (bit i: slot i); -1: all
    level: int = 1  # the switch's tier (topology.Level): host-routed labels name an uplink per tier
    memory1: int = 0  # DRILL: memory 1 (used with m = 2)
    drill: tuple[int, int] = DRILL_DEFAULT  # DRILL's (d, m)
    sampled: SampledInputs = field(default_factory=SampledInputs)  # dlb, sglb, conga
    rounds: tuple[int, ...] = ()  # wofan: the destination key's rounds of eligible slots (() or one: Ofan's)

    @property
    def valid(self) -> int:
        """The valid-uplink mask, with -1 spelled out."""
        return (1 << self.w) - 1 if self.mask == -1 else self.mask


# A model: (inputs, Ofan basis) -> (uplink slot, how far the scheme's pointer advances).
Model = Callable[[Decision, Sequence[int]], tuple[int, int]]
_INVALID = 1 << 64  # queue score of an invalid uplink: never the minimum while a valid one exists


def _masked_queues(x: Decision) -> list[int]:
    return [q if (x.valid >> i) & 1 else _INVALID for i, q in enumerate(x.queue_bytes)]


def model_ecmp(x: Decision, basis: Sequence[int]) -> tuple[int, int]:
    return mask_draw(x.valid, x.w, ecmp_hash(x.ecmp_seed, *x.five_tuple)), 0


def model_ofan(x: Decision, basis: Sequence[int]) -> tuple[int, int]:
    """Ofan and pOfan: the pointer (of the switch, its pipe or its CPU) picks the port order's next valid uplink."""
    pid = pointer_id(x.d, x.n_keys, x.cls)
    return skip_invalid(lambda i: ofan_port(i, pid, basis), x.pointer, x.valid, x.w)


def model_wofan(x: Decision, basis: Sequence[int]) -> tuple[int, int]:
    """Weighted Ofan: Ofan's pointer and port order, each value's port taken only when its round names it."""
    return wofan_port(x.pointer, pointer_id(x.d, x.n_keys, x.cls), basis, x.valid, x.rounds)


def model_rps(x: Decision, basis: Sequence[int]) -> tuple[int, int]:
    return rps_port(x.w, x.draws[0], x.valid), 0


def model_rr(x: Decision, basis: Sequence[int]) -> tuple[int, int]:
    return skip_invalid(lambda i: rr_port(x.w, i), x.pointer, x.valid, x.w)


def model_jsq(x: Decision, basis: Sequence[int]) -> tuple[int, int]:
    return jsq_port(_masked_queues(x), x.draws[0]), 0


def model_ar(x: Decision, basis: Sequence[int]) -> tuple[int, int]:
    levels = [ar_level(q, x.thresholds) if q != _INVALID else _INVALID for q in _masked_queues(x)]
    return pick_min(levels, x.draws[0]), 0


def model_drill(x: Decision, basis: Sequence[int]) -> tuple[int, int]:
    port, _ = drill_port(
        w=x.w,
        memories=(x.memory, x.memory1),
        draw0=x.draws[0],
        draw1=x.draws[1],
        queue_bytes=x.queue_bytes,
        mask=x.valid,
        dm=x.drill,
    )
    return port, 0


def model_choice(x: Decision, basis: Sequence[int]) -> tuple[int, int]:
    return choice_port(x.w, x.draws[0], x.draws[1], x.queue_bytes, x.valid), 0


def _pick_valid(x: Decision, scores: Sequence[int]) -> int:
    return pick_min([v if (x.valid >> i) & 1 else _INVALID for i, v in enumerate(scores)], x.draws[0])


def model_dlb(x: Decision, basis: Sequence[int]) -> tuple[int, int]:
    return _pick_valid(x, x.sampled.quality), 0


def model_sglb(x: Decision, basis: Sequence[int]) -> tuple[int, int]:
    return _pick_valid(x, [max(q, r) for q, r in zip(x.sampled.quality, x.sampled.remote, strict=False)]), 0


def conga_scores(x: Decision) -> list[int]:
    """Per uplink: the local DRE metric, and at an edge switch the worse of it and the aged Congestion-To-Leaf."""
    s = x.sampled
    local = [sampled.conga_metric(d, s.ctau) for d in s.dre]
    if x.level != Level.EDGE:
        return local
    return [
        max(m, sampled.conga_aged(r, e, s.epoch, s.age))
        for m, r, e in zip(local, s.remote, s.remote_epochs, strict=False)
    ]


def model_conga(x: Decision, basis: Sequence[int]) -> tuple[int, int]:
    return _pick_valid(x, conga_scores(x)), 0


# Host-routed switches (lb_label.h): a path label in the UDP source port of a RoCEv2 packet (ROCE_PORT),
# LABEL_TAG | agg << LABEL_BITS | core (ebpf/include/wire.h), names the edge switch's uplink (agg) and the
# aggregation switch's (core).
LABEL_TAG, LABEL_MASK, LABEL_BITS = 0xC000, 0xFC00, 5


def label_slot(sport: int, dport: int, level: int, w: int, mask: int) -> int | None:
    """The uplink a host-routed switch takes for this packet, or None when ECMP decides (no label, or a label
    naming an uplink that is not valid)."""
    if dport != ROCE_PORT or sport & LABEL_MASK != LABEL_TAG:
        return None
    slot = (sport >> (LABEL_BITS if level == Level.EDGE else 0)) & ((1 << LABEL_BITS) - 1)
    return slot if slot < w and (mask >> slot) & 1 else None


def model_host_routed(x: Decision, basis: Sequence[int]) -> tuple[int, int]:
    _, _, l4, proto = x.five_tuple
    if proto == 17:
        slot = label_slot(int.from_bytes(l4[:2], "big"), int.from_bytes(l4[2:4], "big"), x.level, x.w, x.valid)
        if slot is not None:
            return slot, 0
    return model_ecmp(x, basis)


MODELS: dict[Scheme, Model] = {
    Scheme.ECMP: model_ecmp,
    Scheme.OFAN: model_ofan,
    Scheme.RPS: model_rps,
    Scheme.RR: model_rr,
    Scheme.JSQ: model_jsq,
    Scheme.AR: model_ar,
    Scheme.DRILL: model_drill,
    Scheme.POFAN: model_ofan,
    Scheme.WOFAN: model_wofan,
    Scheme.HOST_ROUTED: model_host_routed,
    Scheme.CHOICE: model_choice,
    Scheme.CONGA: model_conga,
    Scheme.DLB: model_dlb,
    Scheme.SGLB: model_sglb,
}


def decide(x: Decision, basis: Sequence[int]) -> tuple[int, int]:
    """(uplink slot the switch must choose, how far its pointer advances)."""
    return MODELS[x.config.scheme](x, basis)
