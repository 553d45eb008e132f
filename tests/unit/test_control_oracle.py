"""Independent oracles for the control plane (testbed.models.control).

- Valid uplinks and paths: a brute-force enumeration on the topology's link
  list alone (a plain graph, no knowledge of pods, tiers or indices): a path
  is valid when it has the fault-free shortest length and uses only links
  that are up. Every switch's uplink mask and every host pair's path set must
  be what that enumeration finds, for random failure sets.
- rho_max: hand-derived cases on k=4 with one and two failed links (each case
  says its derivation).
"""

from __future__ import annotations

import random
from collections import deque

import pytest

from testbed.models import control
from testbed.topology import FatTree, Level, Link
from traffic.workloads import Flow


class Graph:
    """The fabric as an undirected graph of node names, from `tree.links` only."""

    def __init__(self, tree: FatTree, failed: frozenset[str] = frozenset()) -> None:
        self.adj: dict[str, set[str]] = {}
        self.all_adj: dict[str, set[str]] = {}
        for ln in tree.links:
            for x, y in ((ln.a, ln.b), (ln.b, ln.a)):
                self.all_adj.setdefault(x, set()).add(y)
                if ln.name not in failed:
                    self.adj.setdefault(x, set()).add(y)

    def dist(self, src: str) -> dict[str, int]:
        """Fault-free hop counts from src."""
        d = {src: 0}
        q = deque([src])
        while q:
            x = q.popleft()
            for y in self.all_adj.get(x, ()):
                if y not in d:
                    d[y] = d[x] + 1
                    q.append(y)
        return d

    def paths(self, src: str, dst: str) -> list[list[str]]:
        """Every path from src to dst over links that are up, with the fault-free shortest length."""
        n = self.dist(src)[dst]
        out: list[list[str]] = []

        def walk(path: list[str]) -> None:
            if len(path) - 1 == n:
                if path[-1] == dst:
                    out.append(list(path))
                return
            for y in sorted(self.adj.get(path[-1], ())):
                if y not in path:
                    walk([*path, y])

        walk([src])
        return out


def failure_sets(tree: FatTree, n: int, seed: int) -> list[frozenset[str]]:
    rng = random.Random(seed)
    links = control.switch_links(tree)
    sets: list[frozenset[str]] = [frozenset()]
    for p in (0.1, 0.25, 0.5):
        for _ in range(n):
            sets.append(frozenset(ln.name for ln in links if rng.random() < p))
    return sets


def links_named(tree: FatTree, names: frozenset[str]) -> list[Link]:
    return [ln for ln in tree.links if ln.name in names]


@pytest.mark.parametrize("k,kind", [(4, "fattree"), (6, "fattree"), (8, "leafspine")])
def test_uplink_masks_match_brute_force(k: int, kind: str) -> None:
    tree = FatTree(k, kind=kind)
    for failed in failure_sets(tree, 4, seed=k):
        g = Graph(tree, failed)
        routing = control.routing(tree, links_named(tree, failed))
        edges = [s for s in tree.switches if s.level is Level.EDGE]
        for sw in tree.switches:
            ups = [p.peer for p in tree.uplinks(sw.name)]
            if sw.level is Level.EDGE:
                for f in edges:
                    if f == sw:
                        continue
                    # an uplink is valid if some valid path to some host under F leaves through it
                    first_hops = {
                        path[1]
                        for h in tree.hosts
                        if tree.edge_of(h.name) == f.name
                        for path in g.paths(sw.name, h.name)
                    }
                    want = sum(1 << s for s, peer in enumerate(ups) if peer in first_hops)
                    assert routing.masks[(sw.nid, tree.edge_global(f))] == want, (sorted(failed), sw.name, f.name)
            elif sw.level is Level.AGG and ups:
                for pod in range(tree.pods):
                    if pod == sw.pod:
                        continue
                    # valid if a valid shortest path reaches an aggregation switch of that pod through it
                    first_hops = {
                        path[1]
                        for a in tree.switches
                        if a.level is Level.AGG and a.pod == pod
                        for path in g.paths(sw.name, a.name)
                    }
                    want = sum(1 << s for s, peer in enumerate(ups) if peer in first_hops)
                    assert routing.masks[(sw.nid, pod)] == want, (sorted(failed), sw.name, pod)


@pytest.mark.parametrize("k,kind", [(4, "fattree"), (4, "leafspine")])
def test_paths_and_reachability_match_brute_force(k: int, kind: str) -> None:
    tree = FatTree(k, kind=kind)
    for failed in failure_sets(tree, 3, seed=7)[:7]:
        g = Graph(tree, failed)
        reach = control.Reach(tree, links_named(tree, failed))
        for s in tree.hosts:
            for d in tree.hosts:
                if s == d:
                    continue
                want = sorted(g.paths(s.name, d.name))
                got = sorted([[p.node for p in path] + [path[-1].peer] for path in reach.paths(s, d)])
                assert got == want, (sorted(failed), s.name, d.name)
                assert reach.reachable(s, d) == bool(want)


