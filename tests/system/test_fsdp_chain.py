"""FSDP2's chained backward pass on the real kernel (section 6.7): each ring
step of a GPU starts only once its input of the step before has arrived in
full and crossed its propagation, so the pass's CCT is at least the sum of
its steps' lower bounds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.fabric.build import Fabric, FabricSpec
from testbed.measure import metrics
from testbed.models.schemes import Scheme
from testbed.run.experiment import nic_burst_of, run
from testbed.run.params import RunError, RunParams
from traffic.packet import Packetizer

from .helpers import TIMING_RATE_BPS

pytestmark = pytest.mark.root

STEP_PKTS = 16


@pytest.fixture(scope="module")
def fab() -> Iterator[Fabric]:
    with Fabric(FabricSpec(k=4, prefix="tfc", rate_bps=TIMING_RATE_BPS)) as f:
        yield f


def test_each_step_waits_for_its_input_and_the_pass_is_bounded_by_its_steps(fab: Fabric, tmp_path: Path) -> None:
    p = RunParams("fsdp", STEP_PKTS * 4096, scheme=Scheme.OFAN, seed=2, gpus_per_server=4, cc="nscc")
    r = run(fab, p, tmp_path / "run").to_json()
    flows = p.flow_list(fab.tree)
    assert len(flows) == 6 * 16 and r["flows"] == len(flows)  # one layer: 4 servers, 3 + 3 steps
    stats = {f["fid"]: f for f in r["flow_stats"]}
    assert all(f["complete"] for f in stats.values())
    link_s = r["propagation"]["link_s"]
    waits = metrics.chain_wait_s(fab.tree, flows, link_s)
    for f in flows:  # a step's first packet arrived after its input's last one, plus that input's propagation
        if f.after:
            before = stats[f.after]
            assert stats[f.fid]["first_rx_ns"] >= before["last_rx_ns"] + waits[f.fid] * 1e9, (f, before)
    # the sum of the steps' bounds: each step's flows sent at the paced rate and delivered over their path's
    # propagation (every flow crosses pods at k=4 with servers of 4 GPUs), the last step's ending at its ACKs
    pk = Packetizer(4096, fab.spec.wire_overhead)
    one_way = {f.fid: 6 * link_s for f in flows}
    assert all(stats[f.fid]["path_links"] == 6 for f in flows)
    steps = [flows[t * 16 : (t + 1) * 16] for t in range(6)]
    nic_burst = nic_burst_of(fab.spec, pk)
    bounds = [
        metrics.cct_lower_bound_s(
            s, pk, fab.spec.rate_bps, r["host_rate_bps"], fab.spec.burst, nic_burst_bytes=nic_burst, shift_s=one_way
        )
        for s in steps[:-1]
    ]
    bounds.append(
        metrics.cct_lower_bound_s(
            steps[-1],
            pk,
            fab.spec.rate_bps,
            r["host_rate_bps"],
            fab.spec.burst,
            nic_burst_bytes=nic_burst,
            shift_s={fid: 2 * d for fid, d in one_way.items()},
        )
    )
    assert r["cct_lower_bound_s"] >= sum(bounds) * (1 - 1e-9)
    assert r["cct_s"] >= sum(bounds)
    assert r["fidelity"]["valid"] == (not r["fidelity"]["reasons"])


def test_a_chain_without_a_transport_is_refused(fab: Fabric) -> None:
    with pytest.raises(RunError, match="--steps 1"):
        RunParams("fsdp", 4096, gpus_per_server=4).flow_list(fab.tree)
    assert len(RunParams("fsdp", 4096, gpus_per_server=4, steps=1).flow_list(fab.tree)) == 16
