"""Traffic matrices as lists of flows. Pure and seeded: the same seed gives
the same flows. Sizes are bytes of payload per flow.

| workload | flows | paper |
|---|---|---|
| permutation | a uniformly random derangement; `inter_pod` forces every flow across pods | sections 3, 6; Fig. 3 |
| all-to-all | every host to every other host, SIZE each; hosts serve their flows round-robin | section 2.2 |
| ring | GPU i to GPU (i + G) mod n, G = GPUs per server: one step of a hierarchical ring | section 6.7 |
| fsdp | FSDP2's backward pass: every layer's ring ReduceScatter then AllGather, 2 (n/G - 1) steps each, chained (a GPU's step starts when its input of the step before arrived in full); servers placed at random | section 6.7 |
| stride | host i to host (i + S) mod n | classic fat-tree pattern |
| moe | all-to-all-v: a traffic matrix from a file, or a skewed built-in one | section 6.6 |
| incast | `fan_in` random senders to one random receiver | - |
| cm | a flow list in htsim's connection-matrix format (`flows`), flows starting at their own times | - |

The built-in MoE workload is the dispatch of section 6.6, synthetic where
the paper used a trace: one expert per GPU (host), experts placed on the
GPUs at random; every GPU routes the same number of tokens, spread over the
experts by their popularity; dispatch is hierarchical over servers of G GPUs
(G = gpus_per_server): a GPU sends the tokens for a remote server to its
same-rank peer there, one flow, which forwards them inside the server (that
hop and every intra-server token stay off the fabric). SIZE is the mean
bytes of such a flow. What is synthetic: the popularity, drawn per seed as
(z_e u_se)^beta with z_e and u_se log-normal (sigma 1 and 0.3: experts'
popularity, and each GPU's own routing noise), beta chosen by bisection so
that the busiest GPU receives exactly `skew` times the mean over the
fabric: 1.48 by default, the paper's trace. With `eplb` every GPU holds two
expert slots (DeepSeek's EPLB): each expert one, the other n go one by one
to the expert with the most load per replica, a replica's tokens are an
equal share of its expert's, and slots are packed heaviest first onto the
GPU with the least load; the default skew is then 1.13, the paper's with
EPLB. A real trace's GPU-to-GPU matrix goes in with `matrix` (its entries
are sent as they are, without the hierarchy).
"""

from __future__ import annotations

import functools
import heapq
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    after: int = 0  # chained workloads: the flow (its fid) that must have arrived in full before this one starts


@dataclass(frozen=True)
class WorkloadSpec:
    workload: str
    size: int  # bytes per flow (all-to-all with size_per_host: per host)
    seed: int = 1
    fan_in: int = 2
    inter_pod: bool = False
    gpus_per_server: int = 8
    stride: int = 0  # 0: hosts per pod
    matrix: str | None = None  # MoE: path of an n x n CSV or NPY matrix of bytes
    skew: float = 0.0  # MoE: the busiest GPU's fabric bytes over the mean; 0: MOE_SKEW, or MOE_SKEW_EPLB with eplb
    eplb: bool = False  # MoE: two expert slots per GPU, popular experts replicated (section 6.6)
    order: str = "staggered"  # all-to-all, moe: the order in which each host serves its destinations
    flows: str | None = None  # cm: htsim connection matrix
    cm_rate: int = 100_000_000_000  # cm: the line rate its start times were written for
    size_per_host: bool = False  # all-to-all: size is each host's total, split evenly over its n - 1 flows
    layers: int = 1  # fsdp: layers of the backward pass
    steps: int = 0  # fsdp: only the first STEPS ring steps of the pass (0: all of them)

    def __post_init__(self) -> None:
        if self.workload not in WORKLOADS:
            raise WorkloadError(f"unknown workload {self.workload!r} (choose from {', '.join(WORKLOADS)})")
        if self.workload == "cm" and not self.flows:
            raise WorkloadError("the cm workload needs a flow list (--flows FILE)")
        if self.cm_rate <= 0:
            raise WorkloadError(f"the connection matrix's rate must be > 0, got {self.cm_rate}")
        if self.size <= 0 and not (self.workload == "moe" and self.matrix) and self.workload != "cm":
            raise WorkloadError(f"size must be > 0, got {self.size}")
        if self.gpus_per_server < 1:
            raise WorkloadError(f"gpus per server must be >= 1, got {self.gpus_per_server}")
        if self.stride < 0:
            raise WorkloadError(f"stride must be >= 1, got {self.stride}")
        if self.skew and self.skew < 1:
            raise WorkloadError(f"MoE skew must be >= 1, got {self.skew:g}")
        if self.layers < 1 or self.steps < 0:
            raise WorkloadError(f"fsdp needs layers >= 1 and steps >= 0, got {self.layers} and {self.steps}")
        if self.order not in ORDERS:
            raise WorkloadError(f"unknown order {self.order!r} (choose from {', '.join(ORDERS)})")

    @property
    def resolved_skew(self) -> float:
        return self.skew or (MOE_SKEW_EPLB if self.eplb else MOE_SKEW)


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


