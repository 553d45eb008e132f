"""Bad input: one line on stderr, exit status 2, and no kernel object made.

These run the real CLI in a subprocess. As root they would build a fabric if
validation let anything through, so "no namespace appeared" is a real check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PREFIX = "tv"


def _namespaces() -> set[str]:
    try:
        return set(os.listdir("/run/netns"))
    except FileNotFoundError:
        return set()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "testbed.cli", *args], capture_output=True, text=True, timeout=60, check=False
    )


BAD = [
    ("up", "--k", "5"),
    ("up", "--k", "2"),
    ("up", "--k", "four"),
    ("up", "--k", "4", "--scheme", "spray"),
    ("up", "--k", "4", "--rate", "0mbit"),
    ("up", "--k", "4", "--rate", "-5mbit"),
    ("up", "--k", "4", "--prefix", "Bad-Prefix"),
    ("run", "--workload", "permutation", "--size", "0", "--load", "1"),
    ("run", "--workload", "permutation", "--size", "1MB", "--load", "0"),
    ("run", "--workload", "permutation", "--size", "1MB", "--load", "1.5"),
    ("run", "--workload", "permutation", "--size", "1MB", "--load", "-0.1"),
    ("run", "--workload", "alltoallish", "--size", "1MB"),
    ("run", "--workload", "permutation", "--size", "1MB", "--scheme", "nope"),
    ("run", "--workload", "permutation", "--size", "1MB", "--k", "7"),
    ("run", "--workload", "incast", "--size", "1MB", "--fan-in", "16"),
    ("demo", "--k", "3"),
    ("up", "--k", "4", "--scheme", "pofan", "--pipe-size", "3"),
    ("up", "--k", "6", "--scheme", "pofan", "--pipe-size", "4"),
    ("run", "--workload", "permutation", "--size", "1MB", "--scheme", "pofan", "--pipe-size", "3"),
    ("run", "--workload", "permutation", "--size", "1MB", "--scheme", "pofan", "--pipe-size", "0"),
    ("run", "--workload", "permutation", "--size", "1MB", "--scheme", "pofan", "--pipe-size", "many"),
    ("up", "--k", "4", "--scheme", "reps"),
    ("run", "--workload", "permutation", "--size", "1MB", "--scheme", "reps", "--propagation", "200pkts"),
    ("run", "--workload", "permutation", "--size", "1MB", "--load-bands", "0.5"),
    ("run", "--workload", "permutation", "--size", "1MB", "--steps", "-1"),
    ("run", "--workload", "permutation", "--size", "1MB", "--ecn-threshold", "lots"),
    ("run", "--workload", "permutation", "--size", "1MB", "--ecn-threshold", "120%"),
    ("run", "--workload", "permutation", "--size", "1MB", "--scheme", "drb", "--k", "18"),
    ("compare", "--schemes", "ofan,ofan", "--size", "1MB"),
    ("sweep", "--schemes", "ofan", "--load", "0.5,2", "--out", "/tmp/tv-never"),
    ("sweep", "--schemes", "ofan", "--fan-in", "2,x", "--out", "/tmp/tv-never"),
    ("ideal", "--schemes", "dlb"),
    ("ideal", "--size", "1000"),
    ("ideal", "--workload", "all-to-all"),
    ("ideal", "--start-jitter", "-1"),
    ("ideal", "--k", "5"),
    ("ideal", "--schemes", "pofan:3"),
    ("ideal", "--schemes", "pofan:cpu"),
    ("rates", "--failures", "1.5"),
    ("rates", "--failures", "0.05,x"),
    ("rates", "--k", "5"),
    ("paper", "fig4", "--no-run"),
    ("paper", "fig4", "--doc", "docs/reproduction.md"),
    ("frobnicate",),
]


@pytest.mark.parametrize("args", BAD, ids=[" ".join(a) for a in BAD])
def test_bad_input_is_one_line_and_builds_nothing(args: tuple[str, ...]) -> None:
    before = _namespaces()
    r = (
        _cli(*args, "--prefix", PREFIX)
        if args[0] in ("up", "run", "demo", "compare") and "--prefix" not in args
        else _cli(*args)
    )
    assert r.returncode == 2, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("testbed: error:")
    assert r.stdout == ""
    assert _namespaces() == before
    assert not any(n.startswith(PREFIX + "-") for n in _namespaces())
    assert not os.path.exists(f"/sys/fs/bpf/{PREFIX}-maps")


def test_rates_gives_each_splits_rate_per_failure_set() -> None:
    """`testbed rates` (no root): per failure set of a sweep's cells, the LP's, the even split's and weighted
    Ofan's rate; at k=4, P = 0.05, seed 1 (one aggregation switch left with one core link): 0.5, 1/3 and 0.5,
    and no split above the LP's anywhere."""
    r = _cli("rates", "--k", "4", "--failures", "0.05,0.1", "--seeds", "1-3", "--json")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["failures"], x["seed"]) for x in rows] == [(p, s) for p in (0.05, 0.1) for s in (1, 2, 3)]
    first = rows[0]
    assert (first["rho_max"], first["rho_weighted"]) == (0.5, 0.5) and abs(first["rho_even"] - 1 / 3) < 1e-9
    assert all(x["rho_even"] <= x["rho_max"] + 1e-9 and x["rho_weighted"] <= x["rho_max"] + 1e-9 for x in rows)
