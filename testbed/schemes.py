"""Load-balancing schemes: the registry and a pure-Python model of each decision.

The eBPF switch (ebpf/include/lb_*.h) implements each scheme; the functions
here compute the same decisions from the same inputs (destination key, size
class, ingress port, pointer values, queue lengths, random draws), so the
differential tests can compare the two decision by decision. Scheme numbers
are shared with ebpf/include/shared.h. Upward port choice only: downward
forwarding is exact and the same for every scheme.

| scheme | decision | follows |
|---|---|---|
| ecmp  | hash of the 5-tuple, per-switch seed | hash-based ECMP (paper Table 1) |
| rps   | uniformly random uplink per packet | RSQ / RPS, paper section 3.1 |
| rr    | one pointer per switch, all destinations | Simple RR, paper section 3.1 |
| jsq   | fewest queued bytes, random tie-break | JSQ, paper section 3.1 |
| ar    | lowest quantised queue level, random among them | AR, paper section 3.1, Table 1 |
| drill | best of 2 random + remembered uplink | DRILL(2,1), Ghorbani et al. 2017 |
| ofan  | per-destination rotation, one pointer set per switch | paper section 4.1, appendix F.2 |
| pofan | per-destination rotation, one pointer set per pipe | paper section 5.1 |
"""

from __future__ import annotations

import enum
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


class SchemeError(ValueError):
    """Unknown scheme or invalid scheme parameter."""


class Scheme(enum.IntEnum):
    ECMP = 0
    OFAN = 1
    RPS = 2
    RR = 3
    JSQ = 4
    AR = 5
    DRILL = 6
    POFAN = 7

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, name: str) -> Scheme:
        try:
            return cls[name.upper()]
        except KeyError:
            raise SchemeError(f"unknown scheme {name!r} (choose from {', '.join(names())})") from None


def names() -> list[str]:
    return [s.label for s in Scheme]


# Frames shorter than this use the small (ACK) pointer class (shared.h SMALL_MAX_BYTES).
SMALL_MAX_BYTES = 256
CLASS_DATA, CLASS_SMALL = 0, 1
N_CLASSES = 2


def size_class(frame_len: int) -> int:
    return CLASS_SMALL if frame_len < SMALL_MAX_BYTES else CLASS_DATA


# -- ECMP ------------------------------------------------------------------
_ECMP_MULT = 0x9E3779B1
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
    """Distinct cyclic orders reachable by any pointer id with this basis."""
    w = len(basis)
    ids = range((1 << b_bits(w)) * w)
    return len({canonical_cycle(ofan_order(pid, basis)) for pid in ids})


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


def drill_port(w: int, memory: int, draw0: int, draw1: int, queue_bytes: Sequence[int],
               mask: int | None = None) -> int:
    """DRILL(2, 1): the remembered uplink (if valid), then two uniformly drawn
    valid ones; fewest bytes wins, ties go to the earlier candidate. The
    winner becomes the new memory."""
    m = (1 << w) - 1 if mask is None else mask
    s0, s1 = mask_draw(m, w, draw0), mask_draw(m, w, draw1)
    best = memory % w
    if not (m >> best) & 1:
        best = s0
    for c in (s0, s1):
        if queue_bytes[c] < queue_bytes[best]:
            best = c
    return best


# -- pOfan ------------------------------------------------------------------------
PIPES_PER_CPU = 0  # SchemeConfig.pipe_size value: one pointer set per CPU


