"""Congestion control in the loop (--cc) on a real k=4 fabric: every byte
delivered exactly once under each CCA with two schemes, loss recovery
through a small buffer, each CCA's reaction on a two-to-one incast, the
paced blast untouched by --cc none, a starved transport caught by the
verdict, and REPS freezing on a retransmission timeout."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from testbed.fabric.build import Fabric, FabricSpec
from testbed.measure import results
from testbed.models.schemes import Scheme
from testbed.run.experiment import run
from testbed.run.params import RunParams
from traffic.packet import ACK_FRAME_BYTES, OPCODE_RC_ACK, Packetizer
from traffic.transport import SWIFT_TARGET_Q_PKTS

from .helpers import TIMING_RATE_BPS, capture, drain

pytestmark = pytest.mark.root

MB = 1 << 20
CCAS = ("dctcp", "swift", "nscc")


@pytest.fixture(scope="module")
def fab() -> Iterator[Fabric]:
    with Fabric(FabricSpec(k=4, prefix="ttp", rate_bps=TIMING_RATE_BPS)) as f:
        yield f


def go(
    fab: Fabric, out: Any, workload: str = "permutation", size: int = 4 * MB, scheme: Scheme = Scheme.OFAN, **kw: Any
) -> tuple[dict[str, Any], pd.DataFrame]:
    r = run(fab, RunParams(workload, size, 1.0, scheme, **kw), out).to_json()
    return r, results.load(out).windows


def exactly_once(r: dict[str, Any]) -> None:
    """Every flow's every packet reached the receiver, each counted once; every arrival beyond the first of a
    PSN is a duplicate; what was sent arrived or was dropped by a full buffer."""
    pk = Packetizer(4096)  # every run here
    for f in r["flow_stats"]:
        assert f["complete"] and f["received_unique"] == pk.count(f["size_bytes"]), f
        assert f["received"] == f["received_unique"] + f["received_duplicates"], f
    d = r["fidelity"]["delivery"]
    assert d["unaccounted"] == 0 and d["drain_complete"], d
    assert r["packets_sent"] == r["packets_received"] + r["drops_detail"]["buffer"]
    assert r["packets_sent"] == sum(pk.count(f["size_bytes"]) for f in r["flow_stats"]) + r["transport"]["retransmits"]


@pytest.mark.parametrize("cc", CCAS)
@pytest.mark.parametrize("scheme", (Scheme.RPS, Scheme.OFAN), ids=lambda s: s.label)
def test_cca_delivers_a_permutation_exactly_once(fab: Fabric, tmp_path: Any, cc: str, scheme: Scheme) -> None:
    r, w = go(fab, tmp_path / "run", scheme=scheme, cc=cc)
    exactly_once(r)
    t = r["transport"]
    # the base RTT: each flow's propagation round trip (the paper's 0.5 us per link), the longest between pods
    link = r["propagation"]["link_pkts"]
    assert (
        t["cc"] == cc and t["buffer_bytes"] == 800 * 1024 and t["base_rtt_pkts"] == pytest.approx(12 * link, rel=1e-3)
    )
    assert r["acks"] and r["acks_received"] >= r["packets_received"] - r["drops_detail"]["buffer_acks"]
    # the window trace: one row per ACK acted on, windows within [1, 1.5 BDP]
    acked = w[~w["rule"].isin(["timeout", "loss"])]
    # ACKs of the last retransmissions may arrive after the transport finished: at most as many acted on
    assert 0 < len(acked) <= sum(f["acks"] for f in r["flow_stats"])
    assert w["cwnd_pkts"].between(1, 1.5 * t["bdp_pkts"] + 1e-3).all()
    base = {f["fid"]: 2 * f["path_links"] * link for f in r["flow_stats"]}  # fabric round trip + the emulated base
    acted = w[w["rule"] != "timeout"]
    assert (acted["rtt_pkts"] >= acted["fid"].map(base) * (1 - 1e-3)).all()
    assert set(base.values()) == {4 * link, 8 * link, 12 * link} or len(set(base.values())) > 1
    assert r["transport"]["timing"]["ring_overflow"] == 0


def test_loss_recovery_through_a_small_buffer(fab: Fabric, tmp_path: Any) -> None:
    """Eight-packet buffers under a 2-to-1 incast drop; DCTCP recovers every packet, once."""
    r, w = go(fab, tmp_path / "run", "incast", MB, Scheme.ECMP, cc="dctcp", buffer=8 * 4158, seed=3, base_rtt_pkts=40)
    assert r["drops_detail"]["buffer"] > 0
    assert r["transport"]["retransmits"] > 0
    exactly_once(r)
    assert max(p["drops"] for p in r["ports"]) > 0  # counted at the port that dropped
    assert set(w["rule"].unique()) & {"loss", "timeout"}


def test_a_timeout_freezes_reps(fab: Fabric, tmp_path: Any) -> None:
    """Three-packet buffers: REPS loses packets, some flows time out, and each timeout freezes its connection
    (the NIC then cycles through its stored entropies): every packet still arrives exactly once."""
    r, _ = go(fab, tmp_path / "run", "permutation", MB, Scheme.REPS, cc="dctcp", buffer=3 * 4158, seed=2)
    exactly_once(r)
    timeouts = sum(f["timeouts"] for f in r["flow_stats"])
    hl = r["host_lb"]
    assert timeouts > 0 and 0 < hl["freezes"] <= timeouts
    assert hl["frozen"] > 0 and hl["delay_lost"] == 0


def test_dctcp_halves_its_window_under_persistent_marking(fab: Fabric, tmp_path: Any) -> None:
    """Every packet marked: alpha starts at 1, so the first marked ACK halves the window, and the window is
    cut at most once per RTT."""
    r, w = go(fab, tmp_path / "run", "incast", MB, Scheme.ECMP, cc="dctcp", ecn_threshold="0", base_rtt_pkts=40)
    exactly_once(r)
    rtt_s = r["transport"]["base_rtt_ns"] / 1e9
    for fid, flow_rows in w.groupby("fid"):
        rows = flow_rows.reset_index(drop=True)
        first_mark = rows.index[rows["ecn"]][0]
        cuts = rows.index[rows["rule"] == "decrease"]
        assert len(cuts) >= 2, fid
        c = cuts[0]
        before = rows["cwnd_pkts"][c - 1] if c > 0 else r["transport"]["bdp_pkts"]
        assert rows["cwnd_pkts"][c] / before == pytest.approx(0.5, abs=0.02), fid
        assert rows["t_s"][c] - rows["t_s"][first_mark] <= 3 * rtt_s
        gaps = np.diff(rows["t_s"][cuts].to_numpy())
        assert (gaps >= 0.9 * rtt_s).all(), gaps  # one cut per RTT


def test_swift_holds_the_bottleneck_near_its_target(fab: Fabric, tmp_path: Any) -> None:
    r, w = go(fab, tmp_path / "run", "incast", 4 * MB, Scheme.ECMP, cc="swift", base_rtt_pkts=40, buffer=4 * MB)
    exactly_once(r)
    ts = results.load(tmp_path / "run").timeseries
    dst = r["flow_stats"][0]["dst"]
    port = ts[ts["port"].str.endswith(f"->{dst}")]
    late = port[port["t_s"] > port["t_s"].max() / 2]  # after the first window's transient
    median = float(late["pkts"].median())
    print(f"swift: bottleneck median {median:.1f} packets in the second half (target {SWIFT_TARGET_Q_PKTS:g})")
    assert 0.5 * SWIFT_TARGET_Q_PKTS <= median <= 2 * SWIFT_TARGET_Q_PKTS, median
    assert (w["rule"] == "decrease").any() and (w["rule"] == "increase").any()


def test_nscc_decreases_only_with_ecn_and_delay_above_target(fab: Fabric, tmp_path: Any) -> None:
    # three to one: windows start at one BDP, so the bottleneck queue starts near two BDPs, twice nscc's
    # target (one base RTT of queueing), and decreases must come. Two to one starts the queue at the target
    # itself, and a CI run saw no decrease at all (1,132 proportional, 887 no-change).
    base = 40
    r, w = go(
        fab,
        tmp_path / "run",
        "incast",
        4 * MB,
        Scheme.ECMP,
        cc="nscc",
        base_rtt_pkts=base,
        buffer=4 * MB,
        fan_in=3,
    )
    exactly_once(r)
    acts = w[w["rule"] != "timeout"]
    delay = acts["rtt_pkts"] - base
    target = base  # one base RTT of queueing
    md = acts["rule"] == "decrease"
    print("nscc rules:", acts["rule"].value_counts().to_dict())
    assert md.any()
    assert (acts["ecn"][md]).all() and (delay[md] >= target - 1e-6).all()
    assert (acts["rule"][acts["ecn"] & (delay < target - 1e-6)].isin(["no-change", "fast", "quick-adapt"])).all()
    assert (acts["rule"][~acts["ecn"]].isin(["fair", "proportional", "fast", "quick-adapt"])).all()


def test_cc_none_leaves_the_paced_blast_as_it_was(fab: Fabric, tmp_path: Any) -> None:
    """Without --cc nothing of the transport runs: data payloads and ACK trailers stay zero, no duplicate
    tracking, no window trace, unlimited buffers; with it, the frames carry their departure stamps."""
    tree = fab.tree
    host = tree.hosts[5]
    for cc in ("none", "dctcp"):
        cap = capture(tree.ns(host.name), tree.host_port(host.name).ifname)
        try:
            r = run(
                fab, RunParams("permutation", 32 * 4096, 1.0, Scheme.ECMP, acks=True, cc=cc), tmp_path / cc
            ).to_json()
            time.sleep(0.05)
            frames = drain(cap)
        finally:
            cap.close()
        assert r["packets_received"] == r["packets_sent"]
        data = [f for f, _ in frames if len(f) > ACK_FRAME_BYTES and f[23] == 17]
        acks = [f for f, _ in frames if len(f) == ACK_FRAME_BYTES and f[42] == OPCODE_RC_ACK]
        assert data and acks
        stamped = [f for f in data if f[54:58] != b"\0\0\0\0"]
        echoed = [f for f in acks if f[58:62] != b"\0\0\0\0"]
        if cc == "none":
            assert not stamped and not echoed
            assert r["port_buffer_bytes"] == 0 and r["transport"] == {"cc": "none"}
            assert "received_duplicates" not in r["flow_stats"][0]
            assert results.load(tmp_path / cc).windows.empty
        else:
            assert stamped and echoed
    assert r["transport"]["cc"] == "dctcp"


def test_a_starved_transport_is_invalid(fab: Fabric, tmp_path: Any) -> None:
    """The ACK thread sleeps 30 packet times after its 200th ACK: the verdict says the transport fell behind."""
    t_pkt_us = Packetizer(4096).frame_len(4096) * 8 / TIMING_RATE_BPS * 1e6
    r, _ = go(fab, tmp_path / "run", size=MB, cc="dctcp", inject=f"ackstall:200:{round(30 * t_pkt_us)}")
    f = r["fidelity"]
    assert not f["valid"]
    assert any("the transport fell behind: ACKs acted on" in x for x in f["reasons"]), f["reasons"]
    assert f["transport"]["ack_late_max_pkts"] >= 25


def test_an_overflowing_ack_queue_is_invalid(fab: Fabric, tmp_path: Any) -> None:
    """The transport holds at most 128 ACK events until they are due (a base RTT holds many more): the events it
    had no room for are counted, and the verdict rejects the run for them."""
    r, _ = go(fab, tmp_path / "run", size=MB, cc="dctcp", inject="ackring:128")
    f = r["fidelity"]
    assert not f["valid"] and f["transport"]["ring_overflow"] > 0, f
    assert any("the transport lost" in x and "ACK events" in x for x in f["reasons"]), f["reasons"]


def test_flows_left_incomplete_are_invalid(fab: Fabric, tmp_path: Any) -> None:
    """The senders give up 100 ms after they start (a 1 MB flow needs about 350 ms at this rate): flows end
    incomplete, and the verdict says how many."""
    r, _ = go(fab, tmp_path / "run", size=MB, cc="dctcp", inject="deadline:100")
    f = r["fidelity"]
    assert not f["valid"] and f["transport"]["incomplete_flows"] == 16, f
    assert any("16 flows were not received in full" in x for x in f["reasons"]), f["reasons"]
