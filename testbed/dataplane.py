"""The eBPF data plane: compile the switch once with bcc, pin its maps, and
program them from a fat tree's description.

- `Compiled` compiles ebpf/switch.c for a fabric's dimensions, loads the three
  entry points and pins every map under /sys/fs/bpf/{prefix}-maps.
- `program()` writes a fat tree's forwarding state into the maps;
  `reset_state()`, `apply_schemes()` and `set_uplink_masks()` change it live.
- Map access itself (structs, handles, test runs) lives in testbed.bpfmaps
  and is re-exported here.

This is the only module that imports bcc's compiler.
"""

from __future__ import annotations

import ctypes as ct
import os
import random
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import schemes
from .bpfmaps import (BPFFS, COUNTER_NAMES, MAP_TYPES, PERCPU_MAPS, AckRx, DstInfo, FlowRx, MapHandle, Maps,
                      PercpuU64Map, PortInfo, PortQ, RunCfg, SkBuff, SwitchCfg, pin_dir, possible_cpus, prog_exists,
                      prog_id, prog_test_run, unpin)
from .schemes import Scheme
from .topology import IFINDEX_BASE, FatTree, Level, Node

__all__ = ["BPFFS", "COUNTER_NAMES", "MAP_TYPES", "PERCPU_MAPS", "AckRx", "Compiled", "CompileThread", "Dims",
           "DstInfo", "FlowRx", "MapHandle", "Maps", "PercpuU64Map", "PortInfo", "PortQ", "RunCfg", "SkBuff",
           "SwitchCfg", "pin_dir", "possible_cpus", "prog_exists", "prog_id", "prog_test_run", "unpin"]

EBPF_DIR = Path(__file__).resolve().parents[1] / "ebpf"
ENTRY_POINTS = ("switch_ingress", "host_egress", "host_ingress")


@dataclass(frozen=True)
class Dims:
    """Compile-time sizes of the switch program (-D flags of maps.h)."""

    n_ifindex: int
    n_switches: int
    n_hosts: int
    w: int
    k: int
    n_edges: int

    @classmethod
    def of(cls, tree: FatTree) -> Dims:
        return cls(IFINDEX_BASE + tree.n_ports, tree.n_switches, tree.n_hosts, tree.w, tree.k, tree.n_edges)

    @property
    def n_keys(self) -> int:
        """Destination keys per switch: edges (edge switches) or pods (aggregation)."""
        return max(self.n_edges, self.k)

    @property
    def n_ptr(self) -> int:
        return schemes.N_CLASSES * self.n_keys

    def cflags(self, test_run: bool = False) -> list[str]:
        return (["-DTB_TEST_RUN"] if test_run else []) + [f"-DN_IFINDEX={self.n_ifindex}", f"-DN_SWITCHES={self.n_switches}", f"-DN_HOSTS={self.n_hosts}",
                f"-DW={self.w}", f"-DK={self.k}", f"-DN_EDGES={self.n_edges}", f"-DN_PTR={self.n_ptr}", f"-DN_KEYS={self.n_keys}",
                f"-DB_BITS={schemes.b_bits(self.w)}"]


def source() -> str:
    """switch.c with its local headers inlined: bcc rewrites map calls
    (`m.lookup()`) only in the main file, so headers must become part of it."""
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

    return expand(EBPF_DIR / "switch.c")


def ensure_bpffs() -> None:
    if not os.path.ismount(BPFFS):
        subprocess.run(["mount", "-t", "bpf", "bpf", BPFFS], check=True)


