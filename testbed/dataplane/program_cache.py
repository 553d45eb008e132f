"""A cache of compiled data planes, so a fabric whose program was compiled
before is built without running clang again.

bcc compiles the C, creates the maps, and writes each map's fd into the
instructions that load it (a 64-bit immediate load whose source register is
BPF_PSEUDO_MAP_FD). Right after a compile, `Snapshot.take` records every map's
kernel attributes and each entry point's instructions, with those loads turned
back into map names. `Snapshot.load` creates the same maps afresh and loads the
same instructions with the new fds; the kernel verifies the program again, as
after a compile. The kernel's program tag (a hash of the instructions with map
references masked) is therefore the same for both, which a test checks.

Entries are keyed by a hash of everything the instructions depend on: the
source text, the -D flags, bcc's version and the kernel release. They live in
`/var/cache/testbed/programs` (TESTBED_PROGRAM_CACHE overrides the
directory; `off` disables the cache), one JSON file each, written atomically,
at most MAX_ENTRIES kept (least recently used removed). A file that cannot be
read or loaded is a miss: the program is compiled and the entry rewritten.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes as ct
import functools
import hashlib
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = 1
MAX_ENTRIES = 64
PROJECT_CACHE = Path("/var/cache/testbed/programs")  # a source tree and an installed package alike
LD_IMM64 = 0x18  # BPF_LD | BPF_IMM | BPF_DW: two instruction slots
PSEUDO_MAP_FD = 1
PSEUDO_MAP_VALUE = 2
INSN = struct.Struct("<BBhi")  # code, dst:4 src:4, off, imm
SCHED_CLS = 3
TRACEPOINT = 5


def cache_dir() -> Path | None:
    """Where entries live, None when the cache is off."""
    env = os.environ.get("TESTBED_PROGRAM_CACHE", "")
    if env == "off":
        return None
    return Path(env) if env else PROJECT_CACHE


def key(text: str, cflags: list[str], bcc_version: str | None) -> str:
    h = hashlib.sha256()
    for part in (str(FORMAT), text, "\0".join(cflags), str(bcc_version), os.uname().release):
        h.update(part.encode())
        h.update(b"\1")
    return h.hexdigest()[:32]


@dataclass(frozen=True)
class MapSpec:
    """A map as the kernel reports it: enough to create an equal one."""

    name: str
    type: int
    key_size: int
    value_size: int
    max_entries: int
    flags: int


@dataclass(frozen=True)
class ProgramSpec:
    """One entry point: its instructions, with each map load's immediate
    zeroed, and where the map loads are (instruction index, map name)."""

    name: str
    insns: bytes
    relocations: tuple[tuple[int, str], ...]


def map_loads(insns: bytes) -> list[tuple[int, int, int]]:
    """Every map reference in an instruction stream: (index, source register,
    immediate) of each 64-bit immediate load with a map source register."""
    out = []
    i, n = 0, len(insns) // INSN.size
    while i < n:
        code, regs, _, imm = INSN.unpack_from(insns, i * INSN.size)
        if code == LD_IMM64 and i + 1 < n:  # a load cut in half is no load
            src = regs >> 4
            if src in (PSEUDO_MAP_FD, PSEUDO_MAP_VALUE):
                out.append((i, src, imm))
            i += 2
        else:
            i += 1
    return out


def unlink_maps(name: str, insns: bytes, names_by_fd: dict[int, str]) -> ProgramSpec | None:
    """`insns` with every map load's fd replaced by 0, and the relocations to
    redo; None when a load refers to a map that is not one of `names_by_fd` or
    reads a map's value directly (global data, which this cache does not
    carry)."""
    buf = bytearray(insns)
    relocs = []
    for i, src, imm in map_loads(insns):
        if src != PSEUDO_MAP_FD or imm not in names_by_fd:
            return None
        code, regs, off, _ = INSN.unpack_from(buf, i * INSN.size)
        INSN.pack_into(buf, i * INSN.size, code, regs, off, 0)
        relocs.append((i, names_by_fd[imm]))
    return ProgramSpec(name, bytes(buf), tuple(relocs))


def link_maps(spec: ProgramSpec, fds: dict[str, int]) -> bytes:
    """The instructions with each relocation's map fd written in; ValueError
    if a relocation is not a map load of these instructions or names no map."""
    buf = bytearray(spec.insns)
    loads = {i for i, _, _ in map_loads(spec.insns)}
    for i, name in spec.relocations:
        if i not in loads or name not in fds:
            raise ValueError(f"{spec.name}: relocation {i} -> {name} does not fit the program")
        code, regs, off, _ = INSN.unpack_from(buf, i * INSN.size)
        INSN.pack_into(buf, i * INSN.size, code, regs, off, fds[name])
    return bytes(buf)


class _MapInfo(ct.Structure):  # the head of struct bpf_map_info (uapi/linux/bpf.h)
    _fields_ = [
        ("type", ct.c_uint32),
        ("id", ct.c_uint32),
        ("key_size", ct.c_uint32),
        ("value_size", ct.c_uint32),
        ("max_entries", ct.c_uint32),
        ("map_flags", ct.c_uint32),
        ("name", ct.c_char * 16),
        ("rest", ct.c_uint8 * 256),
    ]


@functools.cache
def _lib() -> Any:
    """bcc's library, with the prototypes of the functions this module uses
    that bcc's Python package does not declare (set once)."""
    from bcc.libbcc import lib

    lib.bpf_num_tables.restype = ct.c_size_t
    lib.bpf_num_tables.argtypes = [ct.c_void_p]
    lib.bpf_table_name.restype = ct.c_char_p
    lib.bpf_table_name.argtypes = [ct.c_void_p, ct.c_size_t]
    lib.bpf_table_fd_id.restype = ct.c_int
    lib.bpf_table_fd_id.argtypes = [ct.c_void_p, ct.c_size_t]
    lib.bcc_create_map.restype = ct.c_int
    lib.bcc_create_map.argtypes = [ct.c_int, ct.c_char_p, ct.c_int, ct.c_int, ct.c_int, ct.c_int]
    lib.bcc_prog_load.restype = ct.c_int
    lib.bcc_prog_load.argtypes = [
        ct.c_int,
        ct.c_char_p,
        ct.c_void_p,
        ct.c_int,
        ct.c_char_p,
        ct.c_uint,
        ct.c_int,
        ct.c_char_p,
        ct.c_uint,
    ]
    return lib


