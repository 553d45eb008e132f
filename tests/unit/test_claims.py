"""The claims check around its rules (testbed.run.claims; the rules themselves: test_claim_rules.py): every
claim has a rule or says what it needs, names every experiment its rule reads and each of them exists, the
selection and its errors, what is missing is "no data" or "pending", never dropped, the output lists every
claim, the page's hand-written parts are kept, and the wall time adds up over invocations."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from testbed.measure.claim_rules import VERDICTS, Data, Decision, Interval, Outcome, stat
from testbed.run import claims as cl
from testbed.run.claims import execution
from testbed.run.params import RunError
from testbed.run.sweep import SweepDir
from testbed.topology.timebase import PAPER

from .test_claim_rules import data, fig1, row


def by_id(cid: str) -> cl.Claim:
    return next(c for c in cl.claims() if c.cid == cid)


@dataclass
class Recording(Data):
    """Data that remembers which experiments' rows a rule asked for."""

    asked: set[str] = field(default_factory=set)

    def of(self, name: str) -> pd.DataFrame:
        self.asked.add(name)
        return super().of(name)


def test_every_claim_has_a_rule_or_says_what_it_needs() -> None:
    every = cl.claims()
    assert len(every) >= 15 and len({c.cid for c in every}) == len(every)
    assert [int(c.cid[1:]) for c in every] == sorted(int(c.cid[1:]) for c in every)
    for c in every:
        assert (c.check is None) == bool(c.needs), c.cid
        assert all(n in cl.experiments() for n in c.experiments), c.cid
    assert sum(1 for c in every if c.check is not None) >= 15
    assert set(cl.needed(every)) == set(cl.experiments())  # every experiment is read by some claim
    for scale in cl.SCALES:  # every experiment's matrix checks its cells when built
        mats = cl.matrices(scale, "paper", every)
        assert set(mats) == set(cl.needed(every)) and all(m.values("propagation") == (PAPER,) for m in mats.values())


def test_every_claim_names_every_experiment_its_rule_reads() -> None:
    for c in cl.claims():
        if c.check is None:
            continue
        d = Recording("quick")
        with contextlib.suppress(KeyError):  # a rule may ask an empty table for a column (evaluate: "no data")
            c.check(d)
        assert d.asked == set(c.experiments), c.cid  # () for the claims computed from the testbed itself


def test_selection_and_bad_input() -> None:
    assert [c.cid for c in cl.select("c3,C1,c3")] == ["C3", "C1"]
    with pytest.raises(RunError, match="unknown claim 'c99'"):
        cl.select("C1,C99")
    with pytest.raises(RunError, match="--scale"):
        cl.matrices("huge", "paper", cl.select("C1"))
    assert cl.needed(cl.select("C9")) == ["fig3", "fig6", "fig17"]
    assert cl.needed(cl.select("C31")) == ["fig17"]
    assert cl.needed(cl.select("C1,C2,C9,C11,C10")) == ["fig1", "fig3", "fig6", "fig17"]  # each once, in order
    assert cl.needed(cl.select("C10,C26,C27")) == []


def test_output_lists_every_claim(tmp_path: Path) -> None:
    every = cl.claims()
    results = cl.evaluate(every, Data("quick"))
    assert [r["id"] for r in results] == [c.cid for c in every]
    assert {r["verdict"] for r in results} <= set(VERDICTS)
    pending = {c.cid for c in every if c.check is None}
    assert pending == {"C43"}  # appendix F.5's variant: the paper leaves it unevaluated too
    assert all(r["verdict"] in ("no data", "agrees") for r in results if r["id"] not in pending)  # no run, no verdict
    cl.write(
        tmp_path,
        results,
        {
            "scale": "quick",
            "command": "testbed paper claims",
            "commit": "x",
            "date": "d",
            "machine": "m",
            "wall_s": 60.0,
            "propagation": "paper",
        },
    )
    md = (tmp_path / "claims.md").read_text()
    assert all(f"| {c.cid} |" in md for c in every)
    assert "- experiment: fig3, fig6, fig17\n" in md  # C9's, and only the computed ones' say so
    assert md.count("- experiment: computed from the testbed itself") == 4  # C10, C26, C27, C39
    assert md.count("- experiment: none yet") == 1  # C43, pending
    j = json.loads((tmp_path / "claims.json").read_text())
    assert len(j["claims"]) == len(every) and all({"value", "sem", "verdict"} <= set(r) for r in j["claims"])
    c9 = next(r for r in j["claims"] if r["id"] == "C9")
    assert c9["experiment"] == "fig3, fig6, fig17" and c9["experiments"] == ["fig3", "fig6", "fig17"]


