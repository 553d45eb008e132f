"""One run per machine: a second run, on the same fabric or another prefix's,
is refused in one line (or waits with --wait), the two never overlap, and a
lock left by a killed run does not block the next one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.fabric import lock
from testbed.measure.fidelity import OUTSIDE_CPU_MAX

from .helpers import TIMING_RATE_BPS, cli, leftovers

pytestmark = pytest.mark.root


def _start(p: str, out: Path, *extra: str, size: str = "4MB") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "testbed.cli",
            "run",
            "--workload",
            "permutation",
            "--size",
            size,
            "--scheme",
            "ofan",
            "--json",
            "--out",
            str(out),
            "--prefix",
            p,
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _holding(p: str, pid: int, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        h = lock.holder(p)
        if h and h.get("pid") == pid:
            return
        time.sleep(0.01)
    raise AssertionError(f"pid {pid} never took the lock of {p}")


def _clean(res: dict[str, object], per_host: int = 1024) -> None:
    sent, got = res["packets_sent"], res["packets_received"]
    assert got == sent == 16 * per_host, (sent, got)
    assert res["drops"] == 0, res["drops_detail"]


@pytest.fixture()
def fabric() -> object:
    p = "tlk"
    assert cli("up", "--k", "4", "--prefix", p).returncode == 0
    yield p
    cli("down", "--prefix", p)
    assert leftovers(p) == []


def test_second_run_is_refused_or_waits_and_packets_never_mix(fabric: str, tmp_path: Path) -> None:
    p = fabric
    a = _start(p, tmp_path / "a", size="16MB")  # 2.7 s of sending: long enough to be caught running
    _holding(p, a.pid)
    b = cli("run", "--workload", "permutation", "--size", "1MB", "--out", str(tmp_path / "b"), "--prefix", p)
    assert b.returncode == 2, b.stdout + b.stderr
    assert "another run is going on this machine" in b.stderr and f"pid {a.pid}" in b.stderr
    assert "--wait" in b.stderr
    assert len(b.stderr.strip().splitlines()) == 1
    c = _start(p, tmp_path / "c", "--wait")
    out_a, err_a = a.communicate(timeout=120)
    out_c, err_c = c.communicate(timeout=120)
    assert a.returncode == 0 and c.returncode == 0, err_a + err_c
    ra, rc = json.loads(out_a), json.loads(out_c)
    _clean(ra, per_host=4096)
    _clean(rc)
    assert rc["cct_start_ns"] > ra["cct_end_ns"]  # the waiting run sent only after the first one was done


def test_a_killed_run_leaves_a_stale_lock_that_does_not_block(fabric: str, tmp_path: Path) -> None:
    p = fabric
    d = _start(p, tmp_path / "d")
    _holding(p, d.pid)
    time.sleep(0.5)  # sending
    os.kill(d.pid, signal.SIGKILL)
    d.wait()
    holder = lock.holder(p)
    assert holder is not None
    assert holder["pid"] == d.pid  # the file still names it; the kernel has released the lock
    e = cli(
        "run",
        "--workload",
        "permutation",
        "--size",
        "4MB",
        "--scheme",
        "ofan",
        "--json",
        "--out",
        str(tmp_path / "e"),
        "--prefix",
        p,
    )
    assert e.returncode == 0, e.stderr
    _clean(json.loads(e.stdout))  # and the killed run's sender died with it: no foreign packets


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _blocked(pids: list[int], timeout_s: float = 30.0) -> None:
    """Wait until every process has used no CPU for 0.6 s (started, imported, and waiting for the lock)."""
    last, still, deadline = None, 0, time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = [_cpu_ticks(pid) for pid in pids]
        still = still + 1 if now == last else 0
        if still >= 3:
            return
        last = now
        time.sleep(0.2)
    raise AssertionError(f"{pids} kept using CPU: not waiting for the lock")


def test_a_run_under_another_prefix_waits_or_is_refused(tmp_path: Path) -> None:
    """Two fabrics under two prefixes: the second's run is refused in one line while the first sends. With
    --wait, runs on both queue (started while the machine's lock was held, so that their own start-up did not
    take CPU from a run), go one after the other, neither takes CPU from the other, and at least 3 of 4 such
    runs are valid."""
    p, q = "tln", "tlm"
    try:
        for x in (p, q):
            assert cli("up", "--k", "4", "--rate", str(TIMING_RATE_BPS), "--prefix", x).returncode == 0
        a = _start(p, tmp_path / "a", size="8MB")
        _holding(lock.MACHINE, a.pid)
        b = cli("run", "--workload", "permutation", "--size", "1MB", "--prefix", q)
        assert b.returncode == 2 and len(b.stderr.strip().splitlines()) == 1, b.stderr
        assert "another run is going on this machine" in b.stderr and f"pid {a.pid}" in b.stderr
        a.communicate(timeout=180)
        assert a.returncode == 0
        results = []
        for round_ in range(2):  # two rounds of queued runs: a share of single tries, not one pair's luck
            with lock.machine_lock(command="tests/system/test_lock.py"):
                runs = [_start(x, tmp_path / f"{x}{round_}", "--wait", size="2MB") for x in (p, q)]
                _blocked([r.pid for r in runs])
            outs = [r.communicate(timeout=180) for r in runs]
            assert all(r.returncode == 0 for r in runs), [err for _, err in outs]
            rp, rq = (json.loads(out) for out, _ in outs)
            first, second = sorted((rp, rq), key=lambda r: r["cct_start_ns"])
            assert second["cct_start_ns"] > first["cct_end_ns"]  # one after the other
            results += [rp, rq]
        for r in results:  # no run took CPU from another: what the lock is for
            assert r["fidelity"]["outside_cpu"] <= OUTSIDE_CPU_MAX, r["fidelity"]["reasons"]
        # valid but for the machine's own hiccups (a few % of single tries at this rate: docs, single-try validity)
        assert sum(bool(r["fidelity"]["valid"]) for r in results) >= 3, [r["fidelity"]["reasons"] for r in results]
    finally:
        for x in (p, q):
            cli("down", "--prefix", x)
    assert leftovers(p) == leftovers(q) == []


def _cpu_s(pid: int) -> float:
    """User and system CPU seconds a process has used (/proc/PID/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_queued_command_waits_before_its_start_up(tmp_path: Path) -> None:
    """`testbed run --wait` behind a run takes the machine's lock before it imports the command layer or checks
    anything (testbed.launch), so it costs the running command no CPU while it waits; entered through the
    command layer itself (testbed.cli, as before), the same command spends its start-up first."""
    args = ["run", "--workload", "permutation", "--size", "256KB", "--k", "4", "--wait", "--json"]
    spent = {}
    with lock.machine_lock(wait=True, command="the run in progress (a test)"):
        for entry in ("testbed.launch", "testbed.cli"):
            proc = subprocess.Popen(
                [sys.executable, "-m", entry, *args, "--out", str(tmp_path / entry), "--prefix", "tq"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                time.sleep(4.0)  # long enough for the command layer's imports and checks
                assert proc.poll() is None, f"{entry}: it should be waiting for the lock"
                spent[entry] = _cpu_s(proc.pid)
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    assert spent["testbed.launch"] < 0.15, spent  # an interpreter and the lock module
    assert spent["testbed.cli"] > 2 * spent["testbed.launch"], spent
    assert not leftovers("tq")
