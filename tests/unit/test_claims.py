"""The claims check's logic (testbed.run.claims) on hand-made rows: each rule
says agrees or disagrees on the side of its threshold the numbers are on,
invalid runs never count, what is missing is "no data" or "pending", never
dropped, and the output lists every claim."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from testbed.run import claims as cl
from testbed.run.params import RunError
from testbed.topology.timebase import PAPER

KB, MB = 1024, 1 << 20


def row(label: str, valid: bool = True, **kw: Any) -> dict[str, Any]:
    base = {
        "cell_label": label,
        "fidelity_valid": valid,
        "k": 4,
        "size_bytes": MB,
        "load": 1.0,
        "cell_failure": 0.0,
        "cell_payload": 4096,
        "cell_cc": "none",
        "cct_increase": 0.0,
        "cct_increase_fault_free": 0.0,
        "utilisation": 1.0,
        "max_queue_pkts": 1,
        "queue_edge_agg_max_pkts": 1,
        "cct_s": 1.0,
        "cct_lower_bound_s": 1.0,
        "rate_bps": 50_000_000,
        "host_lb_freezes": 0,
        **{f"overload_{s}": 0.0 for s in cl.STAGES_UP + cl.STAGES_DOWN},
    }
    base.update(kw)
    return base


def data(**experiments: list[dict[str, Any]]) -> cl.Data:
    return cl.Data("quick", {name: pd.DataFrame(rows) for name, rows in experiments.items()})


def by_id(cid: str) -> cl.Claim:
    return next(c for c in cl.claims() if c.cid == cid)


def test_every_claim_has_a_rule_or_says_what_it_needs() -> None:
    every = cl.claims()
    assert len(every) >= 15 and len({c.cid for c in every}) == len(every)
    for c in every:
        assert (c.check is None) == bool(c.needs), c.cid
        assert c.experiment is None or c.experiment in cl.experiments(), c.cid
    assert sum(1 for c in every if c.check is not None) >= 15
    for scale in cl.SCALES:  # every experiment's matrix checks its cells when built
        mats = cl.matrices(scale, "paper", every)
        assert set(mats) == set(cl.needed(every)) and all(m.values("propagation") == (PAPER,) for m in mats.values())


def test_selection_and_bad_input() -> None:
    assert [c.cid for c in cl.select("c3,C1,c3")] == ["C3", "C1"]
    with pytest.raises(RunError, match="unknown claim 'c99'"):
        cl.select("C1,C99")
    with pytest.raises(RunError, match="--scale"):
        cl.matrices("huge", "paper", cl.select("C1"))
    assert cl.needed(cl.select("C9")) == ["fig3", "fig6", "fig17"]


def test_utilisation_rule_and_invalid_runs_left_out() -> None:
    good = [
        row("ofan", utilisation=0.99),
        row("reps", utilisation=0.93),
        row("ar", utilisation=0.94),
        row("reps", valid=False, utilisation=0.999),
    ]  # an invalid run never counts
    assert cl.c_fig1_utilisation(data(fig1=good)).verdict == "agrees"
    bad = [row("ofan", utilisation=0.99), row("reps", utilisation=0.96), row("ar", utilisation=0.94)]
    assert cl.c_fig1_utilisation(data(fig1=bad)).verdict == "disagrees"
    assert cl.c_fig1_utilisation(data(fig1=[row("ofan", utilisation=0.99)])).verdict == "no data"


@pytest.mark.parametrize(
    ("exponent", "linear", "sqrt", "flat"),
    [
        (1.0, "agrees", "disagrees", "disagrees"),
        (0.5, "disagrees", "agrees", "disagrees"),
        (0.0, "disagrees", "disagrees", "agrees"),
    ],
)
def test_growth_classes_by_exponent(exponent: float, linear: str, sqrt: str, flat: str) -> None:
    labels = cl.CLASS_LINEAR + cl.CLASS_SQRT + cl.CLASS_FLAT
    rows = [
        row(s, size_bytes=m, seed=seed, max_queue_pkts=10 * (m / KB) ** exponent * (1 + 0.01 * seed))
        for s in labels
        for m in (256 * KB, MB, 4 * MB)
        for seed in (1, 2)
    ]
    d = data(fig4=rows)
    assert (cl.c_fig4_linear(d).verdict, cl.c_fig4_sqrt(d).verdict, cl.c_fig4_flat(d).verdict) == (linear, sqrt, flat)
    assert cl.c_fig4_sqrt(d).value == pytest.approx(exponent, abs=0.02)


def test_failures_rule_takes_the_fault_free_increase() -> None:
    rows = [
        row(s, cell_failure=p, cct_increase_fault_free=v, cct_increase=0.0)
        for p in (0.05, 0.1)
        for s, v in (("ofan", 0.2), ("reps", 0.3), ("ar", 0.25))
    ]
    assert cl.c_fig9_failures(data(fig9=rows)).verdict == "agrees"
    rows.append(row("ofan", cell_failure=0.1, cct_increase_fault_free=0.6))  # mean 0.4 > 0.25 at p=0.1
    out = cl.c_fig9_failures(data(fig9=rows))
    assert out.verdict == "disagrees" and out.value == pytest.approx(-15.0)


def test_a_gap_within_its_errors_is_not_comparable() -> None:
    rows = [
        row(s, k=8, seed=i, cct_increase=v)
        for i, (a, b) in enumerate(((0.10, 0.12), (0.12, 0.10)))
        for s, v in (("drb", a), ("ofan", b), ("1ofan", a))
    ]
    assert cl.c_fig6_half(data(fig6=rows)).verdict == "not comparable"
    rows = [row(s, k=8, cct_increase=v) for s, v in (("drb", 0.20), ("1ofan", 0.12), ("ofan", 0.04))]
    out = cl.c_fig6_half(data(fig6=rows))
    assert out.verdict == "agrees" and out.value == pytest.approx(0.5)


def test_edge_bound_reads_every_run_without_acks() -> None:
    ok = [row("ofan", k=4, queue_edge_agg_max_pkts=3), row("ofan", k=8, queue_edge_agg_max_pkts=5)]
    assert cl.c_f4_edge_bound(data(fig3=ok[:1], fig17=ok[1:])).verdict == "agrees"
    over = [*ok, row("ofan", k=8, queue_edge_agg_max_pkts=6)]
    out = cl.c_f4_edge_bound(data(fig6=over))
    assert out.verdict == "disagrees" and out.value == 1.0


def test_computed_claims_from_the_testbed_itself() -> None:
    empty = cl.Data("quick")
    f2 = cl.c_f2_orders(empty)
    assert f2.verdict == "agrees" and f2.value is not None and f2.value >= 30
    mem = cl.c_memory(empty)
    assert mem.verdict == "agrees" and mem.value == pytest.approx(2.5, abs=0.01)
    rtt = cl.c_rtt(empty)
    assert rtt.verdict == "agrees" and rtt.value == pytest.approx(143.6, abs=0.1)


def test_output_lists_every_claim(tmp_path: Path) -> None:
    every = cl.claims()
    results = cl.evaluate(every, cl.Data("quick"))
    assert [r["id"] for r in results] == [c.cid for c in every]
    assert {r["verdict"] for r in results} <= set(cl.VERDICTS)
    assert all(r["verdict"] in ("no data", "agrees") for r in results)  # nothing pending; no run, no verdict
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
    import json

    j = json.loads((tmp_path / "claims.json").read_text())
    assert len(j["claims"]) == len(every) and all({"value", "sem", "verdict"} <= set(r) for r in j["claims"])
    assert math.isnan(cl.stat(pd.DataFrame(), "x").mean)


def test_mixes_rule_between_the_ends_and_edge_best() -> None:
    def rows(mixes: dict[str, float]) -> list[dict[str, Any]]:
        out = [row("ar", cell_mix="none", cct_increase=0.12), row("4ofan", cell_mix="none", cct_increase=0.02)]
        return out + [row("4ofan", cell_mix=m, cct_increase=v) for m, v in mixes.items()]

    ok = {"random:0.5": 0.09, "pods:0.5": 0.085, "agg": 0.08, "edge": 0.075}  # midpoint 0.07: all above, below AR
    d = data(fig11=rows(ok))
    assert cl.c_fig11_mixes(d).verdict == "agrees" and cl.c_fig11_edge(d).verdict == "agrees"
    assert cl.c_fig11_mixes(data(fig11=rows({**ok, "agg": 0.13}))).verdict == "disagrees"  # above all-AR
    assert cl.c_fig11_mixes(data(fig11=rows({**ok, "pods:0.5": 0.05}))).verdict == "disagrees"  # below the midpoint
    assert cl.c_fig11_edge(data(fig11=rows({**ok, "agg": 0.07}))).verdict == "disagrees"  # aggregation best
    assert cl.c_fig11_mixes(data(fig11=rows(ok)[:-1])).verdict == "no data"


def test_fsdp_factor_and_model_size_rules() -> None:
    def cc_rows(cc: str, ofan: float) -> list[dict[str, Any]]:
        return [
            row(s, cell_cc=cc, cct_increase=v)
            for s, v in (("ar", 0.40), ("reps", 0.30), ("ofan", ofan), ("4ofan", ofan))
        ]

    out = cl.c_fig14_factor(data(fig14=cc_rows("nscc", 0.02) + cc_rows("swift", 0.05)))
    assert out.verdict == "agrees" and out.value == pytest.approx(6.0)  # 0.30 / 0.05
    assert cl.c_fig14_factor(data(fig14=cc_rows("nscc", 0.02) + cc_rows("swift", 0.1))).verdict == "disagrees"
    m8, m405 = 119 * 4096, 1533 * 4096
    falls = [
        row(s, size_bytes=m, cct_increase=v)
        for s, m, v in (
            ("ar", m8, 0.2),
            ("ar", m405, 0.2),
            ("reps", m8, 0.3),
            ("reps", m405, 0.28),
            ("ofan", m8, 0.05),
            ("ofan", m405, 0.01),
        )
    ]
    assert cl.c_fig14_models(data(fig14m=falls)).verdict == "agrees"
    flat = [r if r["cell_label"] != "ofan" or r["size_bytes"] == m8 else {**r, "cct_increase": 0.06} for r in falls]
    assert cl.c_fig14_models(data(fig14m=flat)).verdict == "disagrees"


def test_queue_model_rule_reads_fig17s_ofan_runs() -> None:
    from testbed.measure import queue_model

    model = queue_model.layer_means(8)
    good = row("ofan", valid=True, k=8, **{f"queue_{st}_avg_pkts": v for st, v in model.items()})
    assert cl.c_fig18_model(data(fig17=[good, row("drb", k=8)])).verdict == "agrees"
    off = {**good, "queue_edge_agg_avg_pkts": 2 * model["edge_agg"] + 0.2}
    assert cl.c_fig18_model(data(fig17=[off])).verdict == "disagrees"
    assert cl.needed(cl.select("C31")) == ["fig17"]


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
    good = [row("ofan", utilisation=0.99), row("reps", utilisation=0.93), row("ar", utilisation=0.94)]
    c1, c9 = by_id("C1"), by_id("C9")  # C9 reads fig3, fig6 and fig17
    whole = cl.evaluate([c1], data(fig1=good))
    assert whole[0]["verdict"] == "agrees"
    part = cl.evaluate([c1, c9], data(fig1=good), {"fig1": "12 of 18 runs", "fig17": "0 of 18 runs"})
    assert [r["verdict"] for r in part] == ["no data", "no data"]
    assert "fig1 (12 of 18 runs)" in part[0]["notes"] and "fig17 (0 of 18 runs)" in part[1]["notes"]
    assert "fig1 (" not in part[1]["notes"]  # only what the claim reads


def test_wall_time_adds_up_over_invocations_an_interrupted_one_included(tmp_path: Path) -> None:
    assert cl._previous_wall_s(tmp_path) == 0.0
    cl._record_wall_s(tmp_path, 120.0)  # what an invocation stopped after some runs leaves
    assert cl._previous_wall_s(tmp_path) == 120.0
    (tmp_path / cl.WALL).unlink()  # a directory from before wall.json: claims.json's total
    (tmp_path / "claims.json").write_text('{"wall_s": 60.0}')
    assert cl._previous_wall_s(tmp_path) == 60.0