def test_a_missing_column_is_no_data_naming_the_experiments() -> None:
    rows = [row("ofan", k=4)]  # no queue_*_avg_pkts: a partial sweep
    (out,) = cl.evaluate([by_id("C31")], data(fig17=rows))
    assert out["verdict"] == "no data" and out["detail"].startswith("no valid run of fig17 (")


def test_doc_keeps_its_hand_written_parts(tmp_path: Path) -> None:
    doc = tmp_path / "reproduction.md"
    cl.splice_doc(doc, "# The paper's claims\n\n| C1 | agrees |\n")
    first = doc.read_text()
    assert "## The paper's claims" in first and first.count(cl.DOC_BEGIN) == 1
    doc.write_text("# Title\n\nmethod by hand\n\n" + first.split("\n", 2)[2] + "\n## Discussion\n\nby hand\n")
    cl.splice_doc(doc, "# The paper's claims\n\n| C1 | disagrees |\n")
    text = doc.read_text()
    assert "method by hand" in text and "## Discussion\n\nby hand" in text
    assert "| C1 | disagrees |" in text and "| C1 | agrees |" not in text
    (tmp_path / "plain.md").write_text("no markers\n")
    with pytest.raises(RunError, match="without one pair of generation markers"):
        cl.check_doc(tmp_path / "plain.md")
    with pytest.raises(RunError, match="no directory"):
        cl.check_doc(tmp_path / "nowhere" / "r.md")


def test_an_unfinished_experiment_is_not_judged_on_part_of_its_runs() -> None:
    good = fig1(1.0, 0.99, 0.93, 0.94)
    c1, c9 = by_id("C1"), by_id("C9")  # C9 reads fig3, fig6 and fig17
    whole = cl.evaluate([c1], good)
    assert whole[0]["verdict"] == "agrees"
    part = cl.evaluate([c1, c9], good, {"fig1": "12 of 18 runs", "fig17": "0 of 18 runs"})
    assert [r["verdict"] for r in part] == ["no data", "no data"]
    assert "fig1 (12 of 18 runs)" in part[0]["notes"] and "fig17 (0 of 18 runs)" in part[1]["notes"]
    assert "fig1 (" not in part[1]["notes"]  # only what the claim reads


def test_a_pending_claim_says_what_it_needs() -> None:
    c = cl.Claim(cid="C99", section="s", statement="t", paper="p", rule="r", experiments=("fig1",), needs="a fabric")
    (out,) = cl.evaluate([c], Data("quick"))
    assert out["verdict"] == "pending" and out["notes"] == "needs a fabric"


def test_check_refuses_before_any_build(tmp_path: Path) -> None:
    said: list[str] = []
    with pytest.raises(RunError, match="unknown claim 'c99'"):
        cl.check("C1,C99", out=tmp_path / "a", announce=said.append)
    with pytest.raises(RunError, match="generation markers"):
        (tmp_path / "plain.md").write_text("no markers\n")
        cl.check("C1", out=tmp_path / "b", doc=tmp_path / "plain.md", announce=said.append)
    assert said == [] and not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_check_without_runs_judges_what_is_there(tmp_path: Path) -> None:
    """--no-run on an empty directory: nothing is built, every claim of an experiment reads "no data" with how
    many of its runs are done, the computed ones are judged, and the documents are written."""
    said: list[str] = []
    doc = tmp_path / "page.md"
    done = cl.check("C1,C10", out=tmp_path / "out", run_missing=False, doc=doc, announce=said.append)
    assert said == [f"2 claims, 1 experiments, 18 runs at --scale quick (0 done already) into {tmp_path / 'out'}"]
    assert [(r["id"], r["verdict"]) for r in done.results] == [("C1", "no data"), ("C10", "agrees")]
    assert "fig1 (0 of 18 runs)" in done.results[0]["notes"]
    j = json.loads((tmp_path / "out" / "claims.json").read_text())
    assert (j["scale"], j["propagation"], j["rate_factor"]) == ("quick", "paper", cl.RATE_FACTOR)
    assert list(j["experiments"]) == ["fig1"] and j["command"] == "testbed paper claims"
    assert cl.DOC_BEGIN in doc.read_text() and "| C10 |" in doc.read_text()


