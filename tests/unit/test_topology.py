from __future__ import annotations

import pytest

from testbed.topology import IFNAMSIZ, FatTree, Level, Stage, TopologyError


@pytest.mark.parametrize("k", [4, 6, 8, 12])
def test_counts(k: int) -> None:
    t = FatTree(k)
    half = k // 2
    assert len(t.hosts) == k**3 // 4
    assert sum(1 for n in t.nodes if n.level is Level.EDGE) == k * half
    assert sum(1 for n in t.nodes if n.level is Level.AGG) == k * half
    assert sum(1 for n in t.nodes if n.level is Level.CORE) == half**2
    assert len(t.links) == 3 * k**3 // 4
    assert len(t.ports) == 2 * len(t.links)


@pytest.mark.parametrize("k", [4, 6])
def test_ports_are_consistent(k: int) -> None:
    t = FatTree(k)
    ifindexes = [p.ifindex for p in t.ports]
    assert len(set(ifindexes)) == len(ifindexes)
    assert min(ifindexes) > 1  # 1 is lo
    macs = {p.mac for p in t.ports}
    assert len(macs) == len(t.ports)
    for p in t.ports:
        back = t.ports[p.peer_gid]
        assert back.peer_gid == p.gid and back.node == p.peer
        assert len(p.ifname) <= IFNAMSIZ
    for sw in t.switches:
        if sw.level is Level.CORE:
            assert len(t.downlinks(sw.name)) == k
            assert [t.by_name[p.peer].pod for p in t.downlinks(sw.name)] == list(range(k))
        else:
            assert len(t.uplinks(sw.name)) == k // 2
            assert len(t.downlinks(sw.name)) == k // 2


def test_core_wiring_follows_aggregation_index() -> None:
    t = FatTree(6)
    for sw in t.switches:
        if sw.level is Level.CORE:
            j = sw.index // 3
            assert all(t.by_name[p.peer].index == j for p in t.downlinks(sw.name))


def test_addresses_unique_and_structured() -> None:
    t = FatTree(8)
    ips = [t.host_ip(h) for h in t.hosts]
    assert len(set(ips)) == len(ips)
    h = t.by_name["h3_2_1"]
    assert str(t.host_ip(h)) == "10.3.2.3"
    assert str(t.gateway_ip(h)) == "10.3.2.1"
    assert t.edge_of("h3_2_1") == "e3_2"
    assert t.host_by_ip("10.3.2.3") == h


def test_stages_of_a_path() -> None:
    t = FatTree(4)
    assert t.port("h0_0_0", "e0_0").stage is Stage.HOST_EDGE
    assert t.port("e0_0", "a0_1").stage is Stage.EDGE_AGG
    assert t.port("a0_1", "c1_0").stage is Stage.AGG_CORE
    assert t.port("c1_0", "a2_1").stage is Stage.CORE_AGG
    assert t.port("a2_1", "e2_0").stage is Stage.AGG_EDGE
    assert t.port("e2_0", "h2_0_1").stage is Stage.EDGE_HOST


@pytest.mark.parametrize("k", [3, 2, 0, -4, 5, 256])
def test_bad_k(k: int) -> None:
    with pytest.raises(TopologyError):
        FatTree(k)


@pytest.mark.parametrize("prefix", ["", "Tb", "tb-x", "toolongprefix", "1tb"])
def test_bad_prefix(prefix: str) -> None:
    with pytest.raises(TopologyError):
        FatTree(4, prefix)


def test_namespace_names_carry_prefix() -> None:
    t = FatTree(4, "lab1")
    assert t.ns("e0_0") == "lab1-e0_0"


@pytest.mark.parametrize("k", [4, 8, 16])
def test_leaf_spine(k: int) -> None:
    t = FatTree(k, kind="leafspine")
    assert t.n_hosts == k * k // 2 and t.pods == 1
    assert sum(1 for n in t.nodes if n.level is Level.EDGE) == k
    assert sum(1 for n in t.nodes if n.level is Level.AGG) == k // 2
    assert not any(n.level is Level.CORE for n in t.nodes)
    for sw in t.switches:
        if sw.level is Level.EDGE:
            assert len(t.uplinks(sw.name)) == k // 2 and len(t.downlinks(sw.name)) == k // 2
        else:
            assert t.uplinks(sw.name) == () and len(t.downlinks(sw.name)) == k
    assert {p.stage for p in t.ports} == {Stage.HOST_EDGE, Stage.EDGE_AGG, Stage.AGG_EDGE, Stage.EDGE_HOST}
    ips = {t.host_ip(h) for h in t.hosts}
    assert len(ips) == t.n_hosts
    assert str(t.host_ip(t.by_name[f"h0_{k - 1}_0"])) == f"10.0.{k - 1}.2"


def test_unknown_topology() -> None:
    with pytest.raises(TopologyError, match="topology"):
        FatTree(4, kind="torus")
