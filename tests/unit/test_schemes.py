from __future__ import annotations

import itertools
import json
import math
import os
import random
import subprocess
import sys

import pytest

from testbed.models import decisions
from testbed.models.schemes import Scheme, SchemeError


@pytest.mark.parametrize("w", [2, 3, 4, 5, 6, 8, 16])
def test_every_pointer_visits_every_uplink_once_per_w_packets(w: int) -> None:
    basis = decisions.choose_basis(w)
    assert sorted(basis) == list(range(w))
    for pid in range(4 * w * (1 << decisions.b_bits(w))):
        for start in range(w):
            seen = [decisions.ofan_port(start + j, pid, basis) for j in range(w)]
            assert sorted(seen) == list(range(w)), (pid, start, seen)


def test_w6_gives_at_least_30_cyclic_orders() -> None:
    basis = decisions.choose_basis(6)
    assert decisions.distinct_cycles(basis) >= 30
    # the identity basis is a poor choice, which is why the basis is chosen
    assert decisions.distinct_cycles(tuple(range(6))) < 30


@pytest.mark.parametrize("w", [2, 6, 8])
def test_basis_is_the_same_on_every_run(w: int) -> None:
    """choose_basis is cached, so calling it twice compares a tuple with itself: the basis is computed again here,
    uncached, after the global random state moved, and in a fresh interpreter with another hash seed. A fabric's
    switches get it when it is built (testbed.dataplane.switches), the ideal fabric computes it again in whatever
    process plays a run: every process must find the same basis."""
    cached = decisions.choose_basis(w)
    state = random.getstate()
    try:
        random.seed(12345)
        recomputed = decisions.choose_basis.__wrapped__(w)
    finally:
        random.setstate(state)
    assert recomputed == cached
    code = f"from testbed.models import decisions; print(list(decisions.choose_basis({w})))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONHASHSEED": "4242"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert tuple(json.loads(out.stdout)) == cached


def test_xor_w_is_a_bijection() -> None:
    for w in range(1, 17):
        for x in range(1 << decisions.b_bits(w)):
            assert sorted(decisions.xor_w(v, x, w) for v in range(w)) == list(range(w))