class Compiled:
    """The switch program compiled for one fabric. `fds` maps entry point to
    program fd. `pin(prefix)` pins every map. `close()` is idempotent."""

    def __init__(self, dims: Dims, test_run: bool = False) -> None:
        """`test_run=True` builds the variant for BPF_PROG_TEST_RUN: random draws
        come from the packet's mark and priority, and nothing is forwarded."""
        from bcc import BPF  # the only bcc import of the package

        self.dims = dims
        self._bpf: Any = BPF(text=source().encode(), cflags=dims.cflags(test_run))
        self.fds: dict[str, int] = {}
        for name in ENTRY_POINTS:
            self.fds[name] = self._bpf.load_func(name.encode(), BPF.SCHED_CLS).fd

    def prog_ids(self) -> dict[str, int]:
        return {name: prog_id(fd) for name, fd in self.fds.items()}

    def pin(self, prefix: str) -> str:
        from bcc.libbcc import lib

        ensure_bpffs()
        d = pin_dir(prefix)
        os.makedirs(d, exist_ok=True)
        for name in MAP_TYPES:
            path = os.path.join(d, name)
            if lib.bpf_obj_pin(self._bpf[name.encode()].map_fd, path.encode()) != 0:
                raise OSError(ct.get_errno(), f"pin {path}")
        return d

    def close(self) -> None:
        if self._bpf is not None:
            self._bpf.cleanup()
            self._bpf = None

    def __enter__(self) -> Compiled:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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


# -- programming a fat tree -------------------------------------------------
def _mac8(mac: bytes) -> Any:
    return (ct.c_uint8 * 8)(*mac)


def program(maps: Maps, tree: FatTree) -> None:
    """Write the fat tree's ports, switches, links and destinations."""
    for p in tree.ports:
        node = tree.by_name[p.node]
        peer = tree.by_name[p.peer]
        maps.port_info.set(p.ifindex, PortInfo(node=node.nid, level=int(node.level), peer_ifindex=p.peer_ifindex,
                                               stage=int(p.stage), to_host=int(peer.is_host),
                                               local=tree.local_index(p), mac=_mac8(p.mac)))
    for sw in tree.switches:
        maps.switch_cfg.set(sw.nid, SwitchCfg(level=int(sw.level), pod=max(sw.pod, 0), index=sw.index,
                                              edge_global=tree.edge_global(sw) if sw.level is Level.EDGE else 0,
                                              scheme=int(Scheme.ECMP), seed=0))
        for slot, p in enumerate(tree.downlinks(sw.name)):
            maps.downlinks.set(sw.nid * tree.k + slot, p.ifindex)
        if sw.level is not Level.CORE:
            for slot, p in enumerate(tree.uplinks(sw.name)):
                maps.uplinks.set(sw.nid * tree.w + slot, p.ifindex)
    for h in tree.hosts:
        edge = tree.by_name[tree.edge_of(h.name)]
        key = int.from_bytes(tree.host_ip(h).packed, "little")
        maps.dst_info.set(key, DstInfo(host=h.nid, pod=h.pod, edge=edge.index, edge_global=tree.edge_global(edge),
                                       slot=h.index, mac=_mac8(tree.host_port(h.name).mac)))
    for i, v in enumerate(schemes.choose_basis(tree.w)):
        maps.ofan_basis.set(i, v)
    set_ar_thresholds(maps, schemes.ar_thresholds())
    full = (1 << tree.w) - 1
    set_uplink_masks(maps, tree, {(sw.nid, d): full for sw in lb_switches(tree) for d in range(n_keys(tree, sw.level))})


def set_uplink_masks(maps: Maps, tree: FatTree, masks: dict[tuple[int, int], int]) -> None:
    """Valid-uplink bitmasks by (switch id, destination key), in one batch."""
    nk = Dims.of(tree).n_keys
    maps.uplink_mask.set_many([(sw * nk + d, m) for (sw, d), m in masks.items()])


def set_downlinks(maps: Maps, tree: FatTree, routes: dict[tuple[int, int], int]) -> None:
    """Downward routes by (switch id, slot): egress ifindex, or 0 to withdraw the route."""
    maps.downlinks.set_many([(sw * tree.k + slot, ifx) for (sw, slot), ifx in routes.items()])


