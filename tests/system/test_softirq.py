"""ksoftirqd real-time during a run, on the real kernel: raised while inside, put back after, and put back
by `restore_saved` (as `testbed clean` calls it) when the run that raised it was killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.fabric import softirq

pytestmark = pytest.mark.root


def _policies() -> dict[int, tuple[int, int]]:
    return {pid: (os.sched_getscheduler(pid), os.sched_getparam(pid).sched_priority) for pid in softirq.threads()}


def test_raised_inside_and_put_back_after(tmp_path: Path) -> None:
    before = _policies()
    assert before and all(p != (os.SCHED_FIFO, softirq.PRIORITY) for p in before.values())
    saved = tmp_path / "saved.json"
    with softirq.raised(saved=saved) as ok:
        assert ok and saved.exists()
        assert set(_policies().values()) == {(os.SCHED_FIFO, softirq.PRIORITY)}
    assert _policies() == before and not saved.exists()


def test_a_killed_runs_change_is_put_back(tmp_path: Path) -> None:
    before = _policies()
    saved = tmp_path / "saved.json"
    code = (
        "import sys, time; from pathlib import Path; from testbed.fabric import softirq\n"
        f"with softirq.raised(saved=Path({str(saved)!r})):\n"
        "    print('in', flush=True); time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "in"
        assert set(_policies().values()) == {(os.SCHED_FIFO, softirq.PRIORITY)}
        assert softirq.restore_saved(saved) == 0  # its run is still going: left alone
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    time.sleep(0.05)
    assert set(_policies().values()) == {(os.SCHED_FIFO, softirq.PRIORITY)}  # the kill left it raised
    assert softirq.restore_saved(saved) == len(before)
    assert _policies() == before and not saved.exists()
