"""docs/cli.md is the command reference generated from the argument parsers (testbed/cli/docs.py): it must be
what they generate now, so that no flag is documented that the code does not take, or the other way round."""

from __future__ import annotations

from pathlib import Path

from testbed.cli import build_parser, docs

ROOT = Path(__file__).resolve().parents[2]


def test_cli_reference_is_generated_from_the_parsers() -> None:
    page = (ROOT / "docs" / "cli.md").read_text()
    assert page == docs.render(), (
        "docs/cli.md differs from the parsers: regenerate it with `.venv/bin/python -m testbed.cli.docs > docs/cli.md`"
    )


def test_every_command_and_option_is_on_the_page() -> None:
    page = docs.render()
    parser = build_parser()
    for name, _, sub in docs._subcommands(parser):
        assert f"## `testbed {name}`" in page
        for action in sub._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}`" in page, (name, flag)
