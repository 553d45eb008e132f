"""How a run option is declared, once: a field of `testbed.run.params.RunParams` made with `option(...)`.

Everything else reads that declaration: the command line of `run`, `compare`, `sweep` and `paper`
(testbed.cli.options), the API's keyword arguments (testbed.api), the sweep matrix's dimensions
(testbed.run.sweep), the run's manifest (`record`) and docs/cli.md. An option is named once, by its field:
`fan_in` is `--fan-in` on every command, `fan_in=` in the API, `fan_in` in sweep.json, the manifest and a
sweep row's `cell_fan_in` column. docs/adding-an-option.md walks through adding one.

    class RunParams:
        fan_in: int = option(2, "incast: senders per receiver", parse=positive_int)

`parse` turns the text the command line (or an API caller) gives into the value, raising ValueError with one
line; `show` turns a value back into that text (help defaults, cell names). `sweep` says what a sweep does
with the option: DIMENSION (a comma-separated list of values, one cell per value), FIXED (one value for every
cell: paths, JSON, pairs, switches) or NONE (not a sweep option: the pipe size rides on a scheme item such as
pofan:4). Options with `cli=False` are for the API and the tests only.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..topology.units import parse_int, parse_list, parse_size

METADATA_KEY = "testbed.option"


class _Same:
    """The command line's or a sweep's default is the field's own."""

    def __repr__(self) -> str:
        return "SAME"


SAME: Any = _Same()


class Sweep(enum.Enum):
    DIMENSION = "dimension"  # a list of values: one cell per value
    FIXED = "fixed"  # one value, the same in every cell
    NONE = "none"  # not a sweep option


@dataclass(frozen=True)
class Option:
    """One run option's declaration (the metadata of its RunParams field)."""

    help: str
    parse: Callable[[str], Any] | None = None  # text -> value (ValueError: one line); None: the field's type
    show: Callable[[Any], str] | None = None  # value -> text; None: str(value), labels, "a,b" for pairs
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    group: str = "run"  # the heading it is listed under in --help and docs/cli.md
    sweep: Sweep | None = None  # None: DIMENSION, or FIXED for a switch (bool) or a pair
    cli: bool = True  # False: the API's and the tests' only
    cli_default: Any = SAME  # the command line's default where it differs from the field's
    sweep_parse: Callable[[str], tuple[Any, ...]] | None = None  # a sweep's whole list; None: parse per item
    sweep_default: Any = SAME  # a sweep's (and compare's) value(s) where they differ from the field's
    sweep_items: bool = False  # a sweep's values are text items sweep_parse checks (pofan:4, moe-eplb)


