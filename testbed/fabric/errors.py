"""The fabric's one exception, in a module of its own that imports nothing: every module of the layer can
raise it without importing the builder."""

from __future__ import annotations


class FabricError(RuntimeError):
    """The fabric cannot be built or found."""
