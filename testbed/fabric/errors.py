"""The fabric's one exception, in a module of its own that imports nothing: every module of the layer can
raise it without importing the builder."""

from __future__ import annotations


class FabricError(RuntimeError):
    """The fabric cannot be built or found."""


def require_root() -> None:
    """Every kernel object of a fabric needs root: one line, before any is made."""
    import os

    if os.geteuid() != 0:
        raise FabricError("must run as root (sudo ./scripts/testbed ...)")
