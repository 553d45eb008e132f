"""The arithmetic of sweep reports on hand-made rows: summaries over the valid seeds, and growth exponents
that recover known powers with intervals that contain them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from testbed.measure import sweep_stats
from testbed.run import paper
from testbed.run.params import RunError
from testbed.run.sweep import Cell, Matrix, matrix


def rows(
    scheme: str, power: float, sizes: tuple[int, ...] = (1 << 18, 1 << 20, 1 << 22), seeds: int = 3, noise: float = 0.05
) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    out = []
    for size in sizes:
        for seed in range(1, seeds + 1):
            q = 3.0 * (size / sizes[0]) ** power * math.exp(rng.normal(0, noise))
            out.append(
                {
                    "topology": "fattree",
                    "k": 4,
                    "workload": "permutation",
                    "size_bytes": size,
                    "load": 1.0,
                    "cell_failure": 0.0,
                    "cell_payload": 4096,
                    "cell_label": scheme,
                    "seed": seed,
                    "max_queue_pkts": q,
                    "cct_increase": q / size * 1e4,
                    "utilisation": 0.99,
                    "fidelity_valid": True,
                }
            )
    return pd.DataFrame(out)


@pytest.mark.parametrize("power", [1.0, 0.5, 0.0])
def test_growth_recovers_the_power(power: float) -> None:
    g = sweep_stats.growth(rows("x", power), "max_queue_pkts", "x")
    assert g is not None and g.points == 9 and g.sizes == 3
    assert g.ci95[0] <= power <= g.ci95[1]
    assert g.exponent == pytest.approx(power, abs=0.1)
    c = sweep_stats.growth(rows("x", power), "cct_increase", "x")
    assert c is not None and c.exponent == pytest.approx(power - 1, abs=0.1)


def test_growth_needs_two_sizes_and_ignores_invalid_runs() -> None:
    one = rows("x", 0.5, sizes=(1 << 20,))
    assert sweep_stats.growth(one, "max_queue_pkts", "x") is None
    d = rows("x", 1.0)
    d.loc[d["size_bytes"] == 1 << 22, "max_queue_pkts"] = 1.0  # nonsense, but in invalid runs only
    d.loc[d["size_bytes"] == 1 << 22, "fidelity_valid"] = False
    g = sweep_stats.growth(d, "max_queue_pkts", "x")
    assert g is not None and g.sizes == 2 and g.exponent == pytest.approx(1.0, abs=0.15)


def test_two_sizes_one_run_each_give_an_exponent_without_interval() -> None:
    """The demo's sweep (two sizes, one seed): a line through two points, no interval, and the report says so."""
    d = rows("x", 0.5, sizes=(1 << 18, 1 << 20), seeds=1, noise=0.0)
    g = sweep_stats.growth(d, "max_queue_pkts", "x")
    assert g is not None and g.points == 2 and g.exponent == pytest.approx(0.5)
    assert math.isnan(g.ci95[0]) and math.isnan(g.ci95[1])
    from testbed.cli import report

    _head, body = report.growth_table(sweep_stats.Sweep(Path("."), {}, d))
    assert body and body[0][3] == "- (two runs)"
    assert "one message size" in report.no_growth(sweep_stats.Sweep(Path("."), {}, rows("x", 0.5, sizes=(1 << 20,))))


def test_summary_means_valid_runs_and_counts_the_rest() -> None:
    d = rows("x", 0.0, sizes=(1 << 20,), seeds=4, noise=0.0)
    d.loc[0, "fidelity_valid"] = False
    d.loc[0, "cct_increase"] = 99.0
    s = sweep_stats.summarise(d)
    assert len(s) == 1
    r = s.iloc[0]
    assert (r["runs"], r["valid"], r["left_out"]) == (4, 3, 1)
    assert r["cct_increase_mean"] == pytest.approx(3.0 / (1 << 20) * 1e4)
    assert r["cct_increase_sem"] == pytest.approx(0.0, abs=1e-12)


def test_cells_have_stable_distinct_names() -> None:
    m = matrix(("ecmp", "pofan:4"), size=(1 << 18, 1 << 20), load=(0.5, 1.0), seed=(1, 2))
    names = [c.name for c in m.cells()]
    assert len(names) == len(set(names)) == 16
    assert names[0] == "k4-permutation-262144B-l0.5-f0-p4096-ecmp-s1"  # the names of sweeps made before
    assert m.fingerprint() == Matrix.from_json(m.to_json()).fingerprint()
    assert Cell.from_json(json.loads(json.dumps(m.cells()[0].to_json()))).name == names[0]
    assert m.fingerprint() != matrix(("ecmp",), size=(1 << 18, 1 << 20), load=(0.5, 1.0), seed=(1, 2)).fingerprint()


