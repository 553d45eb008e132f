"""The data plane's eBPF C sources (switch.c, host.c, timers.c and include/), shipped as package data: this
module only tells where they are, in a source tree and in an installed package alike. testbed.dataplane
compiles them with bcc; traffic/ compiles its sender against include/shared.h."""

import re
from pathlib import Path

DIR = Path(__file__).resolve().parent
INCLUDE = DIR / "include"
_LOCAL_INCLUDE = re.compile(r'^\s*#include "([^"]+)"', re.M)


def headers(name: str) -> tuple[Path, ...]:
    """Header `name` of include/ and every header of include/ it pulls in through `#include "..."`, each once,
    in the order they are first reached: what a build that includes `name` depends on."""
    seen: list[Path] = []

    def visit(path: Path) -> None:
        if path in seen:
            return
        seen.append(path)
        for inc in _LOCAL_INCLUDE.findall(path.read_text()):
            visit(INCLUDE / inc)

    visit(INCLUDE / name)
    return tuple(seen)
