"""The ideal fabric (testbed.models.ideal) against hand-derived cases and
the paper's exact bound: an idle path gives the bound itself, two flows on
one link take exactly twice as long, Ofan's edge-uplink queue stays within
w + 1, and what it does not model is refused."""

from __future__ import annotations

import random
import struct

import pytest

from testbed.models import decisions, host, ideal
from testbed.models.schemes import Scheme, SchemeConfig, SchemeError
from testbed.topology import FatTree
from testbed.topology.fattree import Level
from traffic.packet import ROCE_PORT, Packetizer
from traffic.workloads import Flow, WorkloadSpec, make_spec

MB = 1 << 20  # 256 full frames


def run(k: int, scheme: str, flows: list[Flow], seed: int = 1, kind: str = "fattree") -> ideal.IdealResult:
    return ideal.simulate(FatTree(k, "t", kind), SchemeConfig(Scheme.parse(scheme)), flows, seed)


NIC = ideal.NIC_BUCKET * ideal.MAX_FRAME_BYTES / 4154  # the buckets in 4,154-byte frames: 1.268 (no wire overhead)
LINK = ideal.LINK_BUCKET * ideal.MAX_FRAME_BYTES / 4154  # 2.029


def test_an_idle_path_gives_the_bound() -> None:
    # 256 frames leave the NIC at 0, 1 - (NIC - 1), ..., 256 - NIC (a bucket of NIC frames, full at the start:
    # 254.73 packet times) and cross idle hops at once
    for scheme in ("ecmp", "ofan", "rps"):
        r = run(4, scheme, [Flow(1, 0, 15, MB)])
        assert r.frames == r.delivered == 256
        assert r.cct_pkts == pytest.approx(256 - NIC) and r.bound_pkts == pytest.approx(256 - NIC)
        assert r.cct_increase == pytest.approx(0.0)


def test_two_flows_on_one_uplink_take_twice_as_long() -> None:
    # h0 -> h2 and h1 -> h3 (both under e0_0, to e0_1): one agg each, or both on one. Sharing, the uplink gets
    # two frames per packet time and stays busy: frame j (from 0) leaves once LINK + t - j >= 1, the 512th at
    # 511 - (LINK - 1), 509.97 packet times (510 with a 2-frame bucket).
    flows = [Flow(1, 0, 2, MB), Flow(2, 1, 3, MB)]
    seen = set()
    for seed in range(1, 30):
        r = run(4, "ecmp", flows, seed)
        assert r.delivered == 512
        seen.add(round(r.cct_pkts, 6))
        if r.cct_pkts > 300:
            assert r.cct_pkts == pytest.approx(512 - LINK) and r.max_queue["edge_agg"] >= 250
        else:
            assert r.cct_pkts == pytest.approx(256 - NIC) and r.max_queue["edge_agg"] == 0
    assert seen == {round(256 - NIC, 6), round(512 - LINK, 6)}  # both happen over these seeds


def test_ecmp_with_the_runs_hash_inputs_takes_the_kernels_uplinks() -> None:
    # the same two flows under e0_0 as above: with a run's hash inputs they share an uplink exactly when the
    # switches' hash (decisions.ecmp_port, lb_ecmp.h's mirror) puts them on one, whatever the draw's own seed
    tree = FatTree(4, "t")
    flows = [Flow(1, 0, 2, MB), Flow(2, 1, 3, MB)]
    names = {h.nid: h.name for h in tree.hosts}
    sports = {1: 50_001, 2: 50_002}
    seen = set()
    for sw_seed in range(1, 40):
        inputs = ideal.EcmpInputs({sw.name: sw_seed for sw in tree.switches}, sports)
        slots = [
            decisions.ecmp_port(
                tree.w,
                sw_seed,
                tree.host_ip(tree.by_name[names[f.src]]).packed,
                tree.host_ip(tree.by_name[names[f.dst]]).packed,
                struct.pack("!HH", sports[f.fid], ROCE_PORT),
                17,
            )
            for f in flows
        ]
        shared = slots[0] == slots[1]
        seen.add(shared)
        for draw_seed in (1, 2, 3):
            r = ideal.simulate(tree, SchemeConfig(Scheme.ECMP), flows, draw_seed, ecmp=inputs)
            assert r.delivered == 512
            assert r.cct_pkts == pytest.approx(512 - LINK if shared else 256 - NIC), (sw_seed, draw_seed)
            assert (r.max_queue["edge_agg"] >= 250) is shared
    assert seen == {True, False}  # both happen over these switch seeds


