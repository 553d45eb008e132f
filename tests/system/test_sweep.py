"""Sweeps through the CLI: a 2 x 2 x 2 matrix killed with SIGKILL and resumed
gives the rows of an uninterrupted one without re-running finished cells;
a directory written by another matrix is refused; the report is made from
the files alone by a user without root."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pandas as pd
import pytest

from .helpers import TIMING_RATE_BPS, cli, leftovers

pytestmark = pytest.mark.root

PREFIX = "tsw"
ARGS = [
    "--schemes",
    "ecmp,ofan",
    "--sizes",
    "256KB,512KB",
    "--seeds",
    "1-2",
    "--rate",
    f"{TIMING_RATE_BPS}bit",
    "--retries",
    "0",  # one try per cell: validity is measured, not retried away
    "--prefix",
    PREFIX,
]
DETERMINISTIC = [
    "cell",
    "scheme",
    "seed",
    "size_bytes",
    "k",
    "hosts",
    "flows",
    "packets_sent",
    "cct_lower_bound_s",
    "rate_bps",
]
ROOT = Path(__file__).resolve().parents[2]


def sweep(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return cli("sweep", *ARGS, "--out", str(out), *extra, timeout=600)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sweep") / "whole"
    r = sweep(out)
    assert r.returncode == 0, r.stderr
    return out


def test_killed_sweep_resumes_to_the_same_rows(uninterrupted: Path, tmp_path: Path) -> None:
    out = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "testbed.cli", "sweep", *ARGS, "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    rows = out / "rows"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if rows.is_dir() and len(list(rows.glob("*.json"))) >= 3:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the sweep finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = {p.name: p.stat().st_mtime_ns for p in rows.glob("*.json")}
    assert 3 <= len(finished) < 8, finished

    r = sweep(out)
    assert r.returncode == 0, r.stderr
    assert {p.name: p.stat().st_mtime_ns for p in rows.glob("*.json") if p.name in finished} == finished, (
        "a finished cell was run again"
    )
    a = pd.read_parquet(uninterrupted / "results.parquet")
    b = pd.read_parquet(out / "results.parquet")
    assert len(a) == len(b) == 8
    pd.testing.assert_frame_equal(a[DETERMINISTIC], b[DETERMINISTIC])
    assert b["drops"].sum() == 0 and (b["packets_received"] == b["packets_sent"]).all()
    assert (b["fidelity_timer_late_max_s"] > 0).all()  # every run watched its qdisc timers (they fire a little late)
    # timing, on runs the verdict trusts in both sweeps, within the run-to-run noise: measured over three
    # identical sweeps of this matrix on a quiet machine, ECMP (its collisions fixed by the seed) moved up to
    # 4.2 points of its ~200 % (2 %) and Ofan up to 0.15 points; under the suite's own load more, within
    # what each run's verdict says the emulator may have added (timing_excess_share, up to 1.5 packet
    # times of a 64-packet flow), so the bound is 3 % plus both runs' timing figures plus half a point. It
    # holds for each scheme's mean over its seeds: one CI run read an Ofan cell at 1.62 % against 0.28 %,
    # both valid (a per-run distortion the verdict missed: issue 10's), and the resume is what this tests.
    both = (a["fidelity_valid"] & b["fidelity_valid"]).to_numpy()
    slack = (a["fidelity_timing_excess_share"] + b["fidelity_timing_excess_share"]).to_numpy() + 0.005
    for scheme, rel in (("ecmp", 0.03), ("ofan", 0.0)):
        pick = both & (a["scheme"] == scheme).to_numpy()
        x, y = a["cct_increase"].to_numpy()[pick], b["cct_increase"].to_numpy()[pick]
        assert pick.any(), f"no {scheme} cell valid in both sweeps"  # 4 pairs, each valid in both ~70 %
        assert abs(x.mean() - y.mean()) <= rel * abs(x.mean()) + slack[pick].mean(), (scheme, x, y, slack[pick])
    assert not leftovers(PREFIX)


def test_another_matrix_is_refused(uninterrupted: Path) -> None:
    r = cli("sweep", *ARGS[:-2], "--schemes", "ecmp", "--out", str(uninterrupted), "--prefix", PREFIX)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "holds another sweep" in r.stderr


def test_finished_sweep_runs_nothing(uninterrupted: Path) -> None:
    before = (uninterrupted / "results.parquet").stat().st_mtime_ns
    r = sweep(uninterrupted)
    assert r.returncode == 0 and "all 8 cells are done" in r.stdout
    rows = json.loads((uninterrupted / "sweep.json").read_text())
    assert rows["matrix"]["options"]["scheme"] == ["ecmp", "ofan"]
    assert (uninterrupted / "results.parquet").stat().st_mtime_ns >= before


@contextmanager
def traversable(path: Path) -> Iterator[None]:
    """Let other users reach `path` (search permission on every directory above it that lacks it, as a clone
    in a private temporary directory does), and take it back after."""
    changed = []
    for d in [path, *path.parents]:
        mode = d.stat().st_mode
        if not mode & stat.S_IXOTH:
            d.chmod(mode | stat.S_IXOTH)
            changed.append((d, mode))
    try:
        yield
    finally:
        for d, mode in changed:
            d.chmod(stat.S_IMODE(mode))


def test_report_needs_no_root(uninterrupted: Path) -> None:
    """As nobody, on a copy of the sweep: the table, the growth exponents, the figures and the page."""
    base = Path(tempfile.mkdtemp(prefix="tsw-report-"))  # pytest's own tmp is root's alone
    try:
        base.chmod(0o755)
        copy = base / "copy"
        shutil.copytree(uninterrupted, copy)
        nobody = pwd.getpwnam("nobody").pw_uid
        for p in [base, copy, *copy.rglob("*")]:
            os.chown(p, nobody, -1)
        with traversable(ROOT):  # the project's own interpreter and code, read by nobody
            r = subprocess.run(
                ["runuser", "-u", "nobody", "--", sys.executable, "-m", "testbed.cli", "report", str(copy)],
                capture_output=True,
                text=True,
                timeout=300,
                cwd=base,
                check=False,
                env={**os.environ, "HOME": str(base), "MPLCONFIGDIR": str(base / "mpl")},
            )
        assert r.returncode == 0, r.stderr
        assert "growth with the message size" in r.stdout and "ofan" in r.stdout
        assert (copy / "report.html").stat().st_size > 10_000
        pngs = list((copy / "figures").glob("*.png"))
        assert len(pngs) >= 3 and all(
            p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000 for p in pngs
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


ARTIFACTS = ROOT / "test-artifacts"


def test_report_page_in_a_real_browser(uninterrupted: Path, tmp_path: Path) -> None:
    """Debian's chromium, headless, through selenium and chromedriver: the page loads without console errors
    and shows the table and every figure; a screenshot is kept in test-artifacts/."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    r = cli("report", str(uninterrupted))
    assert r.returncode == 0, r.stderr
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chromium'}",
        "--window-size=1300,4000",
    ):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        driver.get((uninterrupted / "report.html").as_uri())
        # selenium leaves get_log unannotated; it returns the WebDriver log's entries
        get_log = cast(Callable[[str], list[dict[str, Any]]], driver.get_log)
        errors = [e for e in get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        rows = driver.find_elements(By.CSS_SELECTOR, "table.summary tbody tr")
        assert len(rows) == 4  # 2 schemes x 2 sizes
        assert "ofan" in driver.find_element(By.CSS_SELECTOR, "table.growth").text
        imgs = driver.find_elements(By.TAG_NAME, "img")
        assert len(imgs) == len(list((uninterrupted / "figures").glob("*.png"))) >= 3
        for img in imgs:
            assert driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) > 100
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / "report.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 20_000
    finally:
        driver.quit()
