"""The public API on the real kernel: a run through it and the same run through `testbed run --json` give the
same fields and, under ECMP with a fixed seed, the same paths and queue maxima; an exception inside the `with`
block leaves no namespace; bad arguments raise TestbedError with the command's message before any kernel
object is made; and the two examples in examples/ run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import testbed

from .helpers import TIMING_RATE_BPS, cli, leftovers

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
SWITCH_STAGES = ("edge_agg", "agg_core", "core_agg", "agg_edge")


SEEDS = (3, 4, 5)
MIN_BOTH_VALID = 1  # of the three pairs of single tries (each try ~95 % valid at this rate: envelopes.md)


def test_a_run_through_the_api_is_the_run_of_the_command(tmp_path: Path) -> None:
    via_api = {}
    with testbed.build(k=4, rate=TIMING_RATE_BPS, prefix="tap") as fab:
        for seed in SEEDS:  # one try each
            r = fab.run("permutation", size="256KB", scheme="ecmp", seed=seed)
            assert isinstance(r, testbed.Result) and r.out_dir is None
            assert len(r.ports) == len(r.json()["ports"]) and len(r.flows) == 16 and r.timeseries is not None
            via_api[seed] = r.json()
    compared = 0
    for seed in SEEDS:
        c = cli(
            "run",
            "--workload",
            "permutation",
            "--size",
            "256KB",
            "--scheme",
            "ecmp",
            "--seed",
            str(seed),
            "--retries",
            "0",
            "--k",
            "4",
            "--rate",
            f"{TIMING_RATE_BPS}bit",
            "--json",
            "--out",
            str(tmp_path / f"cli{seed}"),
            "--prefix",
            "tcl",
        )
        assert c.returncode == 0, c.stderr
        via_cli, api = json.loads(c.stdout), via_api[seed]
        assert set(via_cli) == set(api)  # the same fields
        # the same paths: every port carried exactly as many packets (ECMP's hash is fixed by the seed)
        assert {p["port"]: p["tx_pkts"] for p in via_cli["ports"]} == {p["port"]: p["tx_pkts"] for p in api["ports"]}
        if not (via_cli["fidelity"]["valid"] and api["fidelity"]["valid"]):
            continue  # a late sender moves a collision's queue by as many packets (8 in one CI run)
        compared += 1
        for stage in SWITCH_STAGES:  # and so the same queues, give or take the one packet the senders' timing moves
            assert abs(via_cli["queues"][stage]["max_pkts"] - api["queues"][stage]["max_pkts"]) <= 1, (seed, stage)
    assert compared >= MIN_BOTH_VALID
    assert leftovers("tap") == leftovers("tcl") == []


def test_an_exception_in_the_block_leaves_nothing() -> None:
    with pytest.raises(ZeroDivisionError), testbed.build(k=4, prefix="tae") as fab:
        assert fab.hosts == 16 and leftovers("tae")  # it was up
        _ = 1 / 0
    assert leftovers("tae") == []


@pytest.mark.parametrize(
    ("api_kwargs", "cli_args"),
    [
        ({"k": 5}, ["up", "--k", "5"]),
        ({"k": 4, "rate": "fast"}, ["up", "--k", "4", "--rate", "fast"]),
        ({"k": 4, "scheme": "pofan", "pipe_size": 3}, ["up", "--k", "4", "--scheme", "pofan", "--pipe-size", "3"]),
    ],
)
def test_bad_arguments_raise_the_commands_message_before_anything_is_built(
    api_kwargs: dict[str, object], cli_args: list[str]
) -> None:
    with pytest.raises(testbed.TestbedError) as e, testbed.build(prefix="tbad", **api_kwargs):  # type: ignore[arg-type]
        pass
    line = cli(*cli_args, "--prefix", "tbad").stderr.strip()
    assert line.endswith(str(e.value)), (line, str(e.value))  # argparse adds "argument --k: " before it
    assert leftovers("tbad") == []


def test_a_bad_run_is_refused_and_the_fabric_stays_usable() -> None:
    with testbed.build(k=4, rate=TIMING_RATE_BPS, prefix="tbr") as fab:
        with pytest.raises(testbed.TestbedError, match="--size is required"):
            fab.run("permutation")
        with pytest.raises(testbed.TestbedError, match="give --cc, or --steps 1"):
            fab.run("fsdp", size="64KB", gpus_per_server=4)
        assert fab.run("permutation", size="64KB", scheme="ofan").packets_received == 16 * 16
    assert leftovers("tbr") == []


@pytest.mark.parametrize("example", ["failure_schedule.py", "compare_loop.py"])
def test_the_examples_run(example: str, tmp_path: Path) -> None:
    extra = ["--seeds", "1"] if example == "compare_loop.py" else []
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples" / example), "--out", str(tmp_path), *extra],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    if example == "failure_schedule.py":
        rows = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
        assert [len(row["failed"]) for row in rows] == [0, 1, 2, 0]
        assert rows[2]["rho_max"] < 1  # two failed links cut some flows' capacity
    else:
        assert (tmp_path / "compare.png").stat().st_size > 5000
