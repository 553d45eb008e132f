"""Adding a run option as docs/adding-an-option.md says (one field of RunParams, no other file edited) puts
it in `testbed run --help`, `testbed sweep --help`, testbed.api.Fabric.run and run_params, a sweep's matrix
and cells, and a run's manifest. The field is added to a copy of the source, so what is checked is what a
newcomer's edit gives, and nothing in this tree changes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ANCHOR = "    propagation: Propagation = option("  # the last field: a new one goes before it, as any would
FIELD = """    warmup_ms: float = option(0.0, "ms every sender waits after the release (a throwaway)", group=H)
"""
PROBE = r"""
import inspect, json, subprocess, sys
import testbed.api as api
from testbed.run.options import record
from testbed.run.sweep import matrix

out = {}
for cmd in ("run", "sweep"):
    h = subprocess.run([sys.executable, "-m", "testbed.cli", cmd, "--help"], capture_output=True, text=True, check=True)
    out[cmd + "_help"] = "--warmup-ms" in h.stdout
out["run_signature"] = "warmup_ms" in inspect.signature(api.Fabric.run).parameters
p = api.run_params("permutation", "1MB", warmup_ms="2.5")
out["run_params"] = p.warmup_ms
m = matrix(("ofan",), seed=1, warmup_ms=(0, 1, 5))
out["cells"] = [c.name for c in m.cells()]
out["cell_values"] = [c.params(m).warmup_ms for c in m.cells()]
out["matrix_json"] = m.to_json()["options"].get("warmup_ms")
out["manifest"] = record(p).get("warmup_ms")
print(json.dumps(out))
"""


def _copy(tmp: Path) -> Path:
    src = tmp / "src"
    for pkg in ("testbed", "traffic", "ebpf"):
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.o"))
    return src


def test_a_new_field_is_a_flag_an_argument_a_dimension_and_a_manifest_entry(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    params = src / "testbed" / "run" / "params.py"
    text = params.read_text()
    assert text.count(ANCHOR) == 1, "the last option moved: update ANCHOR"
    params.write_text(text.replace(ANCHOR, FIELD + ANCHOR))
    changed = [
        str(p.relative_to(src))
        for p in src.rglob("*")
        if p.is_file() and (ROOT / p.relative_to(src)).read_bytes() != p.read_bytes()
    ]
    assert changed == ["testbed/run/params.py"]  # the one edit the docs ask for
    env = {**os.environ, "PYTHONPATH": str(src)}
    r = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=src, timeout=300, check=False
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["run_help"] and got["sweep_help"], got
    assert got["run_signature"], got
    assert got["run_params"] == 2.5
    assert got["cells"] == [
        "k4-permutation-1048576B-l1-f0-p4096-ofan-warmup_ms0-s1",
        "k4-permutation-1048576B-l1-f0-p4096-ofan-warmup_ms1-s1",
        "k4-permutation-1048576B-l1-f0-p4096-ofan-warmup_ms5-s1",
    ]
    assert got["cell_values"] == [0.0, 1.0, 5.0]
    assert got["matrix_json"] == [0.0, 1.0, 5.0]
    assert got["manifest"] == 2.5


def test_the_copy_is_this_tree() -> None:
    """The probe imports the copy, not the installed tree: without the field, the copy has no such option."""
    r = subprocess.run(
        [sys.executable, "-c", "import testbed.run.params as p; print(hasattr(p.RunParams, 'warmup_ms'))"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    assert r.stdout.strip() == "False"
