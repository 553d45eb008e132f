from __future__ import annotations

import random

import pytest

from testbed.traffic import workloads
from testbed.traffic.packet import PAPER_HEADER_BYTES, Packetizer, bth
from testbed.units import format_rate, parse_rate, parse_size


@pytest.mark.parametrize("text,bps", [("100mbit", 10**8), ("1gbit", 10**9), ("500kbit", 5 * 10**5),
                                      ("2.5Mbit", 2_500_000), ("1000", 1000)])
def test_parse_rate(text: str, bps: int) -> None:
    assert parse_rate(text) == bps


@pytest.mark.parametrize("text", ["0mbit", "-1mbit", "fast", "100mbps", ""])
def test_parse_rate_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_rate(text)


@pytest.mark.parametrize("text,n", [("1MB", 1 << 20), ("256KB", 256 << 10), ("4096", 4096), ("2MiB", 2 << 20)])
def test_parse_size(text: str, n: int) -> None:
    assert parse_size(text) == n


@pytest.mark.parametrize("text", ["0", "0MB", "1.5B", "lots", "-4KB"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


def test_format_rate() -> None:
    assert format_rate(50_000_000) == "50mbit"
    assert format_rate(1234) == "1234bit"


@pytest.mark.parametrize("n", [2, 3, 16, 54])
def test_permutation_is_a_derangement(n: int) -> None:
    flows = workloads.permutation(n, 1000, random.Random(n))
    assert sorted(f.src for f in flows) == list(range(n))
    assert sorted(f.dst for f in flows) == list(range(n))
    assert all(f.src != f.dst for f in flows)
    assert len({f.fid for f in flows}) == n and min(f.fid for f in flows) >= 1


def test_workloads_are_seeded() -> None:
    assert workloads.make("permutation", 16, 1000, 5) == workloads.make("permutation", 16, 1000, 5)
    assert workloads.make("permutation", 16, 1000, 5) != workloads.make("permutation", 16, 1000, 6)


def test_incast() -> None:
    flows = workloads.make("incast", 16, 2 << 20, 3, fan_in=5)
    assert len(flows) == 5
    assert len({f.dst for f in flows}) == 1
    assert len({f.src for f in flows}) == 5
    assert all(f.src != f.dst for f in flows)


@pytest.mark.parametrize("name,kw", [("allreduce", {}), ("incast", {"fan_in": 16}), ("incast", {"fan_in": 0})])
def test_bad_workloads(name: str, kw: dict[str, int]) -> None:
    with pytest.raises(workloads.WorkloadError):
        workloads.make(name, 16, 1000, 1, **kw)


def test_packet_layout_matches_paper_overhead() -> None:
    pk = Packetizer(4096)
    assert PAPER_HEADER_BYTES == 62
    assert pk.frame_len(4096) == 4096 + 58  # no FCS on a veth
    assert pk.count(1 << 20) == 256
    assert pk.payload_sizes(10000) == [4096, 4096, 1808]
    assert pk.frame_bytes(10000) == 10000 + 3 * 58
    b = bth(qp=0x123456, psn=0xABCDEF)
    assert len(b) == 12 and b[0] == 0x04
    assert b[5:8] == bytes([0x12, 0x34, 0x56]) and b[9:12] == bytes([0xAB, 0xCD, 0xEF])
