"""The program cache on the real kernel: a data plane loaded from the cache is
the one bcc compiled (the kernel's program tags, which hash the instructions
with map references masked, are equal; the maps have the same attributes), and
a damaged entry falls back to clang."""

from __future__ import annotations

import ctypes as ct
from pathlib import Path

import pytest

from testbed.dataplane import program_cache
from testbed.dataplane.compile import ENTRY_POINTS, Compiled, Dims
from testbed.topology import FatTree

pytestmark = pytest.mark.root


class _ProgInfo(ct.Structure):  # the head of struct bpf_prog_info (uapi/linux/bpf.h)
    _fields_ = [("type", ct.c_uint32), ("id", ct.c_uint32), ("tag", ct.c_uint8 * 8), ("rest", ct.c_uint8 * 240)]


def tag(fd: int) -> bytes:
    from bcc.libbcc import lib

    info = _ProgInfo()
    size = ct.c_uint32(ct.sizeof(info))
    assert lib.bpf_obj_get_info_by_fd(fd, ct.byref(info), ct.byref(size)) == 0
    return bytes(info.tag)


@pytest.mark.parametrize("kind,k", [("fattree", 4), ("leafspine", 8)])
def test_a_cached_program_is_the_compiled_one(
    kind: str, k: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TESTBED_PROGRAM_CACHE", str(tmp_path))
    dims = Dims.of(FatTree(k, "tpc", kind))
    with Compiled(dims, test_run=True) as first:
        assert not first.from_cache and len(list(tmp_path.glob("*.json"))) == 1
        compiled_tags = {ep: tag(first.fds[ep]) for ep in ENTRY_POINTS}
        compiled_maps = {n: program_cache.map_spec(n, fd) for n, fd in first.map_fds.items()}
    with Compiled(dims, test_run=True) as second:
        assert second.from_cache
        assert {ep: tag(second.fds[ep]) for ep in ENTRY_POINTS} == compiled_tags
        assert {n: program_cache.map_spec(n, fd) for n, fd in second.map_fds.items()} == compiled_maps
    with Compiled(dims) as other:  # the forwarding variant is another entry
        assert not other.from_cache and {ep: tag(other.fds[ep]) for ep in ENTRY_POINTS} != compiled_tags
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_a_damaged_entry_is_compiled_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTBED_PROGRAM_CACHE", str(tmp_path))
    dims = Dims.of(FatTree(4, "tpc"))
    with Compiled(dims, test_run=True):
        pass
    (entry,) = tmp_path.glob("*.json")
    snap = program_cache.Snapshot.from_json(entry.read_text())
    broken = program_cache.Snapshot(
        snap.license,
        snap.maps,
        tuple(program_cache.ProgramSpec(p.name, p.insns[: len(p.insns) // 2], p.relocations) for p in snap.programs),
    )
    entry.write_text(broken.to_json())  # readable, but the kernel refuses the truncated programs
    with Compiled(dims, test_run=True) as again:
        assert not again.from_cache
    with Compiled(dims, test_run=True) as fixed:
        assert fixed.from_cache  # the entry was rewritten by the compile


def test_a_mirror_that_drifted_from_shared_h_fails_at_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """The C-Python contract: a struct of testbed/dataplane/maps.py that no longer matches the compiled program's
    (here port_q's mirror without its last field) is refused when the program is loaded, in one line naming the
    map and the field; the program cache cannot hide it (the mirrors' layout is part of its key)."""
    from testbed.dataplane import maps

    class Shorter(ct.Structure):
        _fields_ = list(maps.PortQ._fields_[:-1])

    dims = Dims.of(FatTree(4, "tmc"))
    with Compiled(dims):  # the mirrors as they are: compiled, or from the cache, and checked
        pass
    monkeypatch.setitem(maps.MAP_TYPES, "port_q", (ct.c_uint32, Shorter))
    with pytest.raises(maps.LayoutError) as e:
        Compiled(dims).close()  # closed should the check ever let it load
    msg = str(e.value)
    assert "\n" not in msg and "port_q" in msg and "bytes in the mirror" in msg, msg
    short = maps.mirror_mismatches("x", Shorter, maps.PortQ)
    assert short == [f"x: {ct.sizeof(Shorter)} bytes in the mirror, {ct.sizeof(maps.PortQ)} in the program"]
    moved = type("Moved", (ct.Structure,), {"_fields_": [("bytes", ct.c_uint64), ("pkts", ct.c_uint64)]})
    assert any("pkts at offset 8" in m for m in maps.mirror_mismatches("x", moved, maps.PortQ))
