"""The qdisc-timer probe's logic without the kernel: a probe that cannot be
made leaves the run without it (None), and an empty count reads zero."""

from __future__ import annotations

import pytest

from testbed.fabric import qdisc_timers
from testbed.fabric.qdisc_timers import TimerLateness


def test_a_probe_that_cannot_be_made_is_no_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> None:
        raise Exception("Failed to compile BPF module")

    monkeypatch.setattr(qdisc_timers, "ensure_tracefs", lambda: None)
    monkeypatch.setattr(qdisc_timers, "TimerProbe", refuse)
    with qdisc_timers.watch() as w:
        assert w is None


def test_no_timer_fired() -> None:
    t = TimerLateness.of([[0, 0], [0, 0], [0, 0], [0, 0]])
    assert (t.fired, t.mean_s, t.max_s, t.over_100us) == (0, 0.0, 0.0, 0)
