"""Where a result came from: kernel, packages, project commit."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from ..dataplane.compile import bcc_version

PACKAGES = ("pyroute2", "pandas", "pyarrow", "scipy", "rich", "scapy", "matplotlib")
ROOT = Path(__file__).resolve().parents[2]


def _git(*args: str) -> str:
    try:
        r = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=5, check=False)
    except OSError:
        return ""
    return r.stdout.strip() if r.returncode == 0 else ""


@cache
def commit() -> str:
    """The project's commit ("unknown" outside a git checkout), once per process."""
    return _git("rev-parse", "HEAD") or "unknown"


def origin() -> dict[str, str]:
    """Where a sweep's row came from: the project's commit and the day (UTC) it ran."""
    return {"commit": commit(), "date": time.strftime("%Y-%m-%d", time.gmtime())}


def describe() -> dict[str, Any]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    versions["bcc"] = bcc_version()
    commit = _git("rev-parse", "HEAD")
    return {
        "kernel_release": platform.release(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "packages": versions,
        "project_commit": commit or "unknown",
        "project_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")) if commit else None,
    }
