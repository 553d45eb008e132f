"""The eBPF data plane: compile the switch once with bcc, pin its maps, and
read or write those maps from any process.

- `Compiled` compiles ebpf/switch.c for a fabric's dimensions, loads the three
  entry points and pins every map under /sys/fs/bpf/{prefix}-maps.
- `Maps` opens the pinned maps (in this process or a later one) and offers
  typed reads and writes; structs mirror ebpf/include/shared.h field by field.
- `program()` writes a fat tree's forwarding state and scheme into the maps.

This is the only module that imports bcc.
"""

from __future__ import annotations

import ctypes as ct
import os
import random
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from . import schemes
from .schemes import Scheme
from .topology import IFINDEX_BASE, FatTree, Level, Node

EBPF_DIR = Path(__file__).resolve().parents[1] / "ebpf"
BPFFS = "/sys/fs/bpf"
ENTRY_POINTS = ("switch_ingress", "host_egress", "host_ingress")
PERCPU_MAPS = frozenset({"ofan_ptr_cpu"})


def pin_dir(prefix: str) -> str:
    return os.path.join(BPFFS, f"{prefix}-maps")


# -- structs shared with ebpf/include/shared.h ------------------------------
u32, u64 = ct.c_uint32, ct.c_uint64


class PortInfo(ct.Structure):
    _fields_ = [("node", u32), ("level", u32), ("peer_ifindex", u32), ("stage", u32),
                ("to_host", u32), ("local", u32), ("mac", ct.c_uint8 * 8)]


class SwitchCfg(ct.Structure):
    _fields_ = [("level", u32), ("pod", u32), ("index", u32), ("edge_global", u32),
                ("scheme", u32), ("seed", u32), ("pipe_size", u32), ("pad", u32)]


class DstInfo(ct.Structure):
    _fields_ = [("host", u32), ("pod", u32), ("edge", u32), ("edge_global", u32),
                ("slot", u32), ("pad", u32), ("mac", ct.c_uint8 * 8)]


class PortQ(ct.Structure):
    _fields_ = [(n, u64) for n in (
        "pkts", "bytes", "max_pkts", "max_bytes", "area_pkts", "area_bytes", "tx_pkts", "tx_bytes",
        "rx_pkts", "rx_bytes", "first_rx_ns", "last_rx_ns", "first_tx_ns", "last_tx_ns", "busy_ns", "busy_since",
        "busy_periods")]


class FlowRx(ct.Structure):
    _fields_ = [(n, u64) for n in ("pkts", "bytes", "first_ns", "last_ns", "max_psn", "ooo", "max_disp")]


class AckRx(ct.Structure):
    _fields_ = [(n, u64) for n in ("acks", "first_ns", "last_ns")]


class RunCfg(ct.Structure):
    _fields_ = [("acks", u32), ("pad", u32)]


CNT_NO_ROUTE, CNT_NOT_IPV4, CNT_REDIRECT_ERR, CNT_BAD_PORT, CNT_ACK_ERR, CNT_UNREACHABLE = 0, 1, 2, 3, 4, 5
COUNTER_NAMES = {CNT_NO_ROUTE: "no_route", CNT_NOT_IPV4: "not_ipv4", CNT_REDIRECT_ERR: "redirect_error",
                 CNT_BAD_PORT: "bad_port", CNT_ACK_ERR: "ack_error", CNT_UNREACHABLE: "unreachable"}

# name => (key type, value type)
MAP_TYPES: dict[str, tuple[type[Any], type[Any]]] = {
    "port_info": (u32, PortInfo),
    "port_q": (u32, PortQ),
    "switch_cfg": (u32, SwitchCfg),
    "uplinks": (u32, u32),
    "downlinks": (u32, u32),
    "dst_info": (u32, DstInfo),
    "ofan_ptr": (u32, u64),
    "ofan_ptr_cpu": (u32, u64),  # per-CPU
    "rr_ptr": (u32, u64),
    "drill_mem": (u32, u32),
    "ar_thresh": (u32, u64),
    "ofan_basis": (u32, u32),
    "flow_rx": (u32, FlowRx),
    "ack_rx": (u32, AckRx),
    "run_cfg": (u32, RunCfg),
    "uplink_pkts": (u32, u64),
    "uplink_mask": (u32, u32),
    "sw_drops": (u32, u64),
    "counters": (u32, u64),
}


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


# -- program and map handles ------------------------------------------------
class _BpfProgInfo(ct.Structure):
    _fields_ = [("type", u32), ("id", u32), ("rest", ct.c_uint8 * 248)]


