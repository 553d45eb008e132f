"""Load-balancing schemes: the registry and a pure-Python model of each decision.

The eBPF switch (ebpf/include/lb_*.h) implements each scheme; the functions
here compute the same decisions from the same inputs, so tests can compare
the two and the control plane can derive per-scheme parameters (the Ofan
basis permutation). Scheme numbers are shared with ebpf/include/shared.h.

- ``ecmp``: hash of the 5-tuple with a per-switch seed; every packet of a flow
  takes the same uplink.
- ``ofan``: per-destination rotation (paper section 4.1): an edge switch keeps
  one pointer per (destination edge switch, size class), an aggregation switch
  one per (destination pod, size class). Each pointer starts at a random value
  (the small-packet pointer half a rotation away) and advances by one per
  packet; the pointer value is mapped to an uplink through a per-pointer
  permutation built from one XOR and one addition (appendix F.2).
"""

from __future__ import annotations

import enum
import math
import random
from collections.abc import Sequence


class SchemeError(ValueError):
    """Unknown scheme or invalid scheme parameter."""


class Scheme(enum.IntEnum):
    ECMP = 0
    OFAN = 1

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
