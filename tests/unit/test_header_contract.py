"""The C-Python contract's numbers, checked whole without root (testbed.dataplane.contract): every #define of
the contract's headers (ebpf/include/shared.h and what it includes) is mirrored in Python or C-only, every
mirrored number equals its Python copy, in the data plane and the layers above it, and a drift is refused when
the switch program is loaded, in one line naming the constant. Also: each C number is defined once, and the
program cache's key and the sender's digest cover every header their builds read."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import ebpf
from testbed.dataplane import compile as dp_compile
from testbed.dataplane import contract, maps, program_cache
from testbed.topology import FatTree

ROOT = Path(__file__).resolve().parents[2]


def test_every_number_checked_on_load_matches_the_c_text() -> None:
    assert contract.mismatches() == []


def test_the_copies_above_the_data_plane_match_too() -> None:
    assert contract.mismatches(contract.ABOVE) == []
    # the differential tests' build flag (lb_draw.h) and the window trace's rule names (traffic/cca.h)
    tests_only = {
        "DRAWS_SUPPLIED": (
            "tests.system.test_schemes_kernel.DRAWS_SUPPLIED",
            "tests.system.test_host_schemes_kernel.DRAWS_SUPPLIED",
        )
    }
    assert contract.mismatches(tests_only) == []
    from testbed.measure.transport import RULES

    cca = contract.strip_comments((ROOT / "traffic" / "cca.h").read_text())
    rules = {int(v) for v in re.findall(r"\bCCA_R_\w+\s*=\s*(\d+)", cca)}
    assert rules and rules == set(RULES) - {255}


def c_fields(text: str, struct: str) -> list[tuple[str, str]]:
    """(type, name) of each field of `struct` in C text, __uN spelt uintN_t."""
    body = re.search(rf"struct {struct}\s*\{{(.*?)\}}", contract.strip_comments(text), re.S)
    assert body, struct
    out = []
    for decl in body.group(1).split(";"):
        words = decl.split(None, 1)
        if len(words) == 2:
            ctype = re.sub(r"^__u(\d+)$", r"uint\1_t", words[0])
            out += [(ctype, name.strip()) for name in words[1].split(",")]
    return out


def test_the_transports_ack_event_is_the_kernels() -> None:
    ours = c_fields((ROOT / "ebpf/include/run.h").read_text(), "ack_event")
    assert ours == c_fields((ROOT / "traffic/acks.c").read_text(), "ack_event_rec")
    assert len(ours) == 5


def test_a_number_that_drifted_is_refused_at_load_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(maps, "CNT_BAD_FLOW", 7)
    monkeypatch.setattr(maps, "HOST_LB_COUNTER_NAMES", maps.HOST_LB_COUNTER_NAMES[:-1])

    def no_load(*a: object) -> None:
        raise AssertionError("the check comes before the program cache and the compiler")

    monkeypatch.setattr(program_cache, "load", no_load)
    with pytest.raises(maps.LayoutError) as e:
        dp_compile.Compiled(dp_compile.Dims.of(FatTree(4, "tmc")))
    msg = str(e.value)
    assert "\n" not in msg, msg
    assert "CNT_BAD_FLOW is 6 in ebpf/include/counters.h, testbed.dataplane.maps.CNT_BAD_FLOW is 7" in msg, msg
    assert "HLB_COUNTERS is 9" in msg and "len(testbed.dataplane.maps.HOST_LB_COUNTER_NAMES) is 8" in msg, msg


def copy_sources(tmp_path: Path) -> Path:
    for d in ("ebpf", "traffic"):
        shutil.copytree(ROOT / d, tmp_path / d, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    return tmp_path


def test_a_define_nothing_mirrors_is_caught(tmp_path: Path) -> None:
    root = copy_sources(tmp_path)
    with open(root / "ebpf/include/counters.h", "a") as f:
        f.write("#define CNT_NEW_DROP 11\n")  # its family's mirror, testbed.dataplane.maps.CNT_NEW_DROP, is missing
    with open(root / "ebpf/include/reps.h", "a") as f:
        f.write("#define REPS_SOMETHING (REPS_SLOTS * 2)\n")  # no family: neither mirrored nor C-only
    with open(root / "traffic/paced.c", "a") as f:
        f.write("#define ROCE_UDP_PORT 4791\n")  # a second C definition
    bad = contract.mismatches(root=root)
    assert any(m.startswith("CNT_NEW_DROP: testbed.dataplane.maps.CNT_NEW_DROP cannot be read") for m in bad), bad
    assert any(m.startswith("REPS_SOMETHING of ebpf/include/reps.h has no Python mirror") for m in bad), bad
    assert any(m.startswith("ROCE_UDP_PORT: defined 2 times") for m in bad), bad
    assert len(bad) == 3, bad


def test_define_values_are_read_as_the_compiler_reads_them() -> None:
    known = {"REPS_DELAY_LOG2": 10}
    assert contract.c_value("(1 << REPS_DELAY_LOG2)", dict(known)) == 1024
    assert contract.c_value("0x9E3779B1u", {}) == 0x9E3779B1
    assert contract.c_value("(1ULL << 16)", {}) == 1 << 16
    assert contract.c_value("((__u32)((1ULL << W) - 1))", {}) is None  # a cast of a compile-time flag
    assert contract.c_value("TC_ACT_SHOT", {"TC_ACT_SHOT": 2}) == 2
    assert contract.c_value("__builtin_bswap16(x)", {}) is None
    defs = contract.parse_defines("#define A 1 /* one\n * more */\n#define B(x) (x)\n#define C (A + 2) // three\n")
    assert [(d.name, d.value) for d in defs] == [("A", 1), ("C", 3)]


def test_every_c_number_is_defined_once() -> None:
    twice = {n: [d.file for d in ds] for n, ds in contract.c_defines().items() if len(ds) > 1 and ds[0].text}
    assert twice == {}


def test_the_program_cache_key_covers_every_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """source() inlines every header the programs include, so a change to any of them is a new cache key."""
    text = dp_compile.source()
    for h in sorted(ebpf.INCLUDE.glob("*.h")):
        assert h.read_text().splitlines()[0] in text, f"{h.name} is not part of the program's source"
    root = copy_sources(tmp_path)
    before = program_cache.key(text, [], None)
    for h in sorted((root / "ebpf/include").glob("*.h")):
        original = h.read_text()
        h.write_text(original + "\n/* changed */\n")
        monkeypatch.setattr(dp_compile, "EBPF_DIR", root / "ebpf")
        assert program_cache.key(dp_compile.source(), [], None) != before, h.name
        h.write_text(original)


def test_the_sender_is_rebuilt_when_any_header_it_includes_changes() -> None:
    from traffic import sender

    built = {p.resolve() for p in sender.SOURCES + sender.HEADERS}
    for src in sender.SOURCES + sender.HEADERS:
        for inc in re.findall(r'^\s*#include "([^"]+)"', src.read_text(), re.M):
            local = src.with_name(inc)
            path = local if local.exists() else ebpf.INCLUDE / inc
            assert path.resolve() in built, f"{src.name} includes {inc}, which is not in the sender's digest"