def prog_id(fd: int) -> int:
    from bcc.libbcc import lib

    info = _BpfProgInfo()
    size = u32(ct.sizeof(info))
    if lib.bpf_obj_get_info_by_fd(fd, ct.byref(info), ct.byref(size)) != 0:
        raise OSError(ct.get_errno(), "bpf_obj_get_info_by_fd")
    return int(info.id)


def prog_exists(pid: int) -> bool:
    from bcc.libbcc import lib

    fd = lib.bpf_prog_get_fd_by_id(pid)
    if fd < 0:
        return False
    os.close(fd)
    return True


K = TypeVar("K")
V = TypeVar("V")


def possible_cpus() -> int:
    """Number of possible CPUs: the number of values of a per-CPU map entry."""
    with open("/sys/devices/system/cpu/possible") as f:
        text = f.read().strip()
    n = 0
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


class MapHandle(Generic[K, V]):
    """Typed access to one pinned map by fd."""

    def __init__(self, fd: int, key_type: type[K], value_type: type[V]) -> None:
        from bcc.libbcc import lib

        self._lib = lib
        self.fd = fd
        self.key_type = key_type
        self.value_type = value_type

    def set_many(self, items: list[tuple[int, int]]) -> None:
        """Write many integer values in one syscall (BPF_MAP_UPDATE_BATCH)."""
        if not items:
            return
        n = len(items)
        keys = (self.key_type * n)(*[k for k, _ in items])  # type: ignore[operator]
        vals = (self.value_type * n)(*[v for _, v in items])  # type: ignore[operator]
        count = u32(n)
        if self._lib.bpf_update_batch(self.fd, ct.byref(keys), ct.byref(vals), ct.byref(count)) != 0:
            raise OSError(ct.get_errno(), "map batch update")

    def get(self, key: int) -> V | None:
        k = self.key_type(key)  # type: ignore[call-arg]
        v = self.value_type()
        if self._lib.bpf_lookup_elem(self.fd, ct.byref(k), ct.byref(v)) != 0:  # type: ignore[arg-type]
            return None
        return v

    def set(self, key: int, value: Any) -> None:
        k = self.key_type(key)  # type: ignore[call-arg]
        v = value if isinstance(value, ct.Structure) else self.value_type(value)  # type: ignore[call-arg]
        if self._lib.bpf_update_elem(self.fd, ct.byref(k), ct.byref(v), 0) != 0:  # type: ignore[arg-type]
            raise OSError(ct.get_errno(), f"map update key {key}")

    def read_array(self, n: int) -> Any:
        """Entries 0..n-1 of an array map in one syscall per batch (BPF_MAP_LOOKUP_BATCH)."""
        keys = (self.key_type * n)()  # type: ignore[operator]
        vals = (self.value_type * n)()  # type: ignore[operator]
        out_batch = u32(0)
        count = u32(n)
        rc = self._lib.bpf_lookup_batch(self.fd, None, ct.byref(out_batch), ct.byref(keys), ct.byref(vals),
                                        ct.byref(count))
        if rc != 0 and ct.get_errno() != 2:  # ENOENT: the whole array fitted in this batch
            raise OSError(ct.get_errno(), "map batch lookup")
        return vals

    def delete(self, key: int) -> None:
        k = self.key_type(key)  # type: ignore[call-arg]
        self._lib.bpf_delete_elem(self.fd, ct.byref(k))  # type: ignore[arg-type]

    def keys(self) -> Iterator[int]:
        k = self.key_type()
        nxt = self.key_type()
        first = True
        while True:
            rc = self._lib.bpf_get_next_key(self.fd, None if first else ct.byref(k), ct.byref(nxt))  # type: ignore[arg-type]
            if rc != 0:
                return
            first = False
            yield int(nxt.value)  # type: ignore[attr-defined]
            ct.memmove(ct.byref(k), ct.byref(nxt), ct.sizeof(k))  # type: ignore[arg-type]

    def clear(self) -> None:
        for key in list(self.keys()):
            self.delete(key)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class PercpuU64Map:
    """A per-CPU array of u64: each key holds one value per possible CPU."""

    def __init__(self, fd: int) -> None:
        from bcc.libbcc import lib

        self._lib = lib
        self.fd = fd
        self.ncpu = possible_cpus()

    def get(self, key: int) -> list[int]:
        k = u32(key)
        v = (u64 * self.ncpu)()
        if self._lib.bpf_lookup_elem(self.fd, ct.byref(k), ct.byref(v)) != 0:
            raise OSError(ct.get_errno(), f"per-CPU map lookup {key}")
        return list(v)

    def set(self, key: int, values: list[int]) -> None:
        k = u32(key)
        v = (u64 * self.ncpu)(*values)
        if self._lib.bpf_update_elem(self.fd, ct.byref(k), ct.byref(v), 0) != 0:
            raise OSError(ct.get_errno(), f"per-CPU map update {key}")

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class Maps:
    """All pinned maps of one fabric. Works in any process while the fabric is up."""

    def __init__(self, prefix: str) -> None:
        from bcc.libbcc import lib

        self.prefix = prefix
        self._maps: dict[str, Any] = {}
        d = pin_dir(prefix)
        for name, (kt, vt) in MAP_TYPES.items():
            fd = lib.bpf_obj_get(os.path.join(d, name).encode())
            if fd < 0:
                self.close()
                raise FileNotFoundError(f"pinned map {name} of fabric {prefix!r} not found in {d}")
            self._maps[name] = PercpuU64Map(fd) if name in PERCPU_MAPS else MapHandle(fd, kt, vt)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_maps"][name]
        except KeyError:
            raise AttributeError(name) from None

    def close(self) -> None:
        for m in self._maps.values():
            m.close()

    def __enter__(self) -> Maps:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def counter_values(self) -> dict[str, int]:
        out = {}
        for idx, name in COUNTER_NAMES.items():
            v = self._maps["counters"].get(idx)
            out[name] = int(v.value) if v is not None else 0
        return out


