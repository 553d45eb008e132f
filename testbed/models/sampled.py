"""The sampled schemes' settings and timers, in pure Python: DLB's sampled port
quality, SGLB's flood, CONGA's DRE and header (ebpf/include/lb_sample.h,
lb_dlb.h, lb_conga.h); and DRILL's (d, m), the other run-wide scheme setting
the switches read from lb_cfg.

`SampledParams` are what a user sets, in packet times of the run's data
frame at line rate, so the schemes see the same number of packets per
interval at any emulated rate; `settings()` turns them into lb_cfg's values
for one fabric and rate. The functions below compute what the switch's
timers compute from the same inputs; the differential tests feed both the
same state and compare.

Defaults, and where they come from (TABLE1-SCHEMES.md in the design notes):
- DLB sampling every 16 packet times. SAI's ARS samples every 16 us, which
  at 400-800 Gbit/s and 4 KB frames is 190-380 packet times; a 1 MB flow is
  256 packets, so at that ratio DLB would sample about once per collective.
  16 keeps a sample per few packets per uplink (`--sample-interval`).
- EWMA weight 1/4 (SAI's exponents are 2-3); load bands between 1/8 and 1
  of the line rate, queue bands between 0 and 160 KB (AR's top threshold,
  20 % of the paper's 800 KB buffer): `--load-bands`, `--queue-bands`;
  quality weighs load and queue 50/50 (Juniper's default rate weight).
- SGLB floods every 32 packet times (twice the sampling interval):
  `--flood-interval`.
- DRILL(d, m): (2, 1), the DRILL paper's recommendation (`--drill-d`,
  `--drill-m`; d up to 4, m up to 2; Choice is DRILL(2, 0)).
- CONGA: T_dre = 32 packet times and alpha = 0.2 (the public simulators'
  ratio), so tau = 160 packet times; a table entry ages out after 50 T_dre
  (the simulators' 10 ms over 200 us).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .schemes import Scheme, SchemeError

LB_SAMPLE, LB_FLOOD, LB_CONGA = 1, 2, 4  # sampled.h lb_cfg.active bits
LB_TICK_SAMPLE, LB_TICK_FLOOD, LB_TICK_DRE = 0, 1, 2
LB_TICKS = 3
LB_BANDS = 8
DRILL_D_MAX, DRILL_M_MAX = 4, 2  # sampled.h
LB_DECAY_STEPS = 64
DECAY_ONE = 1 << 16

TIMER_BITS = {"sample": LB_SAMPLE, "flood": LB_FLOOD, "dre": LB_CONGA}  # the registry's timer names
ACTIVE_OF = {s: sum(TIMER_BITS[t] for t in s.traits.timers) for s in Scheme if s.traits.timers}
CONGA_ALPHA = 0.2
CONGA_AGE_PERIODS = 50
EWMA_SHIFT = 2
LOAD_WEIGHT = 4  # eighths
LOAD_LO, LOAD_HI = 0.125, 1.0  # of the line rate over one sampling interval
QUEUE_LO_BYTES, QUEUE_HI_BYTES = 0, 160 * 1024


@dataclass(frozen=True)
class SampledParams:
    """Intervals of the sampled schemes, in packet times (data frame at line rate)."""

    sample_interval: float = 16.0  # DLB and SGLB sampling interval
    flood_interval: float = 32.0  # SGLB flood interval
    dre_interval: float = 32.0  # CONGA T_dre
    load_bands: tuple[float, float] = (LOAD_LO, LOAD_HI)  # DLB load thresholds, fractions of the line rate
    queue_bands: tuple[int, int] = (QUEUE_LO_BYTES, QUEUE_HI_BYTES)  # DLB queue thresholds, bytes
    drill_d: int = 2  # the drill scheme's DRILL(d, m): samples per decision
    drill_m: int = 1  # and remembered uplinks

    def __post_init__(self) -> None:
        for name, v in (
            ("--sample-interval", self.sample_interval),
            ("--flood-interval", self.flood_interval),
            ("--dre-interval", self.dre_interval),
        ):
            if not 0 < v <= 1e7:
                raise SchemeError(f"{name} must be in (0, 1e7] packet times, got {v}")
        if not 1 <= self.drill_d <= DRILL_D_MAX or not 0 <= self.drill_m <= DRILL_M_MAX:
            raise SchemeError(
                f"DRILL(d, m) needs --drill-d in 1..{DRILL_D_MAX} and --drill-m in 0..{DRILL_M_MAX}, "
                f"got {self.drill_d}, {self.drill_m}"
            )
        for name, (lo, hi) in (("--load-bands", self.load_bands), ("--queue-bands", self.queue_bands)):
            if not 0 <= lo < hi <= 1 << 40:
                raise SchemeError(f"{name} needs 0 <= LO < HI, got {lo},{hi}")


def active_bits(schemes: Sequence[Scheme]) -> int:
    """lb_cfg.active for switches running these schemes."""
    bits = 0
    for s in schemes:
        bits |= ACTIVE_OF.get(s, 0)
    return bits


def decay_table(alpha: float = CONGA_ALPHA) -> tuple[int, ...]:
    """65536 (1 - alpha)^n for n = 0 .. 63."""
    return tuple(round(DECAY_ONE * (1 - alpha) ** n) for n in range(LB_DECAY_STEPS))


@dataclass(frozen=True)
class Settings:
    """lb_cfg's values (sampled.h struct lb_cfg), for one fabric and rate."""

    active: int
    sample_ns: int
    flood_ns: int
    dre_ns: int
    load_lo: int
    load_hi: int
    queue_lo: int
    queue_hi: int
    conga_ctau: int
    edges_per_pod: int
    drill: int = 2 | 1 << 8  # DRILL's d | m << 8
    ewma_shift: int = EWMA_SHIFT
    load_weight: int = LOAD_WEIGHT
    conga_age: int = CONGA_AGE_PERIODS
    decay: tuple[int, ...] = decay_table()

    def describe(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "decay"}


