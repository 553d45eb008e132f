"""Compile the data plane once per fabric with bcc and pin its maps.

`Compiled` compiles ebpf/switch.c and ebpf/host.c (one program object, so the
switch and host programs share their maps) for a fabric's dimensions, loads
the three entry points and pins every map under /sys/fs/bpf/{prefix}-maps.
Writing the maps is testbed.dataplane.switches' job; map access itself
(structs, handles, test runs) is testbed.dataplane.maps'.

Before every load, compiled or from the program cache, the C headers' numbers
are checked against their Python mirrors (testbed.dataplane.contract); after a
compile, the maps' structs against theirs (check_mirrors). Either drift is a
LayoutError of one line naming what drifted.

`TimerProbe` compiles ebpf/timers.c, the run's probe of the qdisc timers.

This is the only module that imports bcc's compiler.
"""

from __future__ import annotations

import ctypes as ct
import os
import re
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ebpf

from ..models import decisions
from ..topology import IFINDEX_BASE, FatTree
from . import contract, program_cache
from .maps import (
    ACK_EVENT_BYTES,
    BPFFS,
    MAP_TYPES,
    N_SEEN,
    PATH_CLASSES,
    REPS_DELAY_SLOTS,
    RINGBUF_MAPS,
    AckRx,
    CongaEntry,
    CongaFb,
    FlowRx,
    LayoutError,
    LbPort,
    PortInfo,
    PortQ,
    RepsCursor,
    RepsPending,
    RepsState,
    mirror_mismatches,
    mirrors_fingerprint,
    pin_dir,
    prog_id,
)

EBPF_DIR = ebpf.DIR
SOURCES = ("switch.c", "host.c")  # compiled together: one object, shared maps
ENTRY_POINTS = ("switch_ingress", "host_egress", "host_ingress")


MAX_FLOW_IDS = 1 << 20  # per-flow state (Dims.map_bytes): all-to-all on k=16's 1,024 hosts fits
QUEUE_MAX_TRIES = 4  # queue.h's default: compare-and-swap attempts per queue-maximum raise


@dataclass(frozen=True)
class Dims:
    """Compile-time sizes of the switch program (-D flags of maps.h)."""

    n_ifindex: int
    n_switches: int
    n_hosts: int
    w: int
    k: int
    n_edges: int
    max_tries: int = QUEUE_MAX_TRIES  # compare-and-swap attempts per queue-maximum raise (0 in a fault test)

    @classmethod
    def of(cls, tree: FatTree, max_tries: int = QUEUE_MAX_TRIES) -> Dims:
        return cls(
            n_ifindex=IFINDEX_BASE + tree.n_ports,
            n_switches=tree.n_switches,
            n_hosts=tree.n_hosts,
            w=tree.w,
            k=tree.k,
            n_edges=tree.n_edges,
            max_tries=max_tries,
        )

    @property
    def n_keys(self) -> int:
        """Destination keys per switch: edges (edge switches) or pods (aggregation)."""
        return max(self.n_edges, self.k)

    @property
    def n_flows(self) -> int:
        """Flow ids + 1 the receivers count: every pair of hosts, ids from 1 (workloads number the n x n
        pairs), at most MAX_FLOW_IDS."""
        return min(self.n_hosts * self.n_hosts, MAX_FLOW_IDS) + 1

    @property
    def n_ptr(self) -> int:
        return decisions.N_CLASSES * self.n_keys

    def map_bytes(self, ncpu: int) -> int:
        """Memory of the largest maps, which the kernel preallocates (maps.h): Ofan pointers per switch, pipe
        and pointer id (and per CPU), valid-uplink masks and weighted Ofan's rounds, flow and ACK counters, REPS state and DRB pointers
        per flow, port queues, per (top switch, destination) counts, host path masks, the sampled schemes' port
        state, flooded views, CONGA's tables and REPS's delay lines (the structs' sizes from their mirrors)."""
        per_flow = ct.sizeof(FlowRx) + ct.sizeof(AckRx) + ct.sizeof(RepsState) + 8 * decisions.N_CLASSES
        return (
            8 * self.n_switches * self.k * self.n_ptr
            + 8 * ncpu * self.n_switches * self.n_ptr
            + 4 * self.n_switches * self.n_keys
            + 8 * self.n_switches * self.n_keys * decisions.WOFAN_ROUNDS
            + per_flow * self.n_flows
            + (ct.sizeof(PortQ) + ct.sizeof(LbPort) + ct.sizeof(PortInfo)) * self.n_ifindex
            + 8 * self.n_switches * self.n_hosts
            + 8 * self.n_edges * self.n_edges
            + 8 * N_SEEN
            + ACK_EVENT_BYTES
            + 36 * self.n_switches * self.n_keys
            + (ct.sizeof(CongaFb) + ct.sizeof(CongaEntry)) * self.w * self.n_edges * self.n_edges
            + 8 * self.n_edges * self.n_edges
            + (ct.sizeof(RepsPending) * REPS_DELAY_SLOTS + ct.sizeof(RepsCursor)) * PATH_CLASSES * self.n_hosts
        )

    def cflags(self, test_run: bool = False) -> list[str]:
        return (
            (["-DTB_TEST_RUN"] if test_run else [])
            + [
                f"-DN_IFINDEX={self.n_ifindex}",
                f"-DN_SWITCHES={self.n_switches}",
                f"-DN_HOSTS={self.n_hosts}",
                f"-DW={self.w}",
                f"-DK={self.k}",
                f"-DN_EDGES={self.n_edges}",
                f"-DN_PTR={self.n_ptr}",
                f"-DN_KEYS={self.n_keys}",
                f"-DB_BITS={decisions.b_bits(self.w)}",
                f"-DN_FLOWS={self.n_flows}",
                f"-DN_SEEN={N_SEEN}",
            ]
            + ([f"-DQUEUE_MAX_TRIES={self.max_tries}"] if self.max_tries != QUEUE_MAX_TRIES else [])
        )


