"""The busiest CPU over sliding windows (testbed.measure.cpu_windows), from synthetic samples of the two
idle clocks: a pegged stretch inside an idle run is found, cpuidle's microseconds are used where they are
right, and /proc/stat's 10 ms units bound them where cpuidle counts an idle period at its end."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.measure.cpu_windows import USER_HZ, Busiest, Sample, busiest, machine_jiffies

UNIT = 1 / USER_HZ


def _samples(idle_per_10ms: list[float], stat: list[float] | None = None) -> list[Sample]:
    """One CPU sampled every 10 ms; `idle_per_10ms[i]` the idle seconds cpuidle saw in interval i."""
    out, t, ci, st = [], 0.0, 0.0, 0.0
    out.append(Sample(t, (0.0,), (0.0,)))
    for i, idle in enumerate(idle_per_10ms):
        t += 0.01
        ci += idle
        st = stat[i] if stat is not None else round(ci / UNIT) * UNIT
        out.append(Sample(t, (st,), (ci,)))
    return out


def test_a_pegged_stretch_inside_an_idle_run_is_found() -> None:
    idle = [0.01] * 30 + [0.0] * 12 + [0.01] * 30  # 120 ms with no idle at all, from 300 ms on
    b = busiest(_samples(idle))
    assert isinstance(b, Busiest) and b.share == pytest.approx(1.0) and b.cpu == 0
    assert 0.3 <= b.start_s <= 0.32 and b.window_s == pytest.approx(0.1)
    # the whole run's average is far below: what the window is for
    assert sum(0.01 - x for x in idle) / 0.72 < 0.2


def test_short_idle_pieces_are_counted_exactly() -> None:
    """93 % busy in small pieces: /proc/stat's units would say anything from 80 to 100 %."""
    b = busiest(_samples([0.0007] * 50))
    assert b is not None and b.share == pytest.approx(0.93, abs=1e-6)


def test_an_idle_period_counted_at_its_end_is_bounded_by_proc_stat() -> None:
    """cpuidle reports a 300 ms idle period only when it ends, all at once, at the start of the 100 ms busy
    stretch that follows: /proc/stat (which counted it as it went) keeps that window's idle within one unit of
    its own, so the stretch reads busy (cpuidle alone would call it idle)."""
    ci = [0.0] * 30 + [0.3] + [0.0] * 9  # the period ended in interval 30
    stat = [0.01 * min(i + 1, 30) for i in range(40)]  # /proc/stat: idle through 300 ms, then busy
    b = busiest(_samples(ci, stat))
    assert b is not None and b.share >= 1 - UNIT / 0.1 - 1e-9 and b.start_s == pytest.approx(0.3)


def test_a_run_shorter_than_a_window_is_judged_whole() -> None:
    b = busiest(_samples([0.0, 0.005, 0.0, 0.005]))
    assert b is not None and b.window_s == pytest.approx(0.04) and b.share == pytest.approx(0.75)
    assert busiest(_samples([])) is None


def test_windows_grow_with_the_lateness_the_verdict_allows() -> None:
    """120 ms pegged in an idle run: saturated over 100 ms windows, but not over the 400 ms that four packet
    times of a slow fabric's links last (a pegged stretch that short is what the stall and CPU-gap criteria
    judge by its effect); a stretch as long as the window still reads saturated."""
    idle = [0.01] * 30 + [0.0] * 12 + [0.01] * 60
    assert busiest(_samples(idle)).share == pytest.approx(1.0)  # type: ignore[union-attr]
    long = busiest(_samples(idle), 0.4)
    assert long is not None and long.window_s == pytest.approx(0.4) and long.share == pytest.approx(0.3)
    pegged = busiest(_samples([0.01] * 30 + [0.0] * 41 + [0.01] * 30), 0.4)
    assert pegged is not None and pegged.share == pytest.approx(1.0)


def test_machine_jiffies_are_kernel_and_busy_without_idle_iowait_or_steal(tmp_path: Path) -> None:
    # cpu  user nice system idle iowait irq softirq steal guest guest_nice
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 5 40 1000 7 3 11 50 0 0\ncpu0 50 2 20 500 3 1 5 25 0 0\n")
    assert machine_jiffies(str(stat)) == (40 + 3 + 11, 100 + 5 + 40 + 3 + 11)