@pytest.mark.parametrize("k,kind", [(4, "fattree"), (6, "fattree"), (8, "leafspine")])
def test_host_paths_match_brute_force(k: int, kind: str) -> None:
    """The paths a host-routed scheme may label between two edge switches (bit agg slot x w + core slot
    between pods, agg slot within one) are the valid shortest paths between their hosts."""
    tree = FatTree(k, kind=kind)
    edges = [s for s in tree.switches if s.level is Level.EDGE]
    for failed in failure_sets(tree, 3, seed=11):
        g = Graph(tree, failed)
        r = control.Reach(tree, links_named(tree, failed))
        routing = control.routing(tree, links_named(tree, failed))
        for e in edges:
            for f in edges:
                if e == f:
                    continue
                h_e = next(h for h in tree.hosts if tree.edge_of(h.name) == e.name)
                h_f = next(h for h in tree.hosts if tree.edge_of(h.name) == f.name)
                want = 0
                for path in g.paths(h_e.name, h_f.name):
                    agg = [p.peer for p in tree.uplinks(e.name)].index(path[2])
                    if e.pod == f.pod:
                        want |= 1 << agg
                    else:
                        core = [p.peer for p in tree.uplinks(path[2])].index(path[3])
                        want |= 1 << (agg * tree.w + core)
                assert r.host_path_mask(e, f) == want, (sorted(failed), e.name, f.name)
                assert routing.host_paths[(tree.edge_global(e), tree.edge_global(f))] == want


def stride_flows(tree: FatTree) -> list[Flow]:
    """Host i sends 1 MB to host i + (hosts per pod): every flow leaves its pod for the next one."""
    n, step = tree.n_hosts, tree.hosts_per_pod
    return [Flow(i + 1, i, (i + step) % n, 1 << 20) for i in range(n)]


# Hand derivations on k=4 (line rate 1; 4 pods, each with edges e{p}_0, e{p}_1 of two hosts, aggregation
# switches a{p}_0 (to cores c0_0, c0_1) and a{p}_1 (to c1_0, c1_1)); stride traffic: each pod sends 4 flows
# to the next pod and receives 4 from the previous one.
RHO_CASES = {
    # a0_0 keeps one uplink, so pod 0's four flows (4 rho) leave over 3 links: rho <= 3/4; the edges can
    # reach it (each sends 0.5 to a0_0 and 1 to a0_1), and pod 0's incoming traffic meets the same 3 links.
    "one aggregation-core link": (["a0_0-c0_0"], 0.75),
    # e0_0's two hosts send 2 rho through its one remaining uplink: rho <= 1/2 (and receive as much).
    "one edge-aggregation link": (["e0_0-a0_0"], 0.5),
    # a0_0 has no uplink left: pod 0's 4 rho leave through a0_1's two links, rho <= 1/2.
    "both uplinks of one aggregation switch": (["a0_0-c0_0", "a0_0-c0_1"], 0.5),
    # pod 0 -> pod 1 may use a core only if both a0_j and a1_j reach it: c0_0 is cut at pod 0, c1_1 at pod 1,
    # leaving c0_1 and c1_0: the four flows' 4 rho over 2 links, rho <= 1/2, though each pod alone allows 3/4.
    "two failures in two pods that meet": (["a0_0-c0_0", "a1_1-c1_1"], 0.5),
    # the same two failures in pods that exchange no traffic under stride (0 -> 1 -> 2 -> 3 -> 0): pod 0
    # sends to pod 1 and receives from pod 3, pod 2 sends to pod 3 and receives from pod 1; each flow keeps
    # three cores, so each pod is limited by its own failure alone: rho = 3/4.
    "two failures in two pods that do not meet": (["a0_0-c0_0", "a2_1-c1_1"], 0.75),
}


@pytest.mark.parametrize("case", list(RHO_CASES))
def test_rho_max_hand_cases(case: str) -> None:
    tree = FatTree(4)
    names, want = RHO_CASES[case]
    failed = [control.parse_link(tree, n) for n in names]
    r = control.rho_max(tree, stride_flows(tree), failed)
    assert r.rho == pytest.approx(want, abs=1e-6)
    assert r.unreachable_flows == []
    assert r.bottlenecks  # some link binds


def test_rho_max_fault_free_is_one() -> None:
    tree = FatTree(4)
    assert control.rho_max(tree, stride_flows(tree), []).rho == pytest.approx(1.0)


