"""The injected-fault language (a run's `inject` option, traffic/faults.py): each form parsed once into its typed
value, anything else refused with the message the run option always gave, the transport's faults refused
without a transport, and each part carried out by whom it belongs to (the sender program: its numbers as
options of its protocol; the NICs and the deadline: the run)."""

from __future__ import annotations

import dataclasses

import pytest

from testbed.run.params import RunError, RunParams
from traffic import faults, protocol
from traffic.faults import AckRing, AckStall, Deadline, Late, NicBurst, NicSlow, Stall, Wake

FORMS = "late:G:US, stall:G:N:US, wake:US, nic-burst, nic-slow:H:PCT, ackstall:N:US, ackring:N or deadline:MS"


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        ("late:2:5000", Late(group=2, us=5000)),
        ("stall:1:50:300", Stall(group=1, after=50, us=300)),
        ("wake:300", Wake(us=300)),
        ("nic-burst", NicBurst()),
        ("nic-slow:3:1.2", NicSlow(host=3, pct=1.2)),
        ("nic-slow:3:3", NicSlow(host=3, pct=3.0)),
        ("ackstall:200:3000", AckStall(after=200, us=3000)),
        ("ackring:128", AckRing(events=128)),
        ("deadline:100", Deadline(ms=100)),
    ],
)
def test_each_form_is_its_typed_value(text: str, fault: faults.Fault) -> None:
    assert faults.parse(text) == fault


@pytest.mark.parametrize(
    "text", ["", "late", "late:1", "late:1:2:3", "late:a:1", "late:-1:2", "nic-burst:1", "nic-slow:1:2.", "stal:1:2:3"]
)
def test_anything_else_is_refused_as_the_run_option_refused_it(text: str) -> None:
    with pytest.raises(faults.FaultError) as e:
        faults.parse(text)
    assert str(e.value) == f"unknown fault {text!r} ({FORMS})"
    with pytest.raises(RunError) as run_error:
        RunParams("permutation", 1 << 20, inject=text)
    assert str(run_error.value) == str(e.value)


def test_the_transports_faults_need_a_transport() -> None:
    for text in ("ackstall:1:2", "ackring:3"):
        with pytest.raises(RunError, match=f"^{text.split(':')[0]} faults the transport's ACK thread: give --cc too$"):
            RunParams("permutation", 1 << 20, inject=text)
        assert RunParams("permutation", 1 << 20, inject=text, cc="dctcp").inject == text


def test_the_sender_carries_out_its_own_faults_with_options_of_its_protocol() -> None:
    p = protocol.protocol()
    option_names = {f.name for f in p.options}
    for text in ("late:2:5000", "stall:1:50:300", "wake:300", "ackstall:200:3000", "ackring:0"):
        fault = faults.for_sender(faults.parse(text))
        assert fault is not None, text
        options = fault.options()
        assert set(options) <= option_names, (text, options)
        assert options.get("fault", p.faults[0]) in p.faults, text
        protocol.option_args(options)  # each value of its option's type
    for text in ("nic-burst", "nic-slow:1:2", "deadline:5"):  # the run's own (testbed.run.experiment)
        assert faults.for_sender(faults.parse(text)) is None
    assert faults.for_sender(None) is None
    assert {k.KEYWORD for k in faults.SENDER_KINDS if "fault" in k(**_zeros(k)).options()} == set(p.faults)


def _zeros(kind: type[faults.SenderFault]) -> dict[str, int]:
    return {f.name: 0 for f in dataclasses.fields(kind)}