def test_check_runs_each_experiment_through_the_runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The experiments the claims read, each once and in order, run through testbed.run.runner with the
    command's prefix, cluster and wait, their progress named by experiment; the wall time recorded as they go."""
    calls: list[tuple[Any, ...]] = []
    seen: list[tuple[str, int, int]] = []

    def run_sweep(d: SweepDir, **kw: Any) -> None:
        kw["progress"](1, 2, None)
        calls.append((d.path.name, kw["prefix"], kw["cluster"], kw["wait"]))

    monkeypatch.setattr(execution, "check_can_run", lambda cluster: calls.append(("can run", cluster)))
    monkeypatch.setattr(execution, "run_sweep", run_sweep)
    done = cl.check(
        "C11,C9,C1",
        out=tmp_path,
        prefix="tcx",
        cluster="ray",
        wait=True,
        progress=lambda name, d, n, row: seen.append((name, d, n)),
    )
    assert calls == [
        ("can run", "ray"),
        ("fig17", "tcx", "ray", True),
        ("fig3", "tcx", "ray", True),
        ("fig6", "tcx", "ray", True),
        ("fig1", "tcx", "ray", True),
    ]
    assert seen == [("fig17", 1, 2), ("fig3", 1, 2), ("fig6", 1, 2), ("fig1", 1, 2)]
    assert [r["id"] for r in done.results] == ["C11", "C9", "C1"] and done.out == tmp_path
    assert json.loads((tmp_path / execution.WALL).read_text())["wall_s"] >= 0