def source() -> str:
    """The sources with their local headers inlined, each header once: bcc
    rewrites map calls (`m.lookup()`) only in the main file, so headers must
    become part of it."""
    seen: set[Path] = set()

    def expand(path: Path) -> str:
        out = []
        for line in path.read_text().splitlines():
            m = re.match(r'\s*#include "([^"]+)"', line)
            if m:
                inc = EBPF_DIR / "include" / m.group(1)
                if inc not in seen:
                    seen.add(inc)
                    out.append(expand(inc))
                continue
            if line.strip() != "#pragma once":
                out.append(line)
        return "\n".join(out)

    # the mirrors' layout is part of the text, so of the cache key: a mirror that changes is checked again
    return "\n".join(expand(EBPF_DIR / name) for name in SOURCES) + f"\n/* python mirrors {mirrors_fingerprint()} */\n"


def check_mirrors(bpf: Any) -> None:
    """Every map's key and value as the compiled program declares them (bcc's reading of the C types) against
    the Python mirrors of testbed/dataplane/maps.py: a LayoutError of one line naming what drifted. (The numbers
    are contract.check's.)"""
    import json

    from bcc import BPF
    from bcc.libbcc import lib

    bad: list[str] = []
    for name, (key_t, value_t) in MAP_TYPES.items():
        for kind, ours, desc in (("key", key_t, lib.bpf_table_key_desc), ("value", value_t, lib.bpf_table_leaf_desc)):
            theirs = BPF._decode_table_type(json.loads(desc(bpf.module, name.encode()).decode()))
            bad += mirror_mismatches(f"map {name}'s {kind}", ours, theirs)
    if bad:
        raise LayoutError(
            f"ebpf/include/shared.h and testbed/dataplane/maps.py disagree: {'; '.join(bad[:3])}"
            + (f" (and {len(bad) - 3} more)" if len(bad) > 3 else "")
        )


def ensure_bpffs() -> None:
    if not os.path.ismount(BPFFS):
        subprocess.run(["mount", "-t", "bpf", "bpf", BPFFS], check=True)


