"""The queue models of appendix F.4: the paper's server and the kernel's token bucket."""

from __future__ import annotations

import pytest

from testbed.fabric.build import DEFAULT_BURST_FRAMES
from testbed.measure import queue_model


def test_the_kernel_bucket_is_the_fabrics() -> None:
    assert queue_model.KERNEL_BUCKET_FRAMES == DEFAULT_BURST_FRAMES


@pytest.mark.parametrize("n", [2, 3, 4, 6, 11])
def test_a_bucket_of_one_frame_is_the_papers_nd_d_1(n: int) -> None:
    """Played in continuous time, a token bucket of one frame is the paper's server: its means agree with the
    ND/D/1 on the grid within 5 % (each mean is drawn: 2,000 and 500 draws)."""
    assert queue_model.tbf_mean(n, 1.0) == pytest.approx(queue_model.nd_d_1_mean(n), rel=0.05)


def test_the_kernels_bucket_of_two_frames_waits_less() -> None:
    """Two frames of tokens let a port that was idle send two back to back: two sources never wait, and
    every layer waits less than with the paper's server, more with more sources."""
    assert queue_model.tbf_mean(2, 2.0) == 0.0
    paper, kernel = queue_model.layer_means(12), queue_model.layer_means(12, 2)
    assert all(0 < kernel[st] < paper[st] for st in queue_model.STAGES)
    assert queue_model.tbf_mean(4, 2.0) < queue_model.tbf_mean(11, 2.0) < queue_model.tbf_mean(32, 2.0)


def test_wofan_edge_bound_by_hand() -> None:
    """e0_0's two hosts send to two other edge switches (two keys, one flow each) at rho = 0.5, NIC bursts of
    2. One round naming both uplinks (Ofan's rotation): each uplink gets half of each key, load 0.5, bound
    1 + 2 (1 + 2 x 1 / 2) = 5 (F.4's w + 1 = 3 plus one burst per key). Weights 1 and 2 toward one key
    (rounds (0b10, 0b11)): uplink 1 takes 2 of its 3 packets, bound 1 + 2 (1 + 2 / 3) + 1 (1 + 2 / 2) =
    6.33, load 0.5 x 2/3 + 0.5 x 1/2; uplink 0 1 + 1 (1 + 2/3) + 1 x 2 = 4.67."""
    from testbed.models import control
    from testbed.topology import FatTree
    from traffic.workloads import Flow

    tree = FatTree(4)
    e, f1, f2 = (tree.by_name[n] for n in ("e0_0", "e1_0", "e2_0"))
    first = {tree.edge_of(h.name): h.nid for h in reversed(tree.hosts)}  # each edge switch's first host
    flows = [Flow(1, first["e0_0"], first["e1_0"], 1 << 20), Flow(2, first["e0_0"] + 1, first["e2_0"], 1 << 20)]
    masks = control.routing(tree, []).masks
    k1, k2 = (e.nid, tree.edge_global(f1)), (e.nid, tree.edge_global(f2))
    up0, up1 = (p.label for p in tree.uplinks("e0_0"))
    even = queue_model.wofan_edge_bounds(tree, flows, {k1: (0b11,), k2: (0b11,)}, masks, 0.5, burst=2)
    assert even[up0] == pytest.approx((5.0, 0.5)) and even[up1] == pytest.approx((5.0, 0.5))
    skew = queue_model.wofan_edge_bounds(tree, flows, {k1: (0b10, 0b11), k2: (0b11,)}, masks, 0.5, burst=2)
    assert skew[up1] == pytest.approx((1 + 2 * (1 + 2 / 3) + 2, 0.5 * 2 / 3 + 0.25))
    assert skew[up0] == pytest.approx((1 + (1 + 2 / 3) + 2, 0.5 / 3 + 0.25))
    quiet = next(p.label for p in tree.uplinks("e3_1"))
    assert skew[quiet] == (1.0, 0.0)  # no flow: the one packet in service at most
