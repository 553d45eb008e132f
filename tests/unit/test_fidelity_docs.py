"""docs/measurement.md's table of fidelity criteria is generated from the verdict's own table
(testbed.measure.fidelity.CRITERIA): it must be what the table generates now, so that no criterion, figure or
tolerance is documented that the verdict does not judge, or the other way round."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from testbed.measure import fidelity

ROOT = Path(__file__).resolve().parents[2]


def test_the_criteria_table_is_generated_from_the_verdicts_table() -> None:
    page = (ROOT / "docs" / "measurement.md").read_text()
    assert page.count(fidelity.BEGIN) == 1 and page.count(fidelity.END) == 1
    assert page == fidelity.with_criteria(page), (
        "docs/measurement.md's criteria differ from testbed/measure/fidelity.py's CRITERIA: regenerate them with "
        "`.venv/bin/python -m testbed.measure.fidelity`"
    )


def test_every_criterion_has_its_row_with_its_tolerances() -> None:
    rows = fidelity.criteria_markdown().splitlines()
    for c in fidelity.CRITERIA:
        (row,) = [r for r in rows if r.startswith(f"| {c.name} | ")]
        assert all(f"`{f}`" in row for f in c.figures), c.name
    assert "| start together | `start_skew_s`, `start_skew_pkts`: " in fidelity.criteria_markdown()
    assert "| 2 %, or one packet time over the NIC's span" in fidelity.criteria_markdown()
    assert "| 4 packet times |" in fidelity.criteria_markdown() and "| 98 % |" in fidelity.criteria_markdown()


def test_every_figure_a_criterion_names_is_a_field_of_the_verdict() -> None:
    verdict_fields = {f.name for f in fields(fidelity.Verdict)}
    for c in fidelity.CRITERIA:
        assert set(c.figures) <= verdict_fields, (c.name, set(c.figures) - verdict_fields)
    assert len({c.name for c in fidelity.CRITERIA}) == len(fidelity.CRITERIA)


def test_regenerating_rewrites_only_the_part_between_the_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"# Title\n\nbefore\n\n{fidelity.BEGIN}\nan old table\n{fidelity.END}\n\nafter\n")
    assert fidelity.write_criteria(page)
    assert page.read_text() == (
        f"# Title\n\nbefore\n\n{fidelity.BEGIN}\n{fidelity.criteria_markdown()}{fidelity.END}\n\nafter\n"
    )
    assert not fidelity.write_criteria(page)  # already what the table generates
    for broken in ("no markers\n", f"{fidelity.BEGIN}\nonly the first\n", f"{fidelity.END}\n{fidelity.BEGIN}\n"):
        with pytest.raises(ValueError):
            fidelity.with_criteria(broken)
