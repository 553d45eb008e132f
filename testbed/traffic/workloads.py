"""Traffic matrices as lists of flows. Pure and seeded: the same seed gives
the same flows.

- permutation: a uniformly random derangement; host i sends SIZE bytes to
  its partner, nobody sends to itself.
- incast: `fan_in` distinct random senders each send SIZE bytes to one random
  receiver.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

WORKLOADS = ("permutation", "incast")


class WorkloadError(ValueError):
    """Invalid workload parameters."""


@dataclass(frozen=True)
class Flow:
    fid: int  # flow id, carried as the RoCEv2 destination QP (1..2^24-1)
    src: int  # host id
    dst: int  # host id
    size_bytes: int


def derangement(n: int, rng: random.Random) -> list[int]:
    """A uniformly random permutation without fixed points (rejection sampling)."""
    if n < 2:
        raise WorkloadError("a permutation needs at least 2 hosts")
    while True:
        p = list(range(n))
        rng.shuffle(p)
        if all(i != v for i, v in enumerate(p)):
            return p


def permutation(n_hosts: int, size_bytes: int, rng: random.Random) -> list[Flow]:
    return [Flow(i + 1, i, dst, size_bytes) for i, dst in enumerate(derangement(n_hosts, rng))]


def incast(n_hosts: int, size_bytes: int, rng: random.Random, fan_in: int = 2) -> list[Flow]:
    if not 1 <= fan_in < n_hosts:
        raise WorkloadError(f"fan-in must be in [1, {n_hosts - 1}], got {fan_in}")
    hosts = list(range(n_hosts))
    rng.shuffle(hosts)
    dst, senders = hosts[0], sorted(hosts[1:fan_in + 1])
    return [Flow(i + 1, s, dst, size_bytes) for i, s in enumerate(senders)]


def make(name: str, n_hosts: int, size_bytes: int, seed: int, fan_in: int = 2) -> list[Flow]:
    if size_bytes <= 0:
        raise WorkloadError(f"size must be > 0, got {size_bytes}")
    rng = random.Random(seed)
    if name == "permutation":
        return permutation(n_hosts, size_bytes, rng)
    if name == "incast":
        return incast(n_hosts, size_bytes, rng, fan_in)
    raise WorkloadError(f"unknown workload {name!r} (choose from {', '.join(WORKLOADS)})")
