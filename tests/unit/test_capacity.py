"""The packet budget's auto rate, the capacity checks and sampled ping pairs (pure)."""

from __future__ import annotations

import json
import resource
from fractions import Fraction
from pathlib import Path

import pytest

from testbed.fabric import budget, capacity
from testbed.fabric.reach import sample_pairs
from testbed.topology import FatTree


def test_auto_rate_gives_the_measured_configurations_their_own_rates_back() -> None:
    for kind in ("fattree", "leafspine"):
        for p in budget._measured()["measured"][kind]:
            assert budget.auto_rate_bps(FatTree(p["k"], "tb", kind)) == p["rate_bps"], (kind, p)
    assert budget.auto_rate_bps(FatTree(4), acks=True) == 25_000_000  # an ACK per packet: twice the packets


def test_host_schemes_with_acks_are_derated_where_measured() -> None:
    """packet_budget.json's "derated": REPS with ACKs at k=8 was valid at 0.55 of the auto rate, not at 0.75."""
    k8, k4 = FatTree(8), FatTree(4)
    assert budget.auto_rate_bps(k8, acks=True) == 2_700_000
    assert budget.auto_rate_bps(k8, acks=True, host_lb=True) == 1_400_000  # 0.55 of 2.7 Mbit/s, rounded down
    assert budget.auto_rate_bps(k4, acks=True, host_lb=True) == budget.auto_rate_bps(k4, acks=True)  # 16 hosts
    assert budget.auto_rate_bps(k8, host_lb=True) == budget.auto_rate_bps(k8)  # no ACKs: nothing measured


def test_a_sweep_with_a_host_scheme_takes_the_derated_rate() -> None:
    from testbed.run.sweep import matrix

    with_reps = matrix(("ecmp", "reps"), seed=1, size=1 << 20, k=(8,), acks=True)
    without = matrix(("ecmp", "ofan"), seed=1, size=1 << 20, k=(8,), acks=True)
    assert with_reps.rate_for(8) < without.rate_for(8) == budget.auto_rate_bps(FatTree(8), acks=True)


def test_auto_rate_between_measured_sizes_interpolates_the_budget() -> None:
    for kind, k in (("fattree", 6), ("fattree", 10), ("fattree", 14), ("leafspine", 24), ("leafspine", 48)):
        tree = FatTree(k, "tb", kind)
        pts = budget.points(kind)
        # the budgets of the nearest measured sizes below and above (budgets need not fall with size)
        lo = max((h, b) for h, b in pts if h <= tree.n_hosts)[1] if pts[0][0] <= tree.n_hosts else pts[0][1]
        hi = min((h, b) for h, b in pts if h >= tree.n_hosts)[1] if pts[-1][0] >= tree.n_hosts else pts[-1][1]
        b = budget.host_packets_per_s(tree)
        assert min(lo, hi) <= b <= max(lo, hi)
        rate = budget.auto_rate_bps(tree)
        assert Fraction(tree.n_hosts * rate, 8 * 4178) <= b  # within the budget (frames on the wire)
        assert Fraction(tree.n_hosts * rate, 8 * 4154) > Fraction(9, 10) * b  # and not far below it
    assert budget.auto_rate_bps(FatTree(14)) < budget.auto_rate_bps(FatTree(12))


def test_round_down_keeps_two_significant_digits() -> None:
    assert budget.round_down(Fraction(1_859_999)) == 1_800_000
    assert budget.round_down(Fraction(50_000_000)) == 50_000_000
    assert budget.round_down(Fraction(789_123)) == 780_000
    assert budget.round_down(Fraction(1, 2)) == 1


def test_capacity_refuses_what_exceeds_the_open_file_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _: (1024, 1024))
    capacity.check(FatTree(4))  # 36 namespaces: 364 files
    with pytest.raises(capacity.CapacityError, match=r"k=12 \(612 namespaces\) needs 2,092 open files.*1,024"):
        capacity.check(FatTree(12))


