"""The C-Python contract's constants, checked whole against the C text.

The structs the programs share with Python are compared with the compiled program's own layout
(compile.check_mirrors). This module does the same for the numbers: every `#define` of the contract's headers
(ebpf/include/shared.h and the headers it pulls in, one per concern) is either mirrored in Python (MIRRORS,
ABOVE) or listed as C-only with the reason (C_ONLY), and every mirrored number, there or in another C file
(CONGA's header fields in lb_conga.h, the sender's header sizes in traffic/sender.h, ...), must equal its
Python copy. `check()` runs before every load of the switch program (compiled or from the program cache), so a
drifted constant is a LayoutError of one line naming it; tests/unit/test_header_contract.py runs the same check
without root, and also checks the copies in the layers above this one (ABOVE), which the data plane does not
import.

The C side is read from the sources' text: `#define NAME value` whose value is an integer expression of
literals and other such names (`(1 << REPS_DELAY_LOG2)`, `0x9E3779B1u`); a macro with arguments or one of a
compile-time flag has no value here. A Python side is a dotted name (a module, then attributes, as
testbed.models.schemes.Scheme.REPS.host_lb) or a small expression of them (`len(...)`, `<<`, `+`).
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ebpf

from .maps import LayoutError

ROOT = ebpf.DIR.parent
CONTRACT_HEADER = "shared.h"  # includes the headers of the contract, and nothing else

_PM = "testbed.dataplane.maps"
_DEC = "testbed.models.decisions"
_SAMPLED = "testbed.models.sampled"
_HOST = "testbed.models.host"
_PKT = "traffic.packet"
_SCHEME = "testbed.models.schemes.Scheme"


# A define of the contract's headers whose name starts with one of these is mirrored by the Python name the
# pattern gives ({name}: the define's name, {s}: its name after the prefix), unless MIRRORS names it.
FAMILIES: dict[str, str] = {
    "LEVEL_": "testbed.topology.Level.{s}",  # topology.h
    "SCHEME_": _SCHEME + ".{s}",  # schemes.h
    "HOST_LB_": _SCHEME + ".{s}.host_lb",
    "CLASS_": _DEC + ".{name}",  # wire.h
    "LABEL_": _DEC + ".{name}",
    "HLB_": _PM + ".{name}",  # counters.h
    "CNT_": _PM + ".{name}",
    "RX_": _PM + ".{name}",
    "ECN_": _PM + ".{name}",  # run.h
    "LB_": _SAMPLED + ".{name}",  # sampled.h
    "DRILL_": _SAMPLED + ".{name}",
}

# C name => the Python expressions that must equal it: the defines no family covers, and the ones of other C
# files that Python mirrors. Checked on every load, so only modules the data plane may import (its own, the
# models, the topology, traffic).
MIRRORS: dict[str, tuple[str, ...]] = {
    # schemes.h
    "HOST_LB_NONE": (f"{_SCHEME}.ECMP.host_lb",),  # a switch scheme's: none
    "PIPES_PER_CPU": ("testbed.models.schemes.PIPES_PER_CPU",),
    "WOFAN_ROUNDS": (f"{_DEC}.WOFAN_ROUNDS",),
    "AR_LEVELS": (f"len({_DEC}.AR_PERCENTS)",),
    # wire.h
    "ROCE_UDP_PORT": (f"{_PKT}.ROCE_PORT",),
    "ACK_FRAME_BYTES": (f"{_PKT}.ACK_FRAME_BYTES",),
    "DATA_PAYLOAD_OFF": (f"{_PKT}.ETH + {_PKT}.IPV4 + {_PKT}.UDP + {_PKT}.BTH",),
    "ACK_ECHO_OFF": (f"{_PKT}.ETH + {_PKT}.IPV4 + {_PKT}.UDP + {_PKT}.BTH + {_PKT}.AETH",),
    "N_CLASSES": (f"{_DEC}.N_CLASSES",),
    "SMALL_MAX_BYTES": (f"{_DEC}.SMALL_MAX_BYTES",),
    # counters.h
    "HLB_COUNTERS": (f"{_PM}.HOST_LB_COUNTERS", f"len({_PM}.HOST_LB_COUNTER_NAMES)"),
    "N_COUNTERS": (f"len({_PM}.COUNTER_NAMES)",),
    # run.h
    "ACK_EVENT_PAGES": (f"{_PM}.ACK_EVENT_PAGES", "traffic.transport.RING_BYTES // 4096"),
    # reps.h
    "REPS_SLOTS": (f"{_HOST}.REPS_SLOTS",),
    "REPS_HEAD_SHIFT": (f"{_HOST}._HEAD_SHIFT",),
    "REPS_COUNT_SHIFT": (f"{_HOST}._COUNT_SHIFT",),
    "REPS_ACKED": (f"1 << {_HOST}._ACKED_SHIFT",),
    "PATH_CLASSES": (f"{_PM}.PATH_CLASSES",),
    "REPS_DELAY_SLOTS": (f"{_PM}.REPS_DELAY_SLOTS",),
    # sampled.h
    "CONGA_FB_SLOTS": (f"{_PM}.CONGA_FB_SLOTS",),
    # the other C files' numbers that Python mirrors
    "CONGA_TAG_SHIFT": (f"{_SAMPLED}.CONGA_TAG_SHIFT",),  # lb_conga.h
    "CONGA_CE_SHIFT": (f"{_SAMPLED}.CONGA_CE_SHIFT",),
    "CONGA_FB_SHIFT": (f"{_SAMPLED}.CONGA_FB_SHIFT",),
    "ECMP_MULT": (f"{_DEC}._ECMP_MULT",),  # lb_ecmp.h
    "IPPROTO_UDP": ("testbed.models.ideal.IPPROTO_UDP",),  # parse.h
    "OPCODE_RC_ACK": (f"{_PKT}.OPCODE_RC_ACK",),  # ack.h
    "QUEUE_MAX_TRIES": ("testbed.dataplane.compile.QUEUE_MAX_TRIES",),  # queue.h
    "BTH_LEN": (f"{_PKT}.BTH",),  # traffic/sender.h
    "ICRC_LEN": (f"{_PKT}.ICRC",),
}

# C name => its copies in the layers above the data plane, which it must not import: checked by
# tests/unit/test_header_contract.py only.
ABOVE: dict[str, tuple[str, ...]] = {
    "ACK_PRIORITY": ("testbed.fabric.netlink.PRIO_MAJOR << 16 | testbed.fabric.netlink.ACK_CLASS",),  # wire.h
    **{n: (f"testbed.fabric.qdisc_timers.{n}",) for n in ("TL_FIRED", "TL_SUM_NS", "TL_MAX_NS", "TL_OVER")},  # timers.c
}

# Numbers of the contract's headers that no Python code needs, and why.
C_ONLY: dict[str, str] = {
    "REPS_DELAY_LOG2": "REPS_DELAY_SLOTS's log2, for the delay lines' generations; Python mirrors REPS_DELAY_SLOTS",
    "REPS_DRAIN_MAX": "how much of a delay line one packet drains: the kernel's own (tests/system checks it)",
    "REPS_EXPLORE_PKTS": "packets a connection explores after freezing: the kernel's own (tests/system checks it)",
}


# -- the C side ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Define:
    """One `#define NAME value`: where, its text, and its integer value (None: not an integer constant here)."""

    name: str
    file: str  # relative to the source tree
    text: str
    value: int | None


_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])[ \t]*(.*)$", re.M)
_INT_SUFFIX = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b")
_OPS: dict[type, Any] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitXor: lambda a, b: a ^ b,
}


def strip_comments(text: str) -> str:
    """C text without its comments, each replaced by as many newlines as it spanned (lines keep their numbers)."""
    return _COMMENT.sub(lambda m: "\n" * m.group().count("\n") or " ", text)


def c_value(text: str, known: dict[str, int | None]) -> int | None:
    """The integer a define's replacement text stands for: literals (suffixes dropped), other known defines,
    parentheses and + - * << >> | & ^; None for anything else (a cast, a macro, a compile-time flag)."""
    src = _INT_SUFFIX.sub(r"\1", text.strip()).replace("/", "//")
    if not src:
        return None
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError:
        return None

    def ev(node: ast.AST) -> int | None:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            return known.get(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = ev(node.operand)
            return None if v is None else -v
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            a, b = ev(node.left), ev(node.right)
            return None if a is None or b is None else int(_OPS[type(node.op)](a, b))
        return None

    return ev(tree)


def parse_defines(text: str, file: str = "") -> list[Define]:
    """The object-like `#define`s of one C file, in order, each valued with the ones before it."""
    out: list[Define] = []
    known: dict[str, int | None] = {}
    for m in _DEFINE.finditer(strip_comments(text)):
        name, body = m.group(1), m.group(2).strip()
        value = c_value(body, known)
        known[name] = value
        out.append(Define(name, file, body, value))
    return out


def c_files(root: Path = ROOT) -> list[Path]:
    """Every C file of the contract's two sides: the data plane's sources and headers and the senders'."""
    return sorted(
        [
            *(root / "ebpf" / "include").glob("*.h"),
            *(root / "ebpf").glob("*.c"),
            *(root / "traffic").glob("*.h"),
            *(root / "traffic").glob("*.c"),
        ]
    )


