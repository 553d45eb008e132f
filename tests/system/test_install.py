"""A plain, non-editable install works: `pip install .` into a fresh virtualenv puts every C source and header
the testbed compiles (the eBPF programs, the sender) into the package, and its `testbed demo` builds a fabric,
compiles both and runs, from a directory that holds no checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from .helpers import leftovers

pytestmark = pytest.mark.root

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "tin"


def test_a_plain_install_builds_and_runs_the_demo(tmp_path: Path) -> None:
    import bcc

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # the dependencies from the project's own virtualenv (no download), bcc from where the project finds it; a
    # directory named in a .pth has no .pth of its own processed, so the project's editable install stays out
    (site / "deps.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n{Path(bcc.__file__).parent.parent}\n")
    r = subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", "--no-deps", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    where = subprocess.run(
        [str(py), "-c", "import testbed, traffic, ebpf; print(testbed.__file__, ebpf.DIR)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.split()
    assert all(w.startswith(str(site)) for w in where), where  # the installed copy, not the checkout
    for shipped in (
        "ebpf/switch.c",
        "ebpf/include/shared.h",
        "traffic/sender.c",
        "traffic/sender.h",
        "traffic/transport.c",
        "traffic/cca.h",
    ):
        assert (site / shipped).is_file(), shipped
    out = tmp_path / "demo"
    env = {**os.environ, "TESTBED_SENDER_DIR": str(tmp_path / "sender")}  # a sender compiled from the install
    try:
        r = subprocess.run(
            [
                str(venv / "bin" / "testbed"),
                "demo",
                "--sizes",
                "64KB",
                "--schemes",
                "ecmp,ofan",
                "--out",
                str(out),
                "--wait",
                "--prefix",
                PREFIX,
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
            env=env,
            check=False,
        )
    finally:
        subprocess.run(
            [str(venv / "bin" / "testbed"), "clean", "--prefix", PREFIX], capture_output=True, cwd=tmp_path, check=False
        )
    assert r.returncode == 0, r.stdout + r.stderr
    assert (out / "report.html").is_file()
    assert list((tmp_path / "sender").glob("testbed-sender-*"))  # compiled from the installed sources
    rows = [json.loads(p.read_text()) for p in (out / "rows").glob("*.json")]
    assert len(rows) == 2 and all(row["packets_received"] == row["packets_sent"] > 0 for row in rows)
    assert leftovers(PREFIX) == []
