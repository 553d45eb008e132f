"""The claims check's data as the repository keeps it (testbed.run.claims.store): rows added as runs finish, the
page judged on the data alone and regenerated from it byte for byte, a check resumed from the data elsewhere runs
only what is missing, parts stop before their time, and data made otherwise is refused in one line. The runner
here writes synthetic rows (no kernel): these test the bookkeeping; the committed data's own regeneration is
test_reproduction_data.py."""

from __future__ import annotations

import gzip
import json
import math
import time
from pathlib import Path
from typing import Any

import pytest

from testbed.run import claims as cl
from testbed.run.claims import execution, store
from testbed.run.params import RunError
from testbed.run.sweep import SPEC, SweepDir, matrix

C1 = "C1"  # Fig. 1's utilisation: 18 runs a seed-set at the quick scale, one experiment


def fake_runner(ran: list[str], wall_s: float = 1.0) -> Any:
    """Writes a row per pending cell (asking `fits` first, as run_local does), no kernel."""

    def run_sweep(d: SweepDir, **kw: Any) -> None:
        for cell in d.pending():
            if kw.get("fits") is not None and not kw["fits"](cell):
                return
            ran.append(cell.name)
            d.write_row(
                {
                    "cell": cell.name,
                    "cell_label": cell.label,
                    "seed": cell.seed,
                    "load": cell.load,
                    "k": cell.k,
                    "rate_bps": d.matrix.rate_for(cell.k),
                    "fidelity_valid": True,
                    "utilisation": min(cell.load, 0.95) - 0.001 * cell.seed,
                    "wall_s": wall_s,
                    "run_dir": f"/nowhere/{cell.name}",
                    "commit": "0123456789abcdef",
                    "date": "2026-12-08",
                    "nan_metric": math.nan,
                }
            )
            kw["progress"](len(d.done()), len(d.matrix.cells()), {"cell": cell.name})

    return run_sweep


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    ran: list[str] = []
    monkeypatch.setattr(execution, "run_sweep", fake_runner(ran))
    monkeypatch.setattr(execution, "check_can_run", lambda cluster: None)
    return ran


def test_rows_are_kept_byte_for_byte_without_the_machines_paths(tmp_path: Path) -> None:
    s = store.Store(tmp_path, "quick")
    rows = [{"cell": "b", "x": 1.5, "y": math.nan, "run_dir": "/here"}, {"cell": "a", "x": 2, "z": None}]
    s.save_rows("fig1", rows)
    first = (tmp_path / "quick" / "runs" / "fig1.jsonl.gz").read_bytes()
    time.sleep(1.1)  # gzip's header would carry the time
    s.save_rows("fig1", rows)
    assert (tmp_path / "quick" / "runs" / "fig1.jsonl.gz").read_bytes() == first
    back = s.rows("fig1")
    assert [r["cell"] for r in back] == ["b", "a"] and all("run_dir" not in r for r in back)
    assert math.isnan(back[0]["y"]) and back[1]["z"] is None and back[1]["x"] == 2
    assert gzip.decompress(first).decode().splitlines()[0] == '{"cell":"b","x":1.5,"y":NaN}'


def test_a_check_adds_its_rows_and_the_page_regenerates_from_them_alone(runner: list[str], tmp_path: Path) -> None:
    """A check with --from adds every run's row and one part to the data; judging the data alone (--no-run, other
    directories) writes the same claims.md byte for byte, twice, and the page names the data, not the judging."""
    data = tmp_path / "data"
    done = cl.check(C1, out=tmp_path / "a", data=data, command="testbed paper claims --from data")
    assert len(runner) == 18 and done.results[0]["verdict"] != "no data"
    meta = json.loads((data / "quick" / "check.json").read_text())
    assert [(p["runs"], p["command"]) for p in meta["parts"]] == [(18, "testbed paper claims --from data")]
    m = cl.matrices("quick", "paper", cl.select(C1), cl.RATE_FACTOR)["fig1"]
    assert meta["rates"]["fig1"] == {"4": m.rate_for(4)}
    assert len(store.Store(data, "quick").rows("fig1")) == 18
    pages = []
    for out in ("b", "c"):
        again = cl.check(C1, out=tmp_path / out, data=data, run_missing=False, command="judging")
        assert again.results == [{**done.results[0]}]
        pages.append((tmp_path / out / "claims.md").read_text())
    assert pages[0] == pages[1] == (tmp_path / "a" / "claims.md").read_text()
    assert f"Command: `testbed paper claims --scale quick --no-run --from {data.as_posix()}`" in pages[0]
    assert "Data from commits 0123456, 2026-12-08" in pages[0] and "judging" not in pages[0]
    assert len(runner) == 18  # judging ran nothing