MOE_SKEW, MOE_SKEW_EPLB = 1.48, 1.13  # section 6.6: the busiest GPU's fabric bytes over the mean
_POPULARITY_SIGMA, _NOISE_SIGMA = 1.0, 0.3


def _eplb_slots(load: Sequence[float], n_gpus: int, rng: random.Random) -> list[list[tuple[int, float]]]:
    """EPLB with two slots per GPU: per GPU, its slots as (expert, share of that expert's tokens)."""
    n = len(load)
    replicas = [1] * n
    spare = [(-load[e], e) for e in range(n)]  # the spare slots, one by one, to the most load per replica
    heapq.heapify(spare)
    for _ in range(2 * n_gpus - n):
        _, e = heapq.heappop(spare)
        replicas[e] += 1
        heapq.heappush(spare, (-load[e] / replicas[e], e))
    slots = sorted(((load[e] / replicas[e], e) for e in range(n) for _ in range(replicas[e])), reverse=True)
    gpus: list[list[tuple[int, float]]] = [[] for _ in range(n_gpus)]
    order = list(range(n_gpus))
    rng.shuffle(order)  # ties between equally loaded GPUs broken at random
    free = [(0.0, rank, gpu) for rank, gpu in enumerate(order)]  # GPUs with a free slot, least loaded first
    heapq.heapify(free)
    for w, e in slots:  # heaviest first
        held, rank, gpu = heapq.heappop(free)
        gpus[gpu].append((e, 1.0 / replicas[e]))
        if len(gpus[gpu]) < 2:
            heapq.heappush(free, (held + w, rank, gpu))
    return gpus


def _moe_fabric(pop: Any, placed: Any, g: int) -> Any:
    """Bytes (unscaled) each GPU sends each other over the fabric, an n x n array: its tokens for every remote
    server, to its same-rank peer there. pop[s, e]: the share of GPU s's tokens for expert e; placed[e, gpu]:
    the share of expert e's tokens that GPU holds."""
    import numpy as np

    n = pop.shape[0]
    servers = n // g
    to_gpu = pop @ placed  # s -> GPU holding the tokens
    to_server = to_gpu.reshape(n, servers, g).sum(axis=2)  # s -> server
    out = np.zeros((n, n))
    src = np.arange(n)
    for srv in range(servers):
        remote = src // g != srv
        out[src[remote], srv * g + src[remote] % g] = to_server[remote, srv]
    return out


def _skew(m: Any) -> float:
    """The busiest receiver's bytes over the mean (rows: senders, columns: receivers)."""
    import numpy as np

    recv = np.asarray(m, dtype=float).sum(axis=0)
    mean = float(recv.mean())
    return float(recv.max()) / mean if mean > 0 else 1.0


