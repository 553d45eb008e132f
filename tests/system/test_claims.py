"""`testbed paper claims` end to end on a real fabric, for the claims of one
experiment (Fig. 1's) and the computed ones: the runs, claims.json with a
value, interval, margin, seeds and verdict per claim, claims.md, and
report.html with the claims first; a second invocation resumes (runs
nothing) and an unknown claim is one line and exit status 2 before anything
is built."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.run.sweep import Matrix
from testbed.topology.timebase import PAPER

pytestmark = pytest.mark.root


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "testbed.cli", *argv], capture_output=True, text=True, timeout=900, check=False
    )


def test_claims_of_one_experiment(tmp_path: Path) -> None:
    out = tmp_path / "claims"
    args = (
        "paper",
        "claims",
        "--scale",
        "quick",
        "--claims",
        "C1,C2,C10,C26,C27",
        "--out",
        str(out),
        "--prefix",
        "tcl",
    )
    r = cli(*args)
    assert r.returncode == 0, r.stderr[-2000:]
    j = json.loads((out / "claims.json").read_text())
    assert [c["id"] for c in j["claims"]] == ["C1", "C2", "C10", "C26", "C27"]
    assert [c["experiments"] for c in j["claims"]] == [["fig1"], ["fig1"], [], [], []]  # what each rule reads
    assert j["scale"] == "quick" and j["propagation"] == "paper" and j["wall_s"] > 0
    for c in j["claims"]:
        assert c["verdict"] in ("agrees", "disagrees", "not decided", "not comparable", "no data"), c
        assert {"value", "sem", "section", "statement", "paper", "rule", "seeds", "interval", "margin"} <= set(c)
    c1 = j["claims"][0]
    ofan = next(p for p in c1["parts"] if p["member"] == "ofan")
    assert c1["verdict"] != "no data" and 90 < ofan["value"] <= 102  # Ofan's utilisation
    assert c1["seeds"] == {"fig1": [1, 2, 3]} and c1["seed_cap"] == 3  # the quick scale's cap: fig1 never grows
    rows = json.loads((out / "experiments" / "fig1" / "sweep.json").read_text())
    assert Matrix.from_json(rows["matrix"]).values("propagation") == (PAPER,)  # the default: not in the JSON
    assert len(list((out / "experiments" / "fig1" / "rows").glob("*.json"))) == 18  # 3 schemes x 2 loads x 3 seeds
    md = (out / "claims.md").read_text()
    assert "| C1 |" in md and "| C27 |" in md and "| interval | margin | seeds | verdict | link model |" in md
    page = (out / "report.html").read_text()
    assert page.index('id="claims"') < page.index("Experiments")
    t0 = time.monotonic()
    again = cli(*args)  # resumed: every run is there, only the rules run again
    assert again.returncode == 0 and time.monotonic() - t0 < 60, again.stderr[-2000:]
    assert "18 done already" in again.stdout
    bad = cli("paper", "claims", "--claims", "C1,C99", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "unknown claim 'c99'" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "bad").exists()
