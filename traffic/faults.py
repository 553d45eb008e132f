"""Faults injected on purpose, for the tests of the fidelity verdict only: the text of a run's `inject` option
(testbed.run.params.RunParams.inject), parsed here once into a typed value that everything else reads.

    late:G:US       the G-th source host's sender thread starts US us after the others (G counts source hosts
                    in the order of their first flow)
    stall:G:N:US    it sleeps US us after its N-th packet
    wake:US         every sender thread sleeps US us after the release (a slow wake-up)
    nic-burst       the host NICs get an eight-frame bucket and no peak rate
    nic-slow:H:PCT  host H's NIC paced PCT percent below the others
    ackstall:N:US   with a transport: its ACK thread sleeps US us after its N-th ACK (a transport starved of CPU)
    ackring:N       with a transport: it holds at most N ACK events per delay class (the rest are lost to it)
    deadline:MS     the senders give up MS ms after they start (flows left unsent or incomplete)

Who carries each out: the sender program (late, stall, wake; ackstall and ackring in its ACK thread), which
receives the numbers as options of its protocol (traffic/protocol.h, `options()`); the run itself (nic-burst and
nic-slow when it paces the NICs, deadline as the senders' time limit; testbed.run.experiment).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any, ClassVar


class FaultError(ValueError):
    """Not a fault of the language above."""


@dataclass(frozen=True)
class Late:
    """The `group`-th source host's sender thread starts `us` microseconds after the others."""

    KEYWORD: ClassVar[str] = "late"
    FORM: ClassVar[str] = "late:G:US"
    group: int
    us: int

    def options(self) -> dict[str, str | int]:
        return {"fault": self.KEYWORD, "fault_group": self.group, "fault_us": self.us}


@dataclass(frozen=True)
class Stall:
    """The `group`-th source host's sender thread sleeps `us` microseconds after its `after`-th packet."""

    KEYWORD: ClassVar[str] = "stall"
    FORM: ClassVar[str] = "stall:G:N:US"
    group: int
    after: int
    us: int

    def options(self) -> dict[str, str | int]:
        return {"fault": self.KEYWORD, "fault_group": self.group, "fault_after": self.after, "fault_us": self.us}


@dataclass(frozen=True)
class Wake:
    """Every sender thread sleeps `us` microseconds after the release."""

    KEYWORD: ClassVar[str] = "wake"
    FORM: ClassVar[str] = "wake:US"
    us: int

    def options(self) -> dict[str, str | int]:
        return {"fault": self.KEYWORD, "fault_us": self.us}


@dataclass(frozen=True)
class NicBurst:
    """The host NICs get an eight-frame bucket and no peak rate."""

    KEYWORD: ClassVar[str] = "nic-burst"
    FORM: ClassVar[str] = "nic-burst"


@dataclass(frozen=True)
class NicSlow:
    """Host `host`'s NIC is paced `pct` percent below the others."""

    KEYWORD: ClassVar[str] = "nic-slow"
    FORM: ClassVar[str] = "nic-slow:H:PCT"
    host: int
    pct: float


@dataclass(frozen=True)
class AckStall:
    """The transport's ACK thread sleeps `us` microseconds after its `after`-th ACK."""

    KEYWORD: ClassVar[str] = "ackstall"
    FORM: ClassVar[str] = "ackstall:N:US"
    after: int
    us: int

    def options(self) -> dict[str, str | int]:
        return {"ack_stall_after": self.after, "ack_stall_us": self.us}


@dataclass(frozen=True)
class AckRing:
    """The transport holds at most `events` ACK events per delay class (0 holds one)."""

    KEYWORD: ClassVar[str] = "ackring"
    FORM: ClassVar[str] = "ackring:N"
    events: int

    def options(self) -> dict[str, str | int]:
        return {"ack_ring": self.events}


@dataclass(frozen=True)
class Deadline:
    """The senders give up `ms` milliseconds after they start."""

    KEYWORD: ClassVar[str] = "deadline"
    FORM: ClassVar[str] = "deadline:MS"
    ms: int


SenderFault = Late | Stall | Wake | AckStall | AckRing  # what the sender program carries out
Fault = SenderFault | NicBurst | NicSlow | Deadline
KINDS: tuple[type[Fault], ...] = (Late, Stall, Wake, NicBurst, NicSlow, AckStall, AckRing, Deadline)
SENDER_KINDS: tuple[type[SenderFault], ...] = (Late, Stall, Wake, AckStall, AckRing)
TRANSPORT_KINDS: tuple[type[Fault], ...] = (AckStall, AckRing)  # they act on the transport: a run with --cc
_NUMBER = {int: re.compile(r"\d+"), float: re.compile(r"\d+(\.\d+)?")}  # what the fields' texts may be
_TYPES: dict[object, type[int] | type[float]] = {"int": int, "float": float, int: int, float: float}  # by annotation


def forms() -> str:
    """Every fault's form, for a message: 'late:G:US, stall:G:N:US, ... or deadline:MS'."""
    all_forms = [k.FORM for k in KINDS]
    return ", ".join(all_forms[:-1]) + " or " + all_forms[-1]


def parse(text: str) -> Fault:
    """The fault `text` names (FaultError, one line, otherwise)."""
    keyword, *values = text.split(":")
    for kind in KINDS:
        if keyword != kind.KEYWORD:
            continue
        numbers = [(f.name, _TYPES[f.type]) for f in fields(kind)]
        if len(values) == len(numbers) and all(
            _NUMBER[t].fullmatch(v) for (_, t), v in zip(numbers, values, strict=True)
        ):
            parsed: dict[str, Any] = {name: t(v) for (name, t), v in zip(numbers, values, strict=True)}
            return kind(**parsed)
    raise FaultError(f"unknown fault {text!r} ({forms()})")


def for_sender(fault: Fault | None) -> SenderFault | None:
    """The part of a fault the sender program carries out (None: the NICs' or the run's own)."""
    return fault if isinstance(fault, SENDER_KINDS) else None
