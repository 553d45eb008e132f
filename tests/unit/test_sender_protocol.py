"""testbed-sender's protocol, defined once in traffic/protocol.h: traffic.protocol reads its lists from the
header's text, traffic.sender writes the flow lines and options and reads the report by name from them, and the
compiled sender (run here without root: it parses everything before it enters a namespace) refuses a malformed
input line with exit status 2 and one line naming it, which the Python side reports."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from traffic import protocol, sender
from traffic.faults import Late
from traffic.packet import Packetizer
from traffic.sender import Endpoint, FlowSent, Lateness, SenderError, Senders
from traffic.transport import CCAS, Transport
from traffic.workloads import Flow

TRANSPORT = Transport("dctcp", 1_000_000, 25_000_000, 4096, 800 * 1024)


def test_the_header_lists_are_what_python_reads() -> None:
    p = protocol.protocol()
    assert [f.name for f in p.flow][:3] == ["ns", "fid", "src_ip"]
    assert [f.name for f in dataclasses.fields(FlowSent)] == [f.name for f in p.sent + p.sent_transport]
    assert [f.name for f in dataclasses.fields(Lateness)] == [f.name for f in p.lateness]
    assert set(p.ccs) == set(CCAS) - {"none"}
    assert {f.type for f in (*p.options, *p.flow, *p.sent, *p.sent_transport, *p.lateness)} <= set(protocol.TYPES)
    names = [a.partition("=")[0] for a in TRANSPORT.options()]
    assert set(names) <= {f.name for f in p.options}
    assert protocol.check_option_args(TRANSPORT.options()) == TRANSPORT.options()


def test_a_header_without_a_list_or_with_an_unknown_type_is_refused() -> None:
    text = protocol.HEADER.read_text()
    with pytest.raises(protocol.ProtocolError, match="no list SENDER_FLOW"):
        protocol.parse_header(text.replace("#define SENDER_FLOW(X)", "#define SENDER_FLOWS(X)"))
    with pytest.raises(protocol.ProtocolError, match=r"fid \(U33\)"):
        protocol.parse_header(text.replace("X(fid, U32, fid)", "X(fid, U33, fid)"))
    added = text.replace("X(after_ns, U64, after_ns)", "X(after_ns, U64, after_ns) X(weight, F64, w)")
    assert protocol.parse_header(added).flow[-1] == protocol.Field("weight", "F64")


def senders(monkeypatch: pytest.MonkeyPatch, transport: Transport | None = None, **kw: object) -> Senders:
    monkeypatch.setattr(sender, "sender_binary", lambda: Path("/nonexistent/testbed-sender"))
    hosts = [Endpoint(f"/run/netns/t-h{i}", f"10.0.0.{i + 1}") for i in range(4)]
    flows = [Flow(1, 0, 1, 10_000), Flow(2, 2, 3, 8192, start_bits=25_000.0)]
    if transport is not None:
        flows.append(Flow(3, 1, 0, 4096, after=1))
    return Senders(
        hosts,
        flows,
        Packetizer(4096),
        seed=3,
        line_rate_bps=25_000_000,
        transport=transport,
        **kw,  # type: ignore[arg-type]
    )


def fields_of(line: str) -> dict[str, str]:
    return dict(token.split("=", 1) for token in line.split())


def test_flow_lines_carry_every_field_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = senders(monkeypatch).plan().splitlines()
    assert len(lines) == 2
    first, second = fields_of(lines[0]), fields_of(lines[1])
    assert list(first) == [f.name for f in protocol.protocol().flow]
    assert first["ns"] == "/run/netns/t-h0" and first["dst_ip"] == "10.0.0.2" and first["size"] == "10000"
    assert first["src_port"] == str(sender.source_port(1, 3)) and first["payload"] == "4096"
    assert second["start_ns"] == "1000000"  # 25,000 bits at 25 Mbit/s
    assert all(first[n] == "0" for n in ("start_ns", "dupthresh", "base_rtt_ns", "after_fid", "after_ns"))
    chained = senders(monkeypatch, TRANSPORT, paths={1: 4}, after_ns={3: 7000}).plan().splitlines()
    one, three = fields_of(chained[0]), fields_of(chained[2])
    assert one["dupthresh"] == str(TRANSPORT.dupthresh(4)) and one["base_rtt_ns"] == "1000000"
    assert three["after_fid"] == "1" and three["after_ns"] == "7000"


def test_a_flow_line_needs_every_field_and_values_of_their_types() -> None:
    good = {f.name: 1 for f in protocol.protocol().flow} | {"ns": "/run/netns/x", "src_ip": "a", "dst_ip": "b"}
    assert protocol.flow_line(good).startswith("ns=/run/netns/x fid=1 ")
    with pytest.raises(protocol.ProtocolError, match=r"missing \['size'\]"):
        protocol.flow_line({k: v for k, v in good.items() if k != "size"})
    with pytest.raises(protocol.ProtocolError, match=r"not in protocol.h: \['weight'\]"):
        protocol.flow_line(good | {"weight": 2})
    for name, bad in (("fid", -1), ("fid", 1 << 32), ("size", 1.5), ("ns", "two words"), ("ns", "")):
        with pytest.raises(protocol.ProtocolError, match=f"^{name}="):
            protocol.flow_line(good | {name: bad})


def test_options_are_the_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    args = senders(monkeypatch, fault=Late(group=2, us=500)).args(1.5)
    assert args[1:] == [
        "1.500",
        str(sender.send_buffer_bytes(4096, False)),
        "fault=late",
        "fault_group=2",
        "fault_us=500",
    ]
    with pytest.raises(protocol.ProtocolError, match=r"not in protocol\.h's SENDER_OPTIONS"):
        protocol.option_args({"ackring": 3})
    with pytest.raises(protocol.ProtocolError, match="given twice"):
        protocol.check_option_args(["cc=dctcp", "cc=swift"])


def test_the_report_is_read_by_name() -> None:
    sent = "FLOW noroute=0 fid=7 packets=3 bytes=12336 errors=1\n"
    report = protocol.read_report(sent, transport=False)
    assert report.flows == [{"fid": 7, "packets": 3, "bytes": 12336, "errors": 1, "noroute": False}]
    assert report.lateness is None
    assert FlowSent(**report.flows[0]) == FlowSent(7, 3, 12336, 1, False)
    tp_fields = " ".join(f"{f.name}={'2.500' if f.type == 'F64' else 2}" for f in protocol.protocol().sent_transport)
    late = " ".join(f"{f.name}={i}" for i, f in enumerate(protocol.protocol().lateness))
    report = protocol.read_report(
        f"FLOW fid=1 packets=1 bytes=1 errors=0 noroute=1 {tp_fields}\nLATENESS {late}\n", True
    )
    assert FlowSent(**report.flows[0]).final_cwnd == 2.5 and report.flows[0]["noroute"] is True
    assert report.lateness is not None and Lateness(**report.lateness).trace_records == 9
    for text, transport, what in (
        ("FLOW fid=1 packets=1 bytes=1 errors=0\n", False, "no noroute"),
        ("FLOW fid=1 packets=1 bytes=1 errors=0 noroute=0 weight=2\n", False, "'weight=2' is not a field"),
        ("FLOW fid=x packets=1 bytes=1 errors=0 noroute=0\n", False, "fid=x is not a U32"),
        ("1 2 3 4 0\n", False, "not a line of the report"),
        ("FLOW fid=1 packets=1 bytes=1 errors=0 noroute=0\n", True, "no retransmits"),
        (f"FLOW fid=1 packets=1 bytes=1 errors=0 noroute=0 {tp_fields}\n", True, "without its LATENESS line"),
    ):
        with pytest.raises(protocol.ProtocolError, match=what):
            protocol.read_report(text, transport)


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("no gcc to build the sender")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sender, "BUILD_DIR", tmp_path_factory.mktemp("sender"))
        return sender.sender_binary()


def line(**changed: object) -> str:
    values: dict[str, object] = {f.name: 0 for f in protocol.protocol().flow}
    values |= {"ns": "/proc/self/cwd", "fid": 1, "src_ip": "10.0.0.1", "src_port": 49152, "dst_ip": "10.0.0.2"}
    values |= {"size": 4096, "payload": 4096} | changed
    return protocol.flow_line(values) + "\n"


def test_a_well_formed_plan_gets_past_the_parser(binary: Path) -> None:
    """A flow whose namespace is no namespace: refused when its thread enters it (exit 1), so every line and
    option was read; a transport run's options too (it stops at the ACK ring, which is not there)."""
    with pytest.raises(SenderError, match=r"^testbed-sender exited 1: testbed-sender: cannot enter /proc/self/cwd"):
        sender.execute(
            [str(binary), "1", "40000", *protocol.option_args(Late(group=0, us=5).options())], line() + line(fid=2), 1
        )
    args = [str(binary), "1", "12000", *TRANSPORT.options(), "ring=/nonexistent/ring", "ack_stall_after=1"]
    with pytest.raises(SenderError, match=r"^testbed-sender exited 1: testbed-sender: cannot open the ACK ring"):
        sender.execute(args, line(dupthresh=4, base_rtt_ns=1000), 1)


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        (
            line() + "ns=/proc/self/cwd fid=2 garbage\n",
            'stdin line 2: garbage is not NAME=VALUE in "ns=/proc/self/cwd fid=2 garbage"',
        ),
        (line().replace(" after_ns=0", ""), 'stdin line 1: missing after_ns= in "ns='),
        (line().replace("size=4096", "size=-1"), 'stdin line 1: bad value size=-1 in "ns='),
        (line().replace("fid=1", "fid=1 fid=2"), 'stdin line 1: fid given twice in "ns='),
        (line().replace("fid=1", "qp=1"), 'stdin line 1: unknown name qp in "ns='),
        (line() + "\n", 'stdin line 2: missing ns= in ""'),
        ("x" * 5000 + "\n", "stdin line 1: longer than 4094 characters"),
    ],
)
def test_a_malformed_line_is_an_error_naming_it(binary: Path, stdin: str, message: str) -> None:
    with pytest.raises(SenderError) as e:
        sender.execute([str(binary), "1", "40000"], stdin, 1)
    assert str(e.value).startswith(f"testbed-sender exited 2: testbed-sender: {message}"), str(e.value)
    assert "\n" not in str(e.value)


def test_a_bad_option_is_an_error(binary: Path) -> None:
    for option, message in (("fault=slow", "bad value fault=slow"), ("ackring=3", "unknown name ackring")):
        with pytest.raises(SenderError, match=f"^testbed-sender exited 2: testbed-sender: bad option: {message}$"):
            sender.execute([str(binary), "1", "40000", option], line(), 1)
