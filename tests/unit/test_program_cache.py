"""The program cache's bookkeeping (testbed.dataplane.program_cache), on
hand-built instruction streams: map loads found and unlinked, nothing else
touched, global data refused, entries keyed, stored, evicted and read back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testbed.dataplane import program_cache as pc
from testbed.dataplane.program_cache import INSN, MapSpec, ProgramSpec, Snapshot


def insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return INSN.pack(code, src << 4 | dst, off, imm)


def ld_map(dst: int, fd: int, src: int = pc.PSEUDO_MAP_FD) -> bytes:
    return insn(pc.LD_IMM64, dst, src, 0, fd) + insn(0, imm=0)


MOV = 0xB7  # BPF_ALU64 | BPF_MOV | BPF_K
EXIT = 0x95


def program(*parts: bytes) -> bytes:
    return b"".join(parts)


def test_map_loads_are_found_and_unlinked_and_nothing_else_is_touched() -> None:
    # a plain 64-bit constant whose upper half looks like a map load must not count
    const = insn(pc.LD_IMM64, 1, 0, 0, 7) + insn(0, src=pc.PSEUDO_MAP_FD, imm=11)
    text = program(insn(MOV, 0, imm=11), ld_map(1, 11), const, ld_map(2, 12), insn(EXIT))
    assert [(i, imm) for i, _, imm in pc.map_loads(text)] == [(1, 11), (5, 12)]
    spec = pc.unlink_maps("p", text, {11: "a", 12: "b"})
    assert spec is not None and spec.relocations == ((1, "a"), (5, "b"))
    assert [imm for _, _, imm in pc.map_loads(spec.insns)] == [0, 0]
    changed = [i for i in range(len(text) // 8) if text[8 * i : 8 * i + 8] != spec.insns[8 * i : 8 * i + 8]]
    assert changed == [1, 5]
    assert pc.link_maps(spec, {"a": 11, "b": 12}) == text
    relinked = pc.link_maps(spec, {"a": 40, "b": 41})
    assert [imm for _, _, imm in pc.map_loads(relinked)] == [40, 41]


def test_unknown_maps_and_global_data_are_not_cached() -> None:
    assert pc.unlink_maps("p", ld_map(1, 13) + insn(EXIT), {11: "a"}) is None
    assert pc.unlink_maps("p", ld_map(1, 11, src=pc.PSEUDO_MAP_VALUE) + insn(EXIT), {11: "a"}) is None


def test_key_depends_on_source_flags_and_bcc() -> None:
    k = pc.key("int x;", ["-DK=4"], "0.26")
    assert k == pc.key("int x;", ["-DK=4"], "0.26")
    assert (
        len(
            {
                k,
                pc.key("int y;", ["-DK=4"], "0.26"),
                pc.key("int x;", ["-DK=6"], "0.26"),
                pc.key("int x;", ["-DK=4"], "0.27"),
                pc.key("int x;", ["-DK", "=4"], "0.26"),
            }
        )
        == 5
    )


def snapshot(n: int = 1) -> Snapshot:
    maps = (MapSpec("port_q", 2, 4, 48, 100, 1024), MapSpec("ack_events", 27, 0, 0, 1 << 20, 0))
    return Snapshot("GPL", maps, (ProgramSpec("switch_ingress", ld_map(1, 0) * n + insn(EXIT), ((0, "port_q"),)),))


def test_store_lookup_and_eviction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTBED_PROGRAM_CACHE", str(tmp_path))
    monkeypatch.setattr(pc, "MAX_ENTRIES", 3)
    assert pc.lookup("missing") is None
    for i in range(4):
        pc.store(f"e{i}", snapshot(i + 1))
        os.utime(tmp_path / f"e{i}.json", (1000 + i, 1000 + i))
    assert pc.lookup("e2") == snapshot(3)
    pc.store("e4", snapshot(5))  # e0 and e1 are the oldest: only three kept
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["e2.json", "e3.json", "e4.json"]
    assert not list(tmp_path.glob(".*"))  # no temporary file left
    (tmp_path / "e3.json").write_text("{not json")
    assert pc.lookup("e3") is None  # a damaged entry is a miss


def test_the_cache_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTBED_PROGRAM_CACHE", "off")
    pc.store("e", snapshot())
    assert pc.lookup("e") is None and pc.cache_dir() is None
    monkeypatch.delenv("TESTBED_PROGRAM_CACHE")
    assert pc.cache_dir() == pc.PROJECT_CACHE


def test_a_relocation_that_does_not_fit_is_refused() -> None:
    spec = pc.unlink_maps("p", ld_map(1, 11) + insn(EXIT), {11: "a"})
    assert spec is not None
    for bad in (
        ProgramSpec("p", spec.insns, ((2, "a"),)),
        ProgramSpec("p", spec.insns, ((0, "b"),)),
        ProgramSpec("p", spec.insns[:8], spec.relocations),
    ):
        with pytest.raises(ValueError):
            pc.link_maps(bad, {"a": 5})
