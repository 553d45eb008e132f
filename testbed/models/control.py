"""The control plane: what still works after link failures. Pure: it maps a
set of failed links to forwarding state and to the best sustainable rate.

A switch learns from the routing protocol which uplinks still lead to each
destination over a valid shortest path (what BGP gives a real switch); here
`routing()` computes it for every LB switch and destination key of the data
plane, and which downward routes are cut (withdrawn, so traffic to an
unreachable destination is dropped and counted at the first switch that
knows, never looped). `rho_max()` solves the paper's linear program
(sections 2.2 and 6.2): the highest rate at which every flow of a workload
can send if traffic were split perfectly over the valid shortest paths.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from traffic.workloads import Flow

from ..topology import FatTree, Level, Link, Node, Port
from . import decisions


class LinkError(ValueError):
    """Unknown link, or a failure that would cut hosts off without --force."""


def parse_link(tree: FatTree, text: str) -> Link:
    """A link named by its two endpoints, in either order: 'e0_1-a0_0'."""
    parts = text.split("-")
    if len(parts) != 2 or not all(parts):
        raise LinkError(f"a link is named NODE-NODE (e.g. e0_1-a0_0), got {text!r}")
    a, b = parts
    for ln in tree.links:
        if {ln.a, ln.b} == {a, b}:
            return ln
    for n in (a, b):
        if n not in tree.by_name:
            raise LinkError(f"no node {n!r} in this k={tree.k} fat tree")
    raise LinkError(f"{a} and {b} are not linked")


def switch_links(tree: FatTree) -> list[Link]:
    """Edge-aggregation and aggregation-core links (the ones the paper fails)."""
    return [ln for ln in tree.links if not tree.by_name[ln.a].is_host]


def random_failures(tree: FatTree, p: float, seed: int) -> list[Link]:
    """Each edge-aggregation and aggregation-core link fails with probability p."""
    if not 0 <= p <= 1:
        raise LinkError(f"failure probability must be in [0, 1], got {p}")
    rng = random.Random(seed)
    return [ln for ln in switch_links(tree) if rng.random() < p]


@dataclass(frozen=True)
class Routing:
    """Forwarding state for one set of failed links."""

    masks: dict[tuple[int, int], int]  # (switch id, destination key) -> valid uplink slots
    downlinks: dict[tuple[int, int], int]  # (switch id, slot) -> egress ifindex, 0 if withdrawn
    failed: frozenset[str] = field(default_factory=frozenset)
    # (source edge, destination edge), global edge indices -> host-routed paths valid for both ends (host_lb.h)
    host_paths: dict[tuple[int, int], int] = field(default_factory=dict)
    # (switch id, destination key) -> weighted Ofan's rounds of eligible slots (decisions.wofan_rounds of
    # Reach.weights); one round where every valid uplink weighs the same (Ofan's rotation)
    rounds: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)


class Reach:
    """Which links are up, and what each switch can still reach."""

    def __init__(self, tree: FatTree, failed: Iterable[Link]) -> None:
        self.tree = tree
        self.failed = frozenset(ln.name for ln in failed)

    def up(self, x: str, y: str) -> bool:
        ln = f"{x}-{y}" if self.tree.by_name[x].level < self.tree.by_name[y].level else f"{y}-{x}"
        return ln not in self.failed

    def agg(self, pod: int, j: int) -> str:
        return f"a{pod}_{j}"

    def agg_reaches_edge(self, agg: Node, edge: Node) -> bool:
        """Can `agg` deliver to `edge` going up at most to the cores, then down?"""
        if agg.pod == edge.pod:
            return self.up(agg.name, edge.name)
        dst_agg = self.agg(edge.pod, agg.index)
        if not self.up(dst_agg, edge.name):
            return False
        return any(self.up(agg.name, p.peer) and self.up(p.peer, dst_agg) for p in self.tree.uplinks(agg.name))

    def edge_mask(self, edge: Node, dst_edge: Node) -> int:
        m = 0
        for slot, p in enumerate(self.tree.uplinks(edge.name)):
            if self.up(edge.name, p.peer) and self.agg_reaches_edge(self.tree.by_name[p.peer], dst_edge):
                m |= 1 << slot
        return m

    def edge_weights(self, edge: Node, dst_edge: Node) -> list[int]:
        """Weighted Ofan's integer weight of each uplink slot of `edge` toward `dst_edge`: the valid shortest
        paths through it (an aggregation switch in another pod leads to as many as it has core links whose
        core still reaches the destination's aggregation switch; within a pod each leads to one), 0 for an
        invalid uplink. Proportional to the capacity each uplink leads to when the cores' links are the
        bottleneck (docs/schemes.md)."""
        mask = self.edge_mask(edge, dst_edge)
        out = []
        for slot, p in enumerate(self.tree.uplinks(edge.name)):
            agg = self.tree.by_name[p.peer]
            if not mask >> slot & 1:
                out.append(0)
            elif agg.pod == dst_edge.pod:
                out.append(1)
            else:
                out.append(bin(self.agg_mask(agg, dst_edge.pod)).count("1"))
        return out

    def agg_mask(self, agg: Node, dst_pod: int) -> int:
        m = 0
        dst_agg = self.agg(dst_pod, agg.index)
        for slot, p in enumerate(self.tree.uplinks(agg.name)):
            if self.up(agg.name, p.peer) and self.up(p.peer, dst_agg):
                m |= 1 << slot
        return m

    def host_path_mask(self, e_s: Node, e_d: Node) -> int:
        """The paths from edge switch e_s to e_d that a host-routed scheme may label (host_lb.h): bit
        agg slot x w + core slot between pods of a fat tree (the bouncing switch is the core), bit agg slot
        within a pod or a leaf-spine; a path is valid when every link on it is up, so both ends reach it."""
        t = self.tree
        m = 0
        for j, p in enumerate(t.uplinks(e_s.name)):
            a_s = p.peer
            if not self.up(e_s.name, a_s):
                continue
            if e_s.pod == e_d.pod:
                if self.up(a_s, e_d.name):
                    m |= 1 << j
                continue
            a_d = self.agg(e_d.pod, t.by_name[a_s].index)
            if not self.up(a_d, e_d.name):
                continue
            for c, q in enumerate(t.uplinks(a_s)):
                if self.up(a_s, q.peer) and self.up(q.peer, a_d):
                    m |= 1 << (j * t.w + c)
        return m

    def reachable(self, src: Node, dst: Node) -> bool:
        t = self.tree
        e_s, e_d = t.by_name[t.edge_of(src.name)], t.by_name[t.edge_of(dst.name)]
        if not (self.up(src.name, e_s.name) and self.up(dst.name, e_d.name)):
            return False
        return e_s == e_d or self.edge_mask(e_s, e_d) != 0

    def paths(self, src: Node, dst: Node) -> list[list[Port]]:
        """Every valid shortest path, as the egress ports it crosses."""
        t = self.tree
        e_s, e_d = t.edge_of(src.name), t.edge_of(dst.name)
        if not (self.up(src.name, e_s) and self.up(dst.name, e_d)):
            return []
        first, last = t.port(src.name, e_s), t.port(e_d, dst.name)
        if e_s == e_d:
            return [[first, last]]
        out = []
        for up1 in t.uplinks(e_s):
            a = t.by_name[up1.peer]
            if not self.up(e_s, a.name):
                continue
            if a.pod == dst.pod:
                if self.up(a.name, e_d):
                    out.append([first, up1, t.port(a.name, e_d), last])
                continue
            a2 = self.agg(dst.pod, a.index)
            if not self.up(a2, e_d):
                continue
            for up2 in t.uplinks(a.name):
                c = up2.peer
                if self.up(a.name, c) and self.up(c, a2):
                    out.append([first, up1, up2, t.port(c, a2), t.port(a2, e_d), last])
        return out


def routing(tree: FatTree, failed: Iterable[Link]) -> Routing:
    r = Reach(tree, failed)
    masks: dict[tuple[int, int], int] = {}
    rounds: dict[tuple[int, int], tuple[int, ...]] = {}
    downlinks: dict[tuple[int, int], int] = {}
    edges = [n for n in tree.switches if n.level is Level.EDGE]
    for sw in tree.switches:
        if sw.level is Level.EDGE:
            for f in edges:
                if f != sw:
                    masks[(sw.nid, tree.edge_global(f))] = r.edge_mask(sw, f)
                    rounds[(sw.nid, tree.edge_global(f))] = decisions.wofan_rounds(
                        decisions.fit_weights(r.edge_weights(sw, f))
                    )
        elif sw.level is Level.AGG:
            for pod in range(tree.pods):
                if pod != sw.pod:
                    masks[(sw.nid, pod)] = m = r.agg_mask(sw, pod)
                    rounds[(sw.nid, pod)] = (m,) if m else ()  # every core leads to one path: equal weights
        for slot, p in enumerate(tree.downlinks(sw.name)):
            downlinks[(sw.nid, slot)] = p.ifindex if r.up(sw.name, p.peer) else 0
    return Routing(masks, downlinks, r.failed, host_paths(tree, r), rounds)


def host_paths(tree: FatTree, r: Reach) -> dict[tuple[int, int], int]:
    """Every pair of edge switches' host-routed paths (Reach.host_path_mask). A failed link only touches the
    paths of pairs with an end in its pod, so the other pairs get every path without a look."""
    edges = [n for n in tree.switches if n.level is Level.EDGE]
    touched = {tree.by_name[name.split("-")[0]].pod for name in r.failed}
    full_inter, full_intra = (1 << tree.w * tree.w) - 1, (1 << tree.w) - 1
    out = {}
    for e in edges:
        for f in edges:
            if e == f:
                continue
            key = (tree.edge_global(e), tree.edge_global(f))
            if e.pod in touched or f.pod in touched:
                out[key] = r.host_path_mask(e, f)
            else:
                out[key] = full_intra if e.pod == f.pod else full_inter
    return out


def unreachable_pairs(tree: FatTree, failed: Iterable[Link]) -> list[tuple[str, str]]:
    r = Reach(tree, failed)
    return [(s.name, d.name) for s in tree.hosts for d in tree.hosts if s != d and not r.reachable(s, d)]


@dataclass(frozen=True)
class RhoMax:
    rho: float
    bottlenecks: list[str]  # egress ports whose capacity limits rho
    unreachable_flows: list[int]  # flow ids with no valid shortest path (left out of the LP)


def rho_max(tree: FatTree, flows: list[Flow], failed: Iterable[Link]) -> RhoMax:
    """max rho such that every flow can send at rho x line rate x (its share
    of its host's bytes), split arbitrarily over its valid shortest paths,
    with no directed link above its capacity (paper section 2.2). Solved with
    scipy's HiGHS."""
    return _lp(tree, flows, failed)[0]


def lp_rounds(
    tree: FatTree, flows: list[Flow], failed: Iterable[Link]
) -> tuple[RhoMax, dict[tuple[int, int], tuple[int, ...]]]:
    """rho_max, and weighted Ofan's rounds that follow the LP's optimal split: per LB switch and destination key
    (destination edge at an edge switch, destination pod at an aggregation switch), each uplink's weight is the
    LP's traffic on it toward that key, scaled to at most WOFAN_ROUNDS and rounded (decisions.wofan_weights).
    Splitting every key's traffic in these proportions at every hop loads each link as the LP does, since a
    key's traffic reaching a switch is what the LP sends there; the rounding is the only loss. Keys the LP
    sends nothing toward keep Routing's path-count rounds."""
    best, cols, x = _lp(tree, flows, failed)
    load: dict[tuple[int, int], list[float]] = {}
    by_name = tree.by_name
    for (i, path), rate in zip(cols, x, strict=True):
        if rate <= 0:
            continue
        dst = tree.hosts[flows[i].dst]
        for port in path:
            sw = by_name[port.node]
            if sw.level not in (Level.EDGE, Level.AGG) or by_name[port.peer].level <= sw.level:
                continue  # only upward choices are load balanced
            key = tree.edge_global(by_name[tree.edge_of(dst.name)]) if sw.level is Level.EDGE else dst.pod
            slots = load.setdefault((sw.nid, key), [0.0] * tree.w)
            slots[tree.uplinks(sw.name).index(port)] += rate
    return best, {k: decisions.wofan_rounds(decisions.wofan_weights(v)) for k, v in load.items()}


def _lp(
    tree: FatTree, flows: list[Flow], failed: Iterable[Link]
) -> tuple[RhoMax, list[tuple[int, list[Port]]], list[float]]:
    """The LP of rho_max: its result, its columns (flow index, path) and their optimal rates."""
    from scipy.optimize import linprog

    r = Reach(tree, failed)
    host_bytes: dict[int, int] = {}
    for f in flows:
        host_bytes[f.src] = host_bytes.get(f.src, 0) + f.size_bytes
    cols: list[tuple[int, list[Port]]] = []  # (flow index, path)
    unreachable = []
    for i, f in enumerate(flows):
        ps = r.paths(tree.hosts[f.src], tree.hosts[f.dst])
        if not ps:
            unreachable.append(f.fid)
        cols += [(i, p) for p in ps]
    if not cols:
        return RhoMax(0.0, [], unreachable), [], []
    n = len(cols) + 1  # path rates, then rho (last)
    reachable_flows = sorted({i for i, _ in cols})
    a_eq, b_eq = [], []
    for i in reachable_flows:
        row = [0.0] * n
        for c, (fi, _) in enumerate(cols):
            if fi == i:
                row[c] = 1.0
        row[-1] = -flows[i].size_bytes / host_bytes[flows[i].src]
        a_eq.append(row)
        b_eq.append(0.0)
    port_rows: dict[int, list[float]] = {}
    for c, (_, path) in enumerate(cols):
        for port in path:
            port_rows.setdefault(port.gid, [0.0] * n)[c] = 1.0
    gids = sorted(port_rows)
    a_ub = [port_rows[g] for g in gids]
    b_ub = [1.0] * len(gids)
    cost = [0.0] * (n - 1) + [-1.0]
    res = linprog(
        cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=[(0, None)] * (n - 1) + [(0, 1)], method="highs"
    )
    if res.status != 0:
        raise RuntimeError(f"rho_max linear program failed: {res.message}")
    rho = float(res.x[-1])
    marg = res.ineqlin.marginals
    bottlenecks = [tree.ports[g].label for g, m in zip(gids, marg, strict=False) if m < -1e-9]
    return RhoMax(rho, bottlenecks, unreachable), cols, [float(v) for v in res.x[:-1]]


def even_split_rho(tree: FatTree, flows: list[Flow], failed: Iterable[Link]) -> RhoMax:
    """The other reading of rho_max: the largest rho at which every switch splitting each destination's
    traffic evenly over its valid uplinks (as Ofan's rotation does, paper section 4.1: invalid ports skipped,
    one packet per valid port per round) keeps every directed link within its capacity. Each flow sends
    rho x line rate x its share of its host's bytes, as in `rho_max`; an edge switch splits it evenly over
    the uplinks valid for its destination edge, an aggregation switch over the core links valid for its
    destination pod. Never above `rho_max`, the best split's."""
    return split_rho(tree, flows, failed, None)


def weighted_split_rho(tree: FatTree, flows: list[Flow], failed: Iterable[Link], lp: bool = True) -> RhoMax:
    """The same for weighted Ofan's split: each switch gives each valid uplink the share its rounds give it
    (exactly its weight's), the rounds of lp_rounds (the LP's split, rounded; `lp`) where the LP sends
    traffic, else Routing's (path counts)."""
    failed = list(failed)
    rounds = dict(routing(tree, failed).rounds)
    if lp:
        rounds |= lp_rounds(tree, flows, failed)[1]
    return split_rho(tree, flows, failed, rounds)


def split_rho(
    tree: FatTree, flows: list[Flow], failed: Iterable[Link], rounds: dict[tuple[int, int], tuple[int, ...]] | None
) -> RhoMax:
    """The largest rho at which a per-hop split keeps every link within capacity: even over the valid uplinks
    (`rounds` None), or each key's uplinks in proportion to the rounds they are eligible in."""
    r = Reach(tree, failed)
    host_bytes: dict[int, int] = {}
    for f in flows:
        host_bytes[f.src] = host_bytes.get(f.src, 0) + f.size_bytes
    load: dict[int, float] = {}
    unreachable = []
    for f in flows:
        src, dst = tree.hosts[f.src], tree.hosts[f.dst]
        if not r.reachable(src, dst):
            unreachable.append(f.fid)
            continue
        for port, share in _split_hops(tree, r, src, dst, rounds):
            load[port.gid] = load.get(port.gid, 0.0) + share * f.size_bytes / host_bytes[f.src]
    if not load:
        return RhoMax(0.0, [], unreachable)
    top = max(load.values())
    rho = min(1.0, 1.0 / top)
    bottlenecks = sorted(tree.ports[g].label for g, v in load.items() if v >= top - 1e-9) if top > 1 else []
    return RhoMax(rho, bottlenecks, unreachable)


def _shares(mask: int, w: int, rounds: tuple[int, ...] | None) -> list[float]:
    """Each uplink slot's share of a key's traffic: even over `mask`, or as often as the rounds make it
    eligible within `mask` (a round with none valid: every valid one, as the switch does)."""
    counts = decisions.wofan_counts(rounds or (), mask, w)
    total = sum(counts)
    return [c / total for c in counts] if total else [0.0] * w


def _split_hops(
    tree: FatTree, r: Reach, src: Node, dst: Node, rounds: dict[tuple[int, int], tuple[int, ...]] | None
) -> list[tuple[Port, float]]:
    """The egress ports a flow from `src` to `dst` crosses under a per-hop split (even, or by `rounds` per
    switch and destination key), each with the fraction of the flow it carries."""
    e_s, e_d = tree.by_name[tree.edge_of(src.name)], tree.by_name[tree.edge_of(dst.name)]
    out = [(tree.port(src.name, e_s.name), 1.0)]
    if e_s == e_d:
        return [*out, (tree.port(e_d.name, dst.name), 1.0)]
    key = tree.edge_global(e_d)
    ups = tree.uplinks(e_s.name)
    first = _shares(r.edge_mask(e_s, e_d), tree.w, None if rounds is None else rounds.get((e_s.nid, key)))
    for slot, up1 in enumerate(ups):
        if not first[slot]:
            continue
        a, share = tree.by_name[up1.peer], first[slot]
        out.append((up1, share))
        if a.pod == dst.pod:
            out.append((tree.port(a.name, e_d.name), share))
            continue
        second = _shares(r.agg_mask(a, dst.pod), tree.w, None if rounds is None else rounds.get((a.nid, dst.pod)))
        a2 = r.agg(dst.pod, a.index)
        for s2, up2 in enumerate(tree.uplinks(a.name)):
            if second[s2]:
                out += [(up2, share * second[s2]), (tree.port(up2.peer, a2), share * second[s2])]
        out.append((tree.port(a2, e_d.name), share))
    out.append((tree.port(e_d.name, dst.name), 1.0))
    return out