def _backlog(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: int) -> None:
    f = tmp_path / "netdev_max_backlog"
    f.write_text(f"{value}\n")
    monkeypatch.setattr(capacity, "BACKLOG_SYSCTL", str(f))


def test_capacity_refuses_a_backlog_too_small_for_the_hosts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _backlog(monkeypatch, tmp_path, 1000)  # the kernel's default
    capacity.check(FatTree(4))  # 16 hosts
    with pytest.raises(capacity.CapacityError, match=r"netdev_max_backlog >= 6,912 \(it is 1,000\)"):
        capacity.check(FatTree(12))


def test_capacity_refuses_maps_beyond_a_quarter_of_free_memory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _backlog(monkeypatch, tmp_path, 131072)
    monkeypatch.setattr(capacity, "available_memory_bytes", lambda: 200 * 2**20)
    capacity.check(FatTree(4))
    with pytest.raises(capacity.CapacityError, match="MiB of eBPF maps"):
        capacity.check(FatTree(16))  # flow counters for every pair of 1,024 hosts: about 90 MiB


def test_sampled_pairs_are_distinct_valid_and_seeded() -> None:
    tree = FatTree(12)
    a, b = sample_pairs(tree, 2000, 1), sample_pairs(tree, 2000, 1)
    assert a == b and len(set(a)) == 2000
    assert all(0 <= s < tree.n_hosts and 0 <= d < tree.n_hosts and s != d for s, d in a)
    assert sample_pairs(tree, 2000, 2) != a
    assert len(sample_pairs(FatTree(4), 10**6, 1)) == 16 * 15  # more than there are: every pair


def test_a_run_takes_the_lowest_budget_of_its_classes(monkeypatch: pytest.MonkeyPatch) -> None:
    """packet_budget.json's "classes": a class measured at a fabric gives its factor there (interpolated in the
    hosts between measured sizes, held beyond), an unmeasured one its rule; ACKs and congestion control keep
    half the budget by rule until measured, as before classes existed."""
    k12 = FatTree(12)
    assert budget.RunClass(acks=True, cc=True, payload=16384, chained=True).classes() == ("cc", "payload", "chained")
    assert budget.RunClass().classes() == () and budget.RunClass(acks=True).classes() == ("acks",)
    for cls in ("acks", "cc"):  # the rule until measured
        assert budget.class_factor(cls, k12) == Fraction(1, 2)
    assert budget.auto_rate_bps(k12, cc=True) == budget.auto_rate_bps(k12, acks=True) == 650_000
    m = json.loads(budget.BUDGET_FILE.read_text())
    m["classes"]["cc"]["measured"] = {
        "fattree": [{"k": 8, "hosts": 128, "factor": 0.9}, {"k": 12, "hosts": 432, "factor": 0.8}]
    }
    monkeypatch.setattr(budget, "_measured", lambda: m)
    assert budget.class_factor("cc", k12) == Fraction(4, 5) and budget.class_factor("cc", FatTree(4)) == Fraction(9, 10)
    assert budget.class_factor("cc", FatTree(10)) == Fraction(9, 10) + (Fraction(4, 5) - Fraction(9, 10)) * Fraction(
        250 - 128, 432 - 128
    )
    assert budget.class_factor("cc", FatTree(16)) == Fraction(4, 5)
    assert budget.class_factor("cc", FatTree(8, "tb", "leafspine")) == Fraction(1, 2)  # not measured on that topology
    assert budget.auto_rate_bps(k12, cc=True) == 1_000_000  # 0.8 x 1.3 Mbit/s's budget, rounded down
    assert budget.auto_rate_bps(k12, cc=True, payload=16384) < budget.auto_rate_bps(k12, payload=16384)
    from testbed.run.sweep import matrix

    assert matrix(("ofan",), seed=1, k=(12,), cc=("none", "nscc")).rate_for(12) == 1_000_000  # its lowest class
    assert matrix(("ofan",), seed=1, k=(12,), acks=True).rate_for(12) == 650_000  # ACKs' rule
