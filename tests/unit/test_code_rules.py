"""Two rules a reader can count on, checked on the source: no call in testbed/ or traffic/ passes more than
six positional arguments (a seventh is a record to build by keyword; struct.pack and calls into C libraries
aside, whose order is their format's), and no function in testbed/ is longer than 80 lines (one job each;
a longer one is named steps)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_POSITIONAL = 6
MAX_LINES = 80
C_CALLS = {"pack", "pack_into", "unpack", "unpack_from"}  # struct's, by name
C_LIBRARIES = {"lib", "libc", "libbcc", "_lib", "_libc"}  # ctypes handles to C libraries


def _sources(*dirs: str) -> list[Path]:
    return sorted(p for d in dirs for p in (ROOT / d).rglob("*.py") if "__pycache__" not in p.parts)


def _exempt(call: ast.Call) -> bool:
    f = call.func
    if isinstance(f, ast.Attribute):
        if isinstance(f.value, ast.Name) and f.value.id == "struct" and f.attr in C_CALLS:
            return True
        if isinstance(f.value, ast.Name) and f.value.id in C_LIBRARIES:
            return True
    return False


def long_calls(paths: list[Path], root: Path = ROOT) -> list[str]:
    out = []
    for p in paths:
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, ast.Call) and not _exempt(node):
                n = sum(1 for a in node.args if not isinstance(a, ast.Starred))
                if n > MAX_POSITIONAL:
                    out.append(f"{p.relative_to(root)}:{node.lineno} {ast.unparse(node.func)}() with {n}")
    return out


def long_functions(paths: list[Path], root: Path = ROOT) -> list[str]:
    out = []
    for p in paths:
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_LINES:
                    out.append(f"{p.relative_to(root)}:{node.lineno} {node.name}() is {n} lines")
    return out


def test_no_call_passes_more_than_six_positional_arguments() -> None:
    found = long_calls(_sources("testbed", "traffic"))
    assert not found, "build these by keyword:\n" + "\n".join(found)


def test_no_function_is_longer_than_80_lines() -> None:
    found = long_functions(_sources("testbed"))
    assert not found, "split these into named steps:\n" + "\n".join(found)


def test_the_rules_find_what_they_look_for(tmp_path: Path) -> None:
    """The checks are not vacuous: a seven-argument call and an 81-line function are found, struct.pack not."""
    bad = tmp_path / "bad.py"
    body = "\n".join(f"    x{i} = {i}" for i in range(80))
    bad.write_text(
        f"import struct\nf(1, 2, 3, 4, 5, 6, 7)\nstruct.pack('!7B', 1, 2, 3, 4, 5, 6, 7)\ndef g():\n{body}\n"
    )
    calls = [c.split(" ", 1)[1] for c in long_calls([bad], tmp_path)]
    funcs = [c.split(" ", 1)[1] for c in long_functions([bad], tmp_path)]
    assert calls == ["f() with 7"] and funcs == ["g() is 81 lines"]
