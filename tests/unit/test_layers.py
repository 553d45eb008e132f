"""The layer rules of pyproject.toml ([tool.importlinter]) hold, checked by
import-linter itself, and they would catch an import that climbs a layer or
one that closes a circle inside a layer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}  # the packages of `cwd`, ahead of the installed ones
    return subprocess.run(
        [str(LINT), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_layer_contracts_are_kept() -> None:
    r = lint(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr  # the linter's own report names the offending import


def test_an_import_that_climbs_a_layer_is_caught(tmp_path: Path) -> None:
    for d in ("testbed", "traffic"):
        shutil.copytree(ROOT / d, tmp_path / d, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with open(tmp_path / "testbed" / "topology" / "units.py", "a") as f:
        f.write("\nfrom testbed.cli import main  # noqa: E402 - the violation under test\n")
    with open(tmp_path / "traffic" / "packet.py", "a") as f:
        f.write("\nfrom testbed.dataplane import maps  # noqa: E402 - the violation under test\n")
    with open(tmp_path / "testbed" / "fabric" / "errors.py", "a") as f:  # a circle: build imports errors
        f.write("\n\ndef _late() -> None:\n    from . import build  # noqa: F401 - the violation under test\n")
    r = lint(tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "testbed.topology.units -> testbed.cli" in out, out
    assert "traffic.packet -> testbed.dataplane" in out, out
    assert "No cycles are allowed in testbed.fabric" in out and ".errors -> .build" in out, out
    broken = [line for line in out.splitlines() if line.rstrip().endswith("BROKEN")]
    assert len(broken) >= 3, out
