"""Where a run falls in the ideal fabric's distribution for the same flows.

The verdict's other criteria check the emulator's parts one by one (pacing,
timers, service, delivery); a kernel effect that keeps every part within its
tolerance can still move the result (RPS at k=12, seed 3, read +28.0 % with
every figure in tolerance, outside the ideal fabric's +18.4 to +25.1 % over
13 seeds). So a run of a scheme and workload the ideal fabric models
(testbed.models.ideal: ECMP, RPS, RR, JSQ, Ofan, pOfan, DRB; one flow per host
in full frames, load 1, no ACKs, no congestion control, no failure) is also
placed in the ideal fabric's distribution: the same flows played DRAWS times
(each draw its own random choices, arrival order and NIC release within one
packet time, as the verdict's start skew allows), with the run's propagation
added as the run adds it (each flow's links x D, twice: the CCT ends at the last
ACK, analytically). ECMP's
choices are not drawn: a run's hash is fixed by its switches' seeds and its
flows' ports, so every draw takes the uplinks the kernel took
(testbed.models.ideal.EcmpInputs); drawn uniformly, a three-way collision the
hash made, or none where the draws collide, put faithful ECMP runs outside
(2 of 30 seeds at k=4, 3 of 20 on the k=4 leaf-spine).

A run of a scheme whose result depends on the order in which a switch serves
frames that reach it at one instant (RR, JSQ: the registry's arrival_order)
is placed but not judged (`not_judged`): the kernel serves them in a nearly
fixed order that the draws do not know, and faithful RR runs read +74 to
+105 % against the draws' +6 to +26 % (random order) or +100 to +201 %
(fixed), so the criterion would reject them for the model's sake.

A run is flagged when its CCT increase lies more than Z standard deviations
of the draws beyond their mean, plus the run's own timing allowance (what its
verdict says start offsets and late NICs can have added), plus FLOOR_PP; or
when a switch stage's largest queue lies more than Z standard deviations
plus QUEUE_FLOOR_PKTS plus QUEUE_SHARE of the mean beyond the draws' mean (the NICs' queues are not
compared: they hold the senders' prefill, which the ideal fabric does not
model). Z = 3: for a normal spread a
faithful run is flagged about once in 700; the tails of a maximum are
heavier, so a little more often (docs/measurement.md, "Fidelity", has the measurement).
Below the mean the same rule applies: a run much better than a perfect
fabric is as suspect.

Draws are cached on disk by their inputs (CACHE_DIR), so a sweep's seeds pay
once; a fabric larger than MAX_FRAME_DRAWS frames x draws is not placed
(`testbed ideal` still plays it, slowly).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from traffic.packet import Packetizer
from traffic.workloads import Flow

from ..models import ideal
from ..models.schemes import SchemeConfig, SchemeError
from ..topology import FatTree
from ..topology.timebase import CCT_LEGS

NOT_COMPARED = ("host_edge",)  # a NIC's queue holds its sender's prefill (up to eight frames), not modelled
DRAWS = 20
Z = 3.0
FLOOR_PP = 0.25  # points of CCT increase: the draws' own rounding and the bound's
QUEUE_FLOOR_PKTS = 2  # a kernel maximum can exceed the model's by a frame or two with the senders' timing
QUEUE_SHARE = 0.02  # and a long queue by the pacing tolerance's share (ECMP's colliding flow: 252 against 255-256)
MAX_FRAME_DRAWS = 600_000  # frames x draws played per run at most (about 8 s on this machine)
CACHE_DIR = Path(os.environ.get("TESTBED_IDEAL_CACHE", "/var/cache/testbed/ideal"))
VERSION = 3  # of the draws' recipe: a change invalidates the cache (2: ECMP takes the run's hash inputs; 3: the
# CCT ends at the last ACK, the propagation added twice)


@dataclass(frozen=True)
class Envelope:
    """The ideal fabric's results over its draws, for one run's flows."""

    cct_increase: tuple[float, ...]
    max_queue: dict[str, tuple[int, ...]]  # stage label -> each draw's largest queue there

    @staticmethod
    def _stats(xs: tuple[float, ...] | tuple[int, ...]) -> tuple[float, float]:
        m = sum(xs) / len(xs)
        sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
        return m, sd


def key_of(
    tree: FatTree,
    config: SchemeConfig,
    flows: list[Flow],
    pk: Packetizer,
    propagation_pkts: float,
    draws: int,
    buckets_bytes: tuple[int, int] | None = None,
    ecmp: ideal.EcmpInputs | None = None,
) -> str:
    what = {
        "v": VERSION,
        "kind": tree.kind,
        "k": tree.k,
        "scheme": config.label,
        "payload": pk.payload,
        "overhead": pk.wire_overhead,
        "prop": round(propagation_pkts, 9),
        "draws": draws,
        "buckets": list(buckets_bytes) if buckets_bytes else None,
        "flows": [(f.fid, f.src, f.dst, f.size_bytes) for f in flows],
        "ecmp": [sorted(ecmp.seeds.items()), sorted(ecmp.sports.items())] if ecmp else None,
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:32]


def modelled(config: SchemeConfig, flows: list[Flow], pk: Packetizer) -> str:
    """'' if the ideal fabric models this run's scheme and flows, else why not."""
    try:
        ideal.check(config, flows, pk)
    except SchemeError as e:
        return str(e)
    return ""


