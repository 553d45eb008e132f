"""htsim's connection-matrix flow lists: parsing, start times kept in packet times, one-line errors with
the line number, and the CCT bound of flows that start late."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.measure import metrics
from traffic.packet import Packetizer
from traffic.workloads import Flow, WorkloadError, WorkloadSpec, load_cm, make_spec

RATE = 100_000_000_000


def write(tmp_path: Path, text: str) -> str:
    p = tmp_path / "cm.txt"
    p.write_text(text)
    return str(p)


def test_parses_and_keeps_starts_in_line_bits(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        "Nodes 4\nConnections 3\n# comment\n0->1 id 7 start 10 size 4096\n"
        "2->3 start 2.5 size 8192\n3->0 id 9 start 10.5 size 100\n",
    )
    flows = load_cm(f, 16, RATE)
    assert [(x.fid, x.src, x.dst, x.size_bytes) for x in flows] == [(1, 0, 1, 4096), (2, 2, 3, 8192), (3, 3, 0, 100)]
    # the first flow starts the collective: 2.5 us at 100 Gbit/s is 250,000 bits before the others
    assert [x.start_bits for x in flows] == pytest.approx([7.5e-6 * RATE, 0.0, 8e-6 * RATE])
    assert make_spec(WorkloadSpec("cm", 0, flows=f), 16, 4) == flows


@pytest.mark.parametrize(
    "text,where",
    [
        ("Nodes 4\nConnections 1\n0->9 start 0 size 10\n", "line 3: nodes must be distinct and below 4"),
        ("Nodes 4\nConnections 1\n0-1 start 0 size 10\n", "line 3: expected 'SRC->DST"),
        ("Nodes 4\nConnections 1\n0->1 start 0 size -5\n", "line 3: size must be > 0"),
        ("Nodes 4\nConnections 2\n0->1 id 1 size 10\n1->2 id 1 size 10\n", "line 4: connection id 1 appears twice"),
        ("0->1 size 10\n", "line 1: expected 'Nodes N' and 'Connections C'"),
        ("Nodes 4\nConnections 3\n0->1 size 10\n", "'Connections 3' but 1 connection lines"),
        ("Nodes 40\nConnections 1\n0->1 size 10\n", "line 1: 40 nodes, but this fabric has 16 hosts"),
    ],
)
def test_a_bad_file_names_its_line(tmp_path: Path, text: str, where: str) -> None:
    with pytest.raises(WorkloadError, match=where.replace("(", r"\(").replace("'", "'")):
        load_cm(write(tmp_path, text), 16, RATE)


def test_bound_counts_the_starts() -> None:
    pk = Packetizer(4096)
    rate = 50_000_000
    frame_s = pk.frame_bytes(1 << 20) * 8 / rate
    at_once = [Flow(1, 0, 1, 1 << 20), Flow(2, 2, 3, 1 << 20)]
    late = [Flow(1, 0, 1, 1 << 20), Flow(2, 2, 3, 1 << 20, start_bits=0.1 * rate)]
    b0 = metrics.cct_lower_bound_s(at_once, pk, rate, rate, 0)
    b1 = metrics.cct_lower_bound_s(late, pk, rate, rate, 0)
    assert b0 == pytest.approx(frame_s) and b1 == pytest.approx(0.1 + frame_s)
    # one host, two flows, the second starting late: its bytes after the start still take their time
    one = [Flow(1, 0, 1, 1 << 20), Flow(2, 0, 2, 1 << 20, start_bits=0.5 * frame_s * rate)]
    assert metrics.cct_lower_bound_s(one, pk, rate, rate, 0) == pytest.approx(2 * frame_s)
