"""testbed export htsim on a hand-made result directory: the flows as a
connection matrix htsim's reader (and the testbed's own cm workload) reads
back, a topology file whose propagation is the run's in ns at 800 Gbit/s, a
command line with the run's load balancer, seed and ECN threshold, and a
note for a scheme htsim does not have."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from testbed.measure import htsim
from testbed.measure.results import load
from testbed.topology import FatTree
from traffic.workloads import load_cm


def run_dir(tmp: Path, scheme: str, k: int = 4, topology: str = "fattree") -> Path:
    tree = FatTree(k, "x", topology)
    d = tmp / f"{scheme}-{topology}"
    d.mkdir()
    hosts = tree.hosts
    n = len(hosts)
    flows = [
        {"fid": i + 1, "src": hosts[i].name, "dst": hosts[(i + 3) % n].name, "size_bytes": 1 << 20} for i in range(n)
    ]
    pd.DataFrame(flows).to_parquet(d / "flows.parquet")
    (d / "manifest.json").write_text(
        json.dumps(
            {
                "complete": True,
                "k": k,
                "topology": topology,
                "scheme": scheme,
                "params": {"workload": "permutation", "seed": 7, "payload": 4096},
                "propagation": {"link_pkts": 11.967448539971278},
                "port_buffer_bytes": 0,
                "summary": {"ecn": {"unit": "bytes", "threshold": 81920}},
            }
        )
    )
    return d


def test_the_twin_of_a_reps_run(tmp_path: Path) -> None:
    d = run_dir(tmp_path, "reps")
    files = htsim.write(load(d), tmp_path / "out")
    cm = (tmp_path / "out" / "flows.cm").read_text()
    assert cm.startswith("Nodes 16\nConnections 16\n") and "0->3 id 1 start 0 size 1048576" in cm
    back = load_cm(str(tmp_path / "out" / "flows.cm"), 16, 800_000_000_000)
    assert [(f.src, f.dst, f.size_bytes) for f in back] == [(i, (i + 3) % 16, 1 << 20) for i in range(16)]
    topo = (tmp_path / "out" / "topology.topo").read_text()
    assert "Tiers 3" in topo and "Podsize 4" in topo and topo.count("Downlink_Latency_ns 500") == 3
    cmd = (tmp_path / "out" / "command.sh").read_text()
    assert "-load_balancing_algo reps" in cmd and "-seed 7" in cmd and "-ecn 20 20" in cmd and "-mtu 4160" in cmd
    assert len(files) == 4


def test_a_scheme_htsim_lacks_is_said(tmp_path: Path) -> None:
    d = run_dir(tmp_path, "ofan", k=8, topology="leafspine")
    t = htsim.twin(load(d))
    assert "ofan has no htsim_uec counterpart" in t.notes and "-load_balancing_algo oblivious" in t.command
    assert "Tiers 2" in t.topology and "Radix_Down 8" in t.topology and t.cm.startswith("Nodes 32\n")


def test_the_command_refuses_what_is_not_a_run(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "testbed.cli", "export", "htsim", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "not a run directory" in r.stderr
