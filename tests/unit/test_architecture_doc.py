"""docs/architecture.md's folder tree ("Layers and folder layout") against the files as they are when the test
runs: every path the tree names exists, every package of testbed/ and traffic/ and every module of testbed/ is
in the tree, and the layer number it gives each of testbed's layers follows import-linter's layers contract
(pyproject.toml), top layer highest.

The tree is the section's fenced block: one entry a line, its first word the entry's name (a folder ends with
a slash), its indentation the folder it is in (the nearest folder line above it that is indented less)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
SECTION = "## Layers and folder layout"


def tree_block(text: str) -> list[str]:
    """The lines of the first fenced block of the section."""
    _, found, section = text.partition(SECTION)
    assert found, f"{DOC.relative_to(ROOT)} has no section {SECTION!r}"
    section = section.split("\n## ", 1)[0]
    parts = section.split("```")
    assert len(parts) >= 3, f"the section {SECTION!r} has no fenced block"
    return parts[1].splitlines()[1:]  # after the opening fence's line (and its language, if any)


def tree_entries(lines: list[str]) -> dict[str, str]:
    """Every entry's path from the project's root (folders with a trailing slash) -> its description."""
    entries: dict[str, str] = {}
    folders: list[tuple[int, str]] = []  # (indentation, path) of the folders enclosing the current line
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        name, _, description = line.strip().partition(" ")
        while folders and folders[-1][0] >= indent:
            folders.pop()
        path = (folders[-1][1] if folders else "") + name
        entries[path] = description.strip()
        if name.endswith("/"):
            folders.append((indent, path))
    return entries


def documented() -> dict[str, str]:
    return tree_entries(tree_block(DOC.read_text()))


def on_disk() -> set[str]:
    """Every package of testbed/ and traffic/ (as a folder path) and every module file of testbed/ but the
    packages' __init__.py (the package's line is theirs)."""
    out: set[str] = set()
    for top in ("testbed", "traffic"):
        for init in (ROOT / top).rglob("__init__.py"):
            if "__pycache__" not in init.parts:
                out.add(init.parent.relative_to(ROOT).as_posix() + "/")
    for module in (ROOT / "testbed").rglob("*.py"):
        if "__pycache__" not in module.parts and module.name != "__init__.py":
            out.add(module.relative_to(ROOT).as_posix())
    return out


def test_the_doc_tree_names_the_files_there_are() -> None:
    entries = documented()
    not_there = sorted(p for p in entries if not ((ROOT / p).is_dir() if p.endswith("/") else (ROOT / p).is_file()))
    not_named = sorted(on_disk() - entries.keys())
    assert not not_there and not not_named, (
        f"{DOC.relative_to(ROOT)}'s tree ({SECTION!r}) and the files disagree:\n"
        f"  in the doc, not on disk: {', '.join(not_there) or 'none'}\n"
        f"  on disk, not in the doc: {', '.join(not_named) or 'none'}"
    )


def test_the_parser_reads_folders_from_the_indentation() -> None:
    lines = ["a/            top", "  b/          inner", "    c.py      in b", "  d.py        in a", "e.py  top"]
    assert tree_entries(lines) == {"a/": "top", "a/b/": "inner", "a/b/c.py": "in b", "a/d.py": "in a", "e.py": "top"}


def layers() -> list[str]:
    """import-linter's layers contract, top layer first (testbed.cli, testbed.api, ...)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    assert len(contracts) == 1, "pyproject.toml has one layers contract"
    return list(contracts[0]["layers"])


def test_the_doc_numbers_the_layers_as_the_contract_orders_them() -> None:
    entries = documented()
    order = layers()
    wrong = []
    for i, module in enumerate(order):
        want = len(order) - i
        base = module.replace(".", "/")
        path = next((p for p in (base + "/", base + ".py") if p in entries), None)
        if path is None:
            wrong.append(f"{module}: not in the tree")
            continue
        said = re.findall(r"\blayer (\d+)\b", entries[path])
        if said != [str(want)]:
            wrong.append(
                f"{path}: says {'layer ' + ', '.join(said) if said else 'no layer'}, the contract: layer {want}"
            )
    assert not wrong, (
        f"{DOC.relative_to(ROOT)}'s layer numbers and pyproject.toml's layers contract "
        f"({', '.join(order)}, top first) disagree:\n  " + "\n  ".join(wrong)
    )
