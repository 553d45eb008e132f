"""`testbed paper FIG|all` as the run layer does it (testbed.run.paper.run_figures), without building a fabric
(the runner's two entry points replaced): each figure panel's sweep directory and matrix, the line said before
any run, only pending sweeps run, each with its panel's progress label, and what the command draws from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testbed.run import paper
from testbed.run.sweep import SweepDir
from testbed.topology.timebase import parse_propagation


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []

    def run_sweep(d: SweepDir, **kw: Any) -> None:
        kw["progress"](1, 2, {"cell": "x"})
        calls.append(("run", d.path, kw["prefix"], kw["cluster"], kw["wait"]))

    monkeypatch.setattr(paper, "check_can_run", lambda cluster: calls.append(("can run", cluster)))
    monkeypatch.setattr(paper, "run_sweep", run_sweep)
    return calls


def test_a_figures_panels_each_a_sweep(tmp_path: Path, runner: list[tuple[Any, ...]]) -> None:
    said: list[str] = []
    seen: list[tuple[str, int, int]] = []
    ran = paper.run_figures(
        "fig7",
        out=tmp_path,
        propagation="0",
        rate_factor=0.5,
        prefix="tpx",
        cluster="ray",
        announce=said.append,
        progress=lambda label, done, n, row: seen.append((label, done, n)),
    )
    assert ran.out == tmp_path and list(ran.dirs) == [("fig7", "a"), ("fig7", "b")]
    assert [d.path for d in ran.dirs.values()] == [tmp_path / "a", tmp_path / "b"]
    for (name, panel), d in ran.dirs.items():
        m = paper.figures()[name].matrices("quick")[panel]
        assert d.matrix.figure == "fig7" and d.matrix.rate_factor == 0.5
        assert d.matrix.values("propagation") == (parse_propagation("0"),)
        assert [c.name for c in d.matrix.cells()] == [c.name for c in m.cells()]
    total = sum(len(d.matrix.cells()) for d in ran.dirs.values())
    assert said == [f"fig7: {total} runs at --scale quick (0 done already), about {_minutes('fig7')} min here"]
    assert runner == [
        ("can run", "ray"),
        ("run", tmp_path / "a", "tpx", "ray", False),
        ("run", tmp_path / "b", "tpx", "ray", False),
    ]
    assert seen == [("fig7a", 1, 2), ("fig7b", 1, 2)]


def test_every_figure_in_its_own_directory(tmp_path: Path) -> None:
    dirs = paper.figure_dirs("all", "quick", tmp_path, "paper", 1.0)
    assert list(dict.fromkeys(n for n, _ in dirs)) == list(paper.NAMES)
    assert dirs[("fig5", "b")].path == tmp_path / "fig5" / "b" and dirs[("fig1", "")].path == tmp_path / "fig1"


def test_default_rate_factor_and_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    got: dict[str, Any] = {}
    monkeypatch.setattr(paper, "figure_dirs", lambda *a: got.update(args=a) or {})
    ran = paper.run_figures("fig1", rate_factor=None)
    assert ran.out == Path("results") / "paper-fig1-quick" and got["args"][-1] == 1.0


def _minutes(name: str) -> str:
    return f"{paper.figure_estimate_s(paper.figures()[name], 'quick') / 60:.0f}"


def test_a_directory_run_at_another_rate_is_not_resumed(tmp_path: Path) -> None:
    """The auto rate follows the packet budget: a directory whose runs went at another rate than the matrix's
    today is refused before any run (one line), and one at the same rate resumes; judging needs no check."""
    from testbed.run.params import RunError
    from testbed.run.sweep import matrix

    m = matrix(("ofan",), seed=(1, 2))
    d = SweepDir(tmp_path / "s", m)
    today = m.rate_for(4)
    d.write_row({"cell": d.pending()[0].name, "k": 4, "rate_bps": today})
    d.check_rates()  # the same rate: resumes
    d.write_row({"cell": d.pending()[0].name, "k": 4, "rate_bps": today * 2})
    with pytest.raises(RunError, match=r"k=4 runs went at .*the packet budget changed.*another --out"):
        d.check_rates()
