"""What this machine can hold: checked before any kernel object of a fabric
is made, so a fabric too large for it is refused with one line.

- Open files: building keeps three per namespace open (its netlink and ioctl
  sockets and its namespace file), the link watcher one; the process raises
  its soft limit to the hard one (`raise_open_file_limit`).
- Memory: the data plane's arrays (pointers per switch, pipe and destination,
  flow counters, queues) are preallocated by the kernel; they must fit in a
  quarter of the memory available.
- The per-CPU backlog every veth hand-over goes through
  (net.core.netdev_max_backlog): hosts starting together must not overflow
  it, 16 packets per host (scripts/setup sets 131,072).
"""

from __future__ import annotations

import resource

from ..dataplane.compile import Dims
from ..dataplane.maps import possible_cpus
from ..topology import FatTree

FILES_PER_NAMESPACE = 3
FILES_SPARE = 256
MEMORY_SHARE = 0.25
BACKLOG_PER_HOST = 16
BACKLOG_SYSCTL = "/proc/sys/net/core/netdev_max_backlog"


class CapacityError(RuntimeError):
    """A fabric this machine cannot hold."""


def raise_open_file_limit() -> int:
    """Soft limit on open files up to the hard limit; returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def available_memory_bytes() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def check(tree: FatTree) -> None:
    """CapacityError if this machine cannot hold the fabric."""
    files = FILES_PER_NAMESPACE * len(tree.nodes) + FILES_SPARE
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    what = f"a {tree.kind} of k={tree.k} ({len(tree.nodes):,} namespaces)"
    if hard != resource.RLIM_INFINITY and files > hard:
        raise CapacityError(
            f"{what} needs {files:,} open files while it is built; this machine allows {hard:,} (ulimit -Hn)"
        )
    try:
        with open(BACKLOG_SYSCTL) as f:
            backlog = int(f.read())
    except OSError:
        backlog = 0
    if backlog and backlog < BACKLOG_PER_HOST * tree.n_hosts:
        raise CapacityError(
            f"{what} needs net.core.netdev_max_backlog >= {BACKLOG_PER_HOST * tree.n_hosts:,} "
            f"(it is {backlog:,}): sudo ./scripts/setup sets it"
        )
    need = Dims.of(tree).map_bytes(possible_cpus())
    avail = available_memory_bytes()
    if avail and need > MEMORY_SHARE * avail:
        raise CapacityError(
            f"{what} needs {need / 2**20:,.0f} MiB of eBPF maps, more than a quarter of the "
            f"{avail / 2**20:,.0f} MiB available"
        )
