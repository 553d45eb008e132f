"""Pinned BPF maps and programs, from any process: the structs and map indices shared with the headers
ebpf/include/shared.h pulls in (topology.h, counters.h, run.h, reps.h, sampled.h; mirrored field by field
and number by number), typed map handles, program ids, and BPF_PROG_TEST_RUN. Uses libbcc's and libbpf's C
functions through ctypes; compiling is testbed.dataplane.compile's job, which checks these mirrors against the
program on every load (the structs: compile.check_mirrors; the numbers: testbed.dataplane.contract).
"""

from __future__ import annotations

import contextlib
import ctypes as ct
import functools
import mmap
import os
import shutil
from typing import Any, Generic, TypeVar

import numpy as np

from ..models.host import REPS_SLOTS as REPS_SLOTS
from ..models.sampled import LB_DECAY_STEPS as LB_DECAY_STEPS

BPFFS = "/sys/fs/bpf"
PERCPU_MAPS = frozenset({"ofan_ptr_cpu", "rx_total"})
U64 = 1 << 64


def signed(v: int) -> int:
    """A u64 map counter that may have gone below zero (occupancy, integrals), as a Python int."""
    v %= U64
    return v - U64 if v >= 1 << 63 else v


def pin_dir(prefix: str) -> str:
    return os.path.join(BPFFS, f"{prefix}-maps")


# -- structs shared with the headers of ebpf/include/shared.h -----------------
u32, u64 = ct.c_uint32, ct.c_uint64


# topology.h
class PortInfo(ct.Structure):
    _fields_ = [
        ("node", u32),
        ("level", u32),
        ("peer_ifindex", u32),
        ("stage", u32),
        ("to_host", u32),
        ("local", u32),
        ("mac", ct.c_uint8 * 8),
    ]


class SwitchCfg(ct.Structure):
    _fields_ = [
        ("level", u32),
        ("pod", u32),
        ("index", u32),
        ("edge_global", u32),
        ("scheme", u32),
        ("seed", u32),
        ("pipe_size", u32),
        ("top", u32),
    ]


class DstInfo(ct.Structure):
    _fields_ = [
        ("host", u32),
        ("pod", u32),
        ("edge", u32),
        ("edge_global", u32),
        ("slot", u32),
        ("pad", u32),
        ("mac", ct.c_uint8 * 8),
    ]


# counters.h
class PortQ(ct.Structure):
    _fields_ = [
        (n, u64)
        for n in (
            "pkts",
            "bytes",
            "max_pkts",
            "max_bytes",
            "area_pkts",
            "area_bytes",
            "tx_pkts",
            "tx_bytes",
            "rx_pkts",
            "rx_bytes",
            "first_rx_ns",
            "last_rx_ns",
            "first_tx_ns",
            "last_tx_ns",
            "busy_ns",
            "busy_since",
            "busy_periods",
            "max_giveups",
            "nic_last_ns",
            "nic_work_ns",
            "nic_work_max_ns",
            "nic_last_data_ns",
            "nic_gap_max_ns",
            "nic_b2b",
            "ecn_marked",
            "nic_data_bytes",
            "buf_drops",
            "buf_ack_drops",
            "nic_dry",
            "nic_dry_gap_max_ns",
            "nic_data_pkts",
            "nic_held_gap_max_ns",
        )
    ]


PORTQ_DTYPE = np.dtype([(f[0], "<u8") for f in PortQ._fields_])  # PortQ as numpy sees it: every field a u64


class FlowRx(ct.Structure):
    _fields_ = [
        (n, u64)
        for n in (
            "pkts",
            "bytes",
            "first_ns",
            "last_ns",
            "max_psn",
            "ooo",
            "max_disp",
            "ce",
            "uniq",
            "dups",
            "seen_base",
            "seen_words",
        )
    ]


class AckRx(ct.Structure):
    _fields_ = [(n, u64) for n in ("acks", "first_ns", "last_ns", "ecn")]


# reps.h (REPS_SLOTS: testbed.models.host's)
PATH_CLASSES = 3  # a path's links: 2, 4 or 6 (class = links / 2 - 1)
REPS_DELAY_SLOTS = 1024


