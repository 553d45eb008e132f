"""The link watcher: it turns kernel link events into forwarding state.

`Watcher` listens to link events (RTMGRP_LINK) in every namespace of a
fabric. A link is up when both of its ends are administratively up and have
carrier. Whenever the set of failed links changes, whoever caused it (this
tool, or `ip link set ... down` from outside), the watcher recomputes the
routing (testbed.models.control) and writes only the map entries that changed:
valid-uplink masks and withdrawn or restored downward routes. Each change is
one event, appended as a JSON line to /run/testbed/{prefix}.events.jsonl
with its convergence time (first kernel notification received -> maps
written) and the packets it cost: once converged, nothing is sent into a
dead link any more, so the packets still counted in the two egress queues of
that link were lost there (queued when it died, or sent into it before the
maps changed). They are counted and cleared from the occupancy.

The watcher runs in the daemon `testbed controld` (started by `testbed up`;
its body is testbed.fabric.controld) or, for a fabric owned by one process, in a thread of
that process.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
import time
from dataclasses import asdict

from ..dataplane import switches
from ..dataplane.maps import U64, Maps, PortQ, signed
from ..models import control
from ..topology import FatTree, Link
from . import netlink, netns
from .links import SETTLE_S, LinkEvent, events_path, read_events
from .netlink import Netlink

_IFINFOMSG = struct.Struct("=BxHiII")
IFF_UP = 0x1


class Watcher:
    """Keeps a fabric's forwarding state in line with its links."""

    def __init__(self, tree: FatTree, maps: Maps) -> None:
        self.tree = tree
        self.maps = maps
        self.path = events_path(tree.prefix)
        self.flags: dict[int, tuple[bool, bool]] = {}  # ifindex -> (admin up, carrier)
        self.failed: frozenset[str] = frozenset()
        self.routing = control.routing(tree, [])
        self.seq = len(read_events(tree.prefix))
        self.socks: dict[int, Netlink] = {}
        self._poll: select.epoll | None = None  # not select(): it stops at fd 1024, and k=16 has 1,344 namespaces
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._link_of = {p.ifindex: ln for ln in tree.links for p in (tree.ports[ln.a_gid], tree.ports[ln.b_gid])}
        self._pending: list[tuple[float, LinkEvent, list[Link]]] = []

    # -- lifecycle ---------------------------------------------------------------
    def open(self) -> Watcher:
        self._poll = select.epoll()
        for node in self.tree.nodes:
            with netns.entered(self.tree.ns(node.name)):
                nl = Netlink(groups=netlink.RTMGRP_LINK)
            self.socks[nl.sock.fileno()] = nl
            self._poll.register(nl.sock.fileno(), select.EPOLLIN)
            for raw in nl.dump(netlink.RTM_GETLINK, netlink.dump_links_body()):
                self._note(raw[16:])
        self._apply(time.monotonic_ns())  # failures that predate the watcher
        return self

    def close(self) -> None:
        for nl in self.socks.values():
            nl.close()
        self.socks.clear()
        if self._poll is not None:
            self._poll.close()
            self._poll = None

    def start(self) -> Watcher:
        """Watch in a background thread."""
        self.open()
        self._thread = threading.Thread(target=self.loop, name="link-watcher", daemon=True)
        self._thread.start()
        return self

    def request_stop(self) -> None:
        """Make loop() return (safe from a signal handler)."""
        self._stop.set()

    def stop(self) -> None:
        self.request_stop()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.close()

    def loop(self) -> None:
        while not self._stop.is_set():
            timeout = 0.05
            if self._pending:
                timeout = max(0.0, min(timeout, self._pending[0][0] - time.monotonic()))
            assert self._poll is not None, "open() first"
            ready = [fd for fd, _ in self._poll.poll(timeout)]
            if ready:
                t_event = time.monotonic_ns()
                for fd in ready:
                    self._drain(self.socks[fd])
                self._apply(t_event)
            self._count_losses()

    # -- events ------------------------------------------------------------------
    def _drain(self, nl: Netlink) -> None:
        while True:
            try:
                data = nl.sock.recv(1 << 20, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            for mtype, _seq, payload in netlink.messages(data):
                if mtype in (netlink.RTM_NEWLINK, netlink.RTM_DELLINK):
                    self._note(payload, deleted=mtype == netlink.RTM_DELLINK)

    def _note(self, payload: bytes, deleted: bool = False) -> None:
        _fam, _type, index, flags, _change = _IFINFOMSG.unpack_from(payload)
        if index in self._link_of:
            self.flags[index] = (
                (False, False) if deleted else (bool(flags & IFF_UP), bool(flags & netlink.IFF_LOWER_UP))
            )

    def _failed_now(self) -> frozenset[str]:
        down = set()
        for ifx, ln in self._link_of.items():
            admin, carrier = self.flags.get(ifx, (False, False))
            if not (admin and carrier):
                down.add(ln.name)
        return frozenset(down)

    def _apply(self, t_event: int) -> None:
        failed = self._failed_now()
        if failed == self.failed:
            return
        links = [ln for ln in self.tree.links if ln.name in failed]
        new = control.routing(self.tree, links)
        masks = {k: v for k, v in new.masks.items() if self.routing.masks.get(k) != v}
        downs = {k: v for k, v in new.downlinks.items() if self.routing.downlinks.get(k) != v}
        paths = {k: v for k, v in new.host_paths.items() if self.routing.host_paths.get(k) != v}
        rounds = {k: v for k, v in new.rounds.items() if self.routing.rounds.get(k) != v}
        switches.set_uplink_masks(self.maps, self.tree, masks)
        switches.set_wofan_rounds(self.maps, self.tree, rounds)  # after the masks: it never names a failed port
        switches.set_downlinks(self.maps, self.tree, downs)
        switches.set_host_paths(self.maps, self.tree, paths)
        t_done = time.monotonic_ns()
        self.seq += 1
        ev = LinkEvent(
            seq=self.seq,
            links_down=sorted(failed - self.failed),
            links_up=sorted(self.failed - failed),
            failed=sorted(failed),
            t_event_ns=t_event,
            t_converged_ns=t_done,
            convergence_ms=(t_done - t_event) / 1e6,
            map_writes=len(masks) + len(downs) + len(paths) + len(rounds),
        )
        dead = [ln for ln in self.tree.links if ln.name in ev.links_down]
        self.routing, self.failed = new, failed
        self._pending.append((time.monotonic() + SETTLE_S, ev, dead))

    def _count_losses(self) -> None:
        now_s = time.monotonic()
        while self._pending and self._pending[0][0] <= now_s:
            _, ev, dead = self._pending.pop(0)
            for ln in dead:
                for gid in (ln.a_gid, ln.b_gid):
                    port = self.tree.ports[gid]
                    lost = self._clear_port(port.ifindex)
                    if lost:
                        ev.lost_by_port[port.label] = lost
            ev.lost_pkts = sum(ev.lost_by_port.values())
            with open(self.path, "a") as f:
                f.write(json.dumps(asdict(ev)) + "\n")

    def _clear_port(self, ifindex: int) -> int:
        """Forget the packets still counted in a dead port (they were lost)."""
        q = self.maps.port_q.get(ifindex)
        if q is None:
            return 0
        n, b = signed(q.pkts), signed(q.bytes)
        if n <= 0:
            return 0
        now = time.monotonic_ns()
        fixed = PortQ.from_buffer_copy(q)
        fixed.pkts, fixed.bytes = 0, 0
        fixed.area_pkts = (q.area_pkts + n * now) % U64
        fixed.area_bytes = (q.area_bytes + b * now) % U64
        self.maps.port_q.set(ifindex, fixed)
        return n