def set_ar_thresholds(maps: Maps, thresholds: tuple[int, ...]) -> None:
    for i, t in enumerate(thresholds):
        maps.ar_thresh.set(i, t)


def ar_thresholds(maps: Maps) -> tuple[int, ...]:
    return tuple(int(maps.ar_thresh.get(i).value) for i in range(3))


def n_keys(tree: FatTree, level: Level) -> int:
    """Destination keys of a switch tier: destination edges (edge), pods (agg)."""
    return tree.n_edges if level is Level.EDGE else tree.pods


def lb_switches(tree: FatTree) -> list[Node]:
    return [sw for sw in tree.switches if sw.level is not Level.CORE]


def reset_state(maps: Maps, tree: FatTree, seed: int, switches: list[str] | None = None) -> None:
    """Fresh per-switch state drawn from `seed`, so repeated runs with one seed
    are identical and runs with different seeds independent: ECMP seeds, Ofan
    and pOfan pointers (every pipe, every CPU; data pointers uniform in [0, w),
    small-class pointers half a rotation away), Simple RR pointers, DRILL memory."""
    rng = random.Random(seed)
    dims = Dims.of(tree)
    ncpu = maps.ofan_ptr_cpu.ncpu
    ptrs: list[tuple[int, int]] = []
    for sw in lb_switches(tree):
        if switches is not None and sw.name not in switches:
            continue
        cfg = maps.switch_cfg.get(sw.nid)
        cfg.seed = rng.getrandbits(32)
        maps.switch_cfg.set(sw.nid, cfg)
        nk = n_keys(tree, sw.level)
        for pipe in range(tree.switch_ports):
            base = (sw.nid * tree.switch_ports + pipe) * dims.n_ptr
            ptrs += [(base + pid, v) for pid, v in enumerate(schemes.ofan_initial_pointers(nk, tree.w, rng))]
        per_cpu = [schemes.ofan_initial_pointers(nk, tree.w, rng) for _ in range(ncpu)]
        for pid in range(2 * nk):
            maps.ofan_ptr_cpu.set(sw.nid * dims.n_ptr + pid, [per_cpu[c][pid] for c in range(ncpu)])
        maps.rr_ptr.set(sw.nid, rng.randrange(tree.w))
        maps.drill_mem.set(sw.nid, rng.randrange(tree.w))
    maps.ofan_ptr.set_many(ptrs)


def apply_schemes(maps: Maps, tree: FatTree, assignment: dict[str, schemes.SchemeConfig]) -> float:
    """Set each named switch's scheme by map writes only (the programs stay
    attached). Returns how long the writes took, in seconds: after the last
    write returns, every packet the switches process uses the new scheme."""
    by_name = tree.by_name
    cfgs = {}
    for name in assignment:
        cfgs[name] = maps.switch_cfg.get(by_name[name].nid)
    t0 = time.perf_counter()
    for name, sc in assignment.items():
        cfg = cfgs[name]
        cfg.scheme = int(sc.scheme)
        cfg.pipe_size = sc.pipe_size
        maps.switch_cfg.set(by_name[name].nid, cfg)
    return time.perf_counter() - t0


def current_schemes(maps: Maps, tree: FatTree) -> dict[str, schemes.SchemeConfig]:
    out = {}
    for sw in lb_switches(tree):
        cfg = maps.switch_cfg.get(sw.nid)
        out[sw.name] = schemes.SchemeConfig(Scheme(cfg.scheme), cfg.pipe_size)
    return out


def set_scheme(maps: Maps, tree: FatTree, scheme: Scheme, seed: int, switches: list[str] | None = None,
               pipe_size: int = 4) -> None:
    """Reset the state of the given LB switches (all by default) from `seed`
    and set their scheme."""
    names = switches if switches is not None else [sw.name for sw in lb_switches(tree)]
    reset_state(maps, tree, seed, names)
    apply_schemes(maps, tree, {n: schemes.SchemeConfig(scheme, pipe_size) for n in names})