class RepsState(ct.Structure):
    _fields_ = [
        ("ctl", u64),
        ("ev", ct.c_uint16 * REPS_SLOTS),
        ("frozen_until", u64),
        ("frozen_pos", u64),
        ("explore", u64),
    ]


class RepsPending(ct.Structure):
    _fields_ = [("ready_ns", u64), ("meta", u64)]


class RepsCursor(ct.Structure):
    _fields_ = [("head", u64), ("tail", u64)]


# run.h
ECN_OFF = 0
ECN_BYTES = 1
ECN_PKTS = 2
ACK_EVENT_PAGES = 256  # the ack_events ring buffer, 4 KB pages


class RunCfg(ct.Structure):
    _fields_ = [
        ("acks", u32),
        ("nic_ps_per_byte", u32),
        ("host_lb", u32),
        ("ecn_unit", u32),
        ("ecn_thresh", u64),
        ("cc", u32),
        ("wire_overhead", u32),
        ("buffer_bytes", u64),
        ("prop_ns", u64),
    ]


# sampled.h (LB_DECAY_STEPS: testbed.models.sampled's)
CONGA_FB_SLOTS = 4


class LbCfg(ct.Structure):
    _fields_ = [
        ("active", u32),
        ("ewma_shift", u32),
        ("load_weight", u32),
        ("conga_age", u32),
        ("edges_per_pod", u32),
        ("drill", u32),
        ("sample_ns", u64),
        ("flood_ns", u64),
        ("dre_ns", u64),
        ("load_lo", u64),
        ("load_hi", u64),
        ("queue_lo", u64),
        ("queue_hi", u64),
        ("conga_ctau", u64),
        ("decay", u32 * LB_DECAY_STEPS),
    ]


class LbPort(ct.Structure):
    _fields_ = [("dre", u64), ("last_rx", u64), ("load", u64), ("queue", u64), ("quality", u32), ("pad", u32)]


class CongaEntry(ct.Structure):
    _fields_ = [("metric", u32), ("pad", u32), ("epoch", u64)]


class CongaSlot(ct.Structure):
    _fields_ = [("metric", u32), ("pad", u32), ("epoch", u64), ("ready_ns", u64), ("open_ns", u64)]


class CongaFb(ct.Structure):
    _fields_ = [("slot", CongaSlot * CONGA_FB_SLOTS), ("head", u64)]


# -- map indices of counters.h (each checked by name against it: testbed.dataplane.contract) --------------
# host_lb_cnt[host * HOST_LB_COUNTERS + i]: HLB_*
HLB_RECYCLED = 0
HLB_FRESH = 1
HLB_LABELLED = 2
HLB_GIVEUP = 3
HLB_FIRST_RTT = 4
HLB_DELAY_LOST = 5
HLB_FROZEN = 6
HLB_FREEZES = 7
HLB_EXPLORE = 8
HOST_LB_COUNTERS = 9  # HLB_COUNTERS
_HOST_LB_NAMES = {
    HLB_RECYCLED: "recycled",
    HLB_FRESH: "fresh",
    HLB_LABELLED: "labelled",
    HLB_GIVEUP: "giveups",
    HLB_FIRST_RTT: "fresh_first_rtt",
    HLB_DELAY_LOST: "delay_lost",
    HLB_FROZEN: "frozen",
    HLB_FREEZES: "freezes",
    HLB_EXPLORE: "explore",
}
HOST_LB_COUNTER_NAMES = tuple(_HOST_LB_NAMES[i] for i in range(HOST_LB_COUNTERS))  # by index

