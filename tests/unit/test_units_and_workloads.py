from __future__ import annotations

import pytest

from testbed.topology.units import format_rate, parse_duration, parse_ints, parse_rate, parse_seeds, parse_size
from traffic import sender, workloads
from traffic.packet import PAPER_HEADER_BYTES, Packetizer, bth
from traffic.workloads import WorkloadError, WorkloadSpec


@pytest.mark.parametrize(
    "text,bps", [("100mbit", 10**8), ("1gbit", 10**9), ("500kbit", 5 * 10**5), ("2.5Mbit", 2_500_000), ("1000", 1000)]
)
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
    flows = workloads.make_spec(WorkloadSpec("permutation", 1000, seed=n), n, max(1, n // 4))
    assert sorted(f.src for f in flows) == list(range(n))
    assert sorted(f.dst for f in flows) == list(range(n))
    assert all(f.src != f.dst for f in flows)
    assert len({f.fid for f in flows}) == n and min(f.fid for f in flows) >= 1


@pytest.mark.parametrize("k", [4, 6, 8])
def test_inter_pod_permutation(k: int) -> None:
    n, per_pod = k**3 // 4, k**2 // 4
    for seed in range(5):
        flows = workloads.make_spec(WorkloadSpec("permutation", 1000, seed=seed, inter_pod=True), n, per_pod)
        assert sorted(f.dst for f in flows) == list(range(n))
        assert all(f.src // per_pod != f.dst // per_pod for f in flows)


def test_workloads_are_seeded() -> None:
    assert workloads.make("permutation", 16, 1000, 5) == workloads.make("permutation", 16, 1000, 5)
    assert workloads.make("permutation", 16, 1000, 5) != workloads.make("permutation", 16, 1000, 6)


def test_all_to_all() -> None:
    flows = workloads.make_spec(WorkloadSpec("all-to-all", 4096), 16, 4)
    assert len(flows) == 16 * 15
    assert {(f.src, f.dst) for f in flows} == {(s, d) for s in range(16) for d in range(16) if s != d}


def test_moe_serving_order() -> None:
    """MoE's dispatch flows, staggered by server: at every step every host has its own receiver."""
    n, g = 16, 4
    flows = workloads.make_spec(WorkloadSpec("moe", 4096 * 64, gpus_per_server=g), n, 4)
    by_src: dict[int, list[int]] = {}
    for f in flows:
        by_src.setdefault(f.src, []).append(f.dst)
    assert all(d == [(s + i * g) % n for i in range(1, n // g)] for s, d in by_src.items())


@pytest.mark.parametrize("name", ["all-to-all"])
def test_serving_order(name: str) -> None:
    """Each host's flows, in the order its sender round-robins over them: staggered by default (at every
    step every host has its own receiver), sorted on request (at every step at most two receivers)."""
    n = 16

    def steps(order: str) -> list[set[int]]:
        flows = workloads.make_spec(WorkloadSpec(name, 4096, order=order), n, 4)
        by_src: dict[int, list[int]] = {}
        for f in flows:
            by_src.setdefault(f.src, []).append(f.dst)
        assert all(sorted(d) == [x for x in range(n) if x != s] for s, d in by_src.items())
        return [{by_src[s][i] for s in range(n)} for i in range(n - 1)]

    assert all(len(rx) == n for rx in steps("staggered"))
    assert workloads.destinations(3, 5, "staggered") == [4, 0, 1, 2]
    assert all(len(rx) <= 2 for rx in steps("sorted"))
    with pytest.raises(WorkloadError, match="unknown order"):
        WorkloadSpec(name, 4096, order="random")


@pytest.mark.parametrize(
    "name,param,step", [("ring", {"gpus_per_server": 8}, 8), ("stride", {}, 4), ("stride", {"stride": 5}, 5)]
)
def test_ring_and_stride(name: str, param: dict[str, int], step: int) -> None:
    flows = workloads.make_spec(WorkloadSpec(name, 4096, **param), 16, 4)  # type: ignore[arg-type]
    assert [(f.src, f.dst) for f in flows] == [(i, (i + step) % 16) for i in range(16)]


def test_fsdp_is_a_chained_pass_over_servers_placed_at_random() -> None:
    """FSDP2's backward pass (section 6.7): per layer 2 (n/G - 1) ring steps (ReduceScatter, then AllGather),
    logical GPU j to j + G, servers placed at random with the seed, each GPU keeping its rank; every step has
    one flow per host, and logical GPU j's flow of step t waits for step t - 1's flow into it (from j - G)."""
    n, g = 32, 4
    placed = []
    for seed in (1, 2):
        flows = workloads.make_spec(WorkloadSpec("fsdp", 4096, seed=seed, gpus_per_server=g, layers=2), n, 8)
        steps = workloads.fsdp_steps(n, g, 2)
        assert steps == 2 * 2 * (n // g - 1) and len(flows) == steps * n
        by_fid = {f.fid: f for f in flows}
        for t in range(steps):
            step = flows[t * n : (t + 1) * n]
            assert sorted(f.src for f in step) == sorted(f.dst for f in step) == list(range(n))
            assert all(f.src % g == f.dst % g and f.src // g != f.dst // g for f in step)
            for f in step:  # each waits for the flow that brought its source the input of this step
                assert (f.after == 0) == (t == 0)
                if t:
                    assert by_fid[f.after].dst == f.src and by_fid[f.after].fid < f.fid
        assert [(f.src, f.dst) for f in flows[:n]] == [(f.src, f.dst) for f in flows[n : 2 * n]]  # the same ring
        placed.append({(f.src, f.dst) for f in flows[:n]})
    assert placed[0] != placed[1]
    assert placed[0] != {(i, (i + g) % n) for i in range(n)} or placed[1] != {(i, (i + g) % n) for i in range(n)}
    first = workloads.make_spec(WorkloadSpec("fsdp", 4096, seed=1, gpus_per_server=g, steps=3), n, 8)
    assert len(first) == 3 * n
    with pytest.raises(workloads.WorkloadError, match="whole servers"):
        workloads.make_spec(WorkloadSpec("fsdp", 4096, gpus_per_server=3), 16, 4)
    with pytest.raises(workloads.WorkloadError, match="ring steps"):
        workloads.make_spec(WorkloadSpec("fsdp", 4096, gpus_per_server=4, steps=7), 16, 4)


def test_a_chain_bounds_the_cct_by_its_steps() -> None:
    """The bound of a chained pass is the sum of its steps' bounds when every path is as long: each step sends
    its shard after the one before it arrived and crossed its propagation; the last adds its own shift."""
    from testbed.measure import metrics

    pk = Packetizer(4096, 24)
    flows = workloads.make_spec(WorkloadSpec("fsdp", 64 * 4096, seed=1, gpus_per_server=4), 16, 4)  # 6 steps
    assert len(flows) == 6 * 16
    rate, burst, link_s = 10**8, 2 * pk.wire_len(4096), 1e-3  # 12 frames per link: more than a bucket refills
    one_way = {f.fid: 6 * link_s for f in flows}  # every flow crosses pods here: 6 links
    waits = {f.fid: 6 * link_s for f in flows if f.after}
    shift = {f.fid: 2 * one_way[f.fid] for f in flows}  # the CCT ends at the last ACK
    chain = metrics.cct_lower_bound_s(flows, pk, rate, rate, burst, shift_s=shift, after_s=waits)
    step = metrics.cct_lower_bound_s(flows[:16], pk, rate, rate, burst, shift_s=one_way)  # one step, to delivery
    last = metrics.cct_lower_bound_s(flows[:16], pk, rate, rate, burst, shift_s=shift)
    assert chain == pytest.approx(5 * step + last)
    unchained = [workloads.Flow(f.fid, f.src, f.dst, f.size_bytes) for f in flows]  # the same bytes, no chain
    assert metrics.cct_lower_bound_s(unchained, pk, rate, rate, burst, shift_s=shift) < chain


@pytest.mark.parametrize(
    ("n", "g", "eplb", "skew"), [(16, 4, False, 1.48), (16, 4, True, 1.13), (128, 8, False, 1.48), (128, 8, True, 1.13)]
)
def test_moe_dispatch_shows_the_requested_skew(n: int, g: int, eplb: bool, skew: float) -> None:
    """The hierarchical dispatch (section 6.6) at its default skews, the paper's: over 10 seeds the busiest GPU
    receives the requested multiple of the mean within 2 %; every flow goes to the sender's same-rank peer on
    another server, one per remote server; the mean flow is SIZE; seeds differ."""
    size = 1 << 20
    seen = []
    for seed in range(1, 11):
        flows = workloads.make_spec(WorkloadSpec("moe", size, seed=seed, gpus_per_server=g, eplb=eplb), n, 4)
        recv = [sum(f.size_bytes for f in flows if f.dst == h) for h in range(n)]
        assert max(recv) / (sum(recv) / n) == pytest.approx(skew, rel=0.02)
        assert all(f.src % g == f.dst % g and f.src // g != f.dst // g for f in flows)
        assert len(flows) == n * (n // g - 1)
        assert sum(f.size_bytes for f in flows) / len(flows) == pytest.approx(size, rel=1e-3)
        seen.append(tuple(f.size_bytes for f in flows))
    assert len(set(seen)) == 10


def test_moe_skew_given_and_refused() -> None:
    flows = workloads.make_spec(WorkloadSpec("moe", 65536, seed=2, gpus_per_server=4, skew=1.3), 32, 4)
    recv = [sum(f.size_bytes for f in flows if f.dst == h) for h in range(32)]
    assert max(recv) / (sum(recv) / 32) == pytest.approx(1.3, rel=0.02)
    with pytest.raises(workloads.WorkloadError, match="two whole servers"):
        workloads.make_spec(WorkloadSpec("moe", 65536, gpus_per_server=8), 12, 4)
    with pytest.raises(workloads.WorkloadError, match="beyond what"):
        workloads.make_spec(WorkloadSpec("moe", 65536, gpus_per_server=8, skew=5.0), 16, 4)


def test_moe_from_files(tmp_path: object) -> None:
    from pathlib import Path

    import numpy as np

    d = Path(str(tmp_path))
    m = np.arange(16).reshape(4, 4) * 100
    np.save(d / "m.npy", m)
    (d / "m.csv").write_text("\n".join(",".join(str(v) for v in row) for row in m.tolist()))
    for f in ("m.npy", "m.csv"):
        flows = workloads.make_spec(WorkloadSpec("moe", 0, matrix=str(d / f)), 4, 1)
        assert {(x.src, x.dst): x.size_bytes for x in flows} == {
            (s, t): int(m[s][t]) for s in range(4) for t in range(4) if s != t and m[s][t] > 0
        }
    with pytest.raises(workloads.WorkloadError, match="5 x 5"):
        workloads.make_spec(WorkloadSpec("moe", 0, matrix=str(d / "m.npy")), 5, 1)


def test_incast() -> None:
    flows = workloads.make("incast", 16, 2 << 20, 3, fan_in=5)
    assert len(flows) == 5
    assert len({f.dst for f in flows}) == 1
    assert len({f.src for f in flows}) == 5
    assert all(f.src != f.dst for f in flows)


@pytest.mark.parametrize(
    "name,kw",
    [
        ("allreduce", {}),
        ("incast", {"fan_in": 16}),
        ("incast", {"fan_in": 0}),
        ("ring", {"gpus_per_server": 16}),
        ("moe", {"skew": 0.5}),
    ],
)
def test_bad_workloads(name: str, kw: dict[str, float]) -> None:
    with pytest.raises(workloads.WorkloadError):
        workloads.make_spec(WorkloadSpec(name, 1000, **kw), 16, 4)  # type: ignore[arg-type]


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


def test_one_parser_per_kind_of_value() -> None:
    """Seeds, lists and durations read the same in every command and bench (testbed.topology.units)."""
    assert parse_seeds("3") == (3,) and parse_seeds("1,5,9") == (1, 5, 9) and parse_seeds("1-3,7") == (1, 2, 3, 7)
    for bad in ("0", "3-1", "1,1", "", "1,,2", "x", "1-x"):
        with pytest.raises(ValueError):
            parse_seeds(bad)
    assert parse_ints("4,8, 12") == (4, 8, 12)
    assert parse_duration("200ms") == pytest.approx(0.2) and parse_duration("1") == 1.0
    assert parse_duration("2000ns") == pytest.approx(2e-6) and parse_duration("150us") == pytest.approx(1.5e-4)
    with pytest.raises(ValueError):
        parse_duration("0")
    assert parse_duration("0", allow_zero=True) == 0.0


def test_the_same_flag_means_the_same_everywhere() -> None:
    """--seeds 3 is seed 3 in compare, sweep and ideal; --base-rtt and flap --period take the same durations."""
    from testbed.cli import COMMANDS
    from testbed.cli.args import Parser

    parser = Parser(prog="testbed")
    sub = parser.add_subparsers(dest="command")
    for add, _ in COMMANDS.values():
        add(sub)
    for cmd, dest in (
        (["compare"], "seed"),
        (["sweep", "--schemes", "ofan", "--out", "x"], "seed"),
        (["ideal"], "seeds"),
    ):
        for flag in ("--seeds", "--seed") if dest == "seed" else ("--seeds",):
            assert getattr(parser.parse_args([*cmd, flag, "3"]), dest) == (3,)
            assert getattr(parser.parse_args([*cmd, flag, "1-3"]), dest) == (1, 2, 3)
    run = parser.parse_args(["run", "--workload", "permutation", "--size", "1MB", "--cc", "nscc", "--base-rtt", "1"])
    assert run.base_rtt == 1.0
    run = parser.parse_args(
        ["run", "--workload", "permutation", "--size", "1MB", "--cc", "nscc", "--base-rtt", "100ns"]
    )
    assert run.base_rtt == pytest.approx(1e-7)


@pytest.mark.parametrize(
    "payload,transport,expected",
    [
        (1024, False, sender.SNDBUF_BYTES),  # never below the 4 KB buffer
        (4096, False, sender.SNDBUF_BYTES),
        (8192, False, 2 * sender.SNDBUF_BYTES),  # as many frames queued whatever their size
        (8192, True, 2 * sender.SNDBUF_TRANSPORT_BYTES),
        (32768, False, round(sender.SNDBUF_MAX_SCALE * sender.SNDBUF_BYTES)),  # capped: no 40 MB burst at release
        (65536, True, 16 * sender.SNDBUF_TRANSPORT_BYTES),  # a transport run's window bounds its bursts
    ],
)
def test_send_buffer_scales_with_payload_up_to_the_cap(payload: int, transport: bool, expected: int) -> None:
    assert sender.send_buffer_bytes(payload, transport) == expected
