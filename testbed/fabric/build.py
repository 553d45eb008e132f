"""Build and tear down a fat tree of namespaces, veth links, TBF queues and
eBPF switches on the running kernel.

`Fabric(spec)` is a context manager: entering builds everything, leaving
tears it down (also after an error half-way). Every kernel object lives in a
namespace named `{prefix}-{node}` or in the bpffs directory `{prefix}-maps`;
nothing is created in the root namespace, so deleting the namespaces removes
every veth, qdisc and filter with them.

Speed (docs/results/build-speed.md): namespaces are created in-process, both veth ends
are created in their namespaces by one request with explicit ifindex values,
and each namespace is configured by one batch of netlink messages while bcc
compiles in a background thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import socket
import struct
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from traffic.packet import WIRE_EXTRA

from ..dataplane import switches
from ..dataplane.compile import Compiled, CompileThread, Dims
from ..dataplane.maps import Maps, tcx_attach
from ..models.schemes import Scheme, SchemeConfig
from ..topology import FatTree, Node
from . import capacity, netlink, netns, state
from .errors import FabricError
from .netlink import Netlink, Request

DEFAULT_MTU = 4200  # fits a 4096-byte RoCEv2 payload plus headers (4140-byte IP packet)
DEFAULT_RATE_BPS = 50_000_000  # valid on 2 cores at k=4 under Ofan and ECMP (docs/methods/choosing-the-rate.md)
DEFAULT_BURST_FRAMES = 2  # TBF bucket in maximum-size frames (docs/architecture.md, "Links")
DEFAULT_BUFFER_BYTES = 256 * 1024 * 1024  # per-port TBF limit: large enough that default runs never drop
ETH_HLEN = 14
NIC_BUCKET_FRAMES = (
    1.25  # host NICs' TBF bucket: a late NIC may catch up a quarter frame (docs/measurement.md, "Fidelity")
)


def netns_threads(n_namespaces: int) -> int:
    """Namespace-creating threads: one while the bcc compile (about 0.35 s) has the other core to itself
    and outlasts them, two for larger fabrics, whose namespaces take longer than the compile."""
    return 1 if n_namespaces <= 400 else 2


@dataclass(frozen=True)
class FabricSpec:
    k: int
    rate_bps: int = DEFAULT_RATE_BPS
    prefix: str = "tb"
    scheme: Scheme = Scheme.ECMP
    mtu: int = DEFAULT_MTU
    burst_bytes: int = 0  # 0: DEFAULT_BURST_FRAMES maximum-size frames (MTU + Ethernet header each)
    buffer_bytes: int = DEFAULT_BUFFER_BYTES
    seed: int = 1
    pipe_size: int = 4  # pOfan ports per pipe (schemes.PIPES_PER_CPU: per-CPU pointers)
    topology: str = "fattree"  # or "leafspine" (testbed.topology)
    wire_overhead: int = WIRE_EXTRA  # bytes every link charges per frame beyond skb->len (traffic.packet); 0: none
    ack_priority: bool = True  # every queue serves ACKs before data (netlink.ack_priority), as htsim's switches
    queue_max_tries: int = 4  # compare-and-swap attempts per queue-maximum raise; 0 only to inject give-ups
    # programs on the TCX hooks instead of clsact qdiscs and cls_bpf filters: 5-6 % less CPU per hop, but each
    # attach and each device's teardown waits for the kernel (k=8 built in 9.6 s, not 1 s; docs/results/per-hop.md)
    tcx: bool = False

    def __post_init__(self) -> None:
        if self.rate_bps <= 0:
            raise ValueError(f"rate must be > 0, got {self.rate_bps} bit/s")
        if self.rate_bps >= 8 * 2**32:
            raise ValueError(f"rate must be below {8 * 2**32} bit/s")
        if not 1280 <= self.mtu <= 65535:
            raise ValueError(f"mtu must be in [1280, 65535], got {self.mtu}")
        if not 0 <= self.queue_max_tries <= 16:
            raise ValueError(f"queue_max_tries must be in [0, 16], got {self.queue_max_tries}")
        if not 0 <= self.wire_overhead <= 256:
            raise ValueError(f"wire overhead must be in [0, 256] bytes, got {self.wire_overhead}")
        if self.burst_bytes and self.burst_bytes < self.max_frame:
            raise ValueError(
                f"burst must be at least one frame on the wire, mtu + 14 + overhead = {self.max_frame} bytes"
            )
        capacity.check(self.tree())  # validates k, prefix and topology, then that this machine can hold it
        SchemeConfig(self.scheme, self.pipe_size).validate(self.k)

    @property
    def max_frame(self) -> int:
        """A maximum-size frame's bytes of line time (MTU, Ethernet header and the wire's overhead)."""
        return self.mtu + ETH_HLEN + self.wire_overhead

    @property
    def burst(self) -> int:
        return self.burst_bytes or DEFAULT_BURST_FRAMES * self.max_frame

    @property
    def nic_burst(self) -> int:
        """The host NICs' bucket during a run: NIC_BUCKET_FRAMES maximum-size frames (or `burst`, if smaller)."""
        return min(self.burst, round(NIC_BUCKET_FRAMES * self.max_frame))

    def tree(self) -> FatTree:
        return FatTree(self.k, self.prefix, self.topology)