def map_spec(name: str, fd: int) -> MapSpec:
    lib = _lib()
    info = _MapInfo()
    size = ct.c_uint32(ct.sizeof(info))
    if lib.bpf_obj_get_info_by_fd(fd, ct.byref(info), ct.byref(size)) != 0:
        raise OSError(ct.get_errno(), f"bpf_obj_get_info_by_fd on map {name}")
    return MapSpec(name, info.type, info.key_size, info.value_size, info.max_entries, info.map_flags)


def module_maps(module: int) -> dict[str, int]:
    """Every map of a bcc module (`BPF.module`), by name: its fd."""
    lib = _lib()
    return {
        lib.bpf_table_name(module, i).decode(): lib.bpf_table_fd_id(module, i)
        for i in range(lib.bpf_num_tables(module))
    }


@dataclass(frozen=True)
class Snapshot:
    """A compiled data plane: its maps and entry points, independent of fds."""

    license: str
    maps: tuple[MapSpec, ...]
    programs: tuple[ProgramSpec, ...]

    @classmethod
    def take(cls, module: int, entry_points: tuple[str, ...]) -> Snapshot | None:
        """From a bcc module just compiled (`BPF.module`); None if it cannot be
        cached (see unlink_maps)."""
        lib = _lib()
        by_name = module_maps(module)
        fds = {fd: name for name, fd in by_name.items()}
        maps = [map_spec(name, fd) for name, fd in by_name.items()]
        programs = []
        for ep in entry_points:
            start = lib.bpf_function_start(module, ep.encode())
            insns = ct.string_at(start, lib.bpf_function_size(module, ep.encode()))
            spec = unlink_maps(ep, insns, fds)
            if spec is None:
                return None
            programs.append(spec)
        return cls(lib.bpf_module_license(module).decode(), tuple(maps), tuple(programs))

    def load(self, prog_type: int = SCHED_CLS) -> tuple[dict[str, int], dict[str, int]]:
        """Create the maps and load the entry points as programs of `prog_type`: (map fds, program fds).
        On failure every fd made is closed and OSError (the kernel refused) or
        ValueError (the entry does not fit together) raised."""
        lib = _lib()
        map_fds: dict[str, int] = {}
        prog_fds: dict[str, int] = {}
        try:
            for m in self.maps:
                fd = lib.bcc_create_map(m.type, m.name.encode()[:15], m.key_size, m.value_size, m.max_entries, m.flags)
                if fd < 0:
                    raise OSError(ct.get_errno(), f"creating map {m.name}")
                map_fds[m.name] = fd
            for p in self.programs:
                insns = link_maps(p, map_fds)
                buf = ct.create_string_buffer(insns, len(insns))
                fd = lib.bcc_prog_load(
                    prog_type, p.name.encode()[:15], buf, len(insns), self.license.encode(), 0, 0, None, 0
                )
                if fd < 0:
                    raise OSError(ct.get_errno(), f"loading program {p.name}")
                prog_fds[p.name] = fd
        except BaseException:
            for fd in (*map_fds.values(), *prog_fds.values()):
                os.close(fd)
            raise
        return map_fds, prog_fds

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": FORMAT,
                "license": self.license,
                "maps": [m.__dict__ for m in self.maps],
                "programs": [
                    {
                        "name": p.name,
                        "insns": base64.b64encode(p.insns).decode(),
                        "relocations": [list(r) for r in p.relocations],
                    }
                    for p in self.programs
                ],
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Snapshot:
        d = json.loads(text)
        if d.get("format") != FORMAT:
            raise ValueError("another format")
        return cls(
            d["license"],
            tuple(MapSpec(**m) for m in d["maps"]),
            tuple(
                ProgramSpec(
                    p["name"], base64.b64decode(p["insns"]), tuple((int(i), str(n)) for i, n in p["relocations"])
                )
                for p in d["programs"]
            ),
        )