class Compiled:
    """The switch program compiled for one fabric. `fds` maps entry point to
    program fd. `pin(prefix)` pins every map. `close()` is idempotent.

    A program compiled before with the same source and flags comes from the
    program cache (program_cache.py): same instructions, new maps, verified
    again by the kernel, no clang. `from_cache` says which happened."""

    def __init__(self, dims: Dims, test_run: bool = False) -> None:
        """`test_run=True` builds the variant for BPF_PROG_TEST_RUN: random draws
        come from the packet's mark and priority, and nothing is forwarded.
        TESTBED_PROGRAM_CACHE=off compiles every time (program_cache.py).
        A LayoutError when the headers' numbers and their Python mirrors disagree (contract.check), before
        anything is compiled or loaded."""
        contract.check()
        self.dims = dims
        self._bpf: Any = None
        self.map_fds: dict[str, int] = {}
        self.fds: dict[str, int] = {}
        self.from_cache = False
        text, cflags = source(), dims.cflags(test_run)
        entry, cached = program_cache.load(text, cflags, bcc_version())
        if cached is not None:
            self.map_fds, self.fds = cached
            self.from_cache = True
            return
        program_cache.remember(entry, self._compile(text, cflags), ENTRY_POINTS)

    def _compile(self, text: str, cflags: list[str]) -> int:
        """clang through bcc; the bcc module's handle."""
        from bcc import BPF  # the only bcc import of the package

        self._bpf = BPF(text=text.encode(), cflags=cflags)
        check_mirrors(self._bpf)
        for name in ENTRY_POINTS:
            self.fds[name] = self._bpf.load_func(name.encode(), BPF.SCHED_CLS).fd
        self.map_fds = program_cache.module_maps(self._bpf.module)
        return int(self._bpf.module)

    def prog_ids(self) -> dict[str, int]:
        return {name: prog_id(fd) for name, fd in self.fds.items()}

    def pin(self, prefix: str) -> str:
        from bcc.libbcc import lib

        ensure_bpffs()
        d = pin_dir(prefix)
        os.makedirs(d, exist_ok=True)
        for name in (*MAP_TYPES, *RINGBUF_MAPS):
            path = os.path.join(d, name)
            if lib.bpf_obj_pin(self.map_fds[name], path.encode()) != 0:
                raise OSError(ct.get_errno(), f"pin {path}")
        return d

    def close(self) -> None:
        if self._bpf is not None:
            self._bpf.cleanup()
            self._bpf = None
        elif self.from_cache:
            for fd in (*self.map_fds.values(), *self.fds.values()):
                os.close(fd)
        self.map_fds, self.fds = {}, {}

    def __enter__(self) -> Compiled:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


QDISC_WATCHDOG_SYMBOL = "qdisc_watchdog"


class TimerProbe:
    """ebpf/timers.c loaded as a tracepoint program (`prog_fd`), with
    `map_fd` of its per-CPU array timer_late; `attach()` hooks it to
    timer:hrtimer_expire_entry until `close()`. From the program cache when
    compiled before (the watchdog's address, which changes with every boot,
    is one of its flags). OSError when the kernel has no qdisc_watchdog
    symbol or refuses the program; `close()` is idempotent."""

    def __init__(self) -> None:
        self._bpf: Any = None
        self._perf_fd = -1
        address = kernel_symbol(QDISC_WATCHDOG_SYMBOL)
        text = (EBPF_DIR / "timers.c").read_text()
        cflags = [f"-DQDISC_WATCHDOG={address:#x}ULL"]
        entry, cached = program_cache.load(text, cflags, bcc_version(), program_cache.TRACEPOINT)
        if cached is not None:
            self.map_fd, self.prog_fd = cached[0]["timer_late"], cached[1]["watchdog_expiry"]
            return
        from bcc import BPF

        self._bpf = BPF(text=text.encode(), cflags=cflags)
        self.prog_fd = self._bpf.load_func(b"watchdog_expiry", BPF.TRACEPOINT).fd
        self.map_fd = program_cache.module_maps(self._bpf.module)["timer_late"]
        program_cache.remember(entry, int(self._bpf.module), ("watchdog_expiry",))

    def attach(self) -> None:
        """To timer:hrtimer_expire_entry, until close(); OSError if the kernel refuses."""
        from bcc.libbcc import lib

        fd = lib.bpf_attach_tracepoint(self.prog_fd, b"timer", b"hrtimer_expire_entry")
        if fd < 0:
            raise OSError(ct.get_errno(), "attaching to timer:hrtimer_expire_entry")
        self._perf_fd = fd

    def close(self) -> None:
        if self._perf_fd >= 0:
            from bcc.libbcc import lib

            lib.bpf_close_perf_event_fd(self._perf_fd)
            self._perf_fd = -1
        if self._bpf is not None:
            self._bpf.cleanup()
            self._bpf = None
        elif self.prog_fd >= 0:
            os.close(self.prog_fd)
            os.close(self.map_fd)
        self.prog_fd = self.map_fd = -1


def kernel_symbol(name: str) -> int:
    """A kernel function's address (/proc/kallsyms, readable with its addresses by root); OSError if absent."""
    with open("/proc/kallsyms") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[2] == name and int(parts[0], 16):
                return int(parts[0], 16)
    raise OSError(f"kernel symbol {name} not found (or its address hidden)")


class CompileThread(threading.Thread):
    """Compile in the background (bcc's compile call releases the GIL) while
    the namespaces and links are created."""

    def __init__(self, dims: Dims) -> None:
        super().__init__(name="bcc-compile", daemon=True)
        self.dims = dims
        self.result: Compiled | None = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.result = Compiled(self.dims)
        except BaseException as e:  # re-raised in get()
            self.error = e

    def get(self) -> Compiled:
        self.join()
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


def bcc_version() -> str | None:
    """Version of the bcc Python package, None without bcc (for provenance)."""
    try:
        import bcc
    except ImportError:
        return None
    return str(getattr(bcc, "__version__", "unknown"))
