"""Sweeps on a Ray cluster: a head started by the test, with the testbed_fabric
resource, inside a network namespace of its own that has only loopback (Ray's
servers listen on every address of their namespace: there, that is
127.0.0.1 alone, so nothing the test starts is reachable from or reaches
beyond this machine). The same sweep gives the same rows on the cluster as
locally, and a cell whose worker is killed mid-run is re-run, not lost."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from testbed.measure.fidelity import SERVICE_MIN, TIMING_EXCESS_MAX
from testbed.run.cluster import STAGING

from .helpers import TIMING_RATE_BPS, cli

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
RAY = ROOT / ".venv" / "bin" / "ray"
NETNS = "trc-ray"
TOKEN = Path("/run/testbed/trc-ray/auth_token")  # the test cluster's own token, root's only
PORT = 46379
ARGS = [
    "--schemes",
    "ecmp,ofan",
    "--sizes",
    "256KB",
    "--seeds",
    "1-2",
    "--rate",
    f"{TIMING_RATE_BPS}bit",
    "--retries",
    "0",
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
    "packets_received",
    "cct_lower_bound_s",
    "rate_bps",
    "drops",
]


def in_netns(*argv: str) -> list[str]:
    return ["nsenter", f"--net=/run/netns/{NETNS}", "--", *argv]


def authed_env() -> dict[str, str]:
    """The environment of the head and of a driver that holds the cluster's token (Ray's token authentication)."""
    return {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(TOKEN)}


@pytest.fixture(scope="module")
def ray_head() -> Iterator[str]:
    subprocess.run(["ip", "netns", "del", NETNS], capture_output=True, check=False)
    subprocess.run(["ip", "netns", "add", NETNS], check=True)
    subprocess.run(["ip", "-n", NETNS, "link", "set", "lo", "up"], check=True)
    TOKEN.parent.mkdir(parents=True, exist_ok=True)
    TOKEN.write_text(secrets.token_hex(32) + "\n")
    TOKEN.chmod(0o600)
    env = authed_env()
    head = subprocess.Popen(
        in_netns(
            str(RAY),
            "start",
            "--head",
            "--block",
            "--node-ip-address",
            "127.0.0.1",
            "--port",
            str(PORT),
            "--include-dashboard=false",
            "--disable-usage-stats",
            "--num-cpus",
            "1",
            "--resources",
            '{"testbed_fabric": 1}',
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            r = subprocess.run(
                in_netns(str(RAY), "status", "--address", f"127.0.0.1:{PORT}"),
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            if r.returncode == 0 and "testbed_fabric" in r.stdout:
                break
            time.sleep(1)
        else:
            pytest.fail("the Ray head did not come up")
        yield f"127.0.0.1:{PORT}"
    finally:
        head.send_signal(signal.SIGTERM)  # ray start --block stops what it started
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        subprocess.run(["ip", "netns", "del", NETNS], capture_output=True, check=False)
        TOKEN.unlink(missing_ok=True)


def cluster_sweep(address: str, out: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        in_netns(sys.executable, "-m", "testbed.cli", "sweep", *ARGS, "--out", str(out), "--cluster", address),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=authed_env() if env is None else env,
        cwd=ROOT,
    )


@pytest.mark.parametrize("token", ["none", "wrong"])
def test_a_driver_without_the_token_is_refused(ray_head: str, tmp_path: Path, token: str) -> None:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    if token == "wrong":
        env |= {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    proc = cluster_sweep(ray_head, tmp_path / "s", env)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    ours = [ln for ln in err.splitlines() if ln.startswith("testbed:")]
    assert len(ours) == 1 and f"the Ray cluster at {ray_head} refused this driver" in ours[0], err
    assert not (tmp_path / "s" / "results.parquet").exists()


def test_listens_on_loopback_only(ray_head: str) -> None:
    """Ray's ports are in the namespace that has only lo; nothing of it in this one."""
    with open("/proc/net/tcp") as f:
        here = {int(line.split()[1].split(":")[1], 16) for line in f.readlines()[1:] if line.split()[3] == "0A"}
    assert PORT not in here
    r = subprocess.run(["ip", "-n", NETNS, "-o", "addr"], capture_output=True, text=True, check=True)
    assert [ln.split()[3] for ln in r.stdout.splitlines() if " inet " in ln] == ["127.0.0.1/8"]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", PORT), timeout=1).close()


def test_cluster_sweep_matches_local_and_survives_a_killed_worker(ray_head: str, tmp_path: Path) -> None:
    local = tmp_path / "local"
    r = cli("sweep", *ARGS, "--out", str(local), "--prefix", "trl", timeout=600)
    assert r.returncode == 0, r.stderr

    out = tmp_path / "ray"
    started = time.time()
    proc = cluster_sweep(ray_head, out)
    killed = None
    deadline = time.monotonic() + 300
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        for pidfile in STAGING.glob("*/*/worker.pid"):
            try:
                fresh = pidfile.stat().st_mtime >= started and (pidfile.parent / "run").exists()
                if fresh:  # this sweep's cell is running: kill its worker mid-cell
                    pid = int(pidfile.read_text())
                    os.kill(pid, signal.SIGKILL)
                    killed = (pidfile.parent.name, pid)
                    break
            except (FileNotFoundError, ProcessLookupError, ValueError):
                continue  # the cell ended between the look and the kill
        time.sleep(0.05)  # not faster: the verdict counts this loop's CPU against the cells it watches
    _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    assert killed is not None, "no cell was seen running"
    a = pd.read_parquet(local / "results.parquet")
    b = pd.read_parquet(out / "results.parquet")
    assert len(a) == len(b) == 4
    assert killed[0] in set(b["cell"])  # the killed cell was run again, not lost
    pd.testing.assert_frame_equal(a[DETERMINISTIC], b[DETERMINISTIC])
    va, vb = a["fidelity_valid"].to_numpy(bool), b["fidelity_valid"].to_numpy(bool)
    # on the cluster the node's raylet and the workers Ray starts take CPU while cells run, and the verdict
    # counts it (measured: 11-45 % of a CPU in some cells), as it should: one try each leaves fewer valid there
    assert va.sum() >= 3 and vb.sum() >= 1, (a["fidelity_reasons"].tolist(), b["fidelity_reasons"].tolist())
    both = va & vb  # one try per cell: the timing is compared where both verdicts trust it
    # Two valid runs of one cell may differ in CCT by what the verdict lets
    # each one lose: a link served down to SERVICE_MIN of its rate plus the
    # timing excess. ECMP's CCT (about 3x the bound) rests on one hot link, so
    # the comparison is relative to the CCT (a CI run read 2.031 against 2.086,
    # 1.8 % of the CCT, both valid).
    tolerance = (1 - SERVICE_MIN) + TIMING_EXCESS_MAX
    cct_a = 1 + a["cct_increase"].to_numpy()[both]
    cct_b = 1 + b["cct_increase"].to_numpy()[both]
    assert both.any()
    assert (abs(cct_a - cct_b) / cct_a).max() <= tolerance, (cct_a, cct_b)
    assert all((out / "cells" / c / "manifest.json").exists() for c in b["cell"])
