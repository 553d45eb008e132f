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


def test_what_a_scheme_needs_is_asked_of_the_registry() -> None:
    """The registry's traits decide, for every caller: a run with a scheme that needs ACKs has them (as with a
    CCA), a sweep of one turns them on in every cell, the sampled schemes' timer bits and the ideal fabric's
    schemes are the registry's, and nothing the traits name is unknown."""
    from testbed.models import ideal, sampled
    from testbed.models.schemes import TRAITS, needing_acks
    from testbed.run.params import RunParams
    from testbed.run.sweep import matrix

    assert {s for s in Scheme if s.needs_acks} == {Scheme.REPS, Scheme.CONGA}
    assert {s for s in Scheme if s.uses_acks} == {Scheme.REPS, Scheme.CONGA, Scheme.DRB}
    for s in Scheme:
        assert RunParams("permutation", 1 << 20, scheme=s).acks == s.needs_acks, s.label
    assert needing_acks(("ofan", "conga")) and not needing_acks(("ofan", "pofan:4", "drb"))
    assert matrix(("ofan", "conga"), seed=1).value("acks") is True
    assert matrix(("ofan", "drb"), seed=1).value("acks") is False
    assert set(sampled.ACTIVE_OF) == {s for s, t in TRAITS.items() if t.timers}
    assert sampled.ACTIVE_OF[Scheme.SGLB] == sampled.LB_SAMPLE | sampled.LB_FLOOD
    assert sampled.ACTIVE_OF[Scheme.CONGA] == sampled.LB_CONGA
    assert set(ideal.SCHEMES) == {s for s, t in TRAITS.items() if t.ideal}
    assert all(t.acks in ("needs", "uses", "no") for t in TRAITS.values())
    assert all(set(t.timers) <= set(sampled.TIMER_BITS) for t in TRAITS.values())
