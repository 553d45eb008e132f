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
from testbed.run.sweep import Cell, Matrix


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
    m = Matrix(("ecmp", "pofan:4"), sizes=(1 << 18, 1 << 20), loads=(0.5, 1.0), seeds=(1, 2))
    names = [c.name for c in m.cells()]
    assert len(names) == len(set(names)) == 16
    assert m.fingerprint() == Matrix.from_json(m.to_json()).fingerprint()
    assert Cell(**m.cells()[0].__dict__).name == names[0]
    assert m.fingerprint() != Matrix(("ecmp",), sizes=(1 << 18, 1 << 20), loads=(0.5, 1.0), seeds=(1, 2)).fingerprint()


def test_sampled_settings_reach_the_cells_and_keep_default_fingerprints() -> None:
    m = Matrix(("sglb",), seeds=(1,))
    assert "flood_pkts" not in m.to_json()  # a sweep from before these settings keeps its fingerprint
    stale = Matrix(("sglb",), seeds=(1,), flood_pkts=1000.0, queue_band=(0, 65536))
    assert stale.fingerprint() != m.fingerprint()
    assert stale.fingerprint() == Matrix.from_json(json.loads(json.dumps(stale.to_json()))).fingerprint()
    p = stale.cells()[0].params(stale)
    assert (p.flood_pkts, p.sampled().queue_band) == (1000.0, (0, 65536))


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
                if {"reps", "conga", "drb"} & set(m.schemes):
                    assert m.acks
            if len(full[name].seeds) < 10:
                assert any("seed" in d for d in f.differs), f.name
        assert paper.figure_estimate_s(f, "quick") < 15 * 60  # the quick scale is minutes
    for name in ("fig3", "fig4"):  # every scheme of the paper's Table 1 the testbed has (all but RSQ = rps)
        (m,) = figs[name].matrices("quick").values()
        (p,) = figs[name].matrices("paper").values()
        assert (
            set(m.schemes)
            == set(p.schemes)
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
    from testbed.cli.sweep_cmds import paper_list

    text = paper_list(80)
    assert max(len(line) for line in text.splitlines()) <= 80
    for name in paper.NAMES:
        assert f"\n{name:<6}" in text
    assert text.count("differs:") == len(paper.NAMES)
