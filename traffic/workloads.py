"""Traffic matrices as lists of flows. Pure and seeded: the same seed gives
the same flows. Sizes are bytes of payload per flow.

| workload | flows | paper |
|---|---|---|
| permutation | a uniformly random derangement; `inter_pod` forces every flow across pods | sections 3, 6; Fig. 3 |
| all-to-all | every host to every other host, SIZE each; hosts serve their flows round-robin | section 2.2 |
| ring / fsdp | host i to host (i + G) mod n, G = GPUs per server (hierarchical ring) | section 6.7 |
| stride | host i to host (i + S) mod n | classic fat-tree pattern |
| moe | all-to-all-v: a traffic matrix from a file, or a skewed built-in one | section 6.6 |
| incast | `fan_in` random senders to one random receiver | - |
| cm | a flow list in htsim's connection-matrix format (`flows`), flows starting at their own times | - |

The built-in MoE matrix gives every host SIZE x (n - 1) bytes to send,
split over the receivers in proportion to their weights: one random "hot"
receiver is weighted so that it receives `hot_factor` times the mean, the
others equally. With `eplb_replicas` R > 1 the hot receiver's load is spread
over R hosts, as replicating a popular expert does (EPLB).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

WORKLOADS = ("permutation", "all-to-all", "ring", "fsdp", "stride", "moe", "incast", "cm")


class WorkloadError(ValueError):
    """Invalid workload parameters."""


@dataclass(frozen=True)
class Flow:
    fid: int  # flow id, carried as the RoCEv2 destination QP (1..2^24-1)
    src: int  # host id
    dst: int  # host id
    size_bytes: int
    start_bits: float = 0.0  # when it starts, after the collective's start, as bits at line rate (time x rate)


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    size_bytes: int
    seed: int = 1
    fan_in: int = 2
    inter_pod: bool = False
    gpus_per_server: int = 8
    stride: int = 0  # 0: hosts per pod
    matrix: str | None = None  # MoE: path of an n x n CSV or NPY matrix of bytes
    hot_factor: float = 1.5
    eplb_replicas: int = 1
    order: str = "staggered"  # all-to-all, moe: the order in which each host serves its destinations
    flows_file: str | None = None  # cm: htsim connection matrix
    cm_rate_bps: int = 100_000_000_000  # cm: the line rate its start times were written for

    def __post_init__(self) -> None:
        if self.name not in WORKLOADS:
            raise WorkloadError(f"unknown workload {self.name!r} (choose from {', '.join(WORKLOADS)})")
        if self.name == "cm" and not self.flows_file:
            raise WorkloadError("the cm workload needs a flow list (--flows FILE)")
        if self.cm_rate_bps <= 0:
            raise WorkloadError(f"the connection matrix's rate must be > 0, got {self.cm_rate_bps}")
        if self.size_bytes <= 0 and not (self.name == "moe" and self.matrix) and self.name != "cm":
            raise WorkloadError(f"size must be > 0, got {self.size_bytes}")
        if self.gpus_per_server < 1:
            raise WorkloadError(f"gpus per server must be >= 1, got {self.gpus_per_server}")
        if self.stride < 0:
            raise WorkloadError(f"stride must be >= 1, got {self.stride}")
        if self.hot_factor < 1:
            raise WorkloadError(f"hot-receiver factor must be >= 1, got {self.hot_factor}")
        if self.order not in ORDERS:
            raise WorkloadError(f"unknown order {self.order!r} (choose from {', '.join(ORDERS)})")
        if self.eplb_replicas < 1:
            raise WorkloadError(f"EPLB replicas must be >= 1, got {self.eplb_replicas}")


ORDERS = ("staggered", "sorted")


def destinations(s: int, n: int, order: str) -> list[int]:
    """The order in which host s serves its n - 1 destinations (its sender
    round-robins over its flows in this order). "staggered": s+1, s+2, ...
    mod n, as pairwise-exchange collectives do, so at every round-robin step
    each host has a different receiver. "sorted": 0, 1, ..., n-1, so at every
    step all hosts aim at the same receiver: an incast the paper's collectives
    do not have, kept for comparison."""
    if order == "sorted":
        return [d for d in range(n) if d != s]
    return [(s + i) % n for i in range(1, n)]


def derangement(n: int, rng: random.Random) -> list[int]:
    """A uniformly random permutation without fixed points (rejection sampling)."""
    if n < 2:
        raise WorkloadError("a permutation needs at least 2 hosts")
    while True:
        p = list(range(n))
        rng.shuffle(p)
        if all(i != v for i, v in enumerate(p)):
            return p


def inter_pod_permutation(pods: Sequence[int], rng: random.Random) -> list[int]:
    """A random permutation in which every host's partner is in another pod
    (random start, then random swaps that repair same-pod pairs)."""
    n = len(pods)
    if max(pods.count(p) for p in set(pods)) > n // 2:
        raise WorkloadError("no inter-pod permutation exists: one pod holds more than half the hosts")
    p = list(range(n))
    rng.shuffle(p)
    for _ in range(1000 * n):
        bad = [i for i in range(n) if pods[i] == pods[p[i]]]
        if not bad:
            return p
        i = rng.choice(bad)
        j = rng.randrange(n)
        if pods[i] != pods[p[j]] and pods[j] != pods[p[i]]:
            p[i], p[j] = p[j], p[i]
    raise WorkloadError("could not build an inter-pod permutation")


def _flows(pairs: list[tuple[int, int, int]]) -> list[Flow]:
    if len(pairs) >= 1 << 24:
        raise WorkloadError("too many flows for 24-bit queue-pair ids")
    return [Flow(i + 1, s, d, b) for i, (s, d, b) in enumerate(pairs) if b > 0 and s != d]


def moe_matrix(n: int, size_bytes: int, rng: random.Random, hot_factor: float, replicas: int) -> list[list[int]]:
    if hot_factor >= n:
        raise WorkloadError(f"hot-receiver factor must be below the number of hosts ({n})")
    if replicas > n:
        raise WorkloadError(f"EPLB replicas must be at most the number of hosts ({n})")
    # one hot receiver weighted x with x / mean(w) = hot_factor, the rest 1
    x = hot_factor * (n - 1) / (n - hot_factor)
    weights = [1.0] * n
    hosts = list(range(n))
    rng.shuffle(hosts)
    for h in hosts[:replicas]:  # EPLB: the hot expert's load spread over `replicas` hosts
        weights[h] = 1.0 + (x - 1.0) / replicas
    total = size_bytes * (n - 1)
    m = []
    for s in range(n):
        denom = sum(w for d, w in enumerate(weights) if d != s)
        m.append([0 if d == s else int(round(total * weights[d] / denom)) for d in range(n)])
    return m


def load_matrix(path: str, n: int) -> list[list[int]]:
    p = Path(path)
    if not p.exists():
        raise WorkloadError(f"traffic matrix {path} not found")
    if p.suffix == ".npy":
        import numpy as np

        arr = np.load(p)
        rows = [[int(v) for v in row] for row in arr.tolist()]
    else:
        rows = []
        for line in p.read_text().splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                rows.append([int(float(v)) for v in line.replace(";", ",").split(",")])
    if len(rows) != n or any(len(r) != n for r in rows):
        raise WorkloadError(f"traffic matrix must be {n} x {n} (one row per host), got {len(rows)} rows")
    if any(v < 0 for r in rows for v in r):
        raise WorkloadError("traffic matrix entries must be >= 0 bytes")
    return rows


def make_spec(spec: WorkloadSpec, n_hosts: int, hosts_per_pod: int) -> list[Flow]:
    rng = random.Random(spec.seed)
    n, size = n_hosts, spec.size_bytes
    if spec.name == "permutation":
        if spec.inter_pod:
            perm = inter_pod_permutation([i // hosts_per_pod for i in range(n)], rng)
        else:
            perm = derangement(n, rng)
        return _flows([(i, d, size) for i, d in enumerate(perm)])
    if spec.name == "all-to-all":
        return _flows([(s, d, size) for s in range(n) for d in destinations(s, n, spec.order)])
    if spec.name in ("ring", "fsdp", "stride"):
        step = spec.gpus_per_server if spec.name != "stride" else (spec.stride or hosts_per_pod)
        if step % n == 0:
            raise WorkloadError(f"step {step} is a multiple of the {n} hosts: every host would send to itself")
        return _flows([(i, (i + step) % n, size) for i in range(n)])
    if spec.name == "moe":
        m = load_matrix(spec.matrix, n) if spec.matrix else moe_matrix(n, size, rng, spec.hot_factor,
                                                                       spec.eplb_replicas)
        return _flows([(s, d, m[s][d]) for s in range(n) for d in destinations(s, n, spec.order)])
    if spec.name == "cm":
        assert spec.flows_file is not None
        return load_cm(spec.flows_file, n, spec.cm_rate_bps)
    # incast
    if not 1 <= spec.fan_in < n:
        raise WorkloadError(f"fan-in must be in [1, {n - 1}], got {spec.fan_in}")
    hosts = list(range(n))
    rng.shuffle(hosts)
    dst, senders = hosts[0], sorted(hosts[1:spec.fan_in + 1])
    return _flows([(s, dst, size) for s in senders])


def make(name: str, n_hosts: int, size_bytes: int, seed: int, fan_in: int = 2, hosts_per_pod: int = 0) -> list[Flow]:
    """Shorthand for the common parameters."""
    return make_spec(WorkloadSpec(name, size_bytes, seed, fan_in), n_hosts, hosts_per_pod or max(1, n_hosts // 4))


def load_cm(path: str, n_hosts: int, rate_bps: int) -> list[Flow]:
    """A flow list in htsim's connection-matrix format:

        Nodes N
        Connections C
        SRC->DST [id I] start T size B      (one line per connection; T in microseconds)

    Node i is host i in the testbed's host order (topology: h{pod}_{edge}_{i}, pods, then edges, then hosts).
    A start time of T us was written for a `rate_bps` line: it becomes T x rate_bps bits, so a flow starts
    the same number of packet times after the collective's start at the testbed's own rate. Flows are
    numbered in file order; the `id` is kept only as a check (distinct). A bad line is one error naming its
    line number."""
    text = _read(path)
    flows: list[Flow] = []
    nodes = conns = None
    ids: set[int] = set()
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        where = f"{path}, line {no}"
        if parts[0] == "Nodes" and len(parts) == 2 and parts[1].isdigit():
            nodes = int(parts[1])
            if nodes > n_hosts:
                raise WorkloadError(f"{where}: {nodes} nodes, but this fabric has {n_hosts} hosts")
            continue
        if parts[0] == "Connections" and len(parts) == 2 and parts[1].isdigit():
            conns = int(parts[1])
            continue
        if nodes is None or conns is None:
            raise WorkloadError(f"{where}: expected 'Nodes N' and 'Connections C' before the connections")
        try:
            src_s, dst_s = parts[0].split("->")
            src, dst = int(src_s), int(dst_s)
            kv = dict(zip(parts[1::2], parts[2::2]))
            if len(parts) % 2 != 1 or not set(kv) <= {"id", "start", "size"} or "size" not in kv:
                raise ValueError
            start_us, size = float(kv.get("start", "0")), int(kv["size"])
            fid = int(kv["id"]) if "id" in kv else None
        except ValueError:
            raise WorkloadError(f"{where}: expected 'SRC->DST [id I] start T size B', got {raw.strip()!r}") from None
        if not (0 <= src < nodes and 0 <= dst < nodes) or src == dst:
            raise WorkloadError(f"{where}: nodes must be distinct and below {nodes}, got {src}->{dst}")
        if size <= 0 or start_us < 0:
            raise WorkloadError(f"{where}: size must be > 0 and start >= 0, got size {size}, start {start_us}")
        if fid is not None:
            if fid in ids:
                raise WorkloadError(f"{where}: connection id {fid} appears twice")
            ids.add(fid)
        flows.append(Flow(len(flows) + 1, src, dst, size, start_us * 1e-6 * rate_bps))
    if nodes is None or conns is None:
        raise WorkloadError(f"{path}: no 'Nodes N' / 'Connections C' header")
    if len(flows) != conns:
        raise WorkloadError(f"{path}: 'Connections {conns}' but {len(flows)} connection lines")
    if not flows:
        raise WorkloadError(f"{path}: no connection")
    first = min(f.start_bits for f in flows)  # the collective starts with its first flow
    return [Flow(f.fid, f.src, f.dst, f.size_bytes, f.start_bits - first) for f in flows]


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as e:
        raise WorkloadError(f"cannot read the flow list {path}: {e.strerror}") from None
