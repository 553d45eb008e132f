"""The queue sampler's two rates and its choice of watched ports, on a fake
port_q (a numpy array standing in for the memory-mapped map)."""

from __future__ import annotations

import numpy as np

from testbed.dataplane.compile import Dims
from testbed.dataplane.maps import PORTQ_DTYPE
from testbed.measure import collector
from testbed.measure.collector import Sampler
from testbed.topology import FatTree


class FakeMaps:
    def __init__(self, n: int) -> None:
        self.q = np.zeros(n, dtype=PORTQ_DTYPE)

    def port_q_view(self, n: int) -> np.ndarray:
        return self.q


def sampler(tree: FatTree) -> tuple[Sampler, FakeMaps]:
    maps = FakeMaps(Dims.of(tree).n_ifindex)
    return Sampler(maps, tree), maps  # type: ignore[arg-type]


def test_small_fabrics_read_every_port_at_the_full_rate() -> None:
    s, _ = sampler(FatTree(4))  # 96 ports
    assert s.every == 1 and s.all_hz == 500


def test_large_fabrics_read_every_port_within_the_budget() -> None:
    s, _ = sampler(FatTree(16))
    assert len(FatTree(16).ports) == 6144 and s.every == 16 and s.all_hz == 31.25
    assert s.all_hz * 6144 <= collector.ALL_PORT_READINGS_PER_S


def test_watched_ports_are_the_largest_maxima_and_keep_their_place_on_ties() -> None:
    tree = FatTree(12)
    s, maps = sampler(tree)
    ifx = [p.ifindex for p in tree.ports]
    for i, x in enumerate(ifx):
        maps.q["max_pkts"][x] = 5 if i % 10 == 0 else 1  # ports 0, 10, 20, ...: the most loaded
        maps.q["pkts"][x] = i
    for tick in range(2 * s.every):
        s._sample(tick % s.every == 0)
    watched = set(s.positions[1].tolist())
    assert watched == {i for i in range(0, 320, 10)}  # the 32 largest maxima, the first 32 of the ties at 5
    assert [len(p) for p in s.positions[: s.every + 1]] == [len(ifx)] + [32] * (s.every - 1) + [len(ifx)]
    np.testing.assert_array_equal(s.pkts[1], np.array(sorted(watched)))  # the readings are of those ports
    # more ports reach 5: the watched ones keep their place (no churn on a tie)
    for i, x in enumerate(ifx):
        if i % 10 == 5:
            maps.q["max_pkts"][x] = 5
    s._sample(True)
    assert set(s._watched.tolist()) == watched
    # a port with a larger maximum takes a place
    maps.q["max_pkts"][ifx[7]] = 9
    s._sample(True)
    assert 7 in set(s._watched.tolist()) and len(s._watched) == 32


def test_series_is_long_and_timed_from_t0() -> None:
    tree = FatTree(4)
    s, _maps = sampler(tree)
    for _ in range(3):
        s._sample(True)
    cols = s.series(s.times_ns[0])
    assert len(cols["t_s"]) == 3 * len(tree.ports) and cols["t_s"][0] == 0.0
    assert (np.diff(cols["t_s"]) >= 0).all()


def test_readings_are_compact_and_the_every_port_rate_halves_on_long_runs(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(collector, "READINGS_PER_HALVING", 1000)
    tree = FatTree(4)  # 96 ports, every port at every tick
    s, maps = sampler(tree)
    maps.q["pkts"][[p.ifindex for p in tree.ports]] = np.uint64(2**64 - 1)  # a counter just below zero
    for tick in range(40):
        s._sample(tick % s.every == 0)
    # own int32 arrays, not views that would keep the map's 224-byte entries alive
    assert all(a.dtype == np.int32 and a.base is None for a in (*s.pkts, *s.bytes))
    assert s.pkts[0][0] == -1
    # 96 readings a tick: 11 ticks pass 1,000 (every 1 -> 2), then 1,000 more readings at 96 per 2 ticks ...
    assert s.every == 4 and len(s.halvings_s) == 2
    kept = s.describe()
    assert kept["every_port_hz"] == 500 and kept["readings"] == sum(len(p) for p in s.positions)
    assert [len(p) for p in s.positions[10:15]] == [96, 32, 96, 32, 96]  # the 11th tick halved: every other tick
