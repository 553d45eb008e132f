"""The paper's figures that had no command, through the CLI as a user runs
them: `testbed paper fig7|fig11|fig17|fig18 --scale quick` each finish (the
CLI's 10-minute timeout is the must-hold's bound), and their report.html,
in a real browser, shows the figure the paper draws; Fig. 11's mixes lie
between its two ends."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pandas as pd
import pytest

from .helpers import cli, leftovers

pytestmark = pytest.mark.root

PREFIX = "tpf"
TEN_MINUTES = 600


def _paper(fig: str, out: Path) -> None:
    r = cli("paper", fig, "--scale", "quick", "--out", str(out), "--prefix", PREFIX, timeout=TEN_MINUTES)
    assert r.returncode == 0, r.stderr[-3000:]
    assert not leftovers(PREFIX)


def _browser_images(page: Path, tmp: Path) -> list[str]:
    """The alt texts of the page's images that a headless chromium loaded (no console error)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'chromium'}",
        "--window-size=1300,4000",
    ):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        driver.get(page.as_uri())
        # selenium leaves get_log unannotated; it returns the WebDriver log's entries
        get_log = cast(Callable[[str], list[dict[str, Any]]], driver.get_log)
        assert [e for e in get_log("browser") if e["level"] == "SEVERE"] == []
        alts = []
        for img in driver.find_elements(By.TAG_NAME, "img"):
            assert driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) > 100
            alts.append(str(img.get_attribute("alt")))
        return alts
    finally:
        driver.quit()


@pytest.mark.parametrize(
    ("fig", "caption", "panels"),
    [
        ("fig7", "Fig. 7: CCT increase against the message size", ("a", "b")),
        ("fig17", "Fig. 17: ratio of DRB's largest switch queue to Ofan's", ("",)),
        ("fig18", "Fig. 18: Ofan's average queue per switch layer against the queue model", ("",)),
    ],
)
def test_paper_figure_runs_and_is_drawn(fig: str, caption: str, panels: tuple[str, ...], tmp_path: Path) -> None:
    out = tmp_path / fig
    _paper(fig, out)
    for panel in panels:
        d = out / panel if panel else out
        assert json.loads((d / "sweep.json").read_text())["matrix"]["figure"] == fig
        alts = _browser_images(d / "report.html", tmp_path)
        assert any(a.startswith(caption) for a in alts), alts
    if len(panels) > 1:  # the figure's page: every panel's drawing
        alts = _browser_images(out / "report.html", tmp_path)
        assert sum(a.startswith(caption) for a in alts) == len(panels), alts


def test_fig11_runs_every_mix_between_its_ends(tmp_path: Path) -> None:
    out = tmp_path / "fig11"
    _paper("fig11", out)
    rows = pd.read_parquet(out / "results.parquet")
    points = {(lb, mix) for lb, mix in zip(rows["cell_label"], rows["cell_mix"], strict=False)}
    assert points == {
        ("ar", "none"),
        ("4ofan", "none"),
        ("4ofan", "random:0.5"),
        ("4ofan", "pods:0.5"),
        ("4ofan", "agg"),
        ("4ofan", "edge"),
    }
    mixed = rows[rows["cell_mix"] != "none"]
    assert (mixed["scheme"] == "mixed").all()  # half the switches each: the run says so
    v = rows[rows["fidelity_valid"].astype(bool)]
    by_seed = v.pivot_table(index="seed", columns=["cell_label", "cell_mix"], values="cct_increase")
    lo, hi = by_seed[("4ofan", "none")], by_seed[("ar", "none")]
    # At k=4 the mixes sit about 1 point below all-AR with 1.3-2.8 points of
    # spread between seeds (10 seeds measured on 2026-12-06: AR 5.8 %, mixes
    # 4.8-5.1 %, all-4Ofan 0.1 %), so the upper end is judged on the paired
    # per-seed differences: not above AR by more than two standard errors.
    # The lower end is far apart and judged strictly, seed by seed.
    for mix in ("random:0.5", "pods:0.5", "agg", "edge"):
        m = by_seed[("4ofan", mix)]
        both = ~(m.isna() | lo.isna())
        assert both.sum() >= 7, (mix, int(both.sum()))  # 10 seeds; the sweep re-runs an invalid cell up to twice
        assert (m[both] > lo[both]).all(), (mix, list(m[both]), list(lo[both]))
        d = (m - hi).dropna()
        assert d.mean() <= 2 * d.std() / len(d) ** 0.5, (mix, m.mean(), hi.mean(), list(d))
    alts = _browser_images(out / "report.html", tmp_path)
    assert any(a.startswith("Fig. 11: CCT increase with 4Ofan on half the LB switches") for a in alts), alts
