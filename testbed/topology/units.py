"""Parsing of rates and sizes given on the command line."""

from __future__ import annotations

import re
from dataclasses import dataclass

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
    return int(round(value))


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


_TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_duration(text: str, allow_zero: bool = False) -> float:
    """'200ms' -> 0.2 seconds (units us, ms, s; a bare number is seconds)."""
    m = _NUM.match(text)
    unit = m.group(2).lower() if m else ""
    if not m or (unit and unit not in _TIME_UNITS):
        raise ValueError(f"cannot parse duration {text!r} (examples: 200ms, 1.5s)")
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