def lookup(entry: str) -> Snapshot | None:
    d = cache_dir()
    if d is None:
        return None
    path = d / f"{entry}.json"
    try:
        snap = Snapshot.from_json(path.read_text())
        os.utime(path)  # most recently used
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return snap


def store(entry: str, snap: Snapshot) -> None:
    """Write an entry atomically and keep the newest MAX_ENTRIES; a cache that
    cannot be written is no error (the next build compiles again)."""
    d = cache_dir()
    if d is None:
        return
    with contextlib.suppress(OSError):
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{entry}.{os.getpid()}.tmp"
        tmp.write_text(snap.to_json())
        tmp.replace(d / f"{entry}.json")
        entries = sorted(d.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[MAX_ENTRIES:]:
            old.unlink(missing_ok=True)


def load(
    text: str, cflags: list[str], bcc_version: str | None, prog_type: int = SCHED_CLS
) -> tuple[str, tuple[dict[str, int], dict[str, int]] | None]:
    """This source's entry key, and its (map fds, program fds) loaded from the
    cache; None on a miss, or for an entry this kernel refuses or that does
    not fit together (the caller then compiles and `remember`s)."""
    entry = key(text, cflags, bcc_version)
    snap = lookup(entry)
    if snap is not None:
        try:
            return entry, snap.load(prog_type)
        except (OSError, ValueError):
            pass
    return entry, None


def remember(entry: str, module: int, entry_points: tuple[str, ...]) -> None:
    """Store a bcc module just compiled under `entry`, when it can be cached."""
    taken = Snapshot.take(module, entry_points)
    if taken is not None:
        store(entry, taken)
