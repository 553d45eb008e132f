"""Traffic and measurement on the real kernel: every collective, RoCEv2
framing on the wire, ACKs, result files, time series, fidelity verdict."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed.fabric.build import Fabric, FabricSpec
from testbed.measure import results
from testbed.models.schemes import Scheme
from testbed.run.experiment import run
from testbed.run.params import RunParams

from .helpers import TIMING_RATE_BPS, capture, cli, drain

pytestmark = pytest.mark.root

KB = 1024


@pytest.fixture(scope="module")
def fab() -> Iterator[Fabric]:
    with Fabric(FabricSpec(k=4, prefix="tt")) as f:
        yield f


WORKLOADS: list[tuple[str, dict[str, Any]]] = [
    ("permutation", {}),
    ("permutation", {"inter_pod": True}),
    ("all-to-all", {}),
    ("ring", {}),
    ("fsdp", {"gpus_per_server": 2, "steps": 1}),
    ("fsdp", {"gpus_per_server": 4, "cc": "nscc"}),
    ("stride", {}),
    ("moe", {"gpus_per_server": 4}),
    ("moe", {"gpus_per_server": 4, "eplb": True}),
    ("incast", {"fan_in": 3}),
]


@pytest.mark.parametrize("scheme", [Scheme.ECMP, Scheme.OFAN])
@pytest.mark.parametrize(
    "workload,extra", WORKLOADS, ids=[f"{w}-{'-'.join(map(str, e.values()))}" for w, e in WORKLOADS]
)
def test_every_workload_delivers_and_respects_its_bound(
    fab: Fabric, workload: str, extra: dict[str, Any], scheme: Scheme
) -> None:
    size = 16 * KB if workload in ("all-to-all", "moe") else 128 * KB
    r = run(fab, RunParams(workload, size, 0.9, scheme, seed=3, **extra)).to_json()
    assert r["packets_sent"] > 0
    assert r["packets_received"] == r["packets_sent"], r["drops_detail"]
    assert r["drops"] == 0, r["drops_detail"]
    assert r["cct_s"] >= r["cct_lower_bound_s"] > 0
    if extra.get("inter_pod"):
        assert all(f["src"][1] != f["dst"][1] for f in r["flow_stats"])  # h{pod}_...


def test_all_to_all_ofan_queues_no_larger_than_ecmp(fab: Fabric) -> None:
    maxima = {}
    for scheme in (Scheme.ECMP, Scheme.OFAN):
        r = run(fab, RunParams("all-to-all", 64 * KB, 1.0, scheme, seed=1)).to_json()
        assert r["drops"] == 0 and r["packets_received"] == r["packets_sent"] == 240 * 16
        maxima[scheme.label] = max(
            r["queues"][s]["max_pkts"] for s in ("edge_agg", "agg_core", "core_agg", "agg_edge", "edge_host")
        )
    print(f"all-to-all 64KB/flow, load 1.0: max switch queue ecmp {maxima['ecmp']}, ofan {maxima['ofan']}")
    assert maxima["ofan"] <= maxima["ecmp"]


def test_packets_decode_as_rocev2_with_consecutive_psns(fab: Fabric) -> None:
    from scapy.contrib.roce import AETH, BTH
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    tree = fab.tree
    host = tree.hosts[0]
    port = tree.host_port(host.name)
    cap = capture(tree.ns(host.name), port.ifname)
    try:
        r = run(fab, RunParams("all-to-all", 12 * KB, 1.0, Scheme.OFAN, seed=2, acks=True)).to_json()
        time.sleep(0.05)
        frames = drain(cap)
    finally:
        cap.close()
    assert r["packets_received"] == r["packets_sent"] and r["acks_received"] == r["packets_sent"]
    psns: dict[int, list[int]] = defaultdict(list)
    acks_out = 0
    for data, pkttype in frames:
        pkt = Ether(data)
        if UDP not in pkt or pkt[UDP].dport != 4791:
            continue
        assert BTH in pkt, pkt.summary()
        bth = pkt[BTH]
        assert pkt[IP].len == len(data) - 14 and pkt[UDP].len == len(data) - 34
        if pkttype == socket.PACKET_OUTGOING and bth.opcode == 0x04:  # our data packets, leaving the NIC
            assert pkt[IP].src == str(tree.host_ip(host))
            assert len(data) == 14 + 20 + 8 + 12 + 4096 + 4 or len(data) < 4154
            psns[bth.dqpn].append(bth.psn)
        elif bth.opcode == 0x11:  # ACKs
            assert AETH in pkt and len(data) == 62
            assert pkt[IP].chksum == IP(bytes(pkt[IP])).chksum  # a valid header checksum
            if pkttype == socket.PACKET_OUTGOING:
                acks_out += 1
    mine = [f for f in r["flow_stats"] if f["src"] == host.name]
    assert len(psns) == len(mine) == 15
    for fid, seq in psns.items():
        assert seq == list(range(len(seq))), (fid, seq)
        assert len(seq) == 3  # 12 KB in 4 KB packets
    assert acks_out == sum(f["received"] for f in r["flow_stats"] if f["dst"] == host.name)


def test_acks_end_the_cct_and_use_the_small_class(fab: Fabric) -> None:
    r = run(fab, RunParams("permutation", 256 * KB, 1.0, Scheme.OFAN, seed=4, acks=True)).to_json()
    assert r["acks"] and r["acks_received"] == r["packets_sent"] == r["packets_received"] == 16 * 64
    assert r["drops"] == 0
    last_ack = max(f["last_ack_ns"] for f in r["flow_stats"])
    last_data = max(f["last_rx_ns"] for f in r["flow_stats"])
    assert last_ack > last_data
    # the CCT ends at the last ACK plus its flow's propagation round trip (2 x links x the per-link delay)
    link_ns = r["propagation"]["link_s"] * 1e9
    ends = [f["last_ack_ns"] + round(2 * f["path_links"] * link_ns) for f in r["flow_stats"]]
    assert [f["completion_ns"] for f in r["flow_stats"]] == ends
    assert r["cct_end_ns"] == max(ends) and link_ns > 0
    assert r["cct_s"] == pytest.approx((r["cct_end_ns"] - r["cct_start_ns"]) / 1e9)
    assert r["cct_s"] >= r["cct_lower_bound_s"]
    for name, s in r["switches"].items():
        pp = s["pointer_pkts"]
        if name.startswith("e"):
            # every data packet sent up is answered by one ACK sent up the same way
            assert pp["small"] == pp["data"] > 0, (name, pp)
    no_acks = run(fab, RunParams("permutation", 256 * KB, 1.0, Scheme.OFAN, seed=4)).to_json()
    assert no_acks["acks_received"] == 0
    assert all(s["pointer_pkts"]["small"] == 0 for s in no_acks["switches"].values())
    # ACK frames add to every host's bytes both ways, so the bound rises; the CCTs of two runs are not compared:
    # at 43 ms they differ by run-to-run noise (a fresh-clone CI saw the ACK run 1.3 % faster)
    assert r["cct_lower_bound_s"] > no_acks["cct_lower_bound_s"]


def test_result_directory_and_time_series(fab: Fabric, tmp_path: Path) -> None:
    out = tmp_path / "perm4mb"
    r = run(fab, RunParams("permutation", 4 * 1024 * KB, 1.0, Scheme.ECMP, seed=1), out_dir=out).to_json()
    res = results.load(out)
    m = res.manifest
    assert m["complete"] and m["status"] == "complete"
    assert m["params"]["seed"] == 1 and m["params"]["workload"] == "permutation"
    assert m["provenance"]["kernel_release"] == os.uname().release
    assert m["provenance"]["packages"]["pandas"]
    assert set(m["switch_schemes"].values()) == {"ecmp"}
    assert m["fidelity"]["valid"] == r["fidelity"]["valid"]
    assert len(res.flows) == 16 and (res.flows["received"] == res.flows["sent"]).all()
    assert len(res.ports) == fab.tree.n_ports
    assert set(res.stages["stage"]) == {"host_edge", "edge_agg", "agg_core", "core_agg", "agg_edge", "edge_host"}
    ts = res.timeseries
    span = ts["t_s"].max() - ts["t_s"].min()
    samples = ts["t_s"].nunique()
    assert samples / span >= 200, (samples, span)
    worst = res.ports.sort_values("max_pkts").iloc[-1]
    series = ts[ts["port"] == worst["port"]]["pkts"]
    assert worst["max_pkts"] >= 100  # ECMP collides at k=4
    assert series.max() >= 0.95 * worst["max_pkts"]  # the series sees the peak the kernel recorded
    assert series.iloc[-1] == 0
    png = tmp_path / "q.png"
    p = cli("plot", "queues", str(out), "--output", str(png))
    assert p.returncode == 0, p.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_overloaded_run_is_invalid_and_default_run_is_valid(tmp_path: Path) -> None:
    r = cli(
        "run",
        "--workload",
        "permutation",
        "--size",
        "1MB",
        "--rate",
        "400mbit",
        "--json",
        "--out",
        str(tmp_path / "over"),
        "--prefix",
        "to",
    )
    assert r.returncode == 0, r.stderr
    over = json.loads(r.stdout)
    assert over["fidelity"]["valid"] is False and over["fidelity"]["reasons"]
    assert "INVALID" in r.stderr
    assert json.loads((tmp_path / "over" / "manifest.json").read_text())["valid"] is False
    d = cli(
        "demo",
        "--prefix",
        "to",
        "--retries",
        "0",
        "--rate",
        str(TIMING_RATE_BPS),
        "--schemes",
        "ecmp,ofan",
        cwd=tmp_path,
    )
    assert d.returncode == 0, d.stderr
    manifests = sorted((tmp_path / "results").glob("*-demo/cells/*/manifest.json"))
    assert len(manifests) == 4  # two schemes, two sizes, one try each
    valid = [json.loads(m.read_text())["fidelity"]["valid"] for m in manifests]
    assert sum(valid) >= 3, valid
    assert "report.html" in d.stdout


def test_htsim_connection_matrix_runs_with_its_start_times(tmp_path: Path) -> None:
    """16 flows, the second half starting 5 us later at htsim's 100 Gbit/s: 15 packet times, kept as packet
    times at the testbed's rate. Every packet arrives, late flows start no sooner, and a run is valid
    (each sender's start is counted from its own time)."""
    lines = ["Nodes 16", "Connections 16"]
    lines += [f"{i}->{(i + 5) % 16} id {100 + i} start {0 if i < 8 else 5} size {256 * 1024}" for i in range(16)]
    cm = tmp_path / "flows.cm"
    cm.write_text("\n".join(lines) + "\n")
    t_pkt = 4154 * 8 / TIMING_RATE_BPS
    delay = 5e-6 * 100e9 / TIMING_RATE_BPS  # 5 us at 100 Gbit/s, in seconds at this rate
    assert delay / t_pkt == pytest.approx(15.0, abs=0.1)
    tries = []
    for seed in (1, 2):  # one try each: a start judged from the run's start would fail both
        r = cli(
            "run",
            "--workload",
            "cm",
            "--flows",
            str(cm),
            "--k",
            "4",
            "--scheme",
            "ofan",
            "--rate",
            str(TIMING_RATE_BPS),
            "--seed",
            str(seed),
            "--retries",
            "0",
            "--json",
            "--out",
            str(tmp_path / f"run{seed}"),
            "--prefix",
            "tcm",
        )
        assert r.returncode == 0, r.stderr
        res = json.loads(r.stdout)
        tries.append(res)
        assert res["packets_received"] == res["packets_sent"] == 16 * 64 and res["drops"] == 0
        first = {f["fid"]: f["first_rx_ns"] for f in res["flow_stats"]}
        early, late_ = min(first[i] for i in range(1, 9)), min(first[i] for i in range(9, 17))
        assert (late_ - early) / 1e9 >= delay - t_pkt
        assert res["cct_lower_bound_s"] > 64 * t_pkt  # the late flows' start is in the bound
    # Single tries at this rate are valid about 39 times in 40 (a hypervisor
    # pause of a CPU can spoil one); both invalid is the bug this test is for.
    assert any(t["fidelity"]["valid"] for t in tries), [t["fidelity"]["reasons"] for t in tries]
    bad = tmp_path / "bad.cm"
    bad.write_text("Nodes 16\nConnections 1\n3->3 size 10\n")
    e = cli("run", "--workload", "cm", "--flows", str(bad), "--k", "4", "--prefix", "tcm")
    assert (
        e.returncode == 2
        and e.stderr.strip() == f"testbed: error: {bad}, line 3: nodes must be distinct and below 16, got 3->3"
    )


def _classes(tree: Any, node: str, peer: str) -> dict[str, tuple[int, int]]:
    """The HTB classes under a port's TBF: classid -> (bytes, packets) sent (tc's text: this tc has no JSON for
    classes)."""
    import re

    out = subprocess.run(
        ["ip", "netns", "exec", tree.ns(node), "tc", "-s", "class", "show", "dev", peer],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {m[1]: (int(m[2]), int(m[3])) for m in re.finditer(r"class htb (\S+) .*\n Sent (\d+) bytes (\d+) pkt", out)}


def test_acks_go_ahead_of_data_in_every_queue(fab: Fabric) -> None:
    """With ACK priority (the default of a fabric that carries ACKs), every port's TBF holds an HTB whose class 10:1 (strict priority) takes the
    62-byte ACKs and 10:2 the data frames: counted on a host's NIC and on a switch port of its path."""
    tree = fab.tree
    assert fab.spec.ack_priority
    host = tree.hosts[0]
    edge = tree.edge_of(host.name)
    before = {**_classes(tree, host.name, edge), **{f"e{k}": v for k, v in _classes(tree, edge, host.name).items()}}
    r = run(fab, RunParams("permutation", 64 * KB, 1.0, Scheme.OFAN, seed=2, acks=True)).to_json()
    assert r["acks_received"] == r["packets_received"] == 16 * 16
    nic = _classes(tree, host.name, edge)
    down = _classes(tree, edge, host.name)
    for got, key in ((nic, ""), (down, "e")):
        ack_b, ack_p = (got["10:1"][i] - before[f"{key}10:1"][i] for i in (0, 1))
        data_b, data_p = (got["10:2"][i] - before[f"{key}10:2"][i] for i in (0, 1))
        assert ack_p == 16 and ack_b == 16 * 62  # the host's ACKs leave by its NIC; its flow's ACKs come down
        assert data_p == 16 and data_b == 16 * 4154
