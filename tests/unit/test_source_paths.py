"""Every file and module that a comment or docstring under ebpf/, traffic/ and testbed/ names exists, so a
contract comment cannot go on naming a module that moved.

What counts as a name (in Python comments, docstrings and other string statements; in C comments):
- a path from the top of the source tree, `testbed/models/decisions.py`, `docs/api.md`, `ebpf/include/`
  (a `*` or `{a,b}` in it is a glob, which must match something);
- a dotted name that starts with a package of the tree, `testbed.models.decisions`, `traffic.packet`,
  `ebpf.INCLUDE`: its longest prefix that is a module or package, then attributes that module binds (the
  first of them at its top level, the second, when the first is a class, in the class's body), read from the
  source, not imported;
- a bare C or Python file name, `lb_conga.h`, `program_cache.py`: some file of the tree has it (EXTERNAL lists
  the files of other projects a comment cites).
"""

from __future__ import annotations

import ast
import functools
import glob
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("ebpf", "traffic", "testbed")
TOP = ("ebpf", "traffic", "testbed", "docs", "tests", "bench", "scripts", "examples")
PACKAGES = ("testbed", "traffic", "ebpf")
EXTERNAL = frozenset({"uec_mp.h"})  # uet-htsim's REPS

PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(TOP)})/[\w./*{{}},-]*[\w*}}])")
DOTTED = re.compile(rf"(?<![\w./-])((?:{'|'.join(PACKAGES)})(?:\.[A-Za-z_]\w*)+)")
BARE = re.compile(r"(?<![\w./{-])([A-Za-z_][\w-]*\.(?:h|c|py))(?![\w/])")


def sources() -> list[Path]:
    return sorted(
        p
        for d in SCANNED
        for p in (ROOT / d).rglob("*")
        if p.suffix in (".py", ".c", ".h") and "__pycache__" not in p.parts
    )


def texts(path: Path) -> Iterator[tuple[int, str]]:
    """(first line, text) of each comment and docstring (any string statement) of a source file."""
    src = path.read_text()
    if path.suffix == ".py":
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string
        for node in ast.walk(ast.parse(src)):
            if (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                yield node.lineno, node.value.value
    else:
        for m in re.finditer(r"/\*.*?\*/|//[^\n]*", src, re.S):
            yield src.count("\n", 0, m.start()) + 1, m.group()


def references(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line, kind, name) of every name a file's comments and docstrings give."""
    for line, text in texts(path):
        for kind, pattern in (("path", PATH), ("dotted", DOTTED), ("bare", BARE)):
            for m in pattern.finditer(text):
                yield line + text.count("\n", 0, m.start()), kind, m.group(1)


def expand_braces(p: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", p)
    if not m:
        return [p]
    return [q for alt in m.group(1).split(",") for q in expand_braces(p[: m.start()] + alt + p[m.end() :])]


def path_exists(p: str) -> bool:
    return any(glob.glob(str(ROOT / q)) if "*" in q else (ROOT / q).exists() for q in expand_braces(p))


Bound = ast.ClassDef | tuple[str, str] | None  # a class; (module, name) imported from a module; anything else


def _bound(body: list[ast.stmt], package: str) -> dict[str, Bound]:
    """The names a module or class body binds (in its if/try/with blocks too): classes with their node, names
    imported from a module with where from (`package`: the package relative imports start from)."""
    out: dict[str, Bound] = {}
    for s in body:
        if isinstance(s, ast.ClassDef):
            out[s.name] = s
        elif isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef):
            out[s.name] = None
        elif isinstance(s, ast.ImportFrom):
            base = ".".join(package.split(".")[: len(package.split(".")) - s.level + 1]) if s.level else ""
            src = ".".join(x for x in (base, s.module or "") if x)
            out.update({a.asname or a.name: (src, a.name) for a in s.names})
        elif isinstance(s, ast.Import):
            out.update({(a.asname or a.name).split(".")[0]: None for a in s.names})
        elif isinstance(s, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            out.update({n.id: None for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)})
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and isinstance(
                s.value, ast.List | ast.Tuple
            ):
                for e in s.value.elts:  # a name only __all__ gives (a module __getattr__ serves it)
                    if isinstance(e, ast.Constant):
                        out.setdefault(str(e.value), None)
        elif isinstance(s, ast.If | ast.Try | ast.With):
            inner = [*s.body, *getattr(s, "orelse", []), *getattr(s, "finalbody", [])]
            inner += [x for h in getattr(s, "handlers", []) for x in h.body]
            out.update(_bound(inner, package))
    return out


def module_file(module: str) -> Path | None:
    """The source of a module of the tree (a package's __init__.py), None if it is none."""
    where = ROOT.joinpath(*module.split("."))
    for f in (where / "__init__.py", where.with_suffix(".py")):
        if f.is_file():
            return f
    return None


@functools.cache
def module_names(module: str) -> dict[str, Bound]:
    path = module_file(module)
    assert path is not None
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return _bound(ast.parse(path.read_text()).body, package)


def has(module: str, attrs: list[str], depth: int = 0) -> bool:
    """Whether module (of the tree, or outside it: not checked) has the attribute chain `attrs`: the first
    attribute bound at its top level (or a submodule), followed through imports; the second in a class's body."""
    if not attrs or module_file(module) is None or depth > 8:
        return True
    names = module_names(module)
    first, rest = attrs[0], attrs[1:]
    if first not in names:
        return module_file(f"{module}.{first}") is not None and has(f"{module}.{first}", rest, depth + 1)
    bound = names[first]
    if isinstance(bound, tuple):
        src, name = bound
        if module_file(f"{src}.{name}") is not None:  # a submodule imported by name
            return has(f"{src}.{name}", rest, depth + 1)
        return has(src, [name, *rest], depth + 1)
    if isinstance(bound, ast.ClassDef) and rest:
        return rest[0] in _bound(bound.body, module)
    return True


def dotted_exists(name: str) -> bool:
    """The longest prefix of `name` that is a module or package of the tree, then attributes it has."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        if module_file(".".join(parts[:i])) is not None:
            return has(".".join(parts[:i]), parts[i:])
    return False


@functools.cache
def file_names() -> frozenset[str]:
    return frozenset(p.name for d in TOP for p in (ROOT / d).rglob("*") if "__pycache__" not in p.parts)


def exists(kind: str, name: str) -> bool:
    if kind == "path":
        return path_exists(name)
    if kind == "dotted":
        return dotted_exists(name)
    return name in EXTERNAL or name in file_names()


def test_every_path_and_module_a_comment_names_exists() -> None:
    stale = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sources()
        for line, kind, name in references(path)
        if not exists(kind, name)
    ]
    assert not stale, "comments or docstrings name what does not exist:\n" + "\n".join(stale)


def test_the_patterns_see_what_they_should() -> None:
    text = (
        "see testbed/models/decisions.py, testbed.models.decisions.drill_port, traffic/sender.c and\n"
        "ebpf/include/lb_*.h; ebpf.INCLUDE, testbed.topology.Level.EDGE, lb_conga.h (not /var/cache/testbed/x)"
    )
    found = [
        (kind, m.group(1)) for kind, p in (("path", PATH), ("dotted", DOTTED), ("bare", BARE)) for m in p.finditer(text)
    ]
    assert found == [
        ("path", "testbed/models/decisions.py"),
        ("path", "traffic/sender.c"),
        ("path", "ebpf/include/lb_*.h"),
        ("dotted", "testbed.models.decisions.drill_port"),
        ("dotted", "ebpf.INCLUDE"),
        ("dotted", "testbed.topology.Level.EDGE"),
        ("bare", "lb_conga.h"),
    ]
    assert all(exists(kind, name) for kind, name in found)
    for kind, name in (
        ("path", "testbed/dataplane/models.py"),
        ("path", "ebpf/include/nothing_*.h"),
        ("dotted", "testbed.dataplane.models.MODELS"),
        ("dotted", "testbed.models.decisions.no_such_function"),
        ("dotted", "testbed.topology.Level.NOWHERE"),
        ("bare", "no_such_header.h"),
    ):
        assert not exists(kind, name), name
