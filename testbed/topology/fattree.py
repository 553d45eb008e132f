"""Fat-tree description: nodes, links, ports, names and addresses. Pure data.

Two kinds, both built from k-port switches:

- ``fattree``: the 3-level k-ary fat tree, k pods of k/2 edge and k/2
  aggregation switches, (k/2)^2 cores, k^3/4 hosts;
- ``leafspine``: the 2-level fat tree (paper section 6.3), one "pod" of k
  leaves (edge switches, k/2 hosts each) fully meshed with k/2 spines
  (aggregation switches with k downlinks and no uplinks), k^2/2 hosts.


Nothing here touches the kernel. `FatTree(k)` records what the fabric is;
`testbed.fabric.build` walks that record and creates the real objects.

Naming (written down once; addresses follow from names):

- hosts        ``h{pod}_{edge}_{i}``   i in 0..k/2-1, address 10.{pod}.{edge}.{i+2}
- edge switch  ``e{pod}_{i}``          gateway address seen by its hosts: 10.{pod}.{i}.1
- aggregation  ``a{pod}_{j}``
- core         ``c{j}_{m}``            connected to aggregation j of every pod
- namespace    ``{prefix}-{node}``
- interface    the port of node X that leads to node Y is named ``Y`` inside X's
  namespace (at most 15 characters, checked here)

Every port has a global number ``gid``; its interface index is
``IFINDEX_BASE + gid``, unique across the whole fabric, so the data plane can
key its maps by ifindex without caring which namespace a port lives in. MAC
addresses are ``02:54:42:`` followed by the 24-bit gid.
"""

from __future__ import annotations

import enum
import ipaddress
import re
from dataclasses import dataclass, field
from functools import cached_property

IFNAMSIZ = 15  # usable characters of an interface name
IFINDEX_BASE = 16  # ifindex of port gid 0; 1 is lo in every namespace
PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{0,7}$")
MAC_OUI = (0x02, 0x54, 0x42)  # locally administered


class TopologyError(ValueError):
    """A topology parameter is invalid (raised before any kernel object exists)."""


class Level(enum.IntEnum):
    """Tier of a node; the numbers are shared with the eBPF code (topology.h)."""

    HOST = 0
    EDGE = 1
    AGG = 2
    CORE = 3


class Stage(enum.IntEnum):
    """Stage of a link direction, named by the queue's position (paper section 3.2)."""

    HOST_EDGE = 0
    EDGE_AGG = 1
    AGG_CORE = 2
    CORE_AGG = 3
    AGG_EDGE = 4
    EDGE_HOST = 5

    @property
    def label(self) -> str:
        return self.name.lower()


_STAGE_OF = {
    (Level.HOST, Level.EDGE): Stage.HOST_EDGE,
    (Level.EDGE, Level.AGG): Stage.EDGE_AGG,
    (Level.AGG, Level.CORE): Stage.AGG_CORE,
    (Level.CORE, Level.AGG): Stage.CORE_AGG,
    (Level.AGG, Level.EDGE): Stage.AGG_EDGE,
    (Level.EDGE, Level.HOST): Stage.EDGE_HOST,
}


@dataclass(frozen=True)
class Node:
    name: str
    level: Level
    pod: int  # -1 for cores
    index: int  # edge/agg index in the pod, host index under its edge, core index
    nid: int  # host id for hosts, switch id for switches

    @property
    def is_host(self) -> bool:
        return self.level is Level.HOST


@dataclass(frozen=True)
class Port:
    """One end of a link: the egress queue of `node` towards `peer`."""

    gid: int
    node: str
    peer: str
    peer_gid: int
    stage: Stage

    @property
    def ifindex(self) -> int:
        return IFINDEX_BASE + self.gid

    @property
    def peer_ifindex(self) -> int:
        return IFINDEX_BASE + self.peer_gid

    @property
    def ifname(self) -> str:
        return self.peer

    @property
    def mac(self) -> bytes:
        return mac_of(self.gid)

    @property
    def label(self) -> str:
        return f"{self.node}->{self.peer}"


