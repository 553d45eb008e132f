"""The paper's queue models: Ofan's average queue per switch layer (appendix
F.4, Fig. 18), DRB-style, and the packet-size optimum of Thm. 6 (Fig. 8).

Per layer, a port is modelled as an ND/D/1 queue: N periodic sources with
random phases, together at the port's rate (load 1 in a permutation), each
a pointer that feeds the port one packet every N packet times. N per layer,
for an inter-pod permutation of a k-ary fat tree with w = k/2:

- edge uplinks (E->A): the expected number of distinct destination edge
  switches among an edge switch's w flows, E (1 - (1 - 1/E)^w) with
  E = k^2/2, the paper's count of Ofan's edge pointers;
- aggregation uplinks (A->C): the distinct destination pods among the pod's
  w^2 flows, (k - 1)(1 - (1 - 1/(k - 1))^(w^2)), which tends to the paper's
  k - 1;
- downlinks (C->A, A->E, E->H): the ports that feed them, k - 1 source pods
  at a core, w cores at an aggregation switch, w aggregation switches at an
  edge switch. The paper calls the downlinks harder to model: this is the
  testbed's own choice, drawn dashed, as the paper draws its less exact
  lines.

Two servers. The paper's (`layer_means(k)`): a packet time of service per
packet, the one in service not counted. The kernel's (`layer_means(k,
bucket=2)`): a token bucket of `bucket` frames at line rate (the fabric's
TBF, testbed.fabric.build.DEFAULT_BURST_FRAMES), which passes a frame on
the moment a whole frame of tokens is there, so a frame in flight over the
veth is counted for microseconds, not a packet time, and a port idle for a
packet time sends the next two back to back. Both are played in continuous
time with uniform phases (`tbf_mean`; a bucket of one frame is the paper's
server and gives its ND/D/1 means within 5 %, a unit test).

The ND/D/1 queue at load 1 has no simple closed form (the classic Benes
formula needs load below 1), so its mean over time is computed by playing
MODEL_DRAWS draws of the N phases on the integer time grid (two periods, the
second measured: the queue is periodic once the first has filled it), from
a fixed seed: the same number every time.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from traffic.workloads import Flow

from ..models import decisions
from ..topology import FatTree, Level

MODEL_DRAWS = 2000
STAGES = ("edge_agg", "agg_core", "core_agg", "agg_edge", "edge_host")
KERNEL_BUCKET_FRAMES = 2  # the fabric's TBF bucket, testbed.fabric.build.DEFAULT_BURST_FRAMES (a unit test)
EXACT = ("edge_agg", "agg_core")  # the paper's own counts; the downlinks are this testbed's (dashed)


@functools.cache
def nd_d_1_mean(n: int, draws: int = MODEL_DRAWS, seed: int = 18) -> float:
    """The time-average queue (packets waiting, the one in service not counted) of an ND/D/1 queue at load 1:
    n periodic sources of period n packet times, phases uniform on the grid."""
    if n <= 1:
        return 0.0
    rng = np.random.default_rng(seed)
    phases = rng.integers(0, n, size=(draws, n))
    arrivals = np.zeros((draws, n), dtype=np.int64)
    np.add.at(arrivals, (np.repeat(np.arange(draws), n), phases.ravel()), 1)
    q = np.zeros(draws, dtype=np.int64)
    total = np.zeros(draws)
    for period in range(2):
        for t in range(n):
            q = q + arrivals[:, t]
            served = np.minimum(q, 1)
            q = q - served  # one departure per packet time
            if period == 1:
                total += q
    return float(total.mean() / n)


def sources(k: int) -> dict[str, int]:
    """N per layer (the module's doc) for an inter-pod permutation of a k-ary fat tree, rounded to whole
    sources."""
    w = k // 2
    edges = k * k / 2
    edge = edges * (1 - (1 - 1 / edges) ** w)
    pods = (k - 1) * (1 - (1 - 1 / (k - 1)) ** (w * w)) if k > 2 else 1.0
    return {
        "edge_agg": max(1, round(edge)),
        "agg_core": max(1, round(pods)),
        "core_agg": k - 1,
        "agg_edge": w,
        "edge_host": w,
    }


@functools.cache
def tbf_mean(n: int, bucket: float, draws: int = MODEL_DRAWS // 4, seed: int = 18) -> float:
    """The time-average number of packets waiting at a token-bucket server (`bucket` frames, filled at one
    frame per packet time, full at the start) fed by n periodic sources of period n packet times, phases
    uniform in continuous time: each packet leaves at max(its arrival, the previous departure + the time to
    one whole frame of tokens); the mean wait of the last of PERIODS periods (the queue is periodic from the
    second on) over a period is the mean queue (Little)."""
    if n <= 1:
        return 0.0
    rng = np.random.default_rng(seed)
    total = 0.0
    for _ in range(draws):
        arrivals = (np.sort(rng.uniform(0, n, size=n))[None, :] + n * np.arange(PERIODS)[:, None]).ravel()
        tokens, last, wait = bucket, 0.0, 0.0
        for i, a in enumerate(arrivals):
            leave = max(a, last + max(0.0, 1.0 - tokens))
            tokens = min(bucket, tokens + leave - last) - 1.0
            last = leave
            if i >= (PERIODS - 1) * n:
                wait += leave - a
        total += wait / n
    return float(total / draws)


PERIODS = 3


def layer_means(k: int, bucket: float | None = None) -> dict[str, float]:
    """The model's average queue per layer, packets: with the paper's server (`bucket` None), or with the
    kernel's token bucket of `bucket` frames."""
    if bucket is None:
        return {stage: nd_d_1_mean(n) for stage, n in sources(k).items()}
    return {stage: tbf_mean(n, bucket) for stage, n in sources(k).items()}


def optimal_payload(header_bytes: float, alpha_pkts: float, message_bytes: float) -> float:
    """Thm. 6: the payload P - H = sqrt((H / alpha) D) that minimises D P / (P - H) + alpha P."""
    return math.sqrt(header_bytes / alpha_pkts * message_bytes) if alpha_pkts > 0 else math.inf


def modelled_increase(payload: float, header_bytes: float, alpha_pkts: float, message_bytes: float) -> float:
    """Thm. 6's CCT increase over sending the message's payload alone: (D (P + H) / P + alpha (P + H)) / D - 1,
    P the payload, H the header bytes per packet, alpha packets of queueing."""
    frame = payload + header_bytes
    return (message_bytes * frame / payload + alpha_pkts * frame) / message_bytes - 1


# -- weighted Ofan's edge-uplink bound under failures ------------------------------------------------
def wofan_edge_bounds(
    tree: FatTree,
    flows: Sequence[Flow],
    rounds: Mapping[tuple[int, int], tuple[int, ...]],
    masks: Mapping[tuple[int, int], int],
    rho: float,
    burst: float = 2.0,
) -> dict[str, tuple[float, float]]:
    """Per edge uplink (port label): (the largest queue weighted Ofan can build there, the port's load), the
    generalisation of App. F.4's w + 1 (docs/schemes.md). Key d's pointer is shared by the f_d flows from the
    edge switch's hosts to edge d, each sending at most rho (t - s) / T + `burst` packets in any (s, t] (its NIC's
    bucket); its rounds give uplink p c_p of every C_d = sum_p c_p of its packets, so in any window of n of them
    p gets at most (n / C_d + 1) c_p. Summed over keys, p receives at most load_p (t - s) / T + sum_d c_p (1 +
    burst f_d / C_d) packets, load_p = sum_d f_d rho c_p / C_d; when load_p <= 1 its queue never exceeds
    1 + sum_d c_p (1 + burst f_d / C_d), whatever the message. Without failures (one round, c_p = 1, C_d = w)
    that is 1 + sum_d (1 + burst f_d / w), at most w + 1 + burst for w flows: F.4's w + 1 plus the NIC bursts and
    one packet per key that F.4's strictly periodic flows do not need."""
    out: dict[str, tuple[float, float]] = {}
    for e in (n for n in tree.switches if n.level is Level.EDGE):
        f: dict[int, int] = {}
        for fl in flows:
            src, dst = tree.hosts[fl.src], tree.hosts[fl.dst]
            e_d = tree.by_name[tree.edge_of(dst.name)]
            if tree.edge_of(src.name) == e.name and e_d.name != e.name:
                f[tree.edge_global(e_d)] = f.get(tree.edge_global(e_d), 0) + 1
        ups = tree.uplinks(e.name)
        bound, load = [1.0] * len(ups), [0.0] * len(ups)
        for d, fd in f.items():
            mask = masks.get((e.nid, d), (1 << len(ups)) - 1)
            c = decisions.wofan_counts(rounds.get((e.nid, d), ()), mask, len(ups))
            total = sum(c)
            for p in range(len(ups)):
                if c[p]:
                    bound[p] += c[p] * (1 + burst * fd / total)
                    load[p] += fd * rho * c[p] / total
        for p, port in enumerate(ups):
            out[port.label] = (bound[p], load[p])
    return out
