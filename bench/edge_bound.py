"""Appendix F.4's exact bound: under Ofan an edge uplink never holds more
than w + 1 packets. Runs 1 MB and 16 MB permutations at load 1.0 for each k
and seed, at the fabric's auto rate, and prints JSON: per run the verdict,
the largest edge-uplink queue and the bound, and the count of valid runs
that broke it (which must be 0).

Usage: sudo .venv/bin/python bench/edge_bound.py [--k 4,6,8] [--sizes 1MB,16MB] [--seeds 1-10] [--retries 2]
"""

from __future__ import annotations

import argparse
import json
import sys

from testbed.fabric.budget import auto_rate_bps
from testbed.fabric.build import Fabric, FabricSpec
from testbed.models.schemes import Scheme
from testbed.run.experiment import run_valid
from testbed.run.params import RunParams
from testbed.topology import FatTree
from testbed.topology.units import parse_seeds, parse_size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", default="4,6,8")
    ap.add_argument("--sizes", default="1MB,16MB")
    ap.add_argument("--seeds", type=parse_seeds, default=parse_seeds("1-10"))
    ap.add_argument("--retries", type=int, default=2)
    a = ap.parse_args()
    runs, broken = [], 0
    for k in (int(x) for x in a.k.split(",")):
        rate = auto_rate_bps(FatTree(k, "eb"))
        with Fabric(FabricSpec(k=k, rate_bps=rate, prefix="eb")) as fab:
            w = fab.tree.w
            for size in a.sizes.split(","):
                for seed in a.seeds:
                    r = run_valid(
                        fab,
                        RunParams("permutation", parse_size(size), 1.0, Scheme.OFAN, seed=seed),
                        attempts=1 + a.retries,
                    ).to_json()
                    edge = max(p["max_pkts"] for p in r["ports"] if p["stage"] == "edge_agg")
                    valid = r["fidelity"]["valid"]
                    broken += int(valid and edge > w + 1)
                    runs.append(
                        {
                            "k": k,
                            "rate_bps": rate,
                            "size": size,
                            "seed": seed,
                            "valid": valid,
                            "edge_uplink_max": edge,
                            "bound": w + 1,
                            "cct_increase": r["cct_increase"],
                            "nic_burst_pkts": r["fidelity"]["nic_burst_pkts"],
                            "attempts": 1 + len(r["discarded_attempts"]),
                            "reasons": r["fidelity"]["reasons"],
                        }
                    )
                    print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    print(
        json.dumps(
            {"runs": runs, "valid": sum(r["valid"] for r in runs), "total": len(runs), "valid_runs_over_bound": broken},
            indent=1,
        )
    )
    return 0 if broken == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
