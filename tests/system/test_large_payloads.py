"""Payloads above about 16 KB (Fig. 8's 16 KB and 32 KB packets) leave the
socket with only their IP and UDP headers in the skb's linear part; the NIC
programs must still find the BTH (they pull it in), or every packet would
reach the host's stack unseen and read as lost without a trace."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testbed.fabric.build import Fabric, FabricSpec
from testbed.models.schemes import Scheme
from testbed.run.experiment import run
from testbed.run.params import RunParams
from testbed.run.sweep import Matrix

from .helpers import TIMING_RATE_BPS

pytestmark = pytest.mark.root

LARGEST = 32768


@pytest.fixture(scope="module")
def fab() -> Iterator[Fabric]:
    with Fabric(FabricSpec(k=4, prefix="tjb", rate_bps=TIMING_RATE_BPS, mtu=Matrix.mtu_for(LARGEST))) as f:
        yield f


@pytest.mark.parametrize("payload", [16384, LARGEST])
def test_every_large_packet_is_received_and_acked(fab: Fabric, payload: int) -> None:
    size = 512 * 1024
    r = run(fab, RunParams("permutation", size, 1.0, Scheme.REPS, seed=1, payload=payload, acks=True)).to_json()
    assert r["packets_sent"] == r["packets_received"] == len(fab.spec.tree().hosts) * size // payload
    assert r["acks_received"] == r["packets_received"]
    assert not any("without a trace" in reason for reason in r["fidelity"]["reasons"])