def unpin(prefix: str) -> bool:
    d = pin_dir(prefix)
    if os.path.isdir(d):
        shutil.rmtree(d)
        return True
    return False


# -- BPF_PROG_TEST_RUN --------------------------------------------------------
class SkBuff(ct.Structure):
    """struct __sk_buff up to hwtstamp: the context of a SCHED_CLS test run."""

    _fields_ = [("len", u32), ("pkt_type", u32), ("mark", u32), ("queue_mapping", u32), ("protocol", u32),
                ("vlan_present", u32), ("vlan_tci", u32), ("vlan_proto", u32), ("priority", u32),
                ("ingress_ifindex", u32), ("ifindex", u32), ("tc_index", u32), ("cb", u32 * 5), ("hash", u32),
                ("tc_classid", u32), ("data", u32), ("data_end", u32), ("napi_id", u32), ("family", u32),
                ("remote_ip4", u32), ("local_ip4", u32), ("remote_ip6", u32 * 4), ("local_ip6", u32 * 4),
                ("remote_port", u32), ("local_port", u32), ("data_meta", u32), ("flow_keys", u64),
                ("tstamp", u64), ("wire_len", u32), ("gso_segs", u32), ("sk", u64), ("gso_size", u32),
                ("tstamp_type", ct.c_uint8), ("pad", ct.c_uint8 * 3), ("hwtstamp", u64)]


class _TestRunOpts(ct.Structure):
    _fields_ = [("sz", ct.c_size_t), ("data_in", ct.c_void_p), ("data_out", ct.c_void_p),
                ("data_size_in", u32), ("data_size_out", u32), ("ctx_in", ct.c_void_p), ("ctx_out", ct.c_void_p),
                ("ctx_size_in", u32), ("ctx_size_out", u32), ("retval", u32), ("repeat", ct.c_int),
                ("duration", u32), ("flags", u32), ("cpu", ct.c_int), ("batch_size", u32)]


_libbpf: Any = None


def prog_test_run(prog_fd: int, packet: bytes, ctx: SkBuff) -> tuple[int, SkBuff]:
    """Run a SCHED_CLS program once on `packet` (BPF_PROG_TEST_RUN through
    libbpf). Returns the program's return value and the context it left."""
    global _libbpf
    if _libbpf is None:
        _libbpf = ct.CDLL("libbpf.so.1", use_errno=True)
        _libbpf.bpf_prog_test_run_opts.argtypes = [ct.c_int, ct.POINTER(_TestRunOpts)]
    data = ct.create_string_buffer(packet, len(packet))
    out = SkBuff()
    opts = _TestRunOpts(sz=ct.sizeof(_TestRunOpts), data_in=ct.cast(data, ct.c_void_p), data_size_in=len(packet),
                        ctx_in=ct.cast(ct.pointer(ctx), ct.c_void_p), ctx_size_in=ct.sizeof(ctx),
                        ctx_out=ct.cast(ct.pointer(out), ct.c_void_p), ctx_size_out=ct.sizeof(out), repeat=1)
    if _libbpf.bpf_prog_test_run_opts(prog_fd, ct.byref(opts)) != 0:
        raise OSError(ct.get_errno(), "BPF_PROG_TEST_RUN")
    return int(opts.retval), out


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
    return tree.n_edges if level is Level.EDGE else tree.k


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
