"""The faithful envelope of this machine: for each fabric, the largest host
packet rate at which every seed's run is valid. The numbers behind the
docs/methods/choosing-the-rate.md, docs/results/envelopes.md and testbed/fabric/packet_budget.json.

For each fabric (topology and k) it tries the given host packet rates
(hosts x line rate / frame bits) from the highest down, runs a 1 MB
permutation at load 1.0 under each scheme (default Ofan and ECMP: Ofan's
switch queues are the shallowest, ECMP's the deepest, and a port with a
standing queue dequeues on its own timer every packet, which costs the
emulator more) for every seed, and stops at the first rate where all runs
are valid (no retries: the envelope is "n of n", not "after retries") with
CPU to spare: the median of the runs' busiest-CPU
share at most --cpu-headroom (0.85), since a machine of this kind on a
slower day (measured: 10-25 % more CPU per packet on some days) must still
carry the rate. It prints one JSON object: per fabric and rate, each run's
verdict and the figures that limit the rate (CCT increase, pacing, start
skew, the emulator's timing excess, busiest CPU, steal), and per fabric the
largest rate found valid for all schemes and seeds.

A run class (--run-class, packet_budget.json's "classes") measures the runs that cost more per data packet
than the data budget's: acks (an ACK per data packet), cc (NSCC's window, 4 MB), payload (16 KB frames),
chained (FSDP2's chained ring steps with NSCC, 4 GPUs a server). Rates are still in host data packets per second;
each fabric's result also gives the class's factor: its largest all-valid rate over the data budget there.

Usage: sudo .venv/bin/python bench/fidelity.py [--k 4,8,12] [--topology fattree]
         [--packets-per-s 72000,48000,36000,24000] [--seeds 1-5] [--size 1MB] [--schemes ofan,ecmp]
         [--run-class data|acks|cc|payload|chained] [--cpu-headroom 0.85]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from testbed.fabric.budget import host_packets_per_s, round_down
from testbed.fabric.build import Fabric, FabricSpec
from testbed.models.schemes import Scheme
from testbed.run.experiment import run
from testbed.run.params import RunParams
from testbed.run.sweep import Matrix
from testbed.topology import FatTree
from testbed.topology.units import parse_ints, parse_seeds, parse_size
from traffic.packet import DEFAULT_PAYLOAD, FRAME_OVERHEAD

# each class's runs: the RunParams options beside the scheme and seed (data: the budget's own runs)
RUN_CLASSES: dict[str, dict[str, Any]] = {
    "data": {},
    "acks": {"acks": True},
    "cc": {"cc": "nscc", "size": 4 << 20},
    "payload": {"payload": 16 << 10},
    "chained": {"workload": "fsdp", "cc": "nscc", "gpus_per_server": 4, "steps": 3, "size": 1 << 20},
}


def line_rate(tree: FatTree, host_pps: int, payload: int = DEFAULT_PAYLOAD) -> int:
    return round_down(Fraction(host_pps * (payload + FRAME_OVERHEAD) * 8, tree.n_hosts))


def params_of(run_class: str, scheme: Scheme, seed: int, size: int) -> RunParams:
    opts = {"workload": "permutation", "size": size, **RUN_CLASSES[run_class]}
    return RunParams(load=1.0, scheme=scheme, seed=seed, **opts)


def one_run(fab: Fabric, p: RunParams) -> dict[str, Any]:
    t0 = time.monotonic()
    r = run(fab, p).to_json()
    f = r["fidelity"]
    return {
        "seed": p.seed,
        "valid": f["valid"],
        "reasons": f["reasons"],
        "cct_increase": r["cct_increase"],
        "pacing_error_max": f["pacing_error_max"],
        "start_skew_pkts": f["start_skew_pkts"],
        "timing_excess_share": f["timing_excess_share"],
        "nic_late_pkts": f["nic_late_pkts"],
        "nic_stall_pkts": f["nic_stall_pkts"],
        "cpu_busiest": f["cpu_busiest"],
        "cpu_steal": f["cpu_steal"],
        "cpu_awake": f["cpu_awake"],
        "edge_agg_max_pkts": r["queues"]["edge_agg"]["max_pkts"],
        "wall_s": round(time.monotonic() - t0, 1),
    }


def runs_until_invalid(
    fab: Fabric, what: str, schemes: list[Scheme], seeds: list[int], size: int, run_class: str = "data"
) -> list[dict[str, Any]]:
    """Each scheme's run for each seed, stopping at the first invalid one."""
    runs: list[dict[str, Any]] = []
    for scheme in schemes:
        for seed in seeds:
            runs.append({"scheme": scheme.label, **one_run(fab, params_of(run_class, scheme, seed, size))})
            print(
                f"{what} {scheme.label} seed {seed}: {'valid' if runs[-1]['valid'] else runs[-1]['reasons']}",
                file=sys.stderr,
            )
            if not runs[-1]["valid"]:
                return runs
    return runs


