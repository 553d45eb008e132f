"""testbed-sender's protocol, as traffic/protocol.h defines it: the one definition of what the sender program is
told (its options, one line per flow) and what it answers (one line per flow, and a transport run's lateness).

The header is the definition: sender.c and acks.c expand its X-macro lists into their parser and printers, and
this module reads the same lists from its text when it is imported (each `X(name, TYPE, ...)` entry of each
`SENDER_*(X)` macro: a name and its type, in order). So both sides read one definition, rather than two copies
that a test compares: a field added to the header is one traffic.sender must supply (flow_line refuses a line
without it) and one it reads by name (read_report refuses a report without it); traffic.sender checks its
records against the lists when it is imported; and the sender's digest covers the header, so the program is
rebuilt when it changes. Generating the header from Python instead would need a build step and a generated file
that can go stale; a header read as text needs neither.

Every field travels as NAME=VALUE: a flow line is `ns=/run/netns/h0 fid=1 ...`, a report line `FLOW fid=1
packets=256 ...` or `LATENESS acks=... ...`, an option `cc=dctcp`. Nothing is read by position.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, SupportsFloat, SupportsIndex

HEADER = Path(__file__).with_name("protocol.h")
TYPES = ("STR", "U32", "U64", "INT", "BOOL", "F64", "CC", "FAULT")  # protocol.h's "Types"
_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(SENDER_\w+)\(X\)((?:[^\n]*\\\n)*[^\n]*)", re.M)
_ENTRY = re.compile(r"\bX\(\s*(\w+)\s*,\s*([^,()]+?)\s*[,)]")
_LINE_MAX = re.compile(r"^[ \t]*#[ \t]*define[ \t]+SENDER_LINE_MAX[ \t]+(\d+)", re.M)
_INTEGER = re.compile(r"-?\d+")
_RANGE = {"U32": (0, 1 << 32), "U64": (0, 1 << 64), "INT": (-(1 << 31), 1 << 31), "BOOL": (0, 2)}  # [lo, hi)


class ProtocolError(RuntimeError):
    """A value, line or report that is not the protocol's (one line, naming what)."""


@dataclass(frozen=True)
class Field:
    """One field of a list of protocol.h: its name and its type."""

    name: str
    type: str

    def show(self, value: object) -> str:
        """`value` as the program reads it (ProtocolError if it is not one of the field's type)."""
        if self.type in _RANGE:
            lo, hi = _RANGE[self.type]
            if isinstance(value, SupportsIndex) and lo <= operator.index(value) < hi:
                return str(operator.index(value))
        elif self.type == "F64":
            if isinstance(value, SupportsFloat):
                return repr(float(value))
        elif str(value) and not any(c.isspace() for c in str(value)):
            return str(value)  # one word
        raise ProtocolError(f"{self.name}={value!r} is not a {self.type} of {HEADER.name}")

    def read(self, text: str) -> Any:
        """The value the program wrote as `text`."""
        if self.type in ("U32", "U64", "INT", "BOOL") and _INTEGER.fullmatch(text):
            return bool(int(text)) if self.type == "BOOL" else int(text)
        if self.type == "F64":
            try:
                return float(text)
            except ValueError:
                pass
        elif self.type in ("STR", "CC", "FAULT"):
            return text
        raise ProtocolError(f"{self.name}={text} is not a {self.type}")


@dataclass(frozen=True)
class Protocol:
    """The lists of protocol.h."""

    options: tuple[Field, ...]  # argv's NAME=VALUE options
    ccs: tuple[str, ...]  # the congestion controllers' names (cc=)
    faults: tuple[str, ...]  # the sender's faults' names (fault=)
    flow: tuple[Field, ...]  # stdin: one line per flow
    sent: tuple[Field, ...]  # stdout: a FLOW line's fields
    sent_transport: tuple[Field, ...]  # ... and a transport run's
    lateness: tuple[Field, ...]  # stdout, transport runs: the LATENESS line
    line_max: int  # bytes of a stdin line, newline and terminator included


