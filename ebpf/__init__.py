"""The data plane's eBPF C sources (switch.c, host.c, timers.c and include/), shipped as package data: this
module only tells where they are, in a source tree and in an installed package alike. testbed.dataplane
compiles them with bcc; traffic/ compiles its sender against include/shared.h."""

from pathlib import Path

DIR = Path(__file__).resolve().parent
INCLUDE = DIR / "include"
