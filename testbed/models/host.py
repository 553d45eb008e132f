"""A pure-Python model of the host NICs' load balancing (REPS, DRB, Ethereal):
the same decisions as ebpf/include/host_lb.h from the same inputs, for the
differential tests, and the valid host paths the control plane writes.

The NIC picks each RoCEv2 packet's UDP source port: an entropy that the
switches hash with ECMP (REPS) or a path label that host-routed switches
follow (DRB, Ethereal; models.label_slot is the switch side).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from .decisions import LABEL_BITS, LABEL_TAG
from .schemes import Scheme

REPS_SLOTS = 8
_HEAD_SHIFT, _COUNT_SHIFT, _ACKED_SHIFT = 8, 12, 16


# -- REPS ------------------------------------------------------------------------
@dataclass(frozen=True)
class RepsState:
    """One connection's entropies (reps.h struct reps_state): valid bits, head and count packed in `ctl`."""

    ctl: int = 0
    ev: tuple[int, ...] = (0,) * REPS_SLOTS

    @property
    def valid(self) -> int:
        return self.ctl & 0xFF

    @property
    def head(self) -> int:
        return (self.ctl >> _HEAD_SHIFT) & (REPS_SLOTS - 1)

    @property
    def count(self) -> int:
        return (self.ctl >> _COUNT_SHIFT) & 0xF

    @property
    def acked(self) -> bool:
        """Whether any unmarked ACK came back yet (after it, a fresh entropy is no longer the first RTT's)."""
        return bool(self.ctl >> _ACKED_SHIFT & 1)

    @staticmethod
    def pack(valid: int, head: int, count: int, ev: tuple[int, ...], acked: bool = False) -> RepsState:
        return RepsState(
            valid & 0xFF | (head % REPS_SLOTS) << _HEAD_SHIFT | count << _COUNT_SHIFT | int(acked) << _ACKED_SHIFT, ev
        )


def reps_take(st: RepsState, fresh: int) -> tuple[int, bool, RepsState]:
    """The next data packet's entropy: the oldest valid one (FIFO reuse), else `fresh`.
    Returns (entropy, recycled, new state)."""
    if st.count == 0:
        return fresh & 0xFFFF, False, st
    slot = (st.head - st.count) % REPS_SLOTS
    return st.ev[slot], True, RepsState.pack(st.valid & ~(1 << slot), st.head, st.count - 1, st.ev, st.acked)


def reps_recycle(st: RepsState, ev: int, marked: bool) -> RepsState:
    """An ACK returned entropy `ev`: an unmarked one is written at the head (a full buffer loses its oldest),
    a marked one is dropped."""
    if marked:
        return st
    evs = list(st.ev)
    evs[st.head] = ev & 0xFFFF
    return RepsState.pack(st.valid | 1 << st.head, st.head + 1, min(st.count + 1, REPS_SLOTS), tuple(evs), True)


# -- paths and labels ---------------------------------------------------------------------
def path_bits(mask: int) -> list[int]:
    return [i for i in range(64) if (mask >> i) & 1]


def host_label(bit: int, between_pods: bool, w: int) -> int:
    """The UDP source port labelling path bit `bit` (host_lb.h host_label)."""
    agg, core = (bit // w, bit % w) if between_pods else (bit, 0)
    return LABEL_TAG | agg << LABEL_BITS | core


@dataclass(frozen=True)
class HostDecision:
    """Everything one NIC decision depends on."""

    scheme: Scheme
    w: int
    is_ack: bool
    psn: int
    mask: int  # host_paths of (source edge, destination edge); unused by REPS
    between_pods: bool
    same_edge: bool
    drb_pointer: int  # DRB pointer of this flow and size class
    reps: RepsState
    draw: int  # REPS: the fresh entropy's draw


@dataclass(frozen=True)
class HostOutcome:
    port: int  # UDP source port written, 0 for none
    drb_pointer: int
    reps: RepsState
    recycled: bool = False


def _labelled(x: HostDecision, pos_of: Callable[[int], int]) -> HostOutcome:
    bits = path_bits(x.mask)
    if x.same_edge or not bits:
        return HostOutcome(0, x.drb_pointer, x.reps)
    return HostOutcome(host_label(bits[pos_of(len(bits))], x.between_pods, x.w), x.drb_pointer, x.reps)


def model_reps(x: HostDecision) -> HostOutcome:
    if x.is_ack:
        return HostOutcome(0, x.drb_pointer, x.reps)
    ev, recycled, st = reps_take(x.reps, x.draw)
    return HostOutcome(ev, x.drb_pointer, st, recycled)


def model_drb(x: HostDecision) -> HostOutcome:
    out = _labelled(x, lambda n: x.drb_pointer % n)
    return replace(out, drb_pointer=x.drb_pointer + 1) if out.port else out


def model_ethereal(x: HostDecision) -> HostOutcome:
    if x.is_ack:
        return HostOutcome(0, x.drb_pointer, x.reps)
    return _labelled(x, lambda n: x.psn % n)


HOST_MODELS: dict[Scheme, Callable[[HostDecision], HostOutcome]] = {
    Scheme.REPS: model_reps,
    Scheme.DRB: model_drb,
    Scheme.ETHEREAL: model_ethereal,
}


def decide(x: HostDecision) -> HostOutcome:
    return HOST_MODELS[x.scheme](x)
