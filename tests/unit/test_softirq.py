"""ksoftirqd at a real-time priority during a run (testbed.fabric.softirq): finding the threads, and
putting back what a killed run left. The policy change itself is a root test (tests/system/test_run.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from testbed.fabric import softirq
from testbed.fabric.procs import PF_KTHREAD


def _proc(tmp: Path, pid: int, name: str, flags: int) -> None:
    d = tmp / str(pid)
    d.mkdir()
    # pid (comm) state ppid pgrp session tty tpgid flags ...
    (d / "stat").write_text(f"{pid} ({name}) S 2 0 0 0 -1 {flags} 0 0 0 0 0\n")


def test_only_kernel_threads_named_exactly_ksoftirqd_n(tmp_path: Path) -> None:
    _proc(tmp_path, 14, "ksoftirqd/0", PF_KTHREAD | 0x40)
    _proc(tmp_path, 22, "ksoftirqd/1", PF_KTHREAD)
    _proc(tmp_path, 30, "ksoftirqd/1", 0x400100)  # a user process that named itself so
    _proc(tmp_path, 31, "ksoftirqd/x", PF_KTHREAD)
    _proc(tmp_path, 32, "ksoftirqd", PF_KTHREAD)
    _proc(tmp_path, 33, "my (ksoftirqd/0) thing", PF_KTHREAD)  # parentheses in a name
    (tmp_path / "self").mkdir()
    assert softirq.threads(str(tmp_path)) == {14: "ksoftirqd/0", 22: "ksoftirqd/1"}


def test_the_machine_has_one_ksoftirqd_per_cpu() -> None:
    names = sorted(softirq.threads().values())
    assert names == sorted(f"ksoftirqd/{c}" for c in range(len(names))) and len(names) == os.cpu_count()


def test_a_live_runs_saved_policies_are_left_alone(tmp_path: Path) -> None:
    saved = tmp_path / "saved.json"
    child = subprocess.Popen(["sleep", "30"])
    try:
        saved.write_text(json.dumps({"owner": child.pid, "threads": {}}))
        assert softirq.restore_saved(saved) == 0 and saved.exists()
    finally:
        child.kill()
        child.wait()
    assert softirq.restore_saved(saved) == 0 and not saved.exists()  # owner gone: restored (nothing), removed


@pytest.mark.parametrize("text", ["", "{", '{"owner": 1}', '["x"]'])
def test_a_damaged_saved_file_is_ignored(tmp_path: Path, text: str) -> None:
    saved = tmp_path / "saved.json"
    saved.write_text(text)
    assert softirq.restore_saved(saved) == 0