def settings(p: SampledParams, rate_bps: int, frame_bytes: int, edges_per_pod: int, active: int) -> Settings:
    pkt_ns = frame_bytes * 8e9 / rate_bps
    sample_ns = max(1, round(p.sample_interval * pkt_ns))
    line_bytes = rate_bps / 8e9 * sample_ns  # bytes the line carries in one sampling interval
    dre_ns = max(1, round(p.dre_interval * pkt_ns))
    return Settings(
        active=active,
        sample_ns=sample_ns,
        flood_ns=max(1, round(p.flood_interval * pkt_ns)),
        dre_ns=dre_ns,
        load_lo=round(p.load_bands[0] * line_bytes),
        load_hi=round(p.load_bands[1] * line_bytes),
        queue_lo=int(p.queue_bands[0]),
        queue_hi=int(p.queue_bands[1]),
        conga_ctau=max(1, round(rate_bps / 8e9 * dre_ns / CONGA_ALPHA)),
        edges_per_pod=edges_per_pod,
        drill=p.drill_d | p.drill_m << 8,
    )


# -- DLB: sampling ---------------------------------------------------------------------
U64 = (1 << 64) - 1


def band(v: int, lo: int, hi: int) -> int:
    """lb_band: 0 at or below lo, 7 at or above hi, 1 + 6 (v - lo) / (hi - lo) between."""
    if v >= hi:
        return LB_BANDS - 1
    if v <= lo:
        return 0
    return 1 + 6 * (v - lo) // (hi - lo)


def quality(load: int, queue: int, s: Settings) -> int:
    return (
        s.load_weight * band(load, s.load_lo, s.load_hi) + (8 - s.load_weight) * band(queue, s.queue_lo, s.queue_hi)
    ) >> 3


def _nonneg(v: int) -> int:
    v &= U64
    return 0 if v >> 63 else v


@dataclass(frozen=True)
class PortState:
    """sampled.h struct lb_port."""

    dre: int = 0
    last_rx: int = 0
    load: int = 0
    queue: int = 0
    quality: int = 0


def sample_port(st: PortState, rx_bytes: int, queue_bytes: int, n: int, s: Settings) -> PortState:
    """One run of the sampling timer for a port, n epochs after the last (lb_sample)."""
    sent = _nonneg(rx_bytes - st.last_rx) // min(n, 64)
    sh = s.ewma_shift
    load = (st.load - (st.load >> sh) + (sent >> sh)) & U64
    queue = (st.queue - (st.queue >> sh) + (_nonneg(queue_bytes) >> sh)) & U64
    return PortState(st.dre, rx_bytes & U64, load, queue, quality(load, queue, s))


def decay_dre(dre: int, n: int, s: Settings) -> int:
    """CONGA's DRE after n periods (lb_decay_dre)."""
    return (dre * s.decay[min(n, LB_DECAY_STEPS - 1)] & U64) >> 16


# -- SGLB: the flood ------------------------------------------------------------------------
def flood_view(
    level_core: bool,
    top: bool,
    pod: int,
    n_edges: int,
    edges_per_pod: int,
    down_quality: Sequence[int | None],
    up_quality: Sequence[int],
    mask_of_pod: Sequence[int],
) -> list[int]:
    """What an aggregation or top switch floods, per destination edge (lb_flood): the quality of its downlink
    toward the edge (slot = pod for a core, edge index otherwise; None: no route, worst), or toward another pod
    the best quality of its uplinks valid for that pod (mask_of_pod[pod])."""
    out = []
    for e in range(n_edges):
        p = e // edges_per_pod
        if top or p == pod:
            q = down_quality[p if level_core else e % edges_per_pod]
            out.append(LB_BANDS - 1 if q is None else q)
        else:
            valid = [q for t, q in enumerate(up_quality) if (mask_of_pod[p] >> t) & 1]
            out.append(min([LB_BANDS - 1, *valid]))
    return out


# -- CONGA ------------------------------------------------------------------------------------
CONGA_TAG_SHIFT, CONGA_CE_SHIFT, CONGA_FB_SHIFT = 11, 8, 3


def conga_metric(dre: int, ctau: int) -> int:
    return min(LB_BANDS - 1, dre * 8 // max(ctau, 1))


def conga_aged(metric: int, written: int, epoch: int, age: int) -> int:
    """A table entry's metric in DRE period `epoch`: 0 once older than `age` periods."""
    return 0 if min((epoch - written) & U64, (1 << 62) - 1) > age else metric & 7


def conga_header(tag: int, ce: int, fb_tag: int, fb_metric: int) -> int:
    return tag << CONGA_TAG_SHIFT | ce << CONGA_CE_SHIFT | fb_tag << CONGA_FB_SHIFT | fb_metric


def conga_fields(ip_id: int) -> tuple[int, int, int, int]:
    """(LBTag, CE, FB_LBTag, FB_Metric) of an IPv4 ID."""
    return ip_id >> CONGA_TAG_SHIFT, (ip_id >> CONGA_CE_SHIFT) & 7, (ip_id >> CONGA_FB_SHIFT) & 31, ip_id & 7