# counters[i]: CNT_*
CNT_NO_ROUTE = 0
CNT_NOT_IPV4 = 1
CNT_REDIRECT_ERR = 2
CNT_BAD_PORT = 3
CNT_ACK_ERR = 4
CNT_UNREACHABLE = 5
CNT_BAD_FLOW = 6
CNT_LABEL_INVALID = 7
CNT_LB_SAMPLES = 8
CNT_LB_FLOODS = 9
CNT_LB_DECAYS = 10
COUNTER_NAMES = {
    CNT_NO_ROUTE: "no_route",
    CNT_NOT_IPV4: "not_ipv4",
    CNT_REDIRECT_ERR: "redirect_error",
    CNT_BAD_PORT: "bad_port",
    CNT_ACK_ERR: "ack_error",
    CNT_UNREACHABLE: "unreachable",
    CNT_BAD_FLOW: "unknown_flow",
    CNT_LABEL_INVALID: "label_invalid",
    CNT_LB_SAMPLES: "lb_samples",
    CNT_LB_FLOODS: "lb_floods",
    CNT_LB_DECAYS: "lb_decays",
}
# Counters of events that lose no packet: a label ECMP replaced, the sampled schemes' timer runs
NOT_DROPS = frozenset({"label_invalid", "lb_samples", "lb_floods", "lb_decays"})
RX_DATA = 0  # rx_total[i]
RX_ACKS = 1

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
    "wofan_round": (u32, u64),
    "sw_drops": (u32, u64),
    "counters": (u32, u64),
    "rx_total": (u32, u64),  # per-CPU
    "reps": (u32, RepsState),
    "reps_delay": (u32, RepsPending),
    "reps_cursor": (u32, RepsCursor),
    "drb_ptr": (u32, u64),
    "host_paths": (u32, u64),
    "host_lb_cnt": (u32, u64),
    "top_dst_pkts": (u32, u64),
    "rx_seen": (u32, u64),
    "lb_cfg": (u32, LbCfg),
    "lb_port": (u32, LbPort),
    "lb_epoch": (u32, u64),
    "sw_ports": (u32, u32),
    "sglb_view": (u32, u32),
    "conga_to": (u32, CongaFb),
    "conga_from": (u32, CongaEntry),
    "conga_fb_ptr": (u32, u64),
}
# Pinned too, but not opened here: the transport's ACK events, read by traffic/acks.c from the pin
RINGBUF_MAPS = ("ack_events",)
N_SEEN = 1 << 20  # rx_seen words: one bit per data packet of a transport run (67 M packets; 8 MB)
ACK_EVENT_BYTES = ACK_EVENT_PAGES * 4096  # ack_events


class LayoutError(RuntimeError):
    """A Python mirror of a shared struct differs from the compiled program's own layout."""


def _layout(t: type[Any]) -> tuple[int, dict[str, tuple[int, int]]]:
    """A ctypes type's size and, for a structure, each named field's (offset, size)."""
    fields = {}
    for name, *_ in getattr(t, "_fields_", ()):
        f = getattr(t, name)
        fields[name] = (f.offset, f.size)
    return ct.sizeof(t), fields


def mirror_mismatches(what: str, ours: type[Any], theirs: type[Any]) -> list[str]:
    """How the Python mirror `ours` differs from the program's `theirs` (bcc's reading of the C declaration):
    total size, and every field of ours at a different offset or size, or absent there (padding fields bcc
    adds count only through the size)."""
    size, fields = _layout(ours)
    csize, cfields = _layout(theirs)
    out = [
        f"{what}: {name} at offset {off} ({n} B) in the mirror, "
        + (
            f"at {cfields[name][0]} ({cfields[name][1]} B) in the program"
            if name in cfields
            else "absent from the program"
        )
        for name, (off, n) in fields.items()
        if cfields.get(name) != (off, n)
    ]
    if size != csize:
        out.append(f"{what}: {size} bytes in the mirror, {csize} in the program")
    return out