# The even split's reading of the same cases (each switch splits a destination's traffic evenly over its valid
# uplinks, as Ofan's rotation does): derivations in the same terms.
EVEN_CASES = {
    # pod 0's edges still reach every pod through a0_0 (via c0_1), so each sends half its 2 rho there: a0_0
    # carries 2 rho on its one core link, rho <= 1/2 (the LP's best split gets 3/4).
    "one aggregation-core link": (["a0_0-c0_0"], 0.5),
    # e0_0 has one uplink left: it carries 2 rho whatever the split, as in the LP: 1/2.
    "one edge-aggregation link": (["e0_0-a0_0"], 0.5),
    # a0_0 reaches no other pod, so the edges' masks leave it out: a0_1 takes 4 rho over two links: 1/2.
    "both uplinks of one aggregation switch": (["a0_0-c0_0", "a0_0-c0_1"], 0.5),
    # from pod 0 to pod 1 a0_0 keeps c0_1 only and a0_1 keeps c1_0 only: each edge splits its 2 rho evenly,
    # each aggregation switch sends 2 rho over its one valid core link: 1/2, as the LP.
    "two failures in two pods that meet": (["a0_0-c0_0", "a1_1-c1_1"], 0.5),
    # each failed link is alone on its flows' way (pods 0 and 2 send, 3 and 1 receive through them): 1/2.
    "two failures in two pods that do not meet": (["a0_0-c0_0", "a2_1-c1_1"], 0.5),
}


@pytest.mark.parametrize("case", list(EVEN_CASES))
def test_even_split_hand_cases(case: str) -> None:
    tree = FatTree(4)
    names, want = EVEN_CASES[case]
    failed = [control.parse_link(tree, n) for n in names]
    even = control.even_split_rho(tree, stride_flows(tree), failed)
    assert even.rho == pytest.approx(want, abs=1e-9)
    assert even.rho <= control.rho_max(tree, stride_flows(tree), failed).rho + 1e-9  # never above the best split
    assert even.bottlenecks and even.unreachable_flows == []


def test_even_split_is_never_above_the_best_split_and_fault_free_is_one() -> None:
    tree = FatTree(4)
    assert control.even_split_rho(tree, stride_flows(tree), []).rho == 1.0
    rng = random.Random(5)
    links = control.switch_links(tree)
    for _ in range(30):
        failed = rng.sample(links, rng.randint(1, 4))
        if control.unreachable_pairs(tree, failed):
            continue
        even, best = (
            control.even_split_rho(tree, stride_flows(tree), failed),
            control.rho_max(tree, stride_flows(tree), failed),
        )
        assert 0 < even.rho <= best.rho + 1e-9, [ln.name for ln in failed]


# Weighted Ofan's split (docs/schemes.md): an edge switch weighs each valid uplink by the valid shortest paths
# through it. "one aggregation-core link": a0_0 keeps one of two core links, so each edge of pod 0 gives it a
# third of its 2 rho (weights 1 and 2): a0_0's core link carries 2 x 2 rho / 3 and a0_1's two carry 2 x 4 rho
# / 3 / 2 each, rho <= 3/4, the LP's best split (the even split's 1/2 above).
WEIGHTED_CASES = {"one aggregation-core link": (["a0_0-c0_0"], 0.75), "one edge-aggregation link": (["e0_0-a0_0"], 0.5)}


@pytest.mark.parametrize("case", list(WEIGHTED_CASES))
def test_weighted_split_hand_cases(case: str) -> None:
    tree = FatTree(4)
    names, want = WEIGHTED_CASES[case]
    failed = [control.parse_link(tree, n) for n in names]
    assert control.weighted_split_rho(tree, stride_flows(tree), failed).rho == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("k,kind", [(4, "fattree"), (6, "fattree"), (8, "leafspine")])
def test_wofan_weights_count_the_valid_paths_through_each_uplink(k: int, kind: str) -> None:
    """Reach.edge_weights against the brute-force enumeration: an uplink of an edge switch weighs the valid
    shortest paths to a host under the destination edge whose first hop it is (0 for an invalid uplink)."""
    tree = FatTree(k, kind=kind)
    edges = [s for s in tree.switches if s.level is Level.EDGE]
    for failed in failure_sets(tree, 3, seed=10 + k):
        g, r = Graph(tree, failed), control.Reach(tree, links_named(tree, failed))
        for sw in edges[:3]:
            ups = [p.peer for p in tree.uplinks(sw.name)]
            for f in edges:
                host = next((h for h in tree.hosts if tree.edge_of(h.name) == f.name), None)
                if f == sw or host is None:
                    continue
                paths = g.paths(sw.name, host.name) if host.name in g.dist(sw.name) else []
                want = [sum(1 for p in paths if p[1] == peer) for peer in ups]
                assert r.edge_weights(sw, f) == want, (sorted(failed), sw.name, f.name)


def test_weighted_split_lies_between_the_even_and_the_best() -> None:
    """Over random failure sets at k=4 and k=6: even <= weighted <= the LP's, all 1 without a failure."""
    for k in (4, 6):
        tree = FatTree(k)
        flows = stride_flows(tree)
        assert control.weighted_split_rho(tree, flows, []).rho == pytest.approx(1.0)
        rng = random.Random(k)
        links = control.switch_links(tree)
        better = 0
        for _ in range(20):
            failed = rng.sample(links, rng.randint(1, 4))
            if control.unreachable_pairs(tree, failed):
                continue
            even, weighted, best = (
                f(tree, flows, failed).rho
                for f in (control.even_split_rho, control.weighted_split_rho, control.rho_max)
            )
            assert even - 1e-9 <= weighted <= best + 1e-9, [ln.name for ln in failed]
            better += weighted > even + 1e-9
        assert better > 0  # the weights do something
