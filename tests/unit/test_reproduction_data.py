"""docs/reproduction.md regenerates from the data committed beside it (docs/reproduction/SCALE/), byte for byte,
through the README's command, without privileges: `testbed paper claims --scale SCALE --no-run --from
docs/reproduction/ --doc PAGE`, run with every capability dropped (as root: setpriv; nothing it does may need
the kernel's privileges), on a copy of the page."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from testbed.run.claims import store

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reproduction.md"
DATA = ROOT / "docs" / "reproduction"


def _scale() -> str:
    m = re.search(r"checked at scale `(\w+)`", PAGE.read_text())
    assert m, "docs/reproduction.md names the scale of its generated part"
    return m.group(1)


def test_the_committed_data_is_the_pages() -> None:
    """The page's generated part names the data it was judged on, and the data holds every experiment's rows."""
    scale = _scale()
    s = store.Store(DATA, scale)
    assert s.exists(), f"no data for the page's scale under {s.path}"
    text = PAGE.read_text()
    assert f"Command: `testbed paper claims --scale {scale} --no-run --from docs/reproduction`" in text
    meta = json.loads((s.path / store.CHECK).read_text())
    assert meta["parts"] and all(p["runs"] > 0 and p["wall_s"] > 0 for p in meta["parts"])
    for name in meta["experiments"]:
        rows = s.rows(name)
        assert rows and all({"cell", "rate_bps", "fidelity_valid", "commit", "date"} <= set(r) for r in rows), name
    size = sum(f.stat().st_size for f in s.path.rglob("*") if f.is_file())
    assert size < 8 * 2**20, f"{size} bytes of data: more than a few MB"


def test_the_page_regenerates_from_the_committed_data_byte_for_byte(tmp_path: Path) -> None:
    page = tmp_path / "reproduction.md"
    shutil.copy(PAGE, page)
    argv = ["paper", "claims", "--scale", _scale(), "--no-run", "--from", "docs/reproduction/"]
    argv += ["--out", str(tmp_path / "out"), "--doc", str(page)]
    drop = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    cmd = [*(drop if os.geteuid() == 0 else []), sys.executable, "-m", "testbed.cli", *argv]
    r = subprocess.run(
        cmd,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "COLUMNS": "200", "MPLCONFIGDIR": str(tmp_path / "mpl")},
    )
    assert r.returncode == 0, r.stderr
    assert "the ideal fabric under both link models" in r.stdout  # judged again from the data's ideal rows
    assert page.read_bytes() == PAGE.read_bytes(), "docs/reproduction.md is not what its data regenerates"
