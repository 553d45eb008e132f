"""Every claim's rule (testbed.measure.claim_rules) on hand-made rows: each says agrees on one side of its
threshold and disagrees on the other (the two cases of a rule differ only in the numbers the rule judges),
invalid runs never count, and what is missing is "no data". The rules computed from the testbed's own
definitions (C10, C26, C27) disagree when those definitions are patched past the paper's numbers."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from testbed.measure import claim_rules as cr
from testbed.measure import queue_model
from testbed.models import decisions
from testbed.topology.timebase import PAPER_WIRE_FRAME_BYTES

KB, MB = 1024, 1 << 20
RATE = 50_000_000
T_PKT = PAPER_WIRE_FRAME_BYTES * 8 / RATE  # one 4 KB frame's line time at RATE


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
        "rate_bps": RATE,
        "host_lb_freezes": 0,
        **{f"overload_{s}": 0.0 for s in cr.STAGES_UP + cr.STAGES_DOWN},
    }
    base.update(kw)
    return base


def data(**experiments: list[dict[str, Any]]) -> cr.Data:
    return cr.Data("quick", {name: pd.DataFrame(rows) for name, rows in experiments.items()})


def verdicts(rule: Callable[[cr.Data], cr.Outcome], *cases: cr.Data) -> list[str]:
    return [rule(d).verdict for d in cases]


# -- Fig. 1 ---------------------------------------------------------------------------------------
def test_utilisation_rule_and_invalid_runs_left_out() -> None:
    good = [
        row("ofan", utilisation=0.99),
        row("reps", utilisation=0.93),
        row("ar", utilisation=0.94),
        row("reps", valid=False, utilisation=0.999),
    ]  # an invalid run never counts
    assert cr.c_fig1_utilisation(data(fig1=good)).verdict == "agrees"
    bad = [row("ofan", utilisation=0.99), row("reps", utilisation=0.96), row("ar", utilisation=0.94)]
    assert cr.c_fig1_utilisation(data(fig1=bad)).verdict == "disagrees"
    assert cr.c_fig1_utilisation(data(fig1=[row("ofan", utilisation=0.99)])).verdict == "no data"


def test_load_rule_within_three_points_of_the_load() -> None:
    def rows(ar: float) -> list[dict[str, Any]]:
        return [row(s, load=0.8, utilisation=u) for s, u in (("ofan", 0.80), ("reps", 0.79), ("ar", ar))]

    assert verdicts(cr.c_fig1_load, data(fig1=rows(0.78)), data(fig1=rows(0.76))) == ["agrees", "disagrees"]
    assert cr.c_fig1_load(data(fig1=rows(0.76))).value == pytest.approx(4.0)  # points off, the worst scheme's
    assert cr.c_fig1_load(data(fig1=rows(0.78)[:2])).verdict == "no data"


# -- Fig. 3 ---------------------------------------------------------------------------------------
def overloads(label: str, up: float, down: float) -> dict[str, Any]:
    stages: dict[str, Any] = {f"overload_{s}": up for s in cr.STAGES_UP}
    stages |= {f"overload_{s}": down for s in cr.STAGES_DOWN}
    return row(label, **stages)


def test_rr_and_jsq_balance_up_and_collapse_down() -> None:
    ok = data(fig3=[overloads("rr", 0.02, 0.30), overloads("jsq", 0.03, 0.25)])
    flat = data(fig3=[overloads("rr", 0.02, 0.30), overloads("jsq", 0.03, 0.05)])  # JSQ's downlinks balanced
    assert verdicts(cr.c_fig3_rr_jsq, ok, flat) == ["agrees", "disagrees"]
    assert cr.c_fig3_rr_jsq(data(fig3=[overloads("rr", 0.02, 0.30)])).verdict == "no data"


@pytest.mark.parametrize(("oblivious_best", "expected"), [(0.30, "agrees"), (0.08, "disagrees")])
def test_only_destination_aware_schemes_are_flat(oblivious_best: float, expected: str) -> None:
    rows = [overloads(s, 0.01, 0.05) for s in cr.FIG3_AWARE]
    rows += [overloads(s, 0.01, 0.40) for s in cr.FIG3_OBLIVIOUS[1:]]
    rows.append(overloads(cr.FIG3_OBLIVIOUS[0], 0.01, oblivious_best))
    out = cr.c_fig3_aware(data(fig3=rows))
    assert out.verdict == expected and out.value == pytest.approx(5.0)  # the aware schemes' worst stage, %


@pytest.mark.parametrize(("worst", "expected"), [(0.015, "agrees"), (0.05, "disagrees")])
def test_ethereal_is_ideal(worst: float, expected: str) -> None:
    assert cr.c_fig3_ethereal(data(fig3=[overloads("ethereal", 0.0, worst)])).verdict == expected


# -- Fig. 4, 7, 17 and appendix F -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("exponent", "linear", "sqrt", "flat"),
    [
        (1.0, "agrees", "disagrees", "disagrees"),
        (0.5, "disagrees", "agrees", "disagrees"),
        (0.0, "disagrees", "disagrees", "agrees"),
    ],
)
def test_growth_classes_by_exponent(exponent: float, linear: str, sqrt: str, flat: str) -> None:
    labels = cr.CLASS_LINEAR + cr.CLASS_SQRT + cr.CLASS_FLAT
    rows = [
        row(s, size_bytes=m, seed=seed, max_queue_pkts=10 * (m / KB) ** exponent * (1 + 0.01 * seed))
        for s in labels
        for m in (256 * KB, MB, 4 * MB)
        for seed in (1, 2)
    ]
    d = data(fig4=rows)
    assert (cr.c_fig4_linear(d).verdict, cr.c_fig4_sqrt(d).verdict, cr.c_fig4_flat(d).verdict) == (linear, sqrt, flat)
    assert cr.c_fig4_sqrt(d).value == pytest.approx(exponent, abs=0.02)


def test_edge_bound_reads_every_run_without_acks() -> None:
    ok = [row("ofan", k=4, queue_edge_agg_max_pkts=3), row("ofan", k=8, queue_edge_agg_max_pkts=5)]
    assert cr.c_f4_edge_bound(data(fig3=ok[:1], fig17=ok[1:])).verdict == "agrees"
    over = [*ok, row("ofan", k=8, queue_edge_agg_max_pkts=6)]
    out = cr.c_f4_edge_bound(data(fig6=over))
    assert out.verdict == "disagrees" and out.value == 1.0


@pytest.mark.parametrize(("drb_at_8", "expected"), [(9.0, "agrees"), (4.5, "disagrees")])
def test_drb_over_ofan_grows_with_the_network(drb_at_8: float, expected: str) -> None:
    rows = [
        row("drb", k=4, max_queue_pkts=4.0),
        row("ofan", k=4, max_queue_pkts=2.0),  # 2x at k=4
        row("drb", k=8, max_queue_pkts=drb_at_8),
        row("ofan", k=8, max_queue_pkts=3.0),  # 3x or 1.5x at k=8
    ]
    out = cr.c_f3_ratio(data(fig17=rows))
    assert out.verdict == expected and out.value == pytest.approx(drb_at_8 / 3.0)
    assert cr.c_f3_ratio(data(fig17=rows[:2])).verdict == "no data"


@pytest.mark.parametrize(("drb_large", "expected"), [(0.02, "agrees"), (0.20, "disagrees")])
def test_drb_is_worse_for_small_messages(drb_large: float, expected: str) -> None:
    rows = [
        row("drb", size_bytes=256 * KB, seed=1, cct_increase=0.10),
        row("drb", size_bytes=256 * KB, seed=2, cct_increase=0.11),
        row("drb", size_bytes=4 * MB, cct_increase=drb_large),
        row("ofan", size_bytes=256 * KB, seed=1, cct_increase=0.01),
        row("ofan", size_bytes=256 * KB, seed=2, cct_increase=0.012),
    ]
    out = cr.c_drb_small(data(fig4=rows))
    assert out.verdict == expected and out.value == pytest.approx(100 * (0.105 - 0.011))


@pytest.mark.parametrize(("gap", "expected"), [(-0.5, "agrees"), (0.0, "disagrees")])
def test_gap_to_ofan_falls_like_one_over_sqrt_m(gap: float, expected: str) -> None:
    sizes = (256 * KB, MB, 4 * MB)
    rows = [row("ofan", size_bytes=m, cct_increase=0.01) for m in sizes]
    rows += [
        row(s, size_bytes=m, cct_increase=0.01 + scale * (m / (256 * KB)) ** gap)
        for s, scale in (("ar", 0.10), ("reps", 0.12))
        for m in sizes
    ]
    out = cr.c_fig7_sqrt(data(fig4=rows))
    assert out.verdict == expected and out.value == pytest.approx(gap)
    rows[-1]["cct_increase"] = 0.005  # REPS below Ofan at 4 MB: a gap <= 0
    assert cr.c_fig7_sqrt(data(fig4=rows)).verdict == "disagrees"


# -- section 6 ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("p4_at_8", "expected"), [(0.05, "agrees"), (0.09, "disagrees")])
def test_gap_of_4ofan_grows_with_the_network(p4_at_8: float, expected: str) -> None:
    rows = [row(s, k=4, cct_increase=v) for s, v in (("ar", 0.10), ("reps", 0.12), ("4ofan", 0.08))]
    rows += [row(s, k=8, cct_increase=v) for s, v in (("ar", 0.10), ("reps", 0.14), ("4ofan", p4_at_8))]
    out = cr.c_fig5_gap(data(fig5=rows))  # the gap: 2 points at k=4, 5 or 1 at k=8
    assert out.verdict == expected and out.value == pytest.approx(100 * (0.10 - p4_at_8))
    assert cr.c_fig5_gap(data(fig5=rows[:3])).verdict == "no data"


def test_a_gap_within_its_errors_is_not_comparable() -> None:
    rows = [
        row(s, k=8, seed=i, cct_increase=v)
        for i, (a, b) in enumerate(((0.10, 0.12), (0.12, 0.10)))
        for s, v in (("drb", a), ("ofan", b), ("1ofan", a))
    ]
    assert cr.c_fig6_half(data(fig6=rows)).verdict == "not comparable"
    rows = [row(s, k=8, cct_increase=v) for s, v in (("drb", 0.20), ("1ofan", 0.12), ("ofan", 0.04))]
    out = cr.c_fig6_half(data(fig6=rows))
    assert out.verdict == "agrees" and out.value == pytest.approx(0.5)
    rows = [row(s, k=8, cct_increase=v) for s, v in (("drb", 0.20), ("1ofan", 0.05), ("ofan", 0.04))]
    out = cr.c_fig6_half(data(fig6=rows))  # 1Ofan recovers nearly all of it
    assert out.verdict == "disagrees" and out.value == pytest.approx(0.15 / 0.16)


def test_reps_worse_when_it_froze_else_not_comparable() -> None:
    def rows(freezes: int, reps_dctcp: float) -> list[dict[str, Any]]:
        return [
            row("reps", cell_cc="dctcp", cct_increase=reps_dctcp, host_lb_freezes=freezes),
            row("reps", cell_cc="nscc", cct_increase=0.30, host_lb_freezes=freezes),
            row("ar", cell_cc="dctcp", cct_increase=0.20),
            row("ar", cell_cc="nscc", cct_increase=0.20),
        ]

    froze, froze_better, calm = data(fig12=rows(3, 0.25)), data(fig12=rows(3, 0.15)), data(fig12=rows(0, 0.25))
    assert verdicts(cr.c_fig7_reps, froze, froze_better, calm) == ["agrees", "disagrees", "not comparable"]
    assert cr.c_fig7_reps(froze).value == 6.0  # freezes in all


def payload_rows(ccts: dict[int, float], alpha: float) -> list[dict[str, Any]]:
    """Fig. 8's rows: a 0.5 MB message's CCT per payload; the 4 KB runs alpha packet times above their bound."""
    return [
        row(
            "ofan",
            size_bytes=512 * KB,
            cell_payload=p,
            cct_s=c,
            cct_lower_bound_s=c - alpha * T_PKT if p == 4096 else c,
        )
        for p, c in ccts.items()
    ]


def test_packet_size_sweet_spot_near_the_model() -> None:
    # alpha 2.5 packets: the model's P - H = sqrt(82 / 2.5 x 512 KB) = 4,147 B, within 2x of the best, 4 KB
    interior = {1024: 1.2, 2048: 1.1, 4096: 1.0, 8192: 1.1, 16384: 1.3}
    smallest = {**interior, 1024: 0.9}  # the optimum at the edge of the range tried
    out = cr.c_fig8_sweet(data(fig8=payload_rows(interior, 2.5)))
    assert out.verdict == "agrees" and out.value == 4096.0
    assert cr.c_fig8_sweet(data(fig8=payload_rows(smallest, 2.5))).verdict == "disagrees"
    far = cr.c_fig8_sweet(data(fig8=payload_rows(interior, 0.05)))  # the model's P - H at 29 KB: beyond 2x
    assert far.verdict == "disagrees"
    assert cr.c_fig8_sweet(data(fig8=payload_rows({1024: 1.0, 4096: 1.0}, 2.5))).verdict == "no data"


def test_failures_rule_takes_the_fault_free_increase() -> None:
    rows = [
        row(s, cell_failure=p, cct_increase_fault_free=v, cct_increase=0.0)
        for p in (0.05, 0.1)
        for s, v in (("ofan", 0.2), ("reps", 0.3), ("ar", 0.25))
    ]
    assert cr.c_fig9_failures(data(fig9=rows)).verdict == "agrees"
    rows.append(row("ofan", cell_failure=0.1, cct_increase_fault_free=0.6))  # mean 0.4 > 0.25 at p=0.1
    out = cr.c_fig9_failures(data(fig9=rows))
    assert out.verdict == "disagrees" and out.value == pytest.approx(-15.0)


@pytest.mark.parametrize(("p4", "expected"), [(0.88, "agrees"), (0.95, "disagrees")])
def test_two_level_tree_cuts_the_cct_by_eleven_percent(p4: float, expected: str) -> None:
    rows = [row(s, cct_s=v) for s, v in (("ar", 1.0), ("reps", 1.1), ("ofan", 0.85), ("4ofan", p4))]
    out = cr.c_fig10(data(fig10=rows))
    assert out.verdict == expected and out.value == pytest.approx(100 * (1 - p4))


def cc_rows(cc: str, values: dict[str, float]) -> list[dict[str, Any]]:
    return [row(s, cell_cc=cc, cct_increase=v) for s, v in values.items()]


@pytest.mark.parametrize(
    ("cc", "least", "agrees", "disagrees"),
    [  # C21: Ofan and 4Ofan < 1 %, REPS and AR >= 2x the bound; C22 and C23: a gap of 8 and 14 points
        ("dctcp", 0.0, (0.005, 0.008, 2.5, 3.0), (0.02, 0.008, 2.5, 3.0)),
        ("nscc", 0.08, (0.05, 0.06, 0.20, 0.15), (0.05, 0.08, 0.20, 0.15)),
        ("swift", 0.14, (0.05, 0.06, 0.25, 0.21), (0.05, 0.06, 0.25, 0.19)),
    ],
)
def test_congestion_control_rules(
    cc: str, least: float, agrees: tuple[float, ...], disagrees: tuple[float, ...]
) -> None:
    rule = cr.c_fig12(cc, least)
    schemes = ("ofan", "4ofan", "reps", "ar")
    ok, bad = (data(fig12=cc_rows(cc, dict(zip(schemes, v, strict=True)))) for v in (agrees, disagrees))
    assert verdicts(rule, ok, bad) == ["agrees", "disagrees"]
    assert rule(data(fig12=cc_rows("other", dict(zip(schemes, agrees, strict=True))))).verdict == "no data"


def test_mixes_rule_between_the_ends_and_edge_best() -> None:
    def rows(mixes: dict[str, float]) -> list[dict[str, Any]]:
        out = [row("ar", cell_mix="none", cct_increase=0.12), row("4ofan", cell_mix="none", cct_increase=0.02)]
        return out + [row("4ofan", cell_mix=m, cct_increase=v) for m, v in mixes.items()]

    ok = {"random:0.5": 0.09, "pods:0.5": 0.085, "agg": 0.08, "edge": 0.075}  # midpoint 0.07: all above, below AR
    d = data(fig11=rows(ok))
    assert cr.c_fig11_mixes(d).verdict == "agrees" and cr.c_fig11_edge(d).verdict == "agrees"
    assert cr.c_fig11_mixes(data(fig11=rows({**ok, "agg": 0.13}))).verdict == "disagrees"  # above all-AR
    assert cr.c_fig11_mixes(data(fig11=rows({**ok, "pods:0.5": 0.05}))).verdict == "disagrees"  # below the midpoint
    assert cr.c_fig11_edge(data(fig11=rows({**ok, "agg": 0.07}))).verdict == "disagrees"  # aggregation best
    assert cr.c_fig11_mixes(data(fig11=rows(ok)[:-1])).verdict == "no data"


def moe_rows(edge_host: int, ccts: dict[str, float]) -> list[dict[str, Any]]:
    """Fig. 13 without a CCA, both skews: each scheme's CCT, the receivers' largest queue `edge_host` packets
    (the bound is 1 s, 1,496 packet times) and every other stage's 20."""
    queues: dict[str, Any] = {f"queue_{st}_max_pkts": 20 for st in cr.STAGES_UP + cr.STAGES_DOWN}
    return [
        row(s, cell_workload=wl, cell_cc="none", cct_s=c, queue_edge_host_max_pkts=edge_host, **queues)
        for wl in ("moe", "moe-eplb")
        for s, c in ccts.items()
    ]


