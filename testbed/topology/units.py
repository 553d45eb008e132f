"""Every kind of value the command line and the benches take, parsed in one place so that a flag means the
same wherever it appears: rates, sizes, durations, queue thresholds, seeds and comma-separated lists. Each
parser raises ValueError with a one-line message; the CLI turns it into its usage error."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

_RATE_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}
_SIZE_UNITS = {"b": 1, "kb": 1024, "kib": 1024, "mb": 1024**2, "mib": 1024**2, "gb": 1024**3, "gib": 1024**3}
_NUM = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_rate(text: str) -> int:
    """'100mbit' -> 100000000 bit/s (units bit, kbit, mbit, gbit; a bare number is bit/s)."""
    m = _NUM.match(text)
    unit = m.group(2).lower() if m else ""
    if not m or (unit and unit not in _RATE_UNITS):
        raise ValueError(f"cannot parse rate {text!r} (examples: 100mbit, 1gbit, 500kbit)")
    value = float(m.group(1)) * _RATE_UNITS[unit or "bit"]
    if value <= 0:
        raise ValueError(f"rate must be > 0, got {text!r}")
    return round(value)


def parse_size(text: str) -> int:
    """'1MB' -> 1048576 bytes (units B, KB, MB, GB are powers of 1024; a bare number is bytes)."""
    m = _NUM.match(text)
    unit = m.group(2).lower() if m else ""
    if not m or (unit and unit not in _SIZE_UNITS):
        raise ValueError(f"cannot parse size {text!r} (examples: 4096, 256KB, 1MB)")
    value = float(m.group(1)) * _SIZE_UNITS[unit or "b"]
    if value <= 0 or value != int(value):
        raise ValueError(f"size must be a positive whole number of bytes, got {text!r}")
    return int(value)


def format_rate(bps: int) -> str:
    for unit, mult in (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
        if bps % mult == 0:
            return f"{bps // mult}{unit}"
    return f"{bps}bit"


def format_size(n: int) -> str:
    """Bytes as parse_size reads them back: 800KB, 1MB, 4096 (B when not a whole number of KB)."""
    for unit, mult in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n and n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_duration(text: str, allow_zero: bool = False) -> float:
    """'200ms' -> 0.2 seconds (units ns, us, ms, s; a bare number is seconds)."""
    m = _NUM.match(text)
    unit = m.group(2).lower() if m else ""
    if not m or (unit and unit not in _TIME_UNITS):
        raise ValueError(f"cannot parse duration {text!r} (examples: 200ms, 150us, 1.5s, 2000ns)")
    v = float(m.group(1)) * _TIME_UNITS[unit or "s"]
    if v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"duration must be > 0, got {text!r}")
    return v


@dataclass(frozen=True)
class QueueThreshold:
    """A queue threshold (ECN marking): `unit` is "bytes" or "packets", or "off" (no threshold)."""

    unit: str
    value: int

    @property
    def label(self) -> str:
        return "off" if self.unit == "off" else f"{self.value} {self.unit}"


def parse_threshold(text: str, reference_bytes: int) -> QueueThreshold:
    """'off', '80KB' (bytes; 0 is allowed), '20pkts' (packets; also 'p', 'pkt', 'packets') or '10%' (of
    `reference_bytes`, rounded down to whole bytes)."""
    t = text.strip().lower()
    if t == "off":
        return QueueThreshold("off", 0)
    if t.endswith("%"):
        try:
            pct = float(t[:-1])
        except ValueError:
            raise ValueError(f"cannot parse threshold {text!r} (examples: 10%, 80KB, 20pkts, off)") from None
        if not 0 <= pct <= 100:
            raise ValueError(f"a threshold in percent must be in [0, 100], got {text!r}")
        return QueueThreshold("bytes", int(reference_bytes * pct / 100))
    m = _NUM.match(t)
    if m and m.group(2) in ("p", "pkt", "pkts", "packets"):
        v = float(m.group(1))
        if v != int(v):
            raise ValueError(f"a threshold in packets must be a whole number, got {text!r}")
        return QueueThreshold("packets", int(v))
    if m and float(m.group(1)) == 0 and m.group(2) in ("", "b", "kb", "mb"):
        return QueueThreshold("bytes", 0)
    try:
        return QueueThreshold("bytes", parse_size(t))
    except ValueError:
        raise ValueError(f"cannot parse threshold {text!r} (examples: 10%, 80KB, 20pkts, off)") from None


def parse_list(text: str, one: Callable[[str], T], what: str) -> tuple[T, ...]:
    """A comma-separated list of at least one `what`, each parsed by `one` (its ValueError names the item)."""
    items = [x.strip() for x in text.split(",")]
    if not text.strip() or any(not x for x in items):
        raise ValueError(f"expected one or more {what} separated by commas, got {text!r}")
    return tuple(one(x) for x in items)


def parse_int(text: str, minimum: int | None = None) -> int:
    """A whole number, at least `minimum` if given."""
    try:
        v = int(text.strip())
    except ValueError:
        raise ValueError(f"expected a whole number, got {text!r}") from None
    if minimum is not None and v < minimum:
        raise ValueError(f"expected a whole number >= {minimum}, got {text!r}")
    return v


def parse_ints(text: str) -> tuple[int, ...]:
    """Comma-separated whole numbers: '4,8,12'."""
    return parse_list(text, parse_int, "whole numbers")


def parse_seeds(text: str) -> tuple[int, ...]:
    """Seeds, as every command and bench takes them: '3' is seed 3; '1,5,9' those three; '1-5' seeds 1 to 5;
    '1-3,7' both. Positive, each once."""
    out: list[int] = []
    for item in parse_list(text, str, "seeds"):
        lo, dash, hi = item.partition("-")
        a = parse_int(lo, 1)
        b = parse_int(hi, 1) if dash else a
        if b < a:
            raise ValueError(f"a seed range runs upward, got {item!r}")
        out += range(a, b + 1)
    if len(set(out)) != len(out):
        raise ValueError(f"a seed is given twice in {text!r}")
    return tuple(out)