def mirrors_fingerprint() -> str:
    """A digest of every mirror's layout: part of the program cache's key, so that a program cached before a
    mirror changed is compiled (and checked) again."""
    import hashlib

    text = repr(sorted((name, _layout(k), _layout(v)) for name, (k, v) in MAP_TYPES.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


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

    def set_range(self, values: Any) -> None:
        """Entries 0..len(values)-1 of an array map of u64 from a numpy array, in one syscall."""
        vals = np.ascontiguousarray(values, dtype=np.uint64)
        n = len(vals)
        if n == 0:
            return
        keys = np.arange(n, dtype=np.uint32)
        count = u32(n)
        if (
            self._lib.bpf_update_batch(
                self.fd, ct.c_void_p(keys.ctypes.data), ct.c_void_p(vals.ctypes.data), ct.byref(count)
            )
            != 0
        ):
            raise OSError(ct.get_errno(), "map batch update")

    def zero(self, n: int) -> None:
        """Entries 0..n-1 of an array map back to all zeros, in one syscall (BPF_MAP_UPDATE_BATCH)."""
        if n > 0:
            self.write((self.value_type * n)())  # type: ignore[operator]

    def write(self, vals: Any) -> None:
        """Entries 0..len(vals)-1 of an array map from a ctypes array of its values, in one syscall."""
        n = len(vals)
        keys = (self.key_type * n)(*range(n))  # type: ignore[operator]
        count = u32(n)
        if self._lib.bpf_update_batch(self.fd, ct.byref(keys), ct.byref(vals), ct.byref(count)) != 0:
            raise OSError(ct.get_errno(), "map batch write")

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
        rc = self._lib.bpf_lookup_batch(
            self.fd, None, ct.byref(out_batch), ct.byref(keys), ct.byref(vals), ct.byref(count)
        )
        if rc != 0 and ct.get_errno() != 2:  # ENOENT: the whole array fitted in this batch
            raise OSError(ct.get_errno(), "map batch lookup")
        return vals

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

    def total(self, key: int) -> int:
        """The sum over CPUs: the count of a per-CPU counter."""
        return sum(self.get(key))

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
    """All pinned maps of one fabric, each a typed attribute (MAP_TYPES: key and value types). Works in any
    process while the fabric is up."""

    port_info: MapHandle[ct.c_uint32, PortInfo]
    port_q: MapHandle[ct.c_uint32, PortQ]
    switch_cfg: MapHandle[ct.c_uint32, SwitchCfg]
    uplinks: MapHandle[ct.c_uint32, ct.c_uint32]
    downlinks: MapHandle[ct.c_uint32, ct.c_uint32]
    dst_info: MapHandle[ct.c_uint32, DstInfo]
    ofan_ptr: MapHandle[ct.c_uint32, ct.c_uint64]
    ofan_ptr_cpu: PercpuU64Map
    rr_ptr: MapHandle[ct.c_uint32, ct.c_uint64]
    drill_mem: MapHandle[ct.c_uint32, ct.c_uint32]
    ar_thresh: MapHandle[ct.c_uint32, ct.c_uint64]
    ofan_basis: MapHandle[ct.c_uint32, ct.c_uint32]
    flow_rx: MapHandle[ct.c_uint32, FlowRx]
    ack_rx: MapHandle[ct.c_uint32, AckRx]
    run_cfg: MapHandle[ct.c_uint32, RunCfg]
    uplink_pkts: MapHandle[ct.c_uint32, ct.c_uint64]
    uplink_mask: MapHandle[ct.c_uint32, ct.c_uint32]
    wofan_round: MapHandle[ct.c_uint32, ct.c_uint64]
    sw_drops: MapHandle[ct.c_uint32, ct.c_uint64]
    counters: MapHandle[ct.c_uint32, ct.c_uint64]
    rx_total: PercpuU64Map
    reps: MapHandle[ct.c_uint32, RepsState]
    reps_delay: MapHandle[ct.c_uint32, RepsPending]
    reps_cursor: MapHandle[ct.c_uint32, RepsCursor]
    drb_ptr: MapHandle[ct.c_uint32, ct.c_uint64]
    host_paths: MapHandle[ct.c_uint32, ct.c_uint64]
    host_lb_cnt: MapHandle[ct.c_uint32, ct.c_uint64]
    top_dst_pkts: MapHandle[ct.c_uint32, ct.c_uint64]
    rx_seen: MapHandle[ct.c_uint32, ct.c_uint64]
    lb_cfg: MapHandle[ct.c_uint32, LbCfg]
    lb_port: MapHandle[ct.c_uint32, LbPort]
    lb_epoch: MapHandle[ct.c_uint32, ct.c_uint64]
    sw_ports: MapHandle[ct.c_uint32, ct.c_uint32]
    sglb_view: MapHandle[ct.c_uint32, ct.c_uint32]
    conga_to: MapHandle[ct.c_uint32, CongaFb]
    conga_from: MapHandle[ct.c_uint32, CongaEntry]
    conga_fb_ptr: MapHandle[ct.c_uint32, ct.c_uint64]

    def __init__(self, prefix: str) -> None:
        from bcc.libbcc import lib

        self.prefix = prefix
        self._maps: dict[str, Any] = {}
        self._port_q_mmap: mmap.mmap | None = None
        d = pin_dir(prefix)
        for name, (kt, vt) in MAP_TYPES.items():
            fd = lib.bpf_obj_get(os.path.join(d, name).encode())
            if fd < 0:
                self.close()
                raise FileNotFoundError(f"pinned map {name} of fabric {prefix!r} not found in {d}")
            self._maps[name] = PercpuU64Map(fd) if name in PERCPU_MAPS else MapHandle(fd, kt, vt)
            setattr(self, name, self._maps[name])

    def port_q_view(self, n: int) -> Any:
        """port_q in place (the map is BPF_F_MMAPABLE): a numpy array of n PORTQ_DTYPE entries that reads the
        kernel's counters as they change, with no system call. Each field is read atomically, an entry not."""
        if self._port_q_mmap is None:
            size = -(-ct.sizeof(PortQ) * n // mmap.PAGESIZE) * mmap.PAGESIZE
            self._port_q_mmap = mmap.mmap(self._maps["port_q"].fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
        return np.frombuffer(self._port_q_mmap, dtype=PORTQ_DTYPE, count=n)

    def zero_seen(self, n_words: int) -> None:
        """rx_seen words 0..n_words-1 back to zero, in place (the map is BPF_F_MMAPABLE)."""
        if n_words <= 0:
            return
        size = -(-8 * n_words // mmap.PAGESIZE) * mmap.PAGESIZE
        with mmap.mmap(self._maps["rx_seen"].fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) as m:
            m[:] = bytes(size)

    def close(self) -> None:
        if self._port_q_mmap is not None:
            with contextlib.suppress(BufferError):  # a view is still alive: the mapping goes with the last one
                self._port_q_mmap.close()
            self._port_q_mmap = None
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

    _fields_ = [
        ("len", u32),
        ("pkt_type", u32),
        ("mark", u32),
        ("queue_mapping", u32),
        ("protocol", u32),
        ("vlan_present", u32),
        ("vlan_tci", u32),
        ("vlan_proto", u32),
        ("priority", u32),
        ("ingress_ifindex", u32),
        ("ifindex", u32),
        ("tc_index", u32),
        ("cb", u32 * 5),
        ("hash", u32),
        ("tc_classid", u32),
        ("data", u32),
        ("data_end", u32),
        ("napi_id", u32),
        ("family", u32),
        ("remote_ip4", u32),
        ("local_ip4", u32),
        ("remote_ip6", u32 * 4),
        ("local_ip6", u32 * 4),
        ("remote_port", u32),
        ("local_port", u32),
        ("data_meta", u32),
        ("flow_keys", u64),
        ("tstamp", u64),
        ("wire_len", u32),
        ("gso_segs", u32),
        ("sk", u64),
        ("gso_size", u32),
        ("tstamp_type", ct.c_uint8),
        ("pad", ct.c_uint8 * 3),
        ("hwtstamp", u64),
    ]


class _TestRunOpts(ct.Structure):
    _fields_ = [
        ("sz", ct.c_size_t),
        ("data_in", ct.c_void_p),
        ("data_out", ct.c_void_p),
        ("data_size_in", u32),
        ("data_size_out", u32),
        ("ctx_in", ct.c_void_p),
        ("ctx_out", ct.c_void_p),
        ("ctx_size_in", u32),
        ("ctx_size_out", u32),
        ("retval", u32),
        ("repeat", ct.c_int),
        ("duration", u32),
        ("flags", u32),
        ("cpu", ct.c_int),
        ("batch_size", u32),
    ]


@functools.cache
def _libbpf() -> Any:
    """libbpf.so.1, opened once (bcc 0.26 has no wrapper for BPF_PROG_TEST_RUN)."""
    lib = ct.CDLL("libbpf.so.1", use_errno=True)
    lib.bpf_prog_test_run_opts.argtypes = [ct.c_int, ct.POINTER(_TestRunOpts)]
    return lib


BPF_TCX_INGRESS, BPF_TCX_EGRESS = 46, 47  # enum bpf_attach_type (kernel 6.6+; libbpf 1.1 passes them through)


def tcx_attach(prog_fd: int, ifindex: int, egress: bool) -> None:
    """Attach a SCHED_CLS program to a device's TCX hook (BPF_PROG_ATTACH, no link): the device holds the
    program until it is destroyed, as a cls_bpf filter would, without the clsact qdisc and its classifier.
    `ifindex` is resolved in the calling thread's network namespace. Each attach (and each such device's
    removal) waits for the kernel, about 25 ms here: FabricSpec.tcx is off by default."""
    kind = BPF_TCX_EGRESS if egress else BPF_TCX_INGRESS
    if _libbpf().bpf_prog_attach(prog_fd, ifindex, kind, 0) != 0:
        raise OSError(ct.get_errno(), f"tcx attach on ifindex {ifindex}")


def tcx_query(ifindex: int, egress: bool) -> list[int]:
    """The ids of the programs on a device's TCX hook, in order (BPF_PROG_QUERY, calling thread's namespace)."""
    kind = BPF_TCX_EGRESS if egress else BPF_TCX_INGRESS
    ids, count, flags = (ct.c_uint32 * 8)(), ct.c_uint32(8), ct.c_uint32(0)
    if _libbpf().bpf_prog_query(ifindex, kind, 0, ct.byref(flags), ids, ct.byref(count)) != 0:
        raise OSError(ct.get_errno(), f"tcx query on ifindex {ifindex}")
    return list(ids[: count.value])


def prog_test_run(prog_fd: int, packet: bytes, ctx: SkBuff) -> tuple[int, SkBuff]:
    """Run a SCHED_CLS program once on `packet` (BPF_PROG_TEST_RUN through
    libbpf). Returns the program's return value and the context it left."""
    rc, out, _ = prog_test_run_data(prog_fd, packet, ctx)
    return rc, out


def prog_test_run_data(prog_fd: int, packet: bytes, ctx: SkBuff) -> tuple[int, SkBuff, bytes]:
    """prog_test_run, also returning the packet as the program left it."""
    rc, out, data, _ = _test_run(prog_fd, packet, ctx, 1)
    return rc, out, data


def prog_test_run_timed(prog_fd: int, packet: bytes, ctx: SkBuff, repeat: int) -> float:
    """The kernel runs the program `repeat` times on `packet`: the mean ns per run, as it measured it."""
    return _test_run(prog_fd, packet, ctx, repeat)[3]


def _test_run(prog_fd: int, packet: bytes, ctx: SkBuff, repeat: int) -> tuple[int, SkBuff, bytes, float]:
    libbpf = _libbpf()
    data = ct.create_string_buffer(packet, len(packet))
    size_out = len(packet) + 256
    data_out = ct.create_string_buffer(size_out)
    out = SkBuff()
    opts = _TestRunOpts(
        sz=ct.sizeof(_TestRunOpts),
        data_in=ct.cast(data, ct.c_void_p),
        data_size_in=len(packet),
        data_out=ct.cast(data_out, ct.c_void_p),
        data_size_out=size_out,
        ctx_in=ct.cast(ct.pointer(ctx), ct.c_void_p),
        ctx_size_in=ct.sizeof(ctx),
        ctx_out=ct.cast(ct.pointer(out), ct.c_void_p),
        ctx_size_out=ct.sizeof(out),
        repeat=repeat,
    )
    if libbpf.bpf_prog_test_run_opts(prog_fd, ct.byref(opts)) != 0:
        raise OSError(ct.get_errno(), "BPF_PROG_TEST_RUN")
    return int(opts.retval), out, data_out.raw[: opts.data_size_out], float(opts.duration)