@pytest.mark.parametrize("k", [4, 6, 8])
def test_ofan_edge_uplinks_stay_within_w_plus_1(k: int) -> None:
    tree = FatTree(k, "t")
    for seed in (1, 2, 3):
        flows = make_spec(WorkloadSpec("permutation", MB, seed), tree.n_hosts, tree.hosts_per_pod)
        for pipe in (0, 1):
            cfg = SchemeConfig(Scheme.POFAN, 1) if pipe else SchemeConfig(Scheme.OFAN)
            r = ideal.simulate(tree, cfg, flows, seed)
            assert r.delivered == r.frames == 256 * tree.n_hosts
            assert r.max_queue["edge_agg"] <= tree.w + 1
    ecmp = ideal.simulate(tree, SchemeConfig(Scheme.ECMP), flows, 1)
    assert ecmp.max_queue["edge_agg"] > tree.w + 1 and ecmp.cct_increase > 0.5


def test_leafspine_spreads_like_a_fat_tree() -> None:
    tree = FatTree(8, "t", "leafspine")
    flows = make_spec(WorkloadSpec("permutation", MB, 1), tree.n_hosts, tree.hosts_per_pod)
    ofan = ideal.simulate(tree, SchemeConfig(Scheme.OFAN), flows, 1)
    rps = ideal.simulate(tree, SchemeConfig(Scheme.RPS), flows, 1)
    assert ofan.delivered == ofan.frames and ofan.max_queue["agg_core"] == ofan.max_queue["core_agg"] == 0
    assert ofan.cct_increase < 0.05 < rps.cct_increase


def test_what_it_does_not_model_is_refused() -> None:
    tree = FatTree(4, "t")
    one = [Flow(1, 0, 5, MB)]
    with pytest.raises(SchemeError, match="not dlb"):
        ideal.simulate(tree, SchemeConfig(Scheme.DLB), one, 1)
    with pytest.raises(SchemeError, match="one flow per host"):
        ideal.simulate(tree, SchemeConfig(Scheme.OFAN), [Flow(1, 0, 5, MB), Flow(2, 0, 6, MB)], 1)
    with pytest.raises(SchemeError, match="one flow per host"):
        ideal.simulate(tree, SchemeConfig(Scheme.OFAN), [Flow(1, 0, 5, MB, start_bits=8.0)], 1)


def test_the_command_prints_one_row_per_scheme_and_seed() -> None:
    import json
    import subprocess
    import sys

    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "testbed.cli",
            "ideal",
            "--k",
            "4",
            "--schemes",
            "ofan,ecmp",
            "--seeds",
            "1,2",
            "--inter-pod",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["scheme"], x["seed"]) for x in rows] == [("ofan", 1), ("ofan", 2), ("ecmp", 1), ("ecmp", 2)]
    assert all(x["frames"] == x["delivered"] == 16 * 256 for x in rows)
    assert max(x["cct_increase"] for x in rows[:2]) < 0.02 < min(x["cct_increase"] for x in rows[2:])


def test_round_robin_locks_onto_a_fixed_arrival_phase() -> None:
    # Frames from an edge's two hosts arrive together every packet time. Taken in a fixed order, a per-switch
    # round robin sends each host's frames up the same uplink every time (per-host paths, as ECMP's); taken in
    # a random order, it spreads them.
    tree = FatTree(4, "t")
    for seed in (1, 2, 3):
        flows = make_spec(WorkloadSpec("permutation", MB, seed), tree.n_hosts, tree.hosts_per_pod)
        fixed = ideal.simulate(tree, SchemeConfig(Scheme.RR), flows, seed, order="fixed")
        rand = ideal.simulate(tree, SchemeConfig(Scheme.RR), flows, seed, order="random")
        assert fixed.cct_increase > 0.9 and rand.cct_increase < 0.5
        assert fixed.max_queue["edge_agg"] == 0  # the edge's two hosts alternate over its two uplinks exactly
    with pytest.raises(SchemeError, match="order"):
        ideal.simulate(tree, SchemeConfig(Scheme.RR), flows, 1, order="sorted")