def moe_dispatch(
    n: int, size_bytes: int, rng: random.Random, gpus_per_server: int, skew: float, eplb: bool
) -> list[list[int]]:
    """The fabric's bytes from GPU to GPU of one hierarchical MoE dispatch (see the module's doc)."""
    import numpy as np

    g = gpus_per_server
    if n % g or n // g < 2:
        raise WorkloadError(
            f"MoE dispatch needs at least two whole servers of {g} GPUs, got {n} hosts (--gpus-per-server)"
        )
    if skew < 1:
        raise WorkloadError(f"MoE skew must be >= 1, got {skew:g}")
    z = np.array([rng.lognormvariate(0.0, _POPULARITY_SIGMA) for _ in range(n)])
    u = np.array([[rng.lognormvariate(0.0, _NOISE_SIGMA) for _ in range(n)] for _ in range(n)])
    log_w = np.log(z[None, :] * u)
    experts = list(range(n))
    rng.shuffle(experts)  # without EPLB: expert e on GPU experts[e]
    place_seed = rng.random()  # EPLB's ties

    def popularity(beta: float) -> Any:
        w = np.exp(beta * (log_w - log_w.max(axis=1, keepdims=True)))
        return w / w.sum(axis=1, keepdims=True)

    def placement(beta: float) -> Any:
        placed = np.zeros((n, n))
        if not eplb:
            placed[np.arange(n), experts] = 1.0
            return placed
        for gpu, held in enumerate(_eplb_slots(popularity(beta).sum(axis=0).tolist(), n, random.Random(place_seed))):
            for e, share in held:
                placed[e, gpu] += share
        return placed

    def skew_at(beta: float, placed: Any) -> float:
        return _skew(_moe_fabric(popularity(beta), placed, g))

    def bisect(f: Any, lo: float, hi: float, steps: int = 40) -> float:
        """Where f crosses the skew between lo and hi (f(lo) and f(hi) on either side)."""
        up = f(lo) < skew
        for _ in range(steps):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if (f(mid) < skew) == up else (lo, mid)
        return hi

    if not eplb:
        # one placement: the skew grows with beta from 1 (beta 0: every expert equally popular) and falls
        # again once a few experts take every token; the first grid point that reaches it brackets it
        placed = placement(0.0)
        grid = [0.0] + [0.125 * 2 ** (i / 2) for i in range(17)]  # up to 32
        seen = [skew_at(b, placed) for b in grid]
        hit = next((i for i, v in enumerate(seen) if v >= skew), None)
        if hit is None:
            raise WorkloadError(
                f"MoE skew {skew:g} is beyond what {n} GPUs in servers of {g} can show ({max(seen):.2f} at most)"
            )
        beta = bisect(lambda b: skew_at(b, placed), grid[max(hit - 1, 0)], grid[hit]) if hit else 0.0
    else:
        # EPLB's placement changes by whole slots as the loads do, so the skew jumps by a few per cent as
        # beta grows: from the grid points whose own placement comes nearest the skew, keep that placement
        # and find, with it fixed (the skew then continuous), the beta within 30 % that shows it exactly
        grid = [i / 20 for i in range(1, 121)]  # up to 6
        near = sorted(grid, key=lambda b: abs(skew_at(b, placement(b)) - skew))
        for b0 in near[:8]:
            placed = placement(b0)
            xs = [b0 * (1 + i / 50) for i in range(-15, 16)]
            vs = [skew_at(x, placed) for x in xs]
            cross = sorted((abs(i - 15), i) for i in range(len(xs) - 1) if (vs[i] - skew) * (vs[i + 1] - skew) <= 0)
            if cross:
                i = cross[0][1]
                beta = bisect(functools.partial(skew_at, placed=placed), xs[i], xs[i + 1])
                break
        else:
            raise WorkloadError(f"no EPLB placement of {n} GPUs in servers of {g} shows a skew of {skew:g}")
    m = _moe_fabric(popularity(beta), placed, g)
    scale = size_bytes * int((m > 0).sum()) / float(m.sum())  # SIZE: the mean flow
    return [[round(b * scale) for b in row] for row in m.tolist()]


