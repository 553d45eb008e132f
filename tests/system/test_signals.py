"""Every command ends cleanly on SIGINT and SIGTERM, whatever it waits for:
the run lock (--wait behind another holder), and a run's traffic and drain.
It exits 130 (SIGINT) or 143 (SIGTERM) with one line, and leaves nothing
under its prefix. (A cluster address that does not answer is refused within
seconds: tests/unit/test_cluster_probe.py.)"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.fabric import lock
from testbed.measure import results

from .helpers import TIMING_RATE_BPS, cli, leftovers

pytestmark = pytest.mark.root

# SIGINT as a terminal delivers it: a suite started in the background by a non-interactive shell passes SIGINT
# on ignored, and Python then never raises KeyboardInterrupt
AS_A_TERMINAL = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'testbed'; runpy.run_module('testbed.cli', run_name='__main__')"
)
SIGNALS = [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", AS_A_TERMINAL, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def ended(proc: subprocess.Popen[str], sig: int, code: int, word: str) -> None:
    t0 = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert err.strip().splitlines()[-1] == f"testbed: {word}", err
    assert time.monotonic() - t0 < 30


@pytest.mark.parametrize("held", ["fabric", "machine"])
@pytest.mark.parametrize(("sig", "code", "word"), SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_a_run_waiting_for_the_lock_ends(sig: int, code: int, word: str, held: str) -> None:
    """Another holder has the fabric's own lock, or the machine's (a run under another prefix)."""
    p = "tg"
    name = p if held == "fabric" else lock.MACHINE
    os.makedirs(os.path.dirname(lock.path(name)), exist_ok=True)
    fd = os.open(lock.path(name), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another holder
    proc = start("run", "--workload", "permutation", "--size", "64KB", "--wait", "--prefix", p)
    try:
        time.sleep(8)  # long enough to build a fabric, if it builds before it waits
        assert proc.poll() is None  # still waiting
        ended(proc, sig, code, word)
        assert leftovers(p) == [] or leftovers(p) == [f"file {lock.path(p)}"]
    finally:
        os.close(fd)
        if proc.poll() is None:
            proc.kill()
        cli("clean", "--prefix", p)


@pytest.mark.parametrize(("sig", "code", "word"), SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_a_run_sending_traffic_ends(sig: int, code: int, word: str, tmp_path: Path) -> None:
    p, out = "th", tmp_path / "cut"
    proc = start(
        "run",
        "--workload",
        "permutation",
        "--size",
        "8MB",
        "--rate",
        str(TIMING_RATE_BPS),
        "--out",
        str(out),
        "--prefix",
        p,
    )
    try:
        deadline = time.monotonic() + 30
        while not (out / "manifest.json").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        ended(proc, sig, code, word)
        m = json.loads((out / "manifest.json").read_text())
        assert m["complete"] is False and m["status"] == "interrupted"
        assert not (out / "flows.parquet").exists()
        with pytest.raises(results.ResultsError, match="incomplete"):
            results.load(out)
        assert leftovers(p) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        cli("clean", "--prefix", p)