def envelope(
    topology: str,
    k: int,
    levels: Sequence[int],
    seeds: list[int],
    size: int,
    schemes: list[Scheme],
    headroom: float,
    run_class: str = "data",
) -> dict[str, Any]:
    tree = FatTree(k, "bfid", topology)
    tried = []
    best = None
    opts = RUN_CLASSES[run_class]
    acks = bool(opts.get("acks") or opts.get("cc"))
    payload = int(opts.get("payload", DEFAULT_PAYLOAD))
    for pps in sorted(levels, reverse=True):
        rate = line_rate(tree, pps, payload)
        spec = FabricSpec(
            k=k,
            prefix="bfid",
            rate_bps=rate,
            topology=topology,
            ack_priority=acks,
            mtu=Matrix.mtu_for(payload),
        )
        with Fabric(spec) as fab:
            what = f"{topology} k={k} {run_class} {pps} pkt/s ({rate} bit/s)"
            runs = runs_until_invalid(fab, what, schemes, seeds, size, run_class)
        ok = len(runs) == len(seeds) * len(schemes) and all(x["valid"] for x in runs)
        cpu = statistics.median(x["cpu_busiest"] for x in runs)
        tried.append(
            {"host_packets_per_s": pps, "rate_bps": rate, "all_valid": ok, "cpu_busiest_median": cpu, "runs": runs}
        )
        ok = ok and cpu <= headroom
        if ok:
            data = host_packets_per_s(tree)
            best = {"host_packets_per_s": pps, "rate_bps": rate, "factor": round(float(pps / data), 3)}
            break
    return {
        "topology": topology,
        "k": k,
        "hosts": tree.n_hosts,
        "run_class": run_class,
        "largest_all_valid": best,
        "tried": tried,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", default="4,8,12", help="comma-separated k values")
    ap.add_argument("--topology", default="fattree", choices=["fattree", "leafspine"])
    ap.add_argument(
        "--packets-per-s", default="72000,48000,36000,24000", help="host packet rates to try, highest first"
    )
    ap.add_argument("--seeds", type=parse_seeds, default=parse_seeds("1-5"))
    ap.add_argument("--size", default="1MB")
    ap.add_argument(
        "--schemes",
        default="ofan,ecmp",
        help="every scheme's runs must be valid: Ofan's queues are the shallowest, ECMP's the deepest",
    )
    ap.add_argument("--cpu-headroom", type=float, default=0.85)
    ap.add_argument(
        "--run-class", choices=list(RUN_CLASSES), default="data", help="the runs measured (the data budget's: data)"
    )
    a = ap.parse_args()
    out = [
        envelope(
            a.topology,
            k,
            parse_ints(a.packets_per_s),
            list(a.seeds),
            parse_size(a.size),
            [Scheme.parse(x) for x in a.schemes.split(",")],
            a.cpu_headroom,
            a.run_class,
        )
        for k in parse_ints(a.k)
    ]
    print(
        json.dumps(
            {
                "bench": "fidelity",
                "run_class": a.run_class,
                "schemes": a.schemes,
                "size": a.size,
                "seeds": a.seeds,
                "fabrics": out,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
