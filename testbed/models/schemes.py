"""The registry of load-balancing schemes: their names and numbers, the
configuration one switch carries (scheme and pipe size), and which switches a
selection names. Scheme numbers are shared with ebpf/include/schemes.h; each
scheme's decision is modelled in testbed.models.decisions and implemented in
ebpf/include/lb_*.h, dispatched by ebpf/include/lb.h (docs/adding-a-scheme.md).

| scheme | decision | follows |
|---|---|---|
| ecmp  | hash of the 5-tuple, per-switch seed | hash-based ECMP (paper Table 1) |
| rps   | uniformly random uplink per packet | RSQ / RPS, paper section 3.1 |
| rr    | one pointer per switch, all destinations | Simple RR, paper section 3.1 |
| jsq   | fewest queued bytes, random tie-break | JSQ, paper section 3.1 |
| ar    | lowest quantised queue level, random among them | AR, paper section 3.1, Table 1 |
| drill | best of d random + m remembered uplinks (default 2 and 1) | DRILL(d,m), Ghorbani et al. 2017 |
| choice | fewer queued bytes of 2 random uplinks, no memory | "Choice", DRILL(2,0), Ghorbani et al. 2017 |
| conga | least max(local DRE metric, fed-back path metric), random tie-break | CONGA (Alizadeh et al. 2014), per packet |
| dlb   | best sampled quality band (load and queue EWMAs), random tie-break | Broadcom DLB as the paper reads it |
| sglb  | best path quality: worse of local and the next switch's flooded quality | SGLB (Qi et al. 2025), as read here |
| ofan  | per-destination rotation, one pointer set per switch | paper section 4.1, appendix F.2 |
| pofan | per-destination rotation, one pointer set per pipe | paper section 5.1 |
| wofan | per-destination rotation weighted by the paths each uplink leads to, Ofan's without failures | this testbed (docs/schemes.md) |
| host-routed | the uplink named by the packet's path label (the switches of drb and ethereal) | - |

Host schemes run in the host NICs (ebpf/include/host_lb.h, modelled in
testbed.models.decisions) and set the switches to the scheme they need:

| scheme | decision | switches |
|---|---|---|
| reps     | recycled entropy: the oldest entropy an unmarked ACK returned, else a random one | ecmp |
| drb      | per-flow rotation over the bouncing switches valid for both ends, random start | host-routed |
| ethereal | one subflow per valid path, served round robin | host-routed |
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass

from ..topology import FatTree, Level


class SchemeError(ValueError):
    """Unknown scheme or invalid scheme parameter."""


class Scheme(enum.IntEnum):
    """Switch schemes keep their number in switch_cfg.scheme (schemes.h SCHEME_*); host schemes (REPS, DRB,
    Ethereal) are never written there: their switches run `switch_scheme`, their NICs `host_lb`."""

    ECMP = 0
    OFAN = 1
    RPS = 2
    RR = 3
    JSQ = 4
    AR = 5
    DRILL = 6
    POFAN = 7
    HOST_ROUTED = 8
    REPS = 9
    DRB = 10
    ETHEREAL = 11
    CHOICE = 12
    CONGA = 13
    DLB = 14
    SGLB = 15
    WOFAN = 16

    @property
    def label(self) -> str:
        return self.name.lower().replace("_", "-")

    @property
    def host_lb(self) -> int:
        """schemes.h HOST_LB_*: 0 for switch schemes."""
        return _HOST_LB.get(self, 0)

    @property
    def is_host(self) -> bool:
        return self.host_lb != 0

    @property
    def switch_scheme(self) -> Scheme:
        """What the switches run: the scheme itself, or the one a host scheme needs."""
        return _SWITCHES_OF.get(self, self)

    @property
    def traits(self) -> Traits:
        """What the scheme needs and what models it (TRAITS)."""
        return TRAITS.get(self, Traits())

    @property
    def needs_acks(self) -> bool:
        """It cannot run without ACKs: a run with it turns them on."""
        return self.traits.acks == "needs"

    @property
    def uses_acks(self) -> bool:
        """It needs ACKs or does something with them (DRB's ACKs take the small class): the paper's figures
        run it with ACKs."""
        return self.traits.acks in ("needs", "uses")

    @classmethod
    def parse(cls, name: str) -> Scheme:
        try:
            return cls[name.upper().replace("-", "_")]
        except KeyError:
            raise SchemeError(f"unknown scheme {name!r} (choose from {', '.join(names())})") from None


@dataclass(frozen=True)
class Traits:
    """What a scheme needs of a run and which models cover it; every caller asks here.

    acks: "needs" (it cannot run without them: a run with it turns them on), "uses" (it does something
    with them), "no".
    timers: the switch timers it arms (testbed.models.sampled: "sample", "flood", "dre"), none for most.
    ideal: the ideal fabric (testbed.models.ideal) models it.
    arrival_order: its result depends on the order in which a switch serves frames that reach it at one
    instant (a switch-wide pointer or queue comparison sees them one by one), which the kernel fixes and the
    ideal fabric can only draw (docs/methods/ideal-fabric.md): the verdict does not judge it against the
    ideal fabric.
    """

    acks: str = "no"
    timers: tuple[str, ...] = ()
    ideal: bool = False
    arrival_order: bool = False


TRAITS: dict[Scheme, Traits] = {
    Scheme.ECMP: Traits(ideal=True),
    Scheme.OFAN: Traits(ideal=True),
    Scheme.RPS: Traits(ideal=True),
    Scheme.RR: Traits(ideal=True, arrival_order=True),  # kernel +74 to +105 %, ideal +6 to +26 % or +100 to +201 %
    Scheme.JSQ: Traits(ideal=True, arrival_order=True),  # kernel +9 to +19 %, ideal +4 to +9 % or +7 to +17 %
    Scheme.POFAN: Traits(ideal=True),
    Scheme.WOFAN: Traits(ideal=True),  # without failures (the ideal fabric's only case) it is Ofan
    Scheme.REPS: Traits(acks="needs"),  # recycles the entropies its ACKs bring back
    Scheme.CONGA: Traits(acks="needs", timers=("dre",)),  # feeds path congestion back on the reverse traffic
    Scheme.DRB: Traits(ideal=True, acks="uses"),  # its ACKs take the small size class
    Scheme.DLB: Traits(timers=("sample",)),
    Scheme.SGLB: Traits(timers=("sample", "flood")),
}

_HOST_LB = {Scheme.REPS: 1, Scheme.DRB: 2, Scheme.ETHEREAL: 3}
_SWITCHES_OF = {Scheme.REPS: Scheme.ECMP, Scheme.DRB: Scheme.HOST_ROUTED, Scheme.ETHEREAL: Scheme.HOST_ROUTED}


def names() -> list[str]:
    return [s.label for s in Scheme]


def switch_schemes() -> list[Scheme]:
    return [s for s in Scheme if not s.is_host]


def host_schemes() -> list[Scheme]:
    return [s for s in Scheme if s.is_host]


def needing_acks(labels: list[str] | tuple[str, ...]) -> bool:
    """Whether any of these scheme items ('reps', 'pofan:4', ...) needs ACKs."""
    return any(SchemeConfig.parse(x).scheme.needs_acks for x in labels)


def using_acks(labels: list[str] | tuple[str, ...]) -> bool:
    """Whether any of these scheme items needs or uses ACKs."""
    return any(SchemeConfig.parse(x).scheme.uses_acks for x in labels)


PIPES_PER_CPU = 0  # SchemeConfig.pipe_size value: one pointer set per CPU


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

    @classmethod
    def parse(cls, item: str) -> SchemeConfig:
        """'ecmp', 'pofan:4', 'pofan:cpu' -> its configuration."""
        name, _, pipe = item.strip().partition(":")
        if not name:
            raise SchemeError(f"empty scheme in {item!r}")
        scheme = Scheme.parse(name)
        if pipe and scheme is not Scheme.POFAN:
            raise SchemeError(f"only pofan takes a pipe size ({item!r})")
        return cls(scheme, parse_pipe_size(pipe) if pipe else 4)

    def validate(self, n_ports: int) -> None:
        if (
            self.scheme is Scheme.POFAN
            and self.pipe_size != PIPES_PER_CPU
            and (self.pipe_size < 1 or n_ports % self.pipe_size)
        ):
            raise SchemeError(
                f"pipe size must be >= 1 and divide the {n_ports} ports of a switch, got {self.pipe_size}"
            )


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
def select_switches(tree: FatTree, which: str, seed: int) -> list[str]:
    """LB switches (edge and aggregation) chosen by `which`: all, edge, agg,
    pod:N (both tiers of pod N), pods:F (both tiers of round(F x pods) pods,
    at least one, drawn with `seed`), random:F (a fraction F of them, drawn
    with `seed`; exactly round(F x count))."""
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
    if kind == "pods":
        try:
            frac = float(arg)
        except ValueError:
            raise SchemeError(f"pods:F needs a fraction, got {which!r}") from None
        if not 0 < frac <= 1:
            raise SchemeError(f"pods:F needs F in (0, 1], got {frac}")
        pods = sorted(random.Random(seed).sample(range(tree.pods), max(1, round(frac * tree.pods))))
        return [sw.name for sw in lb if sw.pod in pods]
    raise SchemeError(f"--switches must be all, edge, agg, pod:N, pods:F or random:F, got {which!r}")


MIXES = "none, random:F, pods:F, agg or edge"


def check_mix(mix: str) -> None:
    """A SchemeError unless `mix` names a mixed deployment (Fig. 11): none (one scheme on every LB switch),
    random:F (a fraction F of the LB switches, drawn from the seed), pods:F (both tiers of a fraction F of the
    pods), agg or edge (that tier)."""
    kind, _, arg = mix.partition(":")
    if mix in ("none", "agg", "edge"):
        return
    if kind in ("random", "pods") and arg:
        try:
            frac = float(arg)
        except ValueError:
            raise SchemeError(f"--mix {mix}: {kind}:F needs a fraction") from None
        if 0 < frac < 1:
            return
        raise SchemeError(f"--mix {mix}: F must be in (0, 1)")
    raise SchemeError(f"--mix must be {MIXES}, got {mix!r}")