def test_paper_claims_without_runs_from_the_command_line(tmp_path: Path) -> None:
    """`testbed paper claims --no-run --out DIR --doc PAGE` on a directory with no run: exit 0, the table, the
    documents, the page spliced, report.html; nothing built; the wall time of the runs kept, judging adds none."""
    page = tmp_path / "page.md"
    (tmp_path / "out").mkdir()
    execution._record_wall_s(tmp_path / "out", 300.0)  # what the runs took
    argv = ("paper", "claims", "--no-run", "--claims", "C1,C9,C10", "--out", str(tmp_path / "out"), "--doc", str(page))
    r = subprocess.run(
        [sys.executable, "-m", "testbed.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert r.returncode == 0, r.stderr
    assert "3 claims, 4 experiments, 70 runs at --scale quick (0 done already)" in r.stdout
    assert f"claims.md put into {page}" in r.stdout
    j = json.loads((tmp_path / "out" / "claims.json").read_text())
    assert [(c["id"], c["verdict"]) for c in j["claims"]] == [("C1", "no data"), ("C9", "no data"), ("C10", "agrees")]
    assert (tmp_path / "out" / "report.html").exists() and "| C9 | App. F.4 |" in page.read_text()
    assert j["wall_s"] == 300.0 and execution._previous_wall_s(tmp_path / "out") == 300.0


def test_wall_time_adds_up_over_invocations_an_interrupted_one_included(tmp_path: Path) -> None:
    assert execution._previous_wall_s(tmp_path) == 0.0
    execution._record_wall_s(tmp_path, 120.0)  # what an invocation stopped after some runs leaves
    assert execution._previous_wall_s(tmp_path) == 120.0
    (tmp_path / execution.WALL).unlink()  # a directory from before wall.json: claims.json's total
    (tmp_path / "claims.json").write_text('{"wall_s": 60.0}')
    assert execution._previous_wall_s(tmp_path) == 60.0


# -- decisions, seeds and the documents ------------------------------------------------------------
def test_every_claim_decides_with_margins_and_a_seed_cap() -> None:
    for c in cl.claims():
        if c.check is None:  # pending: nothing to decide yet
            continue
        assert c.decisions and len({d.name for d in c.decisions}) == len(c.decisions), c.cid
        assert c.seeds == (30 if c.cid in ("C11", "C31") else 10), c.cid  # the paper's runs: Fig. 17's 30
        assert c.cap("quick") == 3 and c.cap("paper") == c.seeds
    for scale in cl.SCALES:  # one seed has no spread: every experiment starts with two at least
        assert all(len(m.values("seed")) >= 2 for m in cl.matrices(scale, "paper", cl.claims()).values())


def test_claims_json_and_md_carry_seeds_interval_margin_and_verdict(tmp_path: Path) -> None:
    results = cl.evaluate([by_id("C1"), by_id("C10")], fig1(1.0, 0.99, 0.95, 0.94, 0.005))
    cl.write(tmp_path, results, {"scale": "quick", "wall_s": 0.0})
    j = json.loads((tmp_path / "claims.json").read_text())
    c1, c10 = j["claims"]
    assert c1["verdict"] == "not decided" and c1["seeds"] == {"fig1": [1, 2]} and c1["seed_cap"] == 3
    assert c1["quantity"] == "REPS's and AR's utilisation at load 1 (reps)"  # the part not decided
    assert c1["interval"] == [pytest.approx(94.0), pytest.approx(96.0)] and (c1["comparison"], c1["margin"]) == (
        "<=",
        95,
    )
    assert "not decided with 2 seeds (cap 3)" in c1["notes"]
    assert {p["member"]: p["verdict"] for p in c1["parts"]} == {"ofan": "agrees", "reps": "not decided", "ar": "agrees"}
    assert c10["seeds"] == {} and c10["seed_cap"] is None and c10["interval"] == [30.0, 30.0]
    md = (tmp_path / "claims.md").read_text()
    assert "| claim | section | the paper | here | interval | margin | seeds | verdict |" in md
    assert "| 95 % | [94, 96] | <= 95 % | 2 (cap 3) | **not decided** |" in md
    assert "- seeds: fig1: 1, 2 (cap 3 at this scale)" in md
    assert "- decides: Ofan's utilisation at load 1 >= 97 %; REPS's and AR's utilisation at load 1 <= 95 %" in md


FLAKY = Decision(name="u", quantity="Ofan's utilisation at load 1", comparison=">=", margin=0.2)


def flaky(d: Data) -> Outcome:
    """A rule whose interval narrows with the seeds: utilisation 0.3 on odd seeds, 0.9 on even ones."""
    return Outcome({"u": {"ofan": Interval.of(stat(d.of("fig1"), "utilisation", cell_label="ofan", load=1.0))}}, "")


C99 = cl.Claim(
    cid="C99", section="s", statement="t", paper="p", rule="r", decisions=(FLAKY,), experiments=("fig1",), check=flaky
)


def fake_runner(ran: list[str]) -> Any:
    """A runner writing synthetic rows, no kernel: this tests the loop's logic only."""

    def run_sweep(d: SweepDir, **kw: Any) -> None:
        for cell in d.pending():
            ran.append(cell.name)
            util = 0.3 if cell.seed % 2 else 0.9
            d.write_row(
                {
                    "cell": cell.name,
                    "cell_label": cell.label,
                    "seed": cell.seed,
                    "load": cell.load,
                    "k": cell.k,
                    "fidelity_valid": True,
                    "utilisation": util,
                }
            )

    return run_sweep


@pytest.mark.parametrize(("scale", "seeds", "verdict"), [("quick", 3, "not decided"), ("paper", 6, "agrees")])
def test_seeds_until_decided(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, scale: str, seeds: int, verdict: str
) -> None:
    """Three seeds (0.3, 0.9, 0.3: 0.5 +- 0.4) hold the margin 0.2; six (0.6 +- 0.27) clear it. The quick scale
    stops at its cap of 3 and says so; the paper's doubles to 6 and runs only the new seeds' cells."""
    ran: list[str] = []
    said: list[str] = []
    monkeypatch.setattr(execution, "run_sweep", fake_runner(ran))
    monkeypatch.setattr(execution, "check_can_run", lambda cluster: None)
    dirs = cl.sweep_dirs(tmp_path, cl.matrices(scale, "paper", [C99]))
    (r,) = execution.run(
        tmp_path, dirs, [C99], scale=scale, propagation="paper", rate_factor=0.75, meta={}, announce=said.append
    )
    assert (r["verdict"], r["seeds"]) == (verdict, {"fig1": list(range(1, seeds + 1))})
    assert len(ran) == len(set(ran)) == 6 * seeds  # 3 schemes x 2 loads per seed, each cell once
    if scale == "quick":
        assert said == [] and "not decided with 3 seeds (its cap at this scale)" in r["notes"]
    else:
        assert said == ["not decided: C99; more seeds: fig1 3 -> 6 (18 runs)"]
        assert r["interval"][0] > 0.2 and "not decided" not in r["notes"]
    held = json.loads((tmp_path / "experiments" / "fig1" / "sweep.json").read_text())
    assert len(held["matrix"]["options"]["seed"]) == seeds
    again = cl.sweep_dirs(
        tmp_path, cl.matrices(scale, "paper", [C99])
    )  # resumed: the seeds it reached, nothing pending
    assert again["fig1"].matrix.values("seed") == tuple(range(1, seeds + 1)) and not again["fig1"].pending()


def test_more_seeds_doubles_up_to_the_largest_cap_of_the_claims_not_decided() -> None:
    c11, c31, c1, c9 = (by_id(c) for c in ("C11", "C31", "C1", "C9"))
    undecided, decided = {"verdict": "not decided"}, {"verdict": "agrees"}
    have = {"fig17": 3, "fig1": 3, "fig3": 2, "fig6": 2}
    assert cl.more_seeds([c11, c1], [undecided, undecided], have, "paper") == {"fig17": 6, "fig1": 6}
    assert cl.more_seeds([c11, c1], [decided, undecided], have, "paper") == {"fig1": 6}
    assert cl.more_seeds([c1], [undecided], {**have, "fig1": 8}, "paper") == {"fig1": 10}  # the cap, not 16
    assert cl.more_seeds([c1], [undecided], {**have, "fig1": 10}, "paper") == {}
    assert cl.more_seeds([c31], [undecided], {**have, "fig17": 24}, "paper") == {"fig17": 30}
    assert cl.more_seeds([c11, c1], [undecided, undecided], have, "quick") == {}  # 3 seeds: quick's cap
    assert cl.more_seeds([c9], [undecided], have, "quick") == {"fig3": 3, "fig6": 3}  # every experiment below it


def test_a_directory_grows_keeps_its_seeds_and_refuses_another_matrix(tmp_path: Path) -> None:
    m = cl.matrices("quick", "paper", [by_id("C1")])["fig1"]
    d = cl.open_dir(tmp_path, m.replace(seed=(1,)))
    assert d.matrix.values("seed") == (1,)
    assert cl.open_dir(tmp_path, m).matrix.values("seed") == (1, 2, 3)  # fewer seeds held: grown to m
    grown = cl.grow(cl.open_dir(tmp_path, m), 5)
    assert grown.matrix.values("seed") == (1, 2, 3, 4, 5) and len(grown.pending()) == 30
    assert cl.open_dir(tmp_path, m).matrix.values("seed") == (1, 2, 3, 4, 5)  # more seeds held: kept
    with pytest.raises(RunError, match="holds another sweep"):
        cl.open_dir(tmp_path, m.replace(load=(0.5,)))


def test_the_link_model_column_says_same_depends_or_dash() -> None:
    from testbed.run.claims.document import format_link_model

    assert format_link_model(None) == "-"
    assert format_link_model({"emulator": "agrees", "paper": "agrees"}) == "same (agrees)"
    assert format_link_model({"emulator": "agrees", "paper": "disagrees"}) == (
        "depends: emulator agrees, paper disagrees"
    )


def test_the_ideal_fabric_judges_c9_under_both_link_models() -> None:
    """C9 on the ideal fabric's Ofan runs of the quick check's cells (k=4 only: fast): Ofan's edge uplinks stay
    within w + 1 under both link models, and each model's rows are real simulations (queues of one to w + 1
    frames)."""
    from testbed.run.claims import catalogue, link_models

    sel = catalogue.select("C9")
    mats = {n: m.replace(k=(4,)) for n, m in catalogue.matrices("quick", "paper", sel).items()}
    assert link_models.verdicts(sel, mats, "quick") == {"C9": {"emulator": "agrees", "paper": "agrees"}}
    q = {
        link: link_models.ideal_data(sel[0], mats, "quick", link).of("fig17")["queue_edge_agg_max_pkts"].max()
        for link in link_models.LINKS
    }
    assert all(1 <= v <= 3 for v in q.values())
