"""Every scheme of the registry is complete in every place
docs/adding-a-scheme.md lists: its number in the C header, a case in the
kernel's dispatch, a Python model, a differential-test case and a row in docs/schemes.md
(switch schemes: schemes.h SCHEME_*, lb.h, decisions.MODELS; host schemes:
schemes.h HOST_LB_*, host_lb.h, host.HOST_MODELS (testbed.models)). So the document's
list cannot drift from the code. (Every other number of the headers is compared with
its Python copy by tests/unit/test_header_contract.py.)"""

from __future__ import annotations

import re
from pathlib import Path

from testbed.models.decisions import MODELS
from testbed.models.host import HOST_MODELS
from testbed.models.schemes import Scheme, host_schemes, switch_schemes
from tests.system.test_host_schemes_kernel import HOST_DIFFERENTIAL_SCHEMES
from tests.system.test_schemes_kernel import DIFFERENTIAL_SCHEMES

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "adding-a-scheme.md"
FILES = (
    "ebpf/include/schemes.h",
    "ebpf/include/lb.h",
    "testbed/models/schemes.py",
    "testbed/models/decisions.py",
    "tests/system/test_schemes_kernel.py",
    "docs/schemes.md",
    "ebpf/include/maps.h",
    "testbed/dataplane/maps.py",
    "testbed/dataplane/switches.py",
)


def test_scheme_numbers_match_schemes_h() -> None:
    text = (ROOT / "ebpf/include/schemes.h").read_text()
    in_c = {name: int(v) for name, v in re.findall(r"^#define SCHEME_(\w+)\s+(\d+)", text, re.M)}
    assert in_c == {s.name: s.value for s in switch_schemes()}
    host_c = {name: int(v) for name, v in re.findall(r"^#define HOST_LB_(\w+)\s+(\d+)", text, re.M)}
    assert host_c == {"NONE": 0, **{s.name: s.host_lb for s in host_schemes()}}
    elsewhere = [
        h.name
        for h in (ROOT / "ebpf/include").glob("*.h")
        if h.name != "schemes.h" and re.search(r"^#define (SCHEME|HOST_LB)_", h.read_text(), re.M)
    ]
    assert elsewhere == [], "the schemes' numbers are defined in schemes.h only"


def test_kernel_dispatch_has_a_case_per_scheme() -> None:
    text = (ROOT / "ebpf/include/lb.h").read_text()
    body = text[text.index("lb_pick_uplink(") :]
    cases = re.findall(r"case SCHEME_(\w+):", body)
    assert sorted(cases) == sorted(s.name for s in switch_schemes()), "one case per scheme, none twice"
    host = (ROOT / "ebpf/include/host_lb.h").read_text()
    body = host[host.index("host_lb_transmit(") :]
    for s in host_schemes():
        assert f"HOST_LB_{s.name}" in body, s


def test_host_schemes_name_switch_schemes() -> None:
    for s in host_schemes():
        assert not s.switch_scheme.is_host and s.switch_scheme in (Scheme.ECMP, Scheme.HOST_ROUTED)


def test_every_scheme_has_a_model() -> None:
    assert set(MODELS) == set(switch_schemes())
    assert set(HOST_MODELS) == set(host_schemes())


def test_every_scheme_has_a_differential_case() -> None:
    assert set(DIFFERENTIAL_SCHEMES) == set(switch_schemes())
    assert len(DIFFERENTIAL_SCHEMES) == len(set(DIFFERENTIAL_SCHEMES))
    assert set(HOST_DIFFERENTIAL_SCHEMES) == set(host_schemes())


def test_every_scheme_has_a_docs_row() -> None:
    schemes_doc = (ROOT / "docs" / "schemes.md").read_text()
    missing = [s.label for s in Scheme if f"| `{s.label}` |" not in schemes_doc]
    assert not missing, f"no docs/schemes.md scheme-table row for {missing}"


def test_the_document_names_files_that_exist() -> None:
    doc = DOC.read_text()
    for f in FILES:
        assert f"`{f}`" in doc, f"{DOC.name} does not name {f}"
        assert (ROOT / f).exists(), f"{DOC.name} names {f}, which does not exist"