def test_moe_without_a_cca_bottlenecks_at_the_receivers() -> None:
    close = {"ar": 1.05, "reps": 1.04, "ofan": 1.03, "4ofan": 1.04}
    ok = data(fig13=moe_rows(300, close))  # 300 packets: 20 % of the bound
    small = data(fig13=moe_rows(100, close))  # 7 %
    apart = data(fig13=moe_rows(300, {**close, "ar": 1.30}))  # the schemes 26 % apart
    assert verdicts(cr.c_fig13_receivers, ok, small, apart) == ["agrees", "disagrees", "disagrees"]
    assert cr.c_fig13_receivers(ok).value == pytest.approx(100 * (1.05 / 1.03 - 1))
    assert cr.c_fig13_receivers(data(fig13=moe_rows(300, close)[:3])).verdict == "no data"


@pytest.mark.parametrize(("ofan_eplb", "expected"), [(0.10, "agrees"), (0.17, "disagrees")])
def test_moe_with_nscc_ofan_gains_more_with_eplb(ofan_eplb: float, expected: str) -> None:
    def rows(wl: str, ofan: float) -> list[dict[str, Any]]:
        values = {"ar": 0.20, "reps": 0.25, "ofan": ofan, "4ofan": ofan + 0.01}
        return [row(s, cell_workload=wl, cell_cc="nscc", cct_increase=v) for s, v in values.items()]

    out = cr.c_fig13_nscc(data(fig13=rows("moe", 0.15) + rows("moe-eplb", ofan_eplb)))  # gaps 5 and 10 or 3
    assert out.verdict == expected and out.value == pytest.approx(100 * (0.20 - ofan_eplb))