@dataclass(frozen=True)
class Link:
    """An undirected link; `a` is the lower tier (host/edge/agg), `b` the upper."""

    a: str
    b: str
    a_gid: int
    b_gid: int

    @property
    def name(self) -> str:
        return f"{self.a}-{self.b}"


def mac_of(gid: int) -> bytes:
    return bytes(MAC_OUI) + gid.to_bytes(3, "big")


KINDS = ("fattree", "leafspine")


@dataclass(frozen=True)
class FatTree:
    """A k-ary fat tree (Al-Fares et al.): 3 levels (`kind="fattree"`), or the
    2-level leaf-spine (`kind="leafspine"`), see the module docstring."""

    k: int
    prefix: str = "tb"
    kind: str = "fattree"
    nodes: tuple[Node, ...] = field(init=False, repr=False, compare=False)
    links: tuple[Link, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        validate_k(self.k)
        validate_prefix(self.prefix)
        if self.kind not in KINDS:
            raise TopologyError(f"topology must be one of {', '.join(KINDS)}, got {self.kind!r}")
        nodes, links = _build(self.k, self.kind == "leafspine")
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "links", links)
        for n in nodes:
            if len(n.name) > IFNAMSIZ:
                raise TopologyError(f"interface name {n.name!r} longer than {IFNAMSIZ}")

    # -- sizes -------------------------------------------------------------
    @property
    def half(self) -> int:
        return self.k // 2

    @property
    def w(self) -> int:
        """Uplinks per edge or aggregation switch."""
        return self.k // 2

    @property
    def pods(self) -> int:
        return 1 if self.kind == "leafspine" else self.k

    @property
    def edges_per_pod(self) -> int:
        return self.k if self.kind == "leafspine" else self.half

    @property
    def hosts_per_edge(self) -> int:
        return self.half

    @property
    def hosts_per_pod(self) -> int:
        return self.edges_per_pod * self.hosts_per_edge

    @property
    def n_cores(self) -> int:
        return 0 if self.kind == "leafspine" else self.half**2

    @property
    def n_hosts(self) -> int:
        return self.n_edges * self.hosts_per_edge

    @property
    def n_edges(self) -> int:
        return self.pods * self.edges_per_pod

    @property
    def n_switches(self) -> int:
        return self.n_edges + self.pods * self.half + self.n_cores

    @property
    def n_ports(self) -> int:
        return 2 * len(self.links)

    # -- lookups -----------------------------------------------------------
    @cached_property
    def by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}

    @cached_property
    def hosts(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.is_host)

    @cached_property
    def switches(self) -> tuple[Node, ...]:
        return tuple(sorted((n for n in self.nodes if not n.is_host), key=lambda n: n.nid))

    @cached_property
    def ports(self) -> tuple[Port, ...]:
        out: list[Port] = []
        for ln in self.links:
            la, lb = self.by_name[ln.a].level, self.by_name[ln.b].level
            out.append(Port(ln.a_gid, ln.a, ln.b, ln.b_gid, _STAGE_OF[(la, lb)]))
            out.append(Port(ln.b_gid, ln.b, ln.a, ln.a_gid, _STAGE_OF[(lb, la)]))
        out.sort(key=lambda p: p.gid)
        return tuple(out)

    @cached_property
    def ports_of(self) -> dict[str, tuple[Port, ...]]:
        acc: dict[str, list[Port]] = {n.name: [] for n in self.nodes}
        for p in self.ports:
            acc[p.node].append(p)
        return {k: tuple(v) for k, v in acc.items()}

    def port(self, node: str, peer: str) -> Port:
        for p in self.ports_of[node]:
            if p.peer == peer:
                return p
        raise KeyError(f"{node} has no port to {peer}")

    def uplinks(self, switch: str) -> tuple[Port, ...]:
        """Upward ports of an edge or aggregation switch, in uplink-slot order."""
        lvl = self.by_name[switch].level
        up = Stage.EDGE_AGG if lvl is Level.EDGE else Stage.AGG_CORE
        return tuple(p for p in self.ports_of[switch] if p.stage is up)

    def downlinks(self, switch: str) -> tuple[Port, ...]:
        """Downward ports in slot order: by host index (edge), edge index (agg), pod (core)."""
        lvl = self.by_name[switch].level
        down = {Level.EDGE: Stage.EDGE_HOST, Level.AGG: Stage.AGG_EDGE, Level.CORE: Stage.CORE_AGG}[lvl]
        ports = [p for p in self.ports_of[switch] if p.stage is down]
        key = (lambda p: self.by_name[p.peer].pod) if lvl is Level.CORE else (lambda p: self.by_name[p.peer].index)
        return tuple(sorted(ports, key=key))

    def local_index(self, port: Port) -> int:
        """A port's number inside its switch: downlinks first, then uplinks
        (pOfan's pipes group consecutive numbers). 0 for a host's port."""
        if self.by_name[port.node].is_host:
            return 0
        order = self.downlinks(port.node) + (
            self.uplinks(port.node) if self.by_name[port.node].level is not Level.CORE else ()
        )
        return order.index(port)

    @property
    def switch_ports(self) -> int:
        """Ports of every switch (k in a fat tree)."""
        return self.k

    def host_port(self, host: str) -> Port:
        """The host's own NIC port (host -> edge)."""
        (p,) = self.ports_of[host]
        return p

    def edge_of(self, host: str) -> str:
        return self.host_port(host).peer

    def edge_global(self, edge: Node) -> int:
        return edge.pod * self.edges_per_pod + edge.index

    def ns(self, node: str) -> str:
        return f"{self.prefix}-{node}"

    # -- addresses ---------------------------------------------------------
    def host_ip(self, host: Node) -> ipaddress.IPv4Address:
        return ipaddress.IPv4Address(f"10.{host.pod}.{self._host_edge(host)}.{host.index + 2}")

    def gateway_ip(self, host: Node) -> ipaddress.IPv4Address:
        return ipaddress.IPv4Address(f"10.{host.pod}.{self._host_edge(host)}.1")

    def _host_edge(self, host: Node) -> int:
        return (host.nid // self.hosts_per_edge) % self.edges_per_pod

    def host_by_ip(self, ip: str) -> Node:
        for h in self.hosts:
            if str(self.host_ip(h)) == ip:
                return h
        raise KeyError(ip)


def validate_k(k: int) -> None:
    if not isinstance(k, int) or k < 4 or k % 2:
        raise TopologyError(f"k must be an even integer >= 4, got {k}")
    if k > 64:
        raise TopologyError(f"k must be at most 64 (a switch's k/2 uplinks are one 32-bit mask), got {k}")


def validate_prefix(prefix: str) -> None:
    if not PREFIX_RE.match(prefix):
        raise TopologyError(f"prefix must match {PREFIX_RE.pattern}, got {prefix!r}")


def _build(k: int, leafspine: bool) -> tuple[tuple[Node, ...], tuple[Link, ...]]:
    half = k // 2
    pods, edges = (1, k) if leafspine else (k, half)
    nodes: list[Node] = []
    hid = 0
    for p in range(pods):
        for e in range(edges):
            for i in range(half):
                nodes.append(Node(f"h{p}_{e}_{i}", Level.HOST, p, i, hid))
                hid += 1
    sid = 0
    for p in range(pods):
        for e in range(edges):
            nodes.append(Node(f"e{p}_{e}", Level.EDGE, p, e, sid))
            sid += 1
    for p in range(pods):
        for a in range(half):
            nodes.append(Node(f"a{p}_{a}", Level.AGG, p, a, sid))
            sid += 1
    if not leafspine:
        for j in range(half):
            for m in range(half):
                nodes.append(Node(f"c{j}_{m}", Level.CORE, -1, j * half + m, sid))
                sid += 1

    links: list[Link] = []
    gid = 0

    def link(a: str, b: str) -> None:
        nonlocal gid
        links.append(Link(a, b, gid, gid + 1))
        gid += 2

    for p in range(pods):
        for e in range(edges):
            for i in range(half):
                link(f"h{p}_{e}_{i}", f"e{p}_{e}")
    for p in range(pods):
        for e in range(edges):
            for a in range(half):
                link(f"e{p}_{e}", f"a{p}_{a}")
    if not leafspine:
        for p in range(pods):
            for a in range(half):
                for m in range(half):
                    link(f"a{p}_{a}", f"c{a}_{m}")
    return tuple(nodes), tuple(links)