def parse_header(text: str) -> Protocol:
    """The lists of a protocol.h text (ProtocolError if one is missing, names a field twice or gives one a type
    of no TYPES)."""
    code = _COMMENT.sub(" ", text)
    lists = {m.group(1): _ENTRY.findall(m.group(2).replace("\\\n", " ")) for m in _MACRO.finditer(code)}

    def entries(macro: str) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = lists.get(macro, [])
        if not found or len({name for name, _ in found}) != len(found):
            raise ProtocolError(f"{HEADER.name}: no list {macro}(X), or one that names a field twice")
        return found

    def fields(macro: str) -> tuple[Field, ...]:
        bad = [f"{name} ({kind})" for name, kind in entries(macro) if kind not in TYPES]
        if bad:
            raise ProtocolError(f"{HEADER.name}: {macro}'s fields {', '.join(bad)} have no type of {TYPES}")
        return tuple(Field(name, kind) for name, kind in entries(macro))

    line_max = _LINE_MAX.search(code)
    if line_max is None:
        raise ProtocolError(f"{HEADER.name} has no SENDER_LINE_MAX")
    return Protocol(
        options=fields("SENDER_OPTIONS"),
        ccs=tuple(name for name, _ in entries("SENDER_CCS")),  # the second column: a C value, not a type
        faults=tuple(name for name, _ in entries("SENDER_FAULTS")),
        flow=fields("SENDER_FLOW"),
        sent=fields("SENDER_SENT"),
        sent_transport=fields("SENDER_SENT_TRANSPORT"),
        lateness=fields("SENDER_LATENESS"),
        line_max=int(line_max.group(1)),
    )


@cache
def protocol() -> Protocol:
    """protocol.h's lists (read once)."""
    return parse_header(HEADER.read_text())


def _line(fields: Sequence[Field], values: Mapping[str, object], what: str) -> str:
    names = [f.name for f in fields]
    missing, extra = [n for n in names if n not in values], sorted(set(values) - set(names))
    if missing or extra:
        raise ProtocolError(f"{what}: missing {missing}, not in {HEADER.name}: {extra}")
    return " ".join(f"{f.name}={f.show(values[f.name])}" for f in fields)


def flow_line(values: Mapping[str, object]) -> str:
    """One flow's stdin line (without its newline): every field of SENDER_FLOW, by name."""
    line = _line(protocol().flow, values, "a flow line")
    if len(line.encode()) > protocol().line_max - 2:
        raise ProtocolError(f"a flow line of {len(line.encode())} bytes, beyond {protocol().line_max - 2}: {line}")
    return line


def option_args(values: Mapping[str, object]) -> list[str]:
    """argv's NAME=VALUE options for `values`, each an option of SENDER_OPTIONS."""
    by_name = {f.name: f for f in protocol().options}
    unknown = sorted(set(values) - set(by_name))
    if unknown:
        raise ProtocolError(f"options not in {HEADER.name}'s SENDER_OPTIONS: {unknown}")
    return [f"{name}={by_name[name].show(v)}" for name, v in values.items()]


def check_option_args(args: Sequence[str]) -> list[str]:
    """`args` (NAME=VALUE texts made elsewhere: traffic.transport.Transport.options), each naming an option of
    SENDER_OPTIONS once; returned as they are."""
    names = [a.partition("=")[0] for a in args]
    known = {f.name for f in protocol().options}
    bad = [a for a, n in zip(args, names, strict=True) if "=" not in a or n not in known or names.count(n) > 1]
    if bad:
        raise ProtocolError(f"options not NAME=VALUE of {HEADER.name}'s SENDER_OPTIONS, or given twice: {bad}")
    return list(args)


def _record(fields: Sequence[Field], tokens: Sequence[str], line: str) -> dict[str, Any]:
    by_name = {f.name: f for f in fields}
    out: dict[str, Any] = {}
    for token in tokens:
        name, eq, text = token.partition("=")
        if not eq or name not in by_name or name in out:
            raise ProtocolError(f"{token!r} is not a field of the line, or is given twice: {line!r}")
        out[name] = by_name[name].read(text)
    missing = [n for n in by_name if n not in out]
    if missing:
        raise ProtocolError(f"no {', '.join(missing)} in {line!r}")
    return out


@dataclass(frozen=True)
class Report:
    """What the program answered: each flow's fields by name, and a transport run's lateness."""

    flows: list[dict[str, Any]]
    lateness: dict[str, Any] | None


def read_report(text: str, transport: bool) -> Report:
    """The program's stdout: FLOW lines (SENDER_SENT's fields, and SENDER_SENT_TRANSPORT's in a `transport`
    run) and, in a transport run, one LATENESS line; every field by name (ProtocolError naming the line)."""
    p = protocol()
    flows, lateness = [], None
    for line in text.splitlines():
        tag, *tokens = line.split() or [""]
        if tag == "FLOW":
            flows.append(_record(p.sent + (p.sent_transport if transport else ()), tokens, line))
        elif tag == "LATENESS" and transport and lateness is None:
            lateness = _record(p.lateness, tokens, line)
        else:
            raise ProtocolError(f"not a line of the report: {line!r}")
    if transport and lateness is None:
        raise ProtocolError("a transport run's report without its LATENESS line")
    return Report(flows, lateness)