def pofan_pipe(local_port: int, pipe_size: int, n_ports: int) -> int:
    """Pipe of a switch port: groups of `pipe_size` consecutive port numbers."""
    return (local_port // pipe_size) % n_ports


@dataclass(frozen=True)
class SchemeConfig:
    """A scheme and its parameter, as set on one switch."""

    scheme: Scheme
    pipe_size: int = 4  # pOfan only: ports per pipe (1 = 1Ofan, 4 = 4Ofan) or PIPES_PER_CPU

    @property
    def label(self) -> str:
        if self.scheme is not Scheme.POFAN:
            return self.scheme.label
        return "pofan-cpu" if self.pipe_size == PIPES_PER_CPU else f"{self.pipe_size}ofan"

    def validate(self, n_ports: int) -> None:
        if self.scheme is Scheme.POFAN and self.pipe_size != PIPES_PER_CPU:
            if self.pipe_size < 1 or n_ports % self.pipe_size:
                raise SchemeError(f"pipe size must be >= 1 and divide the {n_ports} ports of a switch, "
                                  f"got {self.pipe_size}")


def parse_pipe_size(text: str) -> int:
    if text == "cpu":
        return PIPES_PER_CPU
    try:
        v = int(text)
    except ValueError:
        raise SchemeError(f"pipe size must be a positive integer or 'cpu', got {text!r}") from None
    if v < 1:
        raise SchemeError(f"pipe size must be >= 1, got {v}")
    return v


# -- which switches ------------------------------------------------------------------
def select_switches(tree: Any, which: str, seed: int) -> list[str]:
    """LB switches (edge and aggregation) chosen by `which`: all, edge, agg,
    pod:N (both tiers of pod N), random:F (a fraction F of them, drawn with
    `seed`; exactly round(F x count))."""
    from .topology import Level

    lb = [sw for sw in tree.switches if sw.level is not Level.CORE]
    if which == "all":
        return [sw.name for sw in lb]
    if which == "edge":
        return [sw.name for sw in lb if sw.level is Level.EDGE]
    if which == "agg":
        return [sw.name for sw in lb if sw.level is Level.AGG]
    kind, _, arg = which.partition(":")
    if kind == "pod":
        try:
            pod = int(arg)
        except ValueError:
            raise SchemeError(f"pod:N needs an integer pod, got {which!r}") from None
        if not 0 <= pod < tree.pods:
            raise SchemeError(f"pod must be in [0, {tree.pods - 1}], got {pod}")
        return [sw.name for sw in lb if sw.pod == pod]
    if kind == "random":
        try:
            frac = float(arg)
        except ValueError:
            raise SchemeError(f"random:F needs a fraction, got {which!r}") from None
        if not 0 < frac <= 1:
            raise SchemeError(f"random:F needs F in (0, 1], got {frac}")
        names = [sw.name for sw in lb]
        return sorted(random.Random(seed).sample(names, round(frac * len(names))))
    raise SchemeError(f"--switches must be all, edge, agg, pod:N or random:F, got {which!r}")


# -- one decision, all schemes ---------------------------------------------------------
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


def decide(x: Decision, basis: Sequence[int]) -> tuple[int, int]:
    """(uplink slot the switch must choose, how far its pointer advances)."""
    s = x.config.scheme
    mask = (1 << x.w) - 1 if x.mask == -1 else x.mask
    if s is Scheme.ECMP:
        return mask_draw(mask, x.w, ecmp_hash(x.ecmp_seed, *x.five_tuple)), 0
    if s in (Scheme.OFAN, Scheme.POFAN):
        pid = pointer_id(x.d, x.n_keys, x.cls)
        return skip_invalid(lambda i: ofan_port(i, pid, basis), x.pointer, mask, x.w)
    if s is Scheme.RPS:
        return rps_port(x.w, x.draws[0], mask), 0
    if s is Scheme.RR:
        return skip_invalid(lambda i: rr_port(x.w, i), x.pointer, mask, x.w)
    invalid = 1 << 64
    qs = [q if (mask >> i) & 1 else invalid for i, q in enumerate(x.queue_bytes)]
    if s is Scheme.JSQ:
        return jsq_port(qs, x.draws[0]), 0
    if s is Scheme.AR:
        return pick_min([ar_level(q, x.thresholds) if q != invalid else invalid for q in qs], x.draws[0]), 0
    return drill_port(x.w, x.memory, x.draws[0], x.draws[1], x.queue_bytes, mask), 0
