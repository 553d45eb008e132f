"""The run options on the command line, made from their one declaration (testbed.run.options): `--fan-in` of
`testbed run`, `compare`, `sweep` and `paper` is the field `RunParams.fan_in`, with its type, default and
help. Nothing here names an option but the plural spellings a sweep also accepts (`--sizes` for `--size`).

    run      every option, one value each (--workload required)
    compare  one value each, but --scheme and --seed take lists (schemes x seeds); NONE ones are not offered
    sweep    a DIMENSION option takes a comma-separated list, a FIXED one a value; NONE ones are not offered
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import Any

from ..run import params
from ..run.options import Spec, Sweep, specs_of

RUN, COMPARE, SWEEP = "run", "compare", "sweep"
LISTS = {COMPARE: ("scheme", "seed")}  # compare's options that take lists
ALIASES = {  # the plural spellings a sweep (and compare) also accepts
    "scheme": "--schemes",
    "workload": "--workloads",
    "size": "--sizes",
    "load": "--loads",
    "payload": "--payloads",
    "seed": "--seeds",
    "cc": "--ccs",
    "mix": "--mixes",
}
GROUP_TITLES = {"run": "run options"}


def specs() -> tuple[Spec, ...]:
    """The command line's options (read from RunParams when a parser is made: a test may add one)."""
    return tuple(s for s in specs_of(params.RunParams) if s.decl.cli)


def spec(name: str) -> Spec:
    """One run option's declaration."""
    return next(s for s in specs() if s.name == name)


def argtype(parse: Callable[[str], Any], name: str) -> Callable[[str], Any]:
    """argparse's type for a parse function: its ValueError becomes the one-line usage error."""

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    convert.__name__ = name
    return convert


def _lists(kind: str, s: Spec) -> bool:
    """Whether this command takes the option as a list."""
    if kind == SWEEP:
        return s.sweep is Sweep.DIMENSION
    return s.name in LISTS.get(kind, ())


def _default(kind: str, s: Spec) -> Any:
    if kind == RUN:
        return None if s.required else s.cli_default
    d = s.sweep_default
    if _lists(kind, s):
        return s.parse_list(d) if isinstance(d, str) else (d,)
    return d


def _help(kind: str, s: Spec, default: Any) -> str:
    text = s.decl.help
    if _lists(kind, s):
        text += "; comma-separated" + (f" (also {ALIASES[s.name]})" if s.name in ALIASES else "")
    values = default if _lists(kind, s) else (default,)
    shown = ",".join(s.show(v) for v in values if v is not None and v is not False)
    if shown:
        text += f" (default {shown})"
    return text.replace("%", "%%")


def add_option(group: Any, kind: str, s: Spec) -> None:
    """One option on a parser (or an argument group of one)."""
    default = _default(kind, s)
    flags = [s.flag]
    if kind != RUN and s.name in ALIASES:
        flags.append(ALIASES[s.name])
    kw: dict[str, Any] = {"dest": s.name, "default": default, "help": _help(kind, s, default)}
    if s.is_bool and not _lists(kind, s):
        kw["action"] = argparse.BooleanOptionalAction if s.default else "store_true"
        if s.default:
            kw["help"] = s.decl.help + " (default on)"
    else:
        parse = s.parse_list if _lists(kind, s) else s.parse
        kw["type"] = argtype(parse, s.name)
        kw["metavar"] = s.decl.metavar or s.name.upper()
        if kind == RUN and s.required and s.name == "workload":
            kw["required"] = True
        if s.decl.choices and not _lists(kind, s):
            kw["help"] += f" (one of {', '.join(s.decl.choices)})"
    group.add_argument(*flags, **kw)


def add(parser: argparse.ArgumentParser, kind: str, only: Iterable[str] | None = None) -> None:
    """The run options on a command's parser, in argument groups by topic; `only` names a subset."""
    keep = set(only) if only is not None else None
    groups: dict[str, Any] = {}
    for s in specs():
        if keep is not None and s.name not in keep:
            continue
        if kind != RUN and s.sweep is Sweep.NONE:
            continue  # e.g. the pipe size: a sweep's and compare's scheme items carry it (pofan:4)
        title = s.decl.group
        if title not in groups:
            groups[title] = parser.add_argument_group(f"{title} options")
        add_option(groups[title], kind, s)


def values(a: argparse.Namespace, only: Iterable[str] | None = None) -> dict[str, Any]:
    """The run options a parsed command line holds, by name (what `add` put there)."""
    keep = set(only) if only is not None else None
    return {s.name: getattr(a, s.name) for s in specs() if hasattr(a, s.name) and (keep is None or s.name in keep)}