def test_a_check_resumed_elsewhere_from_the_data_runs_only_what_is_missing(runner: list[str], tmp_path: Path) -> None:
    data = tmp_path / "data"
    m = cl.matrices("quick", "paper", cl.select(C1), cl.RATE_FACTOR)["fig1"]
    d = SweepDir(tmp_path / "first" / "experiments" / "fig1", m)
    for cell in m.cells()[:5]:  # an earlier check without --from, five runs in
        d.write_row({"cell": cell.name, "k": cell.k, "rate_bps": m.rate_for(4), "fidelity_valid": True, "seed": 1})
    cl.check(C1, out=tmp_path / "first", data=data, minutes=1e-9)  # imports them, runs nothing
    assert runner == [] and len(store.Store(data, "quick").rows("fig1")) == 5
    parts = json.loads((data / "quick" / "check.json").read_text())["parts"]
    assert [p["runs"] for p in parts] == [5] and parts[0]["command"].startswith("imported from ")
    cl.check(C1, out=tmp_path / "elsewhere", data=data)  # a fresh directory on another machine
    assert len(runner) == 13 and not {c.name for c in m.cells()[:5]} & set(runner)
    assert [p["runs"] for p in json.loads((data / "quick" / "check.json").read_text())["parts"]] == [5, 13]


def test_a_part_starts_no_run_it_cannot_finish(runner: list[str], tmp_path: Path) -> None:
    """With --minutes no run starts whose estimate (1.5 x the longest finished run at its k) would end after the
    part; the claims of the unfinished experiment read 'no data' and the next part goes on."""
    data = tmp_path / "data"
    m = cl.matrices("quick", "paper", cl.select(C1), cl.RATE_FACTOR)["fig1"]
    d = SweepDir(tmp_path / "out" / "experiments" / "fig1", m)
    first = m.cells()[0]
    d.write_row(
        {"cell": first.name, "k": 4, "rate_bps": m.rate_for(4), "fidelity_valid": True, "wall_s": 40.0, "seed": 1}
    )
    assert execution.estimate_run_s(d, m.cells()[1]) == 60.0
    # a part of 5.5 minutes keeps 5 for the judging: 30 s, not the 60 s the next run needs
    done = cl.check(C1, out=tmp_path / "out", data=data, minutes=5.5)
    assert runner == [] and done.results[0]["verdict"] == "no data" and "1 of 18 runs" in done.results[0]["notes"]
    cl.check(C1, out=tmp_path / "out", data=data, minutes=60)
    assert len(runner) == 17


def test_data_made_otherwise_is_refused_in_one_line_before_any_run(runner: list[str], tmp_path: Path) -> None:
    data = tmp_path / "data"
    cl.check(C1, out=tmp_path / "a", data=data, minutes=1e-9)
    with pytest.raises(RunError, match=r"--from .*made with propagation paper, this check's is 0.1us"):
        cl.check(C1, out=tmp_path / "b", data=data, propagation="0.1us")
    with pytest.raises(RunError, match=r"made with rate_factor 0.75, this check's is 0.5"):
        cl.check(C1, out=tmp_path / "b", data=data, rate_factor=0.5)
    meta = json.loads((data / "quick" / "check.json").read_text())
    meta["experiments"]["fig1"]["options"]["load"] = [0.5]
    (data / "quick" / "check.json").write_text(json.dumps(meta))
    with pytest.raises(RunError, match="holds another matrix than this check's"):
        cl.check(C1, out=tmp_path / "b", data=data)
    assert runner == []


def test_a_directory_made_at_another_rate_is_refused_from_its_record(tmp_path: Path) -> None:
    """sweep.json records the rate each fabric resolved to: a directory made at another one is refused before any
    run even without a finished row."""
    m = matrix(("ofan",), seed=(1, 2))
    d = SweepDir(tmp_path / "s", m)
    spec = json.loads((d.path / SPEC).read_text())
    assert spec["rates"] == {"4": m.rate_for(4)}
    d.check_rates()
    spec["rates"]["4"] = 2 * m.rate_for(4)
    (d.path / SPEC).write_text(json.dumps(spec))
    with pytest.raises(RunError, match=r"was made for k=4 at .*the packet budget changed.*another --out"):
        SweepDir(tmp_path / "s", m).check_rates()


def test_paper_claims_refuses_from_and_minutes_off_claims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from testbed.cli import main

    for extra, flag in ((["--from", str(tmp_path)], "--from"), (["--minutes", "5"], "--minutes")):
        assert main(["paper", "fig1", *extra]) == 2
        assert capsys.readouterr().err == f"testbed: error: {flag} goes with 'testbed paper claims'\n"
    assert main(["paper", "claims", "--minutes", "0"]) == 2
    assert "--minutes: expected a positive number, got 0" in capsys.readouterr().err