def test_fsdp_factor_and_model_size_rules() -> None:
    def fsdp_rows(cc: str, ofan: float) -> list[dict[str, Any]]:
        return cc_rows(cc, {"ar": 0.40, "reps": 0.30, "ofan": ofan, "4ofan": ofan})

    out = cr.c_fig14_factor(data(fig14=fsdp_rows("nscc", 0.02) + fsdp_rows("swift", 0.05)))
    assert out.verdict == "agrees" and out.value == pytest.approx(6.0)  # 0.30 / 0.05
    assert cr.c_fig14_factor(data(fig14=fsdp_rows("nscc", 0.02) + fsdp_rows("swift", 0.1))).verdict == "disagrees"
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
    assert cr.c_fig14_models(data(fig14m=falls)).verdict == "agrees"
    flat = [r if r["cell_label"] != "ofan" or r["size_bytes"] == m8 else {**r, "cct_increase": 0.06} for r in falls]
    assert cr.c_fig14_models(data(fig14m=flat)).verdict == "disagrees"


def test_queue_model_rule_reads_fig17s_ofan_runs() -> None:
    model = queue_model.layer_means(8)
    good = row("ofan", valid=True, k=8, **{f"queue_{st}_avg_pkts": v for st, v in model.items()})
    assert cr.c_fig18_model(data(fig17=[good, row("drb", k=8)])).verdict == "agrees"
    off = {**good, "queue_edge_agg_avg_pkts": 2 * model["edge_agg"] + 0.2}
    assert cr.c_fig18_model(data(fig17=[off])).verdict == "disagrees"


