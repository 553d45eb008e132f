"""The command line on the real kernel: up, status, run, down, clean."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import cli, leftovers

pytestmark = pytest.mark.root

REQUIRED_RUN_KEYS = {
    "scheme",
    "workload",
    "k",
    "hosts",
    "size_bytes",
    "load",
    "rate_bps",
    "seed",
    "cct_s",
    "cct_lower_bound_s",
    "cct_increase",
    "packets_sent",
    "packets_received",
    "drops",
    "queues",
    "ports",
    "fidelity",
}
STAGES = {"host_edge", "edge_agg", "agg_core", "core_agg", "agg_edge", "edge_host"}


def test_up_status_run_down(tmp_path: Path) -> None:
    p = "tc"
    assert leftovers(p) == []
    try:
        r = cli("up", "--k", "4", "--scheme", "ofan", "--prefix", p)
        assert r.returncode == 0, r.stderr
        again = cli("up", "--k", "4", "--prefix", p)
        assert again.returncode == 2 and "already up" in again.stderr
        assert len(again.stderr.strip().splitlines()) == 1

        st = cli("status", "--json", "--prefix", p)
        assert st.returncode == 0, st.stderr
        s = json.loads(st.stdout)
        assert s["k"] == 4 and s["hosts"] == 16 and s["namespaces"] == 36
        assert len(s["links"]) == 48 and all(ln["state"] == "up" for ln in s["links"])
        assert {v["scheme"] for v in s["switches"].values()} == {"ofan"}
        assert s["watcher"]["alive"]

        before = sorted(os.listdir("/run/netns"))
        wrong_k = cli("run", "--workload", "permutation", "--size", "256KB", "--k", "6", "--prefix", p)
        assert wrong_k.returncode == 2 and len(wrong_k.stderr.strip().splitlines()) == 1
        assert sorted(os.listdir("/run/netns")) == before

        out = cli(
            "run",
            "--workload",
            "permutation",
            "--size",
            "256KB",
            "--load",
            "0.9",
            "--scheme",
            "ofan",
            "--seed",
            "4",
            "--json",
            "--out",
            str(tmp_path / "run"),
            "--prefix",
            p,
        )
        assert out.returncode == 0, out.stderr
        res = json.loads(out.stdout)  # exactly one JSON object on stdout
        assert set(res) >= REQUIRED_RUN_KEYS
        assert set(res["queues"]) == STAGES
        assert all({"avg_pkts", "max_pkts"} <= set(v) for v in res["queues"].values())
        assert all({"port", "stage", "avg_pkts", "max_pkts"} <= set(x) for x in res["ports"])
        assert res["packets_received"] == res["packets_sent"] == 16 * 64
        assert res["size_bytes"] == 256 * 1024 and res["load"] == 0.9 and res["k"] == 4
        assert "pacing_error_max" in res["fidelity"]

        down = cli("down", "--prefix", p)
        assert down.returncode == 0, down.stderr
        assert leftovers(p) == []
        assert cli("down", "--prefix", p).returncode == 2
    finally:
        cli("clean", "--prefix", p)


def test_ephemeral_run_leaves_nothing(tmp_path: Path) -> None:
    p = "te"
    r = cli(
        "run",
        "--workload",
        "incast",
        "--size",
        "64KB",
        "--fan-in",
        "3",
        "--json",
        "--out",
        str(tmp_path / "r"),
        "--prefix",
        p,
    )
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["packets_received"] == res["packets_sent"] == 3 * 16
    assert leftovers(p) == []


def test_clean_recovers_after_sigkill_during_up() -> None:
    p = "tk"
    decoys = ["tkk-keep", "tk2"]
    for d in decoys:
        subprocess.run(["ip", "netns", "add", d], check=True)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "testbed.cli", "up", "--k", "8", "--prefix", p],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if any(n.startswith(p + "-") for n in os.listdir("/run/netns")):
                break
            time.sleep(0.005)
        time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert leftovers(p), "the build should have been interrupted half-way"
        r = cli("clean", "--prefix", p)
        assert r.returncode == 0, r.stderr
        assert leftovers(p) == []
        names = os.listdir("/run/netns")
        assert all(d in names for d in decoys)
        # a new fabric with the same prefix can be built afterwards
        assert cli("up", "--k", "4", "--prefix", p).returncode == 0
        assert cli("down", "--prefix", p).returncode == 0
        assert leftovers(p) == []
    finally:
        cli("clean", "--prefix", p)
        for d in decoys:
            subprocess.run(["ip", "netns", "del", d], check=False)


def test_demo_turns_acks_on_for_a_scheme_that_needs_them(tmp_path: Path) -> None:
    """`testbed demo --schemes conga,ofan`: CONGA feeds congestion back on the reverse traffic, so the registry
    says it needs ACKs and the demo runs every cell with them (it used to fail late, its own list knowing only
    REPS); every packet and its ACK arrive."""
    out = tmp_path / "demo"
    r = cli(
        "demo", "--schemes", "conga,ofan", "--sizes", "256KB", "--retries", "1", "--out", str(out), "--prefix", "td"
    )
    assert r.returncode == 0, r.stderr
    assert "ACKs on: conga needs them" in r.stdout
    rows = [json.loads(p.read_text()) for p in (out / "rows").glob("*.json")]
    assert sorted(row["scheme"] for row in rows) == ["conga", "ofan"]
    for row in rows:
        assert row["acks"] is True
        assert row["packets_received"] == row["packets_sent"] > 0
        assert row["acks_received"] == row["packets_received"], row["scheme"]
    assert leftovers("td") == []
