"""Every scheme on a live fabric: full delivery, hot swap during a run, mixed
deployments, and refusal of bad scheme parameters without any kernel change."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed.dataplane import switches
from testbed.dataplane.maps import Maps
from testbed.fabric.build import Fabric, FabricSpec
from testbed.models.schemes import PIPES_PER_CPU, Scheme, SchemeConfig
from testbed.run.experiment import run
from testbed.run.params import RunParams

from .helpers import cli, entry, leftovers

pytestmark = pytest.mark.root

MB = 1 << 20
ALL = [
    SchemeConfig(s)
    for s in (Scheme.ECMP, Scheme.RPS, Scheme.RR, Scheme.JSQ, Scheme.AR, Scheme.DRILL, Scheme.OFAN, Scheme.WOFAN)
] + [SchemeConfig(Scheme.POFAN, p) for p in (1, 2, 4, PIPES_PER_CPU)]


@pytest.fixture(scope="module")
def fab() -> Iterator[Fabric]:
    with Fabric(FabricSpec(k=4, prefix="tl")) as f:
        yield f


@pytest.mark.parametrize("config", ALL, ids=[c.label for c in ALL])
def test_every_scheme_forwards_everything(fab: Fabric, config: SchemeConfig) -> None:
    r = run(fab, RunParams("permutation", MB, 1.0, config.scheme, seed=2, pipe_size=config.pipe_size)).to_json()
    assert r["scheme"] == config.label
    assert r["packets_sent"] == 16 * 256
    assert r["packets_received"] == r["packets_sent"], r["drops_detail"]
    assert r["drops"] == 0, r["drops_detail"]
    assert all(s["scheme"] == config.label for s in r["switches"].values())
    assert sum(sum(s["uplink_pkts"]) for s in r["switches"].values()) > 0


def _uplink_counts(maps: Maps, n: int) -> list[int]:
    return [int(entry(maps.uplink_pkts, i).value) for i in range(n)]


def test_switch_scheme_during_a_run(fab: Fabric) -> None:
    """ECMP pins each flow to one uplink; switched to Ofan mid-run, every edge
    switch starts using all its uplinks within milliseconds."""
    tree = fab.tree
    assert fab.maps is not None
    n = tree.n_switches * tree.w
    result: dict[str, Any] = {}
    params = RunParams("permutation", 4 * MB, 1.0, Scheme.ECMP, seed=1)
    worker = threading.Thread(target=lambda: result.update(run(fab, params).to_json()))
    worker.start()
    time.sleep(0.25)  # the run takes about 0.7 s at 50 Mbit/s
    before = _uplink_counts(fab.maps, n)
    time.sleep(0.05)
    during_ecmp = [b - a for a, b in zip(before, _uplink_counts(fab.maps, n), strict=False)]
    edges = [sw for sw in switches.lb_switches(tree) if sw.level.name == "EDGE"]
    idle = [
        (sw, slot)
        for sw in edges
        for slot in range(tree.w)
        if during_ecmp[sw.nid * tree.w + slot] == 0 and sum(during_ecmp[sw.nid * tree.w : (sw.nid + 1) * tree.w]) != 0
    ]
    with Maps(tree.prefix) as other:  # as another process would
        apply_s = switches.apply_schemes(
            other, tree, {sw.name: SchemeConfig(Scheme.OFAN) for sw in switches.lb_switches(tree)}
        )
    t_switch = time.perf_counter()
    first_use: dict[tuple[str, int], float] = {}
    base = _uplink_counts(fab.maps, n)
    while time.perf_counter() - t_switch < 0.1 and len(first_use) < len(idle):
        now = _uplink_counts(fab.maps, n)
        for sw, slot in idle:
            i = sw.nid * tree.w + slot
            if (sw.name, slot) not in first_use and now[i] > base[i]:
                first_use[(sw.name, slot)] = time.perf_counter() - t_switch
        time.sleep(0.0005)
    worker.join(timeout=30)
    print(
        f"scheme switch: map writes {apply_s * 1e3:.3f} ms; idle uplinks first used after "
        f"{sorted(round(v * 1e3, 2) for v in first_use.values())} ms"
    )
    assert apply_s < 0.010
    assert idle, "ECMP should leave some edge uplink unused for a permutation at k=4"
    assert len(first_use) == len(idle), (idle, first_use)
    assert max(first_use.values()) < 0.010, first_use
    assert result["packets_received"] == result["packets_sent"] == 16 * 1024
    assert result["drops"] == 0
    assert {s["scheme"] for s in result["switches"].values()} == {"ecmp"}
    assert {s["scheme_at_end"] for s in result["switches"].values()} == {"ofan"}


def test_mixed_deployment_through_the_cli(tmp_path: Path) -> None:
    p = "tm"
    try:
        assert cli("up", "--k", "4", "--scheme", "ar", "--prefix", p).returncode == 0
        r = cli(
            "scheme",
            "set",
            "pofan",
            "--pipe-size",
            "4",
            "--switches",
            "random:0.5",
            "--seed",
            "3",
            "--json",
            "--prefix",
            p,
        )
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert len(out["switches"]) == 8 and out["apply_ms"] < 10
        st = json.loads(cli("status", "--json", "--prefix", p).stdout)
        mixed = {name: s["scheme"] for name, s in st["switches"].items()}
        assert sorted(n for n, s in mixed.items() if s == "4ofan") == sorted(out["switches"])
        assert sum(1 for s in mixed.values() if s == "ar") == 8

        res = cli(
            "run",
            "--workload",
            "permutation",
            "--size",
            "512KB",
            "--json",
            "--seed",
            "5",
            "--out",
            str(tmp_path / "mixed"),
            "--prefix",
            p,
        )
        assert res.returncode == 0, res.stderr
        r2 = json.loads(res.stdout)
        assert r2["scheme"] == "mixed"
        assert {n: s["scheme"] for n, s in r2["switches"].items()} == mixed
        assert r2["packets_received"] == r2["packets_sent"] and r2["drops"] == 0
        assert all(len(s["uplink_pkts"]) == 2 for s in r2["switches"].values())

        for sel, count in (("edge", 8), ("agg", 8), ("pod:1", 4), ("all", 16)):
            o = json.loads(cli("scheme", "set", "drill", "--switches", sel, "--json", "--prefix", p).stdout)
            assert len(o["switches"]) == count
    finally:
        cli("clean", "--prefix", p)
    assert leftovers(p) == []


def test_bad_scheme_parameters_change_nothing() -> None:
    p = "tn"
    try:
        assert cli("up", "--k", "4", "--scheme", "ofan", "--prefix", p).returncode == 0
        before = cli("status", "--json", "--prefix", p).stdout
        for args in (
            ("scheme", "set", "pofan", "--pipe-size", "3"),
            ("scheme", "set", "pofan", "--pipe-size", "0"),
            ("scheme", "set", "warp"),
            ("scheme", "set", "ofan", "--switches", "pod:9"),
            ("scheme", "set", "ofan", "--switches", "random:1.5"),
            ("scheme", "set", "ofan", "--switches", "spine"),
            ("run", "--workload", "permutation", "--size", "64KB", "--scheme", "pofan", "--pipe-size", "3"),
        ):
            r = cli(*args, "--prefix", p)
            assert r.returncode == 2, (args, r.stderr)
            assert len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""
        assert cli("status", "--json", "--prefix", p).stdout == before
    finally:
        cli("clean", "--prefix", p)


def test_compare_writes_one_directory_per_run_and_a_summary(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    r = cli(
        "compare", "--schemes", "ecmp,ofan", "--seeds", "1,2", "--size", "256KB", "--out", str(out), "--prefix", "tk2"
    )
    assert r.returncode == 0, r.stderr
    import pandas as pd

    df = pd.read_csv(out / "summary.csv")
    assert sorted(zip(df["scheme"], df["seed"], strict=False)) == [("ecmp", 1), ("ecmp", 2), ("ofan", 1), ("ofan", 2)]
    assert (df["drops"] == 0).all()
    for d in df["out_dir"]:
        assert (Path(d) / "manifest.json").exists()
    # queue maxima are exact counts, whatever the timing verdict: compare every run's
    worst = df.groupby("scheme")["max_queue_pkts"].max()
    assert worst["ofan"] < worst["ecmp"]
    s = pd.read_csv(out / "schemes.csv").set_index("scheme")
    for scheme in ("ecmp", "ofan"):  # the per-scheme summary counts valid runs only, and says when there is none
        valid = df[(df["scheme"] == scheme) & df["valid"]]
        assert s.loc[scheme, "valid"] == len(valid)
        if len(valid):
            assert s.loc[scheme, "max_queue_pkts"] == valid["max_queue_pkts"].max()
        else:
            assert pd.isna(s.loc[scheme, "max_queue_pkts"]) and pd.isna(s.loc[scheme, "cct_increase_mean"])
    assert (out / "compare.png").read_bytes()[:4] == b"\x89PNG"
    assert leftovers("tk2") == []