@dataclass
class BuildTimes:
    """Seconds per build step. maps_s runs in a thread beside configure_s; maps_wait_s is what was left of it."""

    namespaces_s: float = 0.0
    links_s: float = 0.0
    qdiscs_s: float = 0.0
    compile_wait_s: float = 0.0
    configure_s: float = 0.0  # filters, links up, host addresses and routes
    links_up_wait_s: float = 0.0  # until the kernel has every port up
    maps_s: float = 0.0
    maps_wait_s: float = 0.0
    total_s: float = 0.0


def host_rate_bps(rate_bps: int, load: float) -> int:
    return max(8, round(rate_bps * load))


def _ip(addr: Any) -> bytes:
    return addr.packed  # type: ignore[no-any-return]


class Fabric:
    """A fat tree on the kernel. Use `with Fabric(spec) as fab:`."""

    def __init__(self, spec: FabricSpec) -> None:
        self.spec = spec
        self.tree = spec.tree()
        self.times = BuildTimes()
        self.compiled: Compiled | None = None
        self.maps: Maps | None = None
        self.owned = True  # False for a handle from attach(): never torn down here
        self._claimed = False  # True once build() has claimed the prefix: teardown may clean it
        self.watcher: Any = None

    # -- build -------------------------------------------------------------
    def __enter__(self) -> Fabric:
        """Build, and keep the forwarding state in line with the links (a link
        watcher thread) for as long as this process owns the fabric."""
        if not self.owned:
            return self  # a handle from attach(): the fabric is already up, with its own watcher
        try:
            self.build()
            self.start_watcher()
        except BaseException:
            self.teardown()
            raise
        return self

    def start_watcher(self) -> None:
        from .watcher import Watcher

        assert self.maps is not None
        self.watcher = Watcher(self.tree, Maps(self.spec.prefix)).start()

    def __exit__(self, *exc: object) -> None:
        if self.owned:
            self.teardown()
        elif self.maps is not None:
            self.maps.close()
            self.maps = None

    @classmethod
    def attach(cls, prefix: str) -> Fabric:
        """A handle on the fabric that is up under `prefix` (built by another
        invocation). Leaving its context closes the maps and leaves the fabric up."""
        st = state.load(prefix)
        if st is None or not st.complete:
            raise FabricError(f"no fabric with prefix {prefix!r} is up (testbed up first)")
        spec = FabricSpec(
            k=st.k,
            rate_bps=st.rate_bps,
            prefix=prefix,
            scheme=Scheme.parse(st.scheme),
            mtu=st.mtu,
            burst_bytes=st.burst_bytes,
            buffer_bytes=st.buffer_bytes,
            topology=st.topology,
            wire_overhead=st.wire_overhead,
            ack_priority=st.ack_priority,
        )
        fab = cls(spec)
        fab.owned = False
        fab.maps = Maps(prefix)
        return fab

    def build(self) -> None:
        """Namespaces (two threads), veth pairs, then each namespace's qdiscs
        while bcc compiles; then the programs' filters, links up and the hosts'
        addresses while a thread programs the maps (the kernel works far more
        than Python there, so the two cores stay busy); then every port's link
        state is synchronised and the build waits until the kernel has every port
        up."""
        self._claim()
        times = self.times
        t0 = time.perf_counter()
        state.save(self._state())
        compiling = CompileThread(Dims.of(self.tree, self.spec.queue_max_tries))
        netns.prepare_run_dir()
        made: dict[str, tuple[Netlink, socket.socket]] = {}
        fds: dict[str, int] = {}
        try:
            self._create_namespaces(made, fds)
            t1 = time.perf_counter()
            times.namespaces_s = t1 - t0
            self._create_links(fds)
            t2 = time.perf_counter()
            times.links_s = t2 - t1
            self._create_qdiscs(made)
            t3 = time.perf_counter()
            times.qdiscs_s = t3 - t2
            self.compiled = compiling.get()
            t4 = time.perf_counter()
            times.compile_wait_s = t4 - t3
            self._configure(made, since=t4)
        finally:
            self._close_build(made, fds, compiling)
        state.save(self._state(prog_ids=self.compiled.prog_ids(), complete=True))
        times.total_s = time.perf_counter() - t0

    def _claim(self) -> None:
        """Refuse a prefix that is up (or left behind), then claim it: from here teardown may clean it."""
        prefix = self.spec.prefix
        if state.load(prefix) is not None or netns.listed(prefix):
            raise FabricError(f"a fabric with prefix {prefix!r} is already up (testbed down or clean first)")
        capacity.raise_open_file_limit()
        self._claimed = True

    def _state(self, prog_ids: dict[str, int] | None = None, complete: bool = False) -> state.FabricState:
        """The record of this fabric (/run/testbed): saved when the build starts, and again, complete with its
        programs' ids, when it is done."""
        spec = self.spec
        return state.FabricState(
            prefix=spec.prefix,
            k=spec.k,
            rate_bps=spec.rate_bps,
            mtu=spec.mtu,
            burst_bytes=spec.burst,
            buffer_bytes=spec.buffer_bytes,
            scheme=spec.scheme.label,
            created=time.time(),
            prog_ids=prog_ids or {},
            complete=complete,
            topology=spec.topology,
            wire_overhead=spec.wire_overhead,
            ack_priority=spec.ack_priority,
        )

    def _create_namespaces(self, made: dict[str, tuple[Netlink, socket.socket]], fds: dict[str, int]) -> None:
        """Every node's namespace, with a netlink and an ioctl socket made inside it (`made`, by namespace) and
        the namespace's file (`fds`, by node)."""
        tree = self.tree
        netns.create_many(
            [tree.ns(n.name) for n in tree.nodes],
            _inside_new_namespace,
            made,
            threads=netns_threads(len(tree.nodes)),
        )
        for node in tree.nodes:
            fds[node.name] = netns.open_fd(tree.ns(node.name))

    def _create_links(self, fds: dict[str, int]) -> None:
        """Every veth pair, both ends made in their namespaces, in one batch from the root namespace."""
        with Netlink() as root:
            root.run(self._veth_requests(fds))

    def _create_qdiscs(self, made: dict[str, tuple[Netlink, socket.socket]]) -> None:
        """Each namespace's qdiscs (one batch each), and its ports' offloads off."""
        tree = self.tree
        for node in tree.nodes:
            nl, ioctl = made[tree.ns(node.name)]
            nl.run(self._qdisc_requests(node))
            for p in tree.ports_of[node.name]:
                offloads_off(ioctl, p.ifname)

    def _configure(self, made: dict[str, tuple[Netlink, socket.socket]], since: float) -> None:
        """The compiled programs pinned; their maps programmed in a thread while this one attaches the programs,
        sets every port up and gives the hosts their addresses; then every port's link state synchronised and
        the wait until the kernel has every port up. `since`: when the step began (the configure time's start)."""
        assert self.compiled is not None
        spec, tree, times = self.spec, self.tree, self.times
        self.compiled.pin(spec.prefix)
        self.maps = Maps(spec.prefix)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="program-maps") as pool:
            programmed = pool.submit(self._program_maps)
            for phase in (self._filter_requests, self._up_requests, self._host_requests):
                for node in tree.nodes:
                    made[tree.ns(node.name)][0].run(phase(node))
            t5 = time.perf_counter()
            times.configure_s = t5 - since
            for node in tree.nodes:
                for p in tree.ports_of[node.name]:
                    link_sync(made[tree.ns(node.name)][1], p.ifname)
            self._wait_links_up({node.name: made[tree.ns(node.name)][0] for node in tree.nodes})
            times.links_up_wait_s = time.perf_counter() - t5
            times.maps_s = programmed.result()
        times.maps_wait_s = time.perf_counter() - t5 - times.links_up_wait_s

    def _close_build(
        self, made: dict[str, tuple[Netlink, socket.socket]], fds: dict[str, int], compiling: CompileThread
    ) -> None:
        """The build's sockets and namespace files closed, whether it finished or not."""
        for nl, ioctl in made.values():
            nl.close()
            ioctl.close()
        for fd in fds.values():
            os.close(fd)
        if self.compiled is None:  # an earlier step failed: keep the program so teardown closes it
            with contextlib.suppress(Exception):
                self.compiled = compiling.get()

    def _wait_links_up(self, socks: dict[str, Netlink], timeout_s: float = 30.0) -> None:
        """Until the kernel has brought every port up: it processes carrier changes (and activates the qdiscs)
        after the requests that caused them, and a port it has not reached yet drops what it is given."""
        deadline = time.monotonic() + timeout_s
        for node in self.tree.nodes:
            want = [p.ifindex for p in self.tree.ports_of[node.name]]
            while True:
                states = netlink.operstates(socks[node.name])
                if all(states.get(i) == netlink.IF_OPER_UP for i in want):
                    break
                if time.monotonic() > deadline:
                    down = [
                        p.label for p in self.tree.ports_of[node.name] if states.get(p.ifindex) != netlink.IF_OPER_UP
                    ]
                    raise FabricError(f"ports still down {timeout_s:.0f} s after the build: {', '.join(down[:5])}")
                time.sleep(0.001)

    def _program_maps(self) -> float:
        """The fabric's forwarding state and every switch's scheme, in the maps; returns the seconds it took."""
        t0 = time.perf_counter()
        assert self.maps is not None
        switches.program(self.maps, self.tree)
        switches.set_scheme(self.maps, self.tree, self.spec.scheme, self.spec.seed, pipe_size=self.spec.pipe_size)
        return time.perf_counter() - t0

    def _veth_requests(self, fds: dict[str, int]) -> list[Request]:
        reqs = []
        for ln in self.tree.links:
            a, b = self.tree.ports[ln.a_gid], self.tree.ports[ln.b_gid]
            reqs.append(
                netlink.veth_pair(
                    name=a.ifname,
                    index=a.ifindex,
                    mac=a.mac,
                    ns_fd=fds[ln.a],
                    peer_name=b.ifname,
                    peer_index=b.ifindex,
                    peer_mac=b.mac,
                    peer_ns_fd=fds[ln.b],
                    mtu=self.spec.mtu,
                )
            )
        return reqs

    def _qdisc_requests(self, node: Node) -> list[Request]:
        """lo up; on every port the TBF (the link, or the host's NIC) and the hook for its programs: clsact
        on a host (egress and ingress), ingress on a switch port."""
        spec = self.spec
        reqs = [netlink.link_set(1, True, f"lo up in {node.name}")]
        for p in self.tree.ports_of[node.name]:
            reqs.append(
                netlink.qdisc_tbf(p.ifindex, spec.rate_bps, spec.burst, spec.buffer_bytes, overhead=spec.wire_overhead)
            )
            if spec.ack_priority:
                reqs += netlink.ack_priority(p.ifindex, spec.buffer_bytes, spec.wire_overhead)
            if not spec.tcx:
                reqs.append(netlink.qdisc_clsact(p.ifindex, egress=node.is_host))
        return reqs

    def _filter_requests(self, node: Node) -> list[Request]:
        """The programs on every port: switch ingress, or host egress and ingress (cls_bpf filters; with
        spec.tcx none: _attach_tcx attaches them)."""
        assert self.compiled is not None
        fds = self.compiled.fds
        reqs: list[Request] = []
        if self.spec.tcx:
            self._attach_tcx(node)
            return reqs
        for p in self.tree.ports_of[node.name]:
            if node.is_host:
                reqs.append(netlink.filter_bpf(p.ifindex, fds["host_egress"], "host_egress", egress=True))
                reqs.append(netlink.filter_bpf(p.ifindex, fds["host_ingress"], "host_ingress", egress=False))
            else:
                reqs.append(netlink.filter_bpf(p.ifindex, fds["switch_ingress"], "switch_ingress", egress=False))
        return reqs

    def _attach_tcx(self, node: Node) -> None:
        """The programs on every port of `node`, on its TCX hooks (entered in its namespace)."""
        assert self.compiled is not None
        fds = self.compiled.fds
        with netns.entered(self.tree.ns(node.name)):
            for p in self.tree.ports_of[node.name]:
                if node.is_host:
                    tcx_attach(fds["host_egress"], p.ifindex, egress=True)
                    tcx_attach(fds["host_ingress"], p.ifindex, egress=False)
                else:
                    tcx_attach(fds["switch_ingress"], p.ifindex, egress=False)

    def _up_requests(self, node: Node) -> list[Request]:
        """Every port up."""
        return [netlink.link_set(p.ifindex, True, f"{node.name}:{p.ifname} up") for p in self.tree.ports_of[node.name]]

    def _host_requests(self, node: Node) -> list[Request]:
        """A host's address, its gateway's permanent neighbour entry and its one route (the link must be up)."""
        if not node.is_host:
            return []
        tree = self.tree
        p = tree.host_port(node.name)
        gw = _ip(tree.gateway_ip(node))
        return [
            netlink.addr_v4(p.ifindex, _ip(tree.host_ip(node)), 32),
            netlink.neigh_permanent(p.ifindex, gw, tree.port(p.peer, node.name).mac),
            netlink.route_v4_onlink(socket.inet_aton("10.0.0.0"), 8, gw, p.ifindex),
        ]

    # -- teardown ----------------------------------------------------------
    def teardown(self) -> None:
        """Idempotent: stop the watcher, close maps and program fds, then remove every object."""
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher.maps.close()
            self.watcher = None
        prog_ids = self.compiled.prog_ids() if self.compiled is not None and self.compiled.fds else {}
        if self.maps is not None:
            self.maps.close()
            self.maps = None
        if self.compiled is not None:
            self.compiled.close()
            self.compiled = None
        if not self._claimed:
            return  # never built (e.g. the prefix was taken): nothing of ours to remove
        from .clean import clean

        clean(self.spec.prefix, wait_prog_ids=list(prog_ids.values()))
        self._claimed = False