def option(default: Any = dataclasses.MISSING, help: str = "", **kw: Any) -> Any:
    """A RunParams field declared as a run option (`default` MISSING: a required one)."""
    meta = {METADATA_KEY: Option(help, **kw)}
    if default is dataclasses.MISSING:
        return field(metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Spec:
    """An option as the layers read it: its field's name, type, default and declaration."""

    name: str
    types: tuple[type, ...]  # the Python types a value may have (NoneType for an optional one)
    default: Any  # dataclasses.MISSING: required
    decl: Option

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def required(self) -> bool:
        return self.default is dataclasses.MISSING

    @property
    def is_bool(self) -> bool:
        return bool in self.types

    @property
    def optional(self) -> bool:
        return type(None) in self.types

    @property
    def sweep(self) -> Sweep:
        if self.decl.sweep is not None:
            return self.decl.sweep
        return Sweep.FIXED if self.is_bool or tuple in self.types else Sweep.DIMENSION

    @property
    def cli_default(self) -> Any:
        return self.default if self.decl.cli_default is SAME else self.decl.cli_default

    @property
    def sweep_default(self) -> Any:
        return self.default if self.decl.sweep_default is SAME else self.decl.sweep_default

    def parse(self, text: str) -> Any:
        """The value of `text` as the command line gives it (ValueError: one line)."""
        if self.decl.parse is not None:
            return self.decl.parse(text)
        base = next((t for t in self.types if t is not type(None)), str)
        if base is bool:
            return parse_bool(text)
        if base is int:
            return parse_int(text)
        if base is float:
            return parse_float(text)
        if base is str:
            if self.decl.choices is not None and text not in self.decl.choices:
                raise ValueError(f"{self.flag}: {text!r} is not one of {', '.join(self.decl.choices)}")
            return text
        raise TypeError(f"run option {self.name}: a {base.__name__} needs its own parse")

    def parse_list(self, text: str) -> tuple[Any, ...]:
        """A sweep's comma-separated values of this option."""
        if self.decl.sweep_parse is not None:
            return self.decl.sweep_parse(text)
        return parse_list(text, self.parse, f"values of {self.flag}")

    def coerce(self, value: Any) -> Any:
        """A value as the API takes it (the value itself, or the text the command line takes) as the field
        holds it: text is parsed, a list becomes a tuple, a whole number where a float is wanted a float."""
        if value is None and self.optional:
            return None
        if isinstance(value, str) and (str not in self.types or self.decl.parse is not None):
            return self.parse(value)
        if isinstance(value, list):
            value = tuple(value)
        if isinstance(value, tuple) and tuple in self.types and self.decl.parse is not None:
            return self.parse(",".join(str(v) for v in value))  # a pair, checked as the command line's text
        if isinstance(value, bool) != self.is_bool:
            return self.parse(str(value))
        if float in self.types and isinstance(value, int):
            return float(value)
        if isinstance(value, self.types):
            return value
        return self.parse(str(value))

    def sweep_coerce(self, value: Any) -> Any:
        """One of a sweep's values as the matrix holds it (a text item, or as the field holds it)."""
        if self.decl.sweep_items:
            if not isinstance(value, str):
                raise ValueError(f"expected text, got {value!r}")
            return value
        return self.coerce(value)

    def show(self, value: Any) -> str:
        """A value as the command line writes it."""
        if self.decl.show is not None:
            return self.decl.show(value)
        return show_value(value)

    def to_json(self, value: Any) -> Any:
        """A value as sweep.json and the manifest hold it: numbers, text, booleans, lists, null."""
        if value is None or (isinstance(value, (bool, int, float, str)) and not isinstance(value, enum.Enum)):
            return value
        if isinstance(value, tuple):
            return [self.to_json(v) for v in value]
        return self.show(value)

    def from_json(self, value: Any) -> Any:
        """The inverse of to_json."""
        return self.coerce(value)


def show_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return ",".join(show_value(v) for v in value)
    label = getattr(value, "label", None)
    return str(label) if label is not None else str(value)


def _types(hint: Any) -> tuple[type, ...]:
    """The runtime types of a resolved annotation: int | None -> (int, NoneType), tuple[float, float] ->
    (tuple,)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return tuple(t for a in typing.get_args(hint) for t in _types(a))
    if origin is not None:
        return (origin,)
    return (hint,) if isinstance(hint, type) else (object,)


@cache
def specs_of(cls: type) -> tuple[Spec, ...]:
    """Every option of a RunParams class, in field order."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        decl = f.metadata.get(METADATA_KEY)
        if decl is None:
            raise TypeError(f"{cls.__name__}.{f.name} is not declared with option(...)")
        default = f.default if f.default is not dataclasses.MISSING else dataclasses.MISSING
        out.append(Spec(f.name, _types(hints[f.name]), default, decl))
    return tuple(out)


def by_name(cls: type) -> dict[str, Spec]:
    return {s.name: s for s in specs_of(cls)}


def coerce_all(cls: type, values: Mapping[str, Any], what: str = "option") -> dict[str, Any]:
    """`values` as the fields of `cls` hold them; an unknown name or a bad value is a ValueError of one line."""
    specs = by_name(cls)
    out = {}
    for name, v in values.items():
        spec = specs.get(name)
        if spec is None:
            raise ValueError(f"unknown {what} {name!r} (the options are {', '.join(specs)})")
        try:
            out[name] = spec.coerce(v)
        except ValueError as e:
            raise ValueError(f"{spec.flag}: {e}" if not str(e).startswith("--") else str(e)) from None
    return out


def record(params: Any) -> dict[str, Any]:
    """Every option of a RunParams as the manifest holds it (JSON values, by field name)."""
    cls: type = type(params)
    return {s.name: s.to_json(getattr(params, s.name)) for s in specs_of(cls)}


def iter_group(specs: tuple[Spec, ...]) -> Iterator[tuple[str, list[Spec]]]:
    """Specs by their group, groups in the order they first appear."""
    groups: dict[str, list[Spec]] = {}
    for s in specs:
        groups.setdefault(s.decl.group, []).append(s)
    yield from groups.items()


# -- value types: text -> value, a ValueError of one line ----------------------------------------------
def parse_bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("1", "true", "yes", "on"):
        return True
    if t in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected on or off, got {text!r}")


def parse_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"expected a number, got {text!r}") from None


def parse_load(text: str) -> float:
    v = parse_float(text)
    if not 0 < v <= 1:
        raise ValueError(f"load must be in (0, 1], got {text}")
    return v


def positive_int(text: str) -> int:
    return parse_int(text, 1)


def nonnegative_int(text: str) -> int:
    return parse_int(text, 0)


def parse_float_pair(text: str) -> tuple[float, float]:
    """'LO,HI' as two numbers."""
    parts = text.split(",")
    if len(parts) != 2:
        raise ValueError(f"expected LO,HI (two numbers), got {text!r}")
    return parse_float(parts[0]), parse_float(parts[1])


def parse_size_pair(text: str) -> tuple[int, int]:
    """'LO,HI' as two sizes (KB, MB; 0 allowed)."""
    parts = text.split(",")
    if len(parts) != 2:
        raise ValueError(f"expected LO,HI (two sizes), got {text!r}")
    lo, hi = (0 if p.strip() == "0" else parse_size(p) for p in parts)
    return lo, hi