def contract_headers(root: Path = ROOT) -> list[Path]:
    """The headers shared.h pulls in: the contract's, whose every #define is accounted for."""
    inc = root / "ebpf" / "include"
    return [inc / n for n in re.findall(r'^\s*#include "([^"]+)"', (inc / CONTRACT_HEADER).read_text(), re.M)]


@functools.cache
def _defines_of(path: Path, mtime_ns: int, root: Path) -> tuple[Define, ...]:
    return tuple(parse_defines(path.read_text(), str(path.relative_to(root))))


def c_defines(root: Path = ROOT) -> dict[str, list[Define]]:
    """Every define of c_files, by name (a name defined in two files has two entries). A define's value may
    use the defines of the headers the file includes, resolved across files."""
    by_name: dict[str, list[Define]] = {}
    for path in c_files(root):
        for d in _defines_of(path, path.stat().st_mtime_ns, root):
            by_name.setdefault(d.name, []).append(d)
    changed = True
    while changed:  # values that name another file's define, however deep (an include's)
        changed = False
        known = {n: ds[0].value for n, ds in by_name.items() if ds[0].value is not None}
        for n, ds in by_name.items():
            for i, d in enumerate(ds):
                if d.value is None and (v := c_value(d.text, {**known, n: None})) is not None:
                    ds[i] = Define(d.name, d.file, d.text, v)
                    changed = True
    return by_name