def test_a_dimension_with_several_values_names_its_cells() -> None:
    """Any DIMENSION option may be swept; a cell's name shows it only when the matrix gives it several values."""
    m = matrix(("ofan",), seed=1, workload="incast", fan_in=(2, 3))
    names = [c.name for c in m.cells()]
    assert names == [
        "k4-incast-1048576B-l1-f0-p4096-ofan-fan_in2-s1",
        "k4-incast-1048576B-l1-f0-p4096-ofan-fan_in3-s1",
    ]
    assert [c.params(m).fan_in for c in m.cells()] == [2, 3]
    assert [c.columns()["cell_fan_in"] for c in m.cells()] == [2, 3]
    one = matrix(("ofan",), seed=1, workload="incast", fan_in=3)
    assert one.cells()[0].name == "k4-incast-1048576B-l1-f0-p4096-ofan-s1" and one.cells()[0].params(one).fan_in == 3
    with pytest.raises(RunError, match="--load-bands: expected LO,HI"):
        matrix(("dlb",), load_bands=(0.1,))  # a FIXED option: its one value, a pair
    with pytest.raises(RunError, match="--pipe-size is not a sweep option"):
        matrix(("pofan",), pipe_size=(1, 2))


def test_sampled_settings_reach_the_cells_and_keep_default_fingerprints() -> None:
    m = matrix(("sglb",), seed=1)
    assert "flood_interval" not in m.to_json()["options"]  # a sweep from before these settings keeps its fingerprint
    stale = matrix(("sglb",), seed=1, flood_interval=1000.0, queue_bands=(0, 65536))
    assert stale.fingerprint() != m.fingerprint()
    assert stale.fingerprint() == Matrix.from_json(json.loads(json.dumps(stale.to_json()))).fingerprint()
    p = stale.cells()[0].params(stale)
    assert (p.flood_interval, p.sampled().queue_bands) == (1000.0, (0, 65536))


def test_every_paper_figure_has_valid_matrices() -> None:
    """Every figure of the paper's evaluation (1, 3-14, 17, 18) has a preset whose panels check at both scales,
    the quick scale in minutes, ACKs wherever a scheme needs or uses them, ten seeds at paper scale where the
    paper has at least ten (Figs. 10 and 14 say why not), and its figure named so the report draws it."""
    figs = paper.figures()
    assert set(figs) == set(paper.NAMES) == {f"fig{i}" for i in (1, *range(3, 15), 17, 18)}
    for f in figs.values():
        quick, full = f.matrices("quick"), f.matrices("paper")
        assert quick.keys() == full.keys() and all(m.figure == f.name for m in (*quick.values(), *full.values()))
        for name in quick:
            assert quick[name].cells() and len(full[name].cells()) >= len(quick[name].cells())
            for m in (quick[name], full[name]):
                if {"reps", "conga", "drb"} & set(m.values("scheme")):
                    assert m.value("acks")
            if len(full[name].values("seed")) < 10:
                assert any("seed" in d for d in f.differs), f.name
        assert paper.figure_estimate_s(f, "quick") < 15 * 60  # the quick scale is minutes
    for name in ("fig3", "fig4"):  # every scheme of the paper's Table 1 the testbed has (all but RSQ = rps)
        (m,) = figs[name].matrices("quick").values()
        (p,) = figs[name].matrices("paper").values()
        assert (
            set(m.values("scheme"))
            == set(p.values("scheme"))
            == {
                "ecmp",
                "rr",
                "jsq",
                "rps",
                "ar",
                "choice",
                "drill",
                "conga",
                "dlb",
                "sglb",
                "reps",
                "drb",
                "ethereal",
                "pofan:4",
                "ofan",
            }
        )
    assert {c.mix for c in figs["fig11"].matrices("quick")[""].cells()} == {
        "none",
        "random:0.5",
        "pods:0.5",
        "agg",
        "edge",
    }


def test_paper_list_reads_in_80_columns() -> None:
    from testbed.cli.paper_cmds import paper_list

    text = paper_list(80)
    assert max(len(line) for line in text.splitlines()) <= 80
    for name in paper.NAMES:
        assert f"\n{name:<6}" in text
    assert text.count("differs:") == len(paper.NAMES)
