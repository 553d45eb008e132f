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