# -- the Python side ----------------------------------------------------------------------------------------
_DOTTED = re.compile(r"\b(?:testbed|traffic|tests)(?:\.\w+)+")


def resolve(dotted: str) -> Any:
    """The object a dotted name names: its longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            obj: Any = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name is not None and (name == e.name or name.startswith(e.name + ".")):
                continue  # `name` is no module: a shorter prefix may be, the rest its attributes
            raise  # a module that is there failed to import
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def py_value(expr: str) -> Any:
    """A mirror's value: `expr`'s dotted names resolved, then the expression evaluated (len, + - * // << |)."""
    names: dict[str, Any] = {}

    def sub(m: re.Match[str]) -> str:
        key = f"_v{len(names)}"
        names[key] = resolve(m.group())
        return key

    return eval(_DOTTED.sub(sub, expr), {"__builtins__": {}, "len": len}, names)


# -- the check ----------------------------------------------------------------------------------------------
def mirrors(root: Path = ROOT) -> dict[str, tuple[str, ...]]:
    """Every mirror checked on load: MIRRORS, and each define of the contract's headers that a family covers."""
    out = dict(MIRRORS)
    for path in contract_headers(root):
        for d in _defines_of(path, path.stat().st_mtime_ns, root):
            prefix = next((p for p in FAMILIES if d.name.startswith(p)), None)
            if prefix is not None and d.name not in out and d.name not in ABOVE and d.name not in C_ONLY:
                out[d.name] = (FAMILIES[prefix].format(name=d.name, s=d.name[len(prefix) :]),)
    return out


def unaccounted(root: Path = ROOT) -> list[str]:
    """The defines of the contract's headers that are neither mirrored (here or above) nor C-only."""
    known = set(mirrors(root)) | set(ABOVE) | set(C_ONLY)
    return [
        f"{d.name} of {d.file} has no Python mirror: add one to testbed/dataplane/contract.py "
        "(MIRRORS, or C_ONLY with the reason)"
        for path in contract_headers(root)
        for d in _defines_of(path, path.stat().st_mtime_ns, root)
        if d.name not in known
    ]


def mismatches(which: Mapping[str, tuple[str, ...]] | None = None, root: Path = ROOT) -> list[str]:
    """How the C text and its Python mirrors disagree, one entry per disagreement: a mirrored number that
    differs from its Python copy (or is not an integer constant, or is defined in two C files), a Python copy
    that cannot be read, and a define of the contract's headers that nothing accounts for. `which`: the mirrors
    to check, by default every mirror checked on load (and then the accounting too)."""
    defs = c_defines(root)
    out: list[str] = []
    for c, exprs in (mirrors(root) if which is None else which).items():
        found = defs.get(c, [])
        if not found:
            out.append(f"{c}: no #define of it in ebpf/ or traffic/")
            continue
        if len(found) > 1:
            out.append(f"{c}: defined {len(found)} times ({', '.join(d.file for d in found)}): keep one")
        d = found[0]
        if d.value is None:
            out.append(f"{c}: {d.file} defines it as `{d.text}`, not an integer constant")
            continue
        for expr in exprs:
            try:
                v = py_value(expr)
            except (ImportError, AttributeError, NameError, TypeError) as e:
                out.append(f"{c}: {expr} cannot be read ({type(e).__name__}: {e})")
                continue
            if not isinstance(v, int) or int(v) != d.value:
                out.append(f"{c} is {d.value} in {d.file}, {expr} is {v!r}")
    return out + (unaccounted(root) if which is None else [])


def check() -> None:
    """Before a load of the switch program: the constants as mirrored now against the C text, a LayoutError of
    one line naming the constants that drifted."""
    bad = mismatches()
    if bad:
        raise LayoutError(
            f"the C headers and their Python mirrors disagree: {'; '.join(bad[:3])}"
            + (f" (and {len(bad) - 3} more)" if len(bad) > 3 else "")
        )