NIC_PEAK_RATIO = (
    1.10  # host NICs: peak rate over the paced rate (docs/architecture.md, "Links": strictly periodic NICs)
)


def set_host_rate(
    tree: FatTree,
    rate_bps: int,
    burst_bytes: int,
    limit_bytes: int,
    frame_bytes: int = 0,
    peak_ratio: float | None = None,
    overhead: int = 0,
    hosts: list[Node] | None = None,
) -> None:
    """Re-pace every host NIC (its egress TBF) to `rate_bps`, its queue (the TBF's child) kept: a change sets a
    bfifo child's limit to `limit_bytes` and leaves any other child (the ACKs' HTB) alone. With a
    `frame_bytes`, the NIC also gets a peak-rate bucket of one frame at
    `peak_ratio` x the rate: a NIC served late catches up at that rate, never
    by sending two frames back to back. Every frame costs `overhead` bytes more (FabricSpec.wire_overhead)."""
    ratio = NIC_PEAK_RATIO if peak_ratio is None else peak_ratio
    peak = int(rate_bps * ratio) if frame_bytes and ratio > 1 else 0
    for h in tree.hosts if hosts is None else hosts:
        p = tree.host_port(h.name)
        with netns.entered(tree.ns(h.name)), Netlink() as nl:
            nl.run(
                [
                    netlink.qdisc_tbf(
                        p.ifindex,
                        rate_bps,
                        burst_bytes,
                        limit_bytes,
                        change=True,
                        peak_bps=peak,
                        peak_burst_bytes=frame_bytes if peak else 0,
                        overhead=overhead,
                    )
                ]
            )


