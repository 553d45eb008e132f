"""The fabric on the real kernel: objects, addressing, reachability, teardown."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from testbed.dataplane import switches
from testbed.dataplane.maps import tcx_query
from testbed.fabric import netns
from testbed.fabric.build import Fabric, FabricSpec
from testbed.fabric.errors import FabricError
from testbed.fabric.reach import all_pairs
from testbed.models.schemes import Scheme

from .helpers import leftovers

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def fab4() -> Iterator[Fabric]:
    with Fabric(FabricSpec(k=4, prefix="tf4")) as fab:
        yield fab
    assert leftovers("tf4") == []


def test_every_node_is_a_namespace_with_its_ports(fab4: Fabric) -> None:
    from pyroute2 import NetNS

    tree = fab4.tree
    for name in ("h1_0_1", "e2_1", "a3_0", "c1_1"):
        with NetNS(tree.ns(name)) as ns:
            links = {ln["index"]: ln for ln in ns.get_links() if ln["index"] != 1}
            want = {p.ifindex: p for p in tree.ports_of[name]}
            assert set(links) == set(want)
            for idx, ln in links.items():
                assert ln.get_attr("IFLA_IFNAME") == want[idx].ifname
                assert ln.get_attr("IFLA_MTU") == fab4.spec.mtu
                assert ln.get_attr("IFLA_OPERSTATE") == "UP"
                assert ln.get_attr("IFLA_ADDRESS") == ":".join(f"{b:02x}" for b in want[idx].mac)
            kinds = {(q["index"], q.get_attr("TCA_KIND")) for q in ns.get_qdiscs()}
            hook = "clsact" if name.startswith("h") else "ingress"  # a switch port needs no egress hook
            for idx in want:
                assert (idx, "tbf") in kinds and (idx, hook) in kinds
            if not name.startswith("h"):
                for idx in want:
                    names = [
                        f.get_attr("TCA_OPTIONS").get_attr("TCA_BPF_NAME")
                        for f in ns.get_filters(index=idx, parent=0xFFFFFFF2)
                        if f.get_attr("TCA_OPTIONS")
                    ]
                    assert names == ["switch_ingress"]


def test_tcx_fabric_forwards_through_tcx_hooks() -> None:
    """tcx=True (bench/per_hop.py's arm tcx:tcx=1): no clsact, the programs on the TCX hooks, every pair
    reaches every other."""
    from pyroute2 import NetNS

    with Fabric(FabricSpec(k=4, prefix="tf4x", tcx=True)) as fab:
        assert fab.maps is not None and fab.compiled is not None
        switches.set_scheme(fab.maps, fab.tree, Scheme.OFAN, seed=1)
        ids = fab.compiled.prog_ids()
        for name in ("h0_0_0", "e1_0"):
            with NetNS(fab.tree.ns(name)) as ns:
                kinds = {q.get_attr("TCA_KIND") for q in ns.get_qdiscs()}
                assert "tbf" in kinds and not {"clsact", "ingress"} & kinds
            with netns.entered(fab.tree.ns(name)):
                for p in fab.tree.ports_of[name]:
                    if name.startswith("h"):
                        assert tcx_query(p.ifindex, egress=True) == [ids["host_egress"]]
                        assert tcx_query(p.ifindex, egress=False) == [ids["host_ingress"]]
                    else:
                        assert tcx_query(p.ifindex, egress=True) == []
                        assert tcx_query(p.ifindex, egress=False) == [ids["switch_ingress"]]
        n = fab.tree.n_hosts
        assert len(all_pairs(fab.tree)) == n * (n - 1)
    assert leftovers("tf4x") == []


def test_no_link_into_the_root_namespace(fab4: Fabric) -> None:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    for p in fab4.tree.ports:
        assert f"{p.ifindex}: {p.ifname}@" not in out


def test_second_fabric_with_same_prefix_is_refused(fab4: Fabric) -> None:
    with pytest.raises(FabricError, match="already up"):
        Fabric(FabricSpec(k=4, prefix="tf4")).build()


@pytest.mark.parametrize("scheme", [Scheme.ECMP, Scheme.OFAN])
def test_all_pairs_ping_k4(fab4: Fabric, scheme: Scheme) -> None:
    assert fab4.maps is not None
    switches.set_scheme(fab4.maps, fab4.tree, scheme, seed=3)
    got = all_pairs(fab4.tree)
    n = fab4.tree.n_hosts
    assert len(got) == n * (n - 1)


def test_real_ping_binary_across_pods(fab4: Fabric) -> None:
    tree = fab4.tree
    dst = tree.host_ip(tree.by_name["h3_1_1"])
    r = subprocess.run(
        ["ip", "netns", "exec", tree.ns("h0_0_0"), "ping", "-c", "2", "-i", "0.2", "-W", "2", str(dst)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0% packet loss" in r.stdout


@pytest.mark.parametrize("scheme", [Scheme.ECMP, Scheme.OFAN])
def test_all_pairs_ping_k6(scheme: Scheme) -> None:
    with Fabric(FabricSpec(k=6, prefix="tf6", scheme=scheme)) as fab:
        got = all_pairs(fab.tree)
        n = fab.tree.n_hosts
        assert n == 54
        assert len(got) == n * (n - 1)
    assert leftovers("tf6") == []


@pytest.mark.parametrize("k", [4, 8])
def test_leaf_spine_forwards_and_balances(k: int) -> None:
    from testbed.run.experiment import run
    from testbed.run.params import RunParams

    with Fabric(FabricSpec(k=k, prefix=f"tls{k}", topology="leafspine", rate_bps=20_000_000)) as fab:
        n = fab.tree.n_hosts
        assert n == k * k // 2 and len(fab.tree.switches) == k + k // 2
        assert len(all_pairs(fab.tree)) == n * (n - 1)
        res = {
            s.label: run(fab, RunParams("permutation", 256 * 1024, 1.0, s, seed=1)).to_json()
            for s in (Scheme.ECMP, Scheme.OFAN)
        }
        for r in res.values():
            assert r["packets_received"] == r["packets_sent"] == n * 64 and r["drops"] == 0
            assert r["queues"]["agg_core"]["max_pkts"] == 0  # no core tier
        assert res["ofan"]["queues"]["edge_agg"]["max_pkts"] <= res["ecmp"]["queues"]["edge_agg"]["max_pkts"]
    assert leftovers(f"tls{k}") == []
