"""The sampled schemes' settings and timer models (testbed.models.sampled), by hand-worked cases."""

from __future__ import annotations

import pytest

from testbed.models import sampled
from testbed.models.sampled import PortState, SampledParams, Settings
from testbed.models.schemes import Scheme, SchemeError

FRAME = 4154  # a 4096-byte payload's frame


def settings(rate_bps: int = 100_000_000) -> Settings:
    return sampled.settings(SampledParams(), rate_bps, FRAME, 2, sampled.LB_SAMPLE)


def test_intervals_are_packet_times_at_any_rate() -> None:
    slow, fast = settings(25_000_000), settings(100_000_000)
    pkt_ns = FRAME * 8e9 / 100_000_000
    assert fast.sample_ns == round(16 * pkt_ns) and fast.flood_ns == round(32 * pkt_ns)
    assert slow.sample_ns == 4 * fast.sample_ns and slow.dre_ns == 4 * fast.dre_ns
    assert slow.load_hi == fast.load_hi == round(16 * FRAME)  # a full line carries 16 frames per sample
    assert fast.load_lo == round(fast.load_hi / 8)
    assert fast.conga_ctau == round(5 * 32 * FRAME)  # tau = T_dre / 0.2 = 160 frames at line rate


def test_band_thresholds_are_parameters() -> None:
    s = sampled.settings(SampledParams(load_bands=(0.5, 0.75), queue_bands=(4096, 65536)), 100_000_000, FRAME, 2, 1)
    line = 16 * FRAME
    assert (s.load_lo, s.load_hi, s.queue_lo, s.queue_hi) == (round(line / 2), round(line * 3 / 4), 4096, 65536)
    with pytest.raises(SchemeError, match="--load-bands"):
        SampledParams(load_bands=(1.0, 0.5))


def test_intervals_must_be_positive() -> None:
    with pytest.raises(SchemeError, match="--sample-interval"):
        SampledParams(sample_interval=0)
    with pytest.raises(SchemeError, match="--dre-interval"):
        SampledParams(dre_interval=-1)


def test_bands() -> None:
    assert [sampled.band(v, 100, 800) for v in (0, 100, 101, 216, 217, 450, 799, 800, 10**9)] == [
        0,
        0,
        1,
        1,
        2,
        4,
        6,
        7,
        7,
    ]
    assert [sampled.band(v, 100, 800) for v in range(0, 900, 7)] == sorted(
        sampled.band(v, 100, 800) for v in range(0, 900, 7)
    )


def test_sampling_ewma_and_quality() -> None:
    s = Settings(**{**settings().__dict__, "load_lo": 0, "load_hi": 8000, "queue_lo": 0, "queue_hi": 8000})
    st = PortState(last_rx=1000, load=4000, queue=0)
    # 8000 bytes sent over 2 epochs: 4000 per epoch; load 4000 -> 4000; queue 8000 -> 2000
    out = sampled.sample_port(st, 9000, 8000, 2, s)
    assert (out.last_rx, out.load, out.queue) == (9000, 4000, 2000)
    assert out.quality == (4 * sampled.band(4000, 0, 8000) + 4 * sampled.band(2000, 0, 8000)) >> 3 == 3
    # counters that went back (a reset, or a negative occupancy) count as nothing
    back = sampled.sample_port(st, 500, -300, 1, s)
    assert (back.load, back.queue) == (3000, 0)


def test_dre_decay_and_metric() -> None:
    s = settings()
    assert s.decay[0] == 1 << 16 and s.decay[1] == round(0.8 * (1 << 16))
    assert sampled.decay_dre(100_000, 1, s) == 80_000
    assert sampled.decay_dre(100_000, 500, s) == sampled.decay_dre(100_000, 63, s) == 0
    assert [sampled.conga_metric(x, 800) for x in (0, 99, 100, 350, 700, 799, 800, 10**6)] == [0, 0, 1, 3, 7, 7, 7, 7]


def test_conga_header_round_trip_and_ageing() -> None:
    h = sampled.conga_header(31, 7, 5, 3)
    assert sampled.conga_fields(h) == (31, 7, 5, 3) and h < 1 << 16
    assert sampled.conga_aged(5, written=10, epoch=13, age=3) == 5
    assert sampled.conga_aged(5, written=10, epoch=14, age=3) == 0


def test_flood_view_of_an_aggregation_switch_at_k4() -> None:
    """k=4: pods of 2 edges. Aggregation switch of pod 1: its own pod's edges 2 and 3 get their downlinks'
    quality (edge 3's route withdrawn: the worst); other pods the best of the uplinks valid for them."""
    view = sampled.flood_view(
        False, False, 1, 8, 2, down_quality=[4, None], up_quality=[6, 2], mask_of_pod=[0b11, 0b11, 0b01, 0b00]
    )
    assert view == [2, 2, 4, 7, 6, 6, 7, 7]
    core = sampled.flood_view(True, True, -1, 8, 2, down_quality=[1, 2, 3, 4], up_quality=[], mask_of_pod=[])
    assert core == [1, 1, 2, 2, 3, 3, 4, 4]


def test_active_bits() -> None:
    assert sampled.active_bits([Scheme.OFAN, Scheme.ECMP]) == 0
    assert sampled.active_bits([Scheme.DLB]) == sampled.LB_SAMPLE
    assert sampled.active_bits([Scheme.SGLB, Scheme.CONGA]) == sampled.LB_SAMPLE | sampled.LB_FLOOD | sampled.LB_CONGA


def test_drill_d_m_settings_and_model() -> None:
    from testbed.models import decisions

    assert sampled.settings(SampledParams(drill_d=4, drill_m=2), 10**8, FRAME, 2, 0).drill == 4 | 2 << 8
    assert settings().drill == 2 | 1 << 8
    for bad in ({"drill_d": 0}, {"drill_d": 5}, {"drill_m": 3}):
        with pytest.raises(SchemeError, match="DRILL"):
            SampledParams(**bad)  # type: ignore[arg-type]
    q = (50, 10, 30, 10)  # bytes per uplink; w = 4, every uplink valid
    # draws 1 and 3 sample uplinks 1 and 3 (both 10 bytes: the earlier wins); memories 2 and 0
    assert decisions.drill_port(4, (2, 0), 1, 3, q, dm=(2, 1)) == (1, (1, 0))
    assert decisions.drill_port(4, (2, 0), 1, 3, q, dm=(2, 2)) == (1, (1, 3))  # runner-up: uplink 3 (10 bytes)
    # memories 2 (30), 0 (50), samples 2 (30), 0 (50): the runner-up is the sample of uplink 2 (duplicates stay)
    assert decisions.drill_port(4, (2, 0), 2, 0, q, dm=(2, 2)) == (2, (2, 2))
    assert decisions.drill_port(4, (1, 1), 0, 2, q, dm=(2, 0)) == (2, (1, 1))  # no memory: of 0 (50) and 2 (30), 2