def _inside_new_namespace() -> tuple[Netlink, socket.socket]:
    """Runs inside each new namespace: no IPv6 (no router solicitations or
    link-local chatter in the fabric), then a netlink socket and an ioctl
    socket bound here."""
    netns.write_sysctl("net.ipv6.conf.all.disable_ipv6", "1")
    netns.write_sysctl("net.ipv6.conf.default.disable_ipv6", "1")
    return Netlink(), socket.socket(socket.AF_INET, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)


SIOCETHTOOL = 0x8946
ETHTOOL_GLINK, ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_SGRO = 0x0A, 0x1F, 0x24, 0x2C


def _ethtool_value(sock: socket.socket, ifname: str, cmd: int, data: int = 0) -> int:
    value = ctypes.create_string_buffer(struct.pack("=II", cmd, data), 8)
    ifreq = struct.pack("16sP", ifname.encode(), ctypes.addressof(value)).ljust(40, b"\0")
    fcntl.ioctl(sock.fileno(), SIOCETHTOOL, ifreq)
    return int(struct.unpack("=II", value.raw)[1])


def link_sync(sock: socket.socket, ifname: str) -> bool:
    """Ask whether the link is up (ETHTOOL_GLINK), which makes the kernel apply
    the port's pending carrier change now. Otherwise its link watcher handles
    100 ports per pass and waits a second between passes, so the last ports of
    a large batch came up (and stopped dropping) up to seconds later."""
    return _ethtool_value(sock, ifname, ETHTOOL_GLINK) == 1


def offloads_off(sock: socket.socket, ifname: str) -> None:
    """TSO, GSO and GRO off on one interface (of the socket's namespace), so
    every qdisc and program sees real packets, never super-packets."""
    for cmd in (ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_SGRO):
        _ethtool_value(sock, ifname, cmd)