@functools.lru_cache(maxsize=32)
def moe_cached(n: int, size_bytes: int, seed: int, gpus_per_server: int, skew: float, eplb: bool) -> list[list[int]]:
    """moe_dispatch for a seed, kept: a run's flows are asked for more than once (checks, then the run)."""
    return moe_dispatch(n, size_bytes, random.Random(seed), gpus_per_server, skew, eplb)


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
    n, size = n_hosts, spec.size
    if spec.workload == "permutation":
        if spec.inter_pod:
            perm = inter_pod_permutation([i // hosts_per_pod for i in range(n)], rng)
        else:
            perm = derangement(n, rng)
        return _flows([(i, d, size) for i, d in enumerate(perm)])
    if spec.workload == "all-to-all":
        if spec.size_per_host:  # a fixed total per host (Fig. 5 c): each flow its share, the remainder to the first
            share, extra = divmod(size, n - 1)
            return _flows(
                [(s, d, share + (i < extra)) for s in range(n) for i, d in enumerate(destinations(s, n, spec.order))]
            )
        return _flows([(s, d, size) for s in range(n) for d in destinations(s, n, spec.order)])
    if spec.workload in ("ring", "stride"):
        step = spec.gpus_per_server if spec.workload == "ring" else (spec.stride or hosts_per_pod)
        if step % n == 0:
            raise WorkloadError(f"step {step} is a multiple of the {n} hosts: every host would send to itself")
        return _flows([(i, (i + step) % n, size) for i in range(n)])
    if spec.workload == "fsdp":
        return fsdp_pass(n, size, spec.gpus_per_server, spec.layers, spec.steps, rng)
    if spec.workload == "moe":
        m = (
            load_matrix(spec.matrix, n)
            if spec.matrix
            else moe_cached(n, size, spec.seed, spec.gpus_per_server, spec.resolved_skew, spec.eplb)
        )
        return _flows([(s, d, m[s][d]) for s in range(n) for d in destinations(s, n, spec.order)])
    if spec.workload == "cm":
        assert spec.flows is not None
        return load_cm(spec.flows, n, spec.cm_rate)
    # incast
    if not 1 <= spec.fan_in < n:
        raise WorkloadError(f"fan-in must be in [1, {n - 1}], got {spec.fan_in}")
    hosts = list(range(n))
    rng.shuffle(hosts)
    dst, senders = hosts[0], sorted(hosts[1 : spec.fan_in + 1])
    return _flows([(s, dst, size) for s in senders])


def fsdp_steps(n: int, gpus_per_server: int, layers: int) -> int:
    """Ring steps in FSDP2's backward pass over n GPUs in servers of G: per layer, a ReduceScatter and an
    AllGather over the ring of n / G servers, n / G - 1 steps each."""
    return layers * 2 * (n // gpus_per_server - 1)


def fsdp_pass(n: int, size: int, g: int, layers: int, steps: int, rng: random.Random) -> list[Flow]:
    """FSDP2's backward pass (section 6.7) as chained ring steps. G parallel rings (logical GPU j sends to
    j + G, hierarchical: the intra-server part is off the fabric); logical server s sits on a physical server
    drawn at random, each GPU keeping its rank. Every step sends one shard (`size`) per GPU; logical GPU j's
    flow of step t waits for the flow of step t - 1 into it (from j - G), as a ring's next send needs what it
    received. Flow ids: t x n + j + 1. `steps` > 0 keeps the pass's first steps."""
    if n % g:
        raise WorkloadError(f"fsdp places whole servers of {g} GPUs: {n} hosts is not a multiple")
    if n // g < 2:
        raise WorkloadError(f"fsdp needs at least two servers of {g} GPUs: {n} hosts make one")
    total = fsdp_steps(n, g, layers)
    if steps > total:
        raise WorkloadError(f"fsdp has {total} ring steps for {layers} layer(s) over {n // g} servers, not {steps}")
    servers = list(range(n // g))
    rng.shuffle(servers)
    place = [servers[j // g] * g + j % g for j in range(n)]
    out = []
    for t in range(steps or total):
        for j in range(n):
            after = (t - 1) * n + (j - g) % n + 1 if t else 0
            out.append(Flow(t * n + j + 1, place[j], place[(j + g) % n], size, 0.0, after))
    return out


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
            kv = dict(zip(parts[1::2], parts[2::2], strict=False))
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