# -- computed from the testbed's own definitions --------------------------------------------------
def test_computed_claims_agree_with_the_testbed_as_it_is() -> None:
    empty = cr.Data("quick")
    f2 = cr.c_f2_orders(empty)
    assert f2.verdict == "agrees" and f2.value is not None and f2.value >= 30
    mem = cr.c_memory(empty)
    assert mem.verdict == "agrees" and mem.value == pytest.approx(2.5, abs=0.01)
    rtt = cr.c_rtt(empty)
    assert rtt.verdict == "agrees" and rtt.value == pytest.approx(143.6, abs=0.1)


def test_computed_claims_disagree_past_the_papers_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    empty = cr.Data("quick")
    monkeypatch.setattr(decisions, "choose_basis", lambda w: tuple(range(w)))  # the identity: 11 cyclic orders
    f2 = cr.c_f2_orders(empty)
    assert f2.verdict == "disagrees" and f2.value == 11.0
    monkeypatch.setattr(decisions, "N_CLASSES", 3)  # a pointer per size class: 3 classes, 3.75 KB
    mem = cr.c_memory(empty)
    assert mem.verdict == "disagrees" and mem.value == pytest.approx(3.75, abs=0.01)
    monkeypatch.setattr(cr, "PAPER_LINK_DELAY_PKTS", 20.0)  # an RTT of 240 packet times
    rtt = cr.c_rtt(empty)
    assert rtt.verdict == "disagrees" and rtt.value == pytest.approx(240.0)


def test_arithmetic_over_rows() -> None:
    assert math.isnan(cr.stat(pd.DataFrame(), "x").mean)
    rows = pd.DataFrame([row("a", cct_s=1.0), row("a", cct_s=3.0), row("a", valid=False, cct_s=100.0)])
    s = cr.stat(rows, "cct_s", cell_label="a")
    assert (s.mean, s.n) == (2.0, 2) and s.sem == pytest.approx(1.0)
    d = cr.diff(s, cr.Stat(0.5, 1.0, 5))
    assert (d.mean, d.n) == (1.5, 2) and d.sem == pytest.approx(math.sqrt(2))
    b, se = cr.slope([1.0, 4.0, 16.0], [2.0, 4.0, 8.0])
    assert b == pytest.approx(0.5) and se == pytest.approx(0.0, abs=1e-9)