@pytest.mark.parametrize("w", [2, 3, 4, 6])
def test_small_pointers_start_half_a_rotation_away(w: int) -> None:
    n_keys = 9
    ptrs = decisions.ofan_initial_pointers(n_keys, w, random.Random(7))
    assert len(ptrs) == 2 * n_keys
    for d in range(n_keys):
        assert 0 <= ptrs[d] < w
        assert ptrs[d + n_keys] == (ptrs[d] + w // 2) % w


def test_pointer_id_layout() -> None:
    assert decisions.pointer_id(3, 8, decisions.CLASS_DATA) == 3
    assert decisions.pointer_id(3, 8, decisions.CLASS_SMALL) == 11


def test_size_class_threshold() -> None:
    assert decisions.size_class(64) == decisions.CLASS_SMALL
    assert decisions.size_class(4154) == decisions.CLASS_DATA


def test_ecmp_is_deterministic_per_flow_and_spreads_flows() -> None:
    saddr, daddr = bytes([10, 0, 0, 2]), bytes([10, 1, 1, 3])
    counts = [0, 0, 0, 0]
    for sport in range(10000, 14000):
        l4 = sport.to_bytes(2, "big") + (4791).to_bytes(2, "big")
        p = decisions.ecmp_port(4, 12345, saddr, daddr, l4, 17)
        assert p == decisions.ecmp_port(4, 12345, saddr, daddr, l4, 17)
        counts[p] += 1
    assert min(counts) > 800  # 1000 expected per port


def test_ecmp_seed_changes_the_choice() -> None:
    saddr, daddr = bytes([10, 0, 0, 2]), bytes([10, 1, 1, 3])
    flows = [(s.to_bytes(2, "big") + b"\x12\xb7") for s in range(20000, 20064)]
    a = [decisions.ecmp_port(2, 1, saddr, daddr, f, 17) for f in flows]
    b = [decisions.ecmp_port(2, 2, saddr, daddr, f, 17) for f in flows]
    assert a != b


def test_scheme_parse() -> None:
    assert Scheme.parse("OFAN") is Scheme.OFAN
    with pytest.raises(SchemeError, match="unknown scheme"):
        Scheme.parse("spray")


def test_orders_differ_between_concurrent_pointers() -> None:
    basis = decisions.choose_basis(4)
    orders = {decisions.canonical_cycle(decisions.ofan_order(pid, basis)) for pid in range(16)}
    assert len(orders) > 1
    assert all(sorted(o) == [0, 1, 2, 3] for o in orders)


@pytest.mark.parametrize("w", [2, 3, 4, 6])
def test_ofan_skips_invalid_uplinks_and_keeps_one_packet_per_round(w: int) -> None:
    basis = decisions.choose_basis(w)
    for mask in range(1, 1 << w):
        valid = decisions.valid_slots(mask, w)
        for pid in range(2 * w):
            ptr = 5
            seen = []
            for _ in range(3 * len(valid)):
                port, steps = decisions.skip_invalid(lambda i, p=pid: decisions.ofan_port(i, p, basis), ptr, mask, w)
                seen.append(port)
                ptr += steps
            for r in range(3):
                assert sorted(seen[r * len(valid) : (r + 1) * len(valid)]) == valid


def test_wofan_rounds_give_each_slot_its_weight_spread_evenly() -> None:
    """Over R rounds slot p is eligible in c_p (over the weights' common divisor) of them, the largest weight in
    every one, consecutive ones at most ceil(R / c_p) apart; equal weights give one round, none none."""
    rng = random.Random(3)
    for _ in range(300):
        w = rng.randint(2, 32)
        weights = [rng.choice((0, rng.randint(1, decisions.WOFAN_ROUNDS))) for _ in range(w)]
        rounds = decisions.wofan_rounds(weights)
        if not any(weights):
            assert rounds == ()
            continue
        g = math.gcd(*weights)
        top = max(weights) // g
        assert len(rounds) == top
        for p, c in enumerate(weights):
            js = [j for j, m in enumerate(rounds) if m >> p & 1]
            assert len(js) == c // g
            if c // g > 1:  # evenly spread: consecutive eligible rounds at most ceil(R / c) apart
                gaps = [b - a for a, b in itertools.pairwise(js)] + [js[0] + top - js[-1]]
                assert max(gaps) <= -(-top // (c // g)), (weights, p, js)
    assert decisions.wofan_rounds([3, 3, 0, 3]) == (0b1011,)
    assert decisions.wofan_rounds([1, 2]) == (0b10, 0b11)


def test_wofan_takes_exactly_its_weights_and_ofans_ports_with_one_round() -> None:
    """A pointer walked through many decisions: each slot's packets in proportion to its weight over whole
    periods; with one round naming every valid slot (or none) every decision is Ofan's; one round naming
    fewer slots takes only those; weights beyond WOFAN_ROUNDS are refused, and fit_weights scales them."""
    basis = decisions.choose_basis(4)
    weights = [1, 4, 0, 2]
    rounds = decisions.wofan_rounds(weights)
    counts = [0] * 4
    ptr = 12345
    for _ in range(7 * 10):  # ten periods of 7 packets
        port, adv = decisions.wofan_port(ptr, 5, basis, 0b1011, rounds)
        counts[port] += 1
        ptr += adv
    assert counts == [10, 40, 0, 20]
    for start in range(40):
        for mask in (0b1111, 0b1010, 0b0001):
            assert decisions.wofan_port(start, 3, basis, mask, (mask,)) == decisions.skip_invalid(
                lambda i: decisions.ofan_port(i, 3, basis), start, mask, 4
            )
            assert decisions.wofan_port(start, 3, basis, mask, ()) == decisions.wofan_port(
                start, 3, basis, mask, (mask,)
            )
        assert decisions.wofan_port(start, 3, basis, 0b1111, (0b0100,))[0] == 2  # one round naming one slot
    with pytest.raises(SchemeError, match=f"weights up to {decisions.WOFAN_ROUNDS}"):
        decisions.wofan_rounds([1, decisions.WOFAN_ROUNDS + 1])
    assert decisions.wofan_rounds(decisions.fit_weights([decisions.WOFAN_ROUNDS, 2 * decisions.WOFAN_ROUNDS])) == (
        0b10,
        0b11,
    )
    assert decisions.fit_weights([1, 3]) == [1, 3] and decisions.wofan_weights([0.25, 0.75]) == [1, 3]
    assert decisions.wofan_weights([0.3, 0.7]) == [3, 7]