def test_bound_and_buckets_are_the_fabrics_own() -> None:
    # ideal.py (layer 2) may not import the fabric's or the measurements' layers, so it keeps its own copies:
    # they must agree with the fabric's buckets and with metrics.cct_lower_bound_s, in packet times (frames on
    # the wire: the links charge WIRE_EXTRA bytes per frame beyond what the kernel counts).
    from testbed.fabric.build import DEFAULT_BURST_FRAMES, DEFAULT_MTU, NIC_BUCKET_FRAMES, FabricSpec
    from testbed.measure.metrics import cct_lower_bound_s
    from traffic.packet import WIRE_EXTRA, Packetizer

    assert ideal.LINK_BUCKET == DEFAULT_BURST_FRAMES and ideal.NIC_BUCKET == NIC_BUCKET_FRAMES
    spec = FabricSpec(k=6)
    assert spec.wire_overhead == WIRE_EXTRA
    assert spec.mtu == DEFAULT_MTU and spec.burst == round(ideal.LINK_BUCKET * (ideal.MAX_FRAME_BYTES + WIRE_EXTRA))
    assert spec.nic_burst == round(ideal.NIC_BUCKET * (ideal.MAX_FRAME_BYTES + WIRE_EXTRA))
    pk, rate = Packetizer(wire_overhead=WIRE_EXTRA), 100_000_000
    frame = pk.wire_len(pk.payload)
    assert frame == 4096 + 62 + 20  # the paper's frame on the wire
    tree = FatTree(6, "t")
    for size in (MB // 4, MB, 4 * MB):
        flows = make_spec(WorkloadSpec("ring", size, 1), tree.n_hosts, tree.hosts_per_pod)
        r = ideal.simulate(tree, SchemeConfig(Scheme.OFAN), flows, 1, pk)
        bound_s = cct_lower_bound_s(flows, pk, rate, rate, spec.burst, nic_burst_bytes=spec.nic_burst)
        assert r.bound_pkts == pytest.approx(bound_s * rate / (8 * frame), abs=1e-3)  # the fabric rounds to bytes


SHIFT_ERROR_PP = 2.5  # docs/methods/timebase.md: the analytic shift's largest error on mixed permutations, in points


@pytest.mark.parametrize(
    ("k", "seeds", "schemes"), [(4, (1, 2, 3), ("ecmp", "rps", "rr", "jsq", "ofan")), (8, (1,), ("jsq", "ofan"))]
)
def test_propagation_is_an_exact_shift_between_pods_and_close_within(
    k: int, seeds: tuple[int, ...], schemes: tuple[str, ...]
) -> None:
    # The kernel cannot delay a packet, so a run adds each flow's links x D to its completion (metrics). The
    # ideal fabric delays every frame on every link; between pods every frame at a queue crossed as many links
    # as the others there, so the shift is exact; intra-pod flows meet inter-pod ones two links "early".
    tree = FatTree(k, "t")
    d = 11.97
    worst = 0.0
    for seed in seeds:
        for inter in (True, False):
            flows = make_spec(WorkloadSpec("permutation", MB, seed, inter_pod=inter), tree.n_hosts, tree.hosts_per_pod)
            for scheme in schemes:
                cfg = SchemeConfig(Scheme.parse(scheme))
                r0 = ideal.simulate(tree, cfg, flows, seed)
                r1 = ideal.simulate(tree, cfg, flows, seed, propagation=d)
                shifted = ideal.shifted_cct_pkts(tree, flows, r0.flow_done, d)
                assert r1.delivered == r1.frames == r0.delivered
                if inter:
                    assert r1.cct_pkts == pytest.approx(r0.cct_pkts + 6 * d, abs=1e-6)
                    assert r1.bound_pkts == pytest.approx(r0.bound_pkts + 6 * d, abs=1e-9)
                    assert shifted == pytest.approx(r1.cct_pkts, abs=1e-6)
                else:
                    worst = max(worst, abs(shifted - r1.cct_pkts) / r1.bound_pkts * 100)
    assert worst <= SHIFT_ERROR_PP
    if k == 8:
        assert worst > 1.0  # JSQ's mixed traffic is where the shift is only an approximation: it must show here


def test_propagation_leaves_the_zero_delay_run_alone() -> None:
    tree = FatTree(4, "t")
    flows = make_spec(WorkloadSpec("permutation", MB, 2), tree.n_hosts, tree.hosts_per_pod)
    a = ideal.simulate(tree, SchemeConfig(Scheme.RPS), flows, 2)
    b = ideal.simulate(tree, SchemeConfig(Scheme.RPS), flows, 2, propagation=0.0)
    assert a == b
    with pytest.raises(SchemeError, match="propagation"):
        ideal.simulate(tree, SchemeConfig(Scheme.RPS), flows, 2, propagation=-1.0)


def test_a_fabrics_own_buckets_for_large_frames() -> None:
    """A fabric built for 16 KB payloads has buckets of its own frames (two at the links, 1.25 at the NICs):
    with them an Ofan permutation is as smooth as with 4 KB frames, while the default MTU's buckets, less than
    one such frame, would make every hop wait (the ideal-fabric criterion rejected faithful runs that way)."""
    from traffic.packet import Packetizer

    tree, pk = FatTree(4, "t"), Packetizer(16384, 24)
    flows = make_spec(WorkloadSpec("permutation", MB, 1), tree.n_hosts, tree.hosts_per_pod)
    frame = pk.wire_len(16384)
    own = ideal.simulate(tree, SchemeConfig(Scheme.OFAN), flows, 1, pk, buckets_bytes=(2 * frame, round(1.25 * frame)))
    assert own.cct_increase < 0.01 and own.bound_pkts == pytest.approx(64 - 1.25, abs=0.01)
    assert ideal.bound_pkts(tree, flows, pk, buckets_bytes=(2 * frame, round(1.25 * frame))) == pytest.approx(
        own.bound_pkts
    )
    default = ideal.simulate(tree, SchemeConfig(Scheme.OFAN), flows, 1, pk)
    assert default.cct_increase > 0.03


@pytest.mark.parametrize(("dst", "paths"), [(15, 4), (3, 2)])  # h0 to another pod (w x w paths), within its pod (w)
def test_drb_takes_the_path_its_nic_labels_frame_by_frame(dst: int, paths: int) -> None:
    """DRB in the ideal fabric is the NIC's rotation (models.host.model_drb) read by the switches
    (decisions.label_slot): frame n of a flow takes the path its pointer names after n steps from its random
    start, at the edge switch and, between pods, at the aggregation switch."""
    tree = FatTree(4, "t")
    flows = [Flow(1, 0, dst, MB)]
    cfg = SchemeConfig(Scheme.DRB)
    links = ideal._Links.of(tree, cfg, (ideal.LINK_BUCKET, ideal.NIC_BUCKET))
    inputs = ideal._SchemeInputs(flows=flows, seed=3, rng=random.Random(3), pk=Packetizer(), ecmp=None)
    hop = ideal._router(tree, cfg, links, inputs)
    start, n_paths = ideal._drb_paths(tree, links, inputs)[1]
    assert n_paths == paths
    src, dst_name = links.host_name[0], links.host_name[dst]
    edge = links.edge_of[src]
    seen: set[tuple[str, ...]] = set()
    for n in range(2 * paths):
        x = host.HostDecision(
            scheme=Scheme.DRB,
            w=tree.w,
            is_ack=False,
            psn=n,
            mask=(1 << paths) - 1,
            between_pods=paths > tree.w,
            same_edge=False,
            drb_pointer=start + n,
            reps=host.RepsState(),
            draw=0,
        )
        label = host.decide(x).port
        agg = hop(edge, src, dst_name, 1, n, 0.0)
        assert links.up[edge].index(agg) == decisions.label_slot(
            label, ROCE_PORT, Level.EDGE, tree.w, (1 << tree.w) - 1
        )
        if paths > tree.w:
            core = hop(agg, edge, dst_name, 1, n, 0.0)
            assert links.up[agg].index(core) == decisions.label_slot(
                label, ROCE_PORT, Level.AGG, tree.w, (1 << tree.w) - 1
            )
            seen.add((agg, core))
        else:
            seen.add((agg,))
    assert len(seen) == paths  # every path, each once per rotation


def test_the_mean_queue_over_the_sending_window_is_the_waiting_frames_area() -> None:
    # the two flows above on one uplink: it gets two frames per packet time and serves one until the NICs
    # stop at 256 - NIC, so its queue grows as about t and its mean over the window is about half the last
    # departure; the stage's mean is over its 16 links (8 edge switches x 2 uplinks), the other stages' 0
    flows = [Flow(1, 0, 2, MB), Flow(2, 1, 3, MB)]
    shared = next(r for r in (run(4, "ecmp", flows, s) for s in range(1, 30)) if r.cct_pkts > 300)
    assert shared.mean_queue_sending["edge_agg"] == pytest.approx((256 - NIC) / 2 / 16, rel=0.01)
    assert all(v < 0.01 for st, v in shared.mean_queue_sending.items() if st != "edge_agg")  # one frame behind at most
    apart = next(r for r in (run(4, "ecmp", flows, s) for s in range(1, 30)) if r.cct_pkts < 300)
    assert all(v == 0 for v in apart.mean_queue_sending.values())
