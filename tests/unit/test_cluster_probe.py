"""A cluster address that does not answer is refused in one line within seconds (Ray's own connect retried
for minutes, blocked in its C++ core, deaf to SIGINT and SIGTERM)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.run.cluster import probe
from testbed.run.params import RunError


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("nosuchhost:1", "does not answer"),
        ("127.0.0.1:1", "refused"),
        ("ray://127.0.0.1:1", "refused"),
        ("127.0.0.1", "expected HOST:PORT"),
        ("h:port", "expected HOST:PORT"),
    ],
)
def test_an_address_that_does_not_answer_is_refused(address: str, why: str) -> None:
    t0 = time.monotonic()
    with pytest.raises(RunError, match=why):
        probe(address, timeout_s=5)
    assert time.monotonic() - t0 < 6


def test_a_listening_address_passes() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        probe(f"127.0.0.1:{s.getsockname()[1]}")
        probe("auto")  # Ray finds the local cluster itself


def test_the_cli_says_it_in_one_line(tmp_path: Path) -> None:
    t0 = time.monotonic()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "testbed.cli",
            "sweep",
            "--schemes",
            "ofan",
            "--cluster",
            "nosuchhost:1",
            "--out",
            str(tmp_path / "s"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert time.monotonic() - t0 < 30
    assert r.returncode == 2
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith("testbed: error: the Ray cluster at nosuchhost:1 does not answer")
