"""docs/cli.md, generated from the argument parsers themselves, so that the reference cannot drift from the
code: `python -m testbed.cli.docs > docs/cli.md` writes it, and tests/unit/test_cli_docs.py fails when the page
and the parsers disagree."""

from __future__ import annotations

import argparse
import os
import sys

HEADER = """# Command reference

Every command of `testbed` (`sudo ./scripts/testbed COMMAND ...`), its usage and its options, as the
argument parsers define them. This page is generated: `.venv/bin/python -m testbed.cli.docs > docs/cli.md`
(a test fails when it and the code disagree). Sizes take B, KB, MB, GB (powers of 1024), rates bit, kbit,
mbit, gbit or auto, durations ns, us, ms or s, seeds N, A-B or lists of either
([units](../testbed/topology/units.py)). Bad input gets one line on stderr and exit status 2 before any kernel
object is made.
"""
WIDTH = "100"


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each sub-command, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return [
                (name, helps.get(name, ""), p)
                for name, p in action.choices.items()
                if helps.get(name) != argparse.SUPPRESS
            ]  # hidden ones (the control daemon) are internal
    return []


def _default(action: argparse.Action) -> str:
    d = action.default
    if d is None or d is False or d is argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
        return ""
    if "(default " in (action.help or ""):  # the help says it, as the command line writes it
        return ""
    if action.dest == "rate" and d == 0:  # args.AUTO_RATE
        return "auto"
    if isinstance(d, (tuple, list)):
        return ",".join(str(x) for x in d)
    return str(getattr(d, "label", d))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _options(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        flags = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.dest.upper()}`"
        help_text = (action.help or "").replace("%%", "%")
        if action.choices is not None and not isinstance(action.choices, dict):
            help_text += f" (one of {', '.join(str(c) for c in action.choices)})"
        rows.append(f"| {flags} | {_cell(_default(action))} | {_cell(help_text)} |")
    return ["| option | default | meaning |", "|---|---|---|", *rows] if rows else []


def _section(name: str, help_text: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    out = [f"{'#' * level} `{name}`", ""]
    if help_text:
        out += [help_text[0].upper() + help_text[1:] + ("" if help_text.endswith(".") else "."), ""]
    out += ["```", parser.format_usage().strip().removeprefix("usage: "), "```", ""]
    opts = _options(parser)
    if opts:
        out += [*opts, ""]
    for sub_name, sub_help, sub in _subcommands(parser):
        out += _section(f"{name} {sub_name}", sub_help, sub, level + 1)
    return out


def render(parser: argparse.ArgumentParser | None = None) -> str:
    """The whole page for `parser` (default: testbed's own), at a fixed width so that it does not depend on
    the terminal."""
    from . import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parser = parser or build_parser()
        commands = _subcommands(parser)
        out = [HEADER, "| command | what it does |", "|---|---|"]
        out += [f"| [`{n}`](#testbed-{n}) | {_cell(h)} |" for n, h, _ in commands]
        out.append("")
        for name, help_text, sub in commands:
            out += _section(f"testbed {name}", help_text, sub, 2)
        return "\n".join(out).rstrip() + "\n"
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def main(argv: list[str] | None = None) -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["render"]