def not_judged(config: SchemeConfig) -> str:
    """'' if a run of this scheme is judged against its place in the envelope, else why it is only reported:
    a scheme whose result depends on the order of simultaneous arrivals (the registry's arrival_order), which
    the kernel fixes and the draws take at random."""
    if config.scheme.traits.arrival_order:
        return (
            f"{config.label}'s result depends on the order in which a switch serves simultaneous arrivals, "
            "which the kernel fixes and the ideal fabric draws: placed, not judged"
        )
    return ""


def envelope(
    tree: FatTree,
    config: SchemeConfig,
    flows: list[Flow],
    pk: Packetizer,
    propagation_pkts: float,
    draws: int = DRAWS,
    cache_dir: Path | None = CACHE_DIR,
    buckets_bytes: tuple[int, int] | None = None,
    ecmp: ideal.EcmpInputs | None = None,
) -> Envelope:
    """The ideal fabric's CCT increase and per-stage largest queue over `draws` draws (cached), with the run's
    fabric's buckets (`buckets_bytes`: its links' and NICs', bytes of line time; default the default MTU's) and,
    for ECMP, the run's hash inputs (`ecmp`)."""
    key = key_of(tree, config, flows, pk, propagation_pkts, draws, buckets_bytes=buckets_bytes, ecmp=ecmp)
    path = cache_dir / f"{key}.json" if cache_dir is not None else None
    if path is not None and path.exists():
        d = json.loads(path.read_text())
        return Envelope(tuple(d["cct_increase"]), {s: tuple(v) for s, v in d["max_queue"].items()})
    cct: list[float] = []
    queues: dict[str, list[int]] = {}
    legs = CCT_LEGS * propagation_pkts  # the run's shift: the data's way and the ACK's back (metrics)
    bound = ideal.bound_pkts(tree, flows, pk, legs, buckets_bytes)
    for s in range(1, draws + 1):
        r = ideal.simulate(
            tree,
            config,
            flows,
            1_000_003 * s + 17,
            pk,
            start_jitter=ideal.START_JITTER,
            buckets_bytes=buckets_bytes,
            ecmp=ecmp,
        )
        cct.append(ideal.shifted_cct_pkts(tree, flows, r.flow_done, legs) / bound - 1)
        for st, q in r.max_queue.items():
            queues.setdefault(st, []).append(q)
    env = Envelope(tuple(cct), {s: tuple(v) for s, v in queues.items()})
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(asdict(env)))
            tmp.replace(path)
        except OSError:
            pass  # a cache that cannot be written is only slower
    return env


def place(env: Envelope, cct_increase: float, max_queue: dict[str, float], allowance: float) -> dict[str, Any]:
    """The run's place in the envelope: percentile and distance in standard deviations of its CCT increase and
    of each stage's largest queue, and the reasons it is flagged (empty: inside)."""
    m, sd = Envelope._stats(env.cct_increase)
    below = sum(1 for x in env.cct_increase if x < cct_increase) / len(env.cct_increase)
    limit = Z * sd + allowance + FLOOR_PP / 100
    out: dict[str, Any] = {
        "draws": len(env.cct_increase),
        "cct_increase_mean": m,
        "cct_increase_sd": sd,
        "cct_increase_min": min(env.cct_increase),
        "cct_increase_max": max(env.cct_increase),
        "cct_increase_percentile": below,
        "cct_increase_z": (cct_increase - m) / sd if sd else 0.0,
        "cct_increase_limit": limit,
        "queues": {},
        "reasons": [],
    }
    if abs(cct_increase - m) > limit:
        out["reasons"].append(
            f"CCT increase {100 * cct_increase:+.2f} % is outside the ideal fabric's {100 * m:.2f} +- "
            f"{100 * limit:.2f} % for these flows ({len(env.cct_increase)} draws, {100 * min(env.cct_increase):.2f} "
            f"to {100 * max(env.cct_increase):.2f} %; Z = {Z:g} standard deviations plus the run's timing allowance "
            f"{100 * allowance:.2f} % and {FLOOR_PP:g} points)"
        )
    for st, qs in env.max_queue.items():
        if st not in max_queue or st in NOT_COMPARED:
            continue
        qm, qsd = Envelope._stats(qs)
        qlimit = Z * qsd + QUEUE_FLOOR_PKTS + QUEUE_SHARE * qm
        got = max_queue[st]
        out["queues"][st] = {"run": got, "mean": qm, "sd": qsd, "min": min(qs), "max": max(qs), "limit": qlimit}
        if abs(got - qm) > qlimit:
            out["reasons"].append(
                f"largest {st} queue {got:g} packets is outside the ideal fabric's {qm:.1f} +- "
                f"{qlimit:.1f} ({min(qs)} to {max(qs)} over {len(qs)} draws)"
            )
    return out
