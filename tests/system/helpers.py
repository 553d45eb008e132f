"""Shared checks for root tests: what a prefix leaves behind in the kernel."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

from testbed.dataplane import switches
from testbed.dataplane.compile import Compiled, Dims
from testbed.dataplane.maps import MapHandle, Maps, pin_dir, unpin
from testbed.fabric import netns, state
from testbed.topology import FatTree

ETH_P_ALL = 0x0003

V = TypeVar("V")


def entry(m: MapHandle[Any, V], key: int) -> V:
    """Entry `key` of a map, one the test knows exists (an array map's index below its size, or one just
    written): MapHandle.get's None is a failure here."""
    v = m.get(key)
    assert v is not None, f"no entry {key} in the map"
    return v


def leftovers(prefix: str) -> list[str]:
    """Every object carrying `prefix` that still exists (empty when clean)."""
    out = []
    with suppress(FileNotFoundError):
        out += [f"netns {n}" for n in os.listdir("/run/netns") if n.startswith(prefix + "-")]
    if os.path.exists(pin_dir(prefix)):
        out.append(f"pinned {pin_dir(prefix)}")
    if os.path.exists(state.path(prefix)):
        out.append(f"state {state.path(prefix)}")
    out += [f"file {f}" for f in state.side_files(prefix) if os.path.exists(f)]
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if b"controld" in args and prefix.encode() in args:
            out.append(f"process {pid} (link watcher of {prefix})")
    return out


def cli(
    *args: str, timeout: float = 300, cwd: str | os.PathLike[str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "testbed.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        check=False,
    )


TIMING_RATE_BPS = 25_000_000  # k=4 at half the packet budget (docs/methods/choosing-the-rate.md: pacing error < 0.5 %)


def capture(ns: str, ifname: str) -> socket.socket:
    """A raw socket on one port inside a namespace: every frame it sends and receives (non-blocking)."""
    with netns.entered(ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
        s.bind((ifname, 0))
    s.setblocking(False)
    return s


def drain(s: socket.socket) -> list[tuple[bytes, int]]:
    """Every frame captured so far, with its packet type (socket.PACKET_OUTGOING for the port's own)."""
    out: list[tuple[bytes, int]] = []
    while True:
        try:
            data, addr = s.recvfrom(65536)
        except BlockingIOError:
            return out
        out.append((data, addr[2]))


@contextmanager
def loaded_program(prefix: str, kind: str, k: int) -> Iterator[tuple[FatTree, Compiled, Maps]]:
    """The data plane built for BPF_PROG_TEST_RUN (forwarding nothing) for a k fabric of `kind`, its maps
    pinned under `prefix` and programmed for the tree; unpinned after."""
    tree = FatTree(k, prefix, kind)
    unpin(prefix)
    compiled = Compiled(Dims.of(tree), test_run=True)
    compiled.pin(prefix)
    maps = Maps(prefix)
    try:
        switches.program(maps, tree)
        yield tree, compiled, maps
    finally:
        maps.close()
        compiled.close()
        unpin(prefix)


@contextmanager
def slow_uplink(fab: Any, share: float) -> Iterator[Any]:
    """The first aggregation switch's first uplink served at `share` of the rate for the block, its TBF changed
    behind the testbed's back (a distortion for the verdict to find); yields that port."""
    from testbed.fabric import netlink
    from testbed.fabric.netlink import Netlink
    from testbed.topology import Level

    tree, spec = fab.tree, fab.spec
    agg = next(sw for sw in tree.switches if sw.level is Level.AGG)
    port = tree.uplinks(agg.name)[0]

    def set_rate(rate: int) -> None:
        with netns.entered(tree.ns(agg.name)), Netlink() as nl:
            nl.run(
                [
                    netlink.qdisc_tbf(
                        port.ifindex, rate, spec.burst, spec.buffer_bytes, change=True, overhead=spec.wire_overhead
                    )
                ]
            )

    set_rate(int(spec.rate_bps * share))
    try:
        yield port
    finally:
        set_rate(spec.rate_bps)
