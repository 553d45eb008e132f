"""How together the senders start: the distribution of `start_skew_s` (the
spread of the senders' first frames at their edge switches) over many
default runs, in packet times and microseconds, with the verdicts.

A default run: the fabric's auto rate (or --rate), a 1 MB Ofan permutation at load 1.0.

Usage: sudo .venv/bin/python bench/start_skew.py [--k 4] [--topology fattree] [--seeds 1-20] [--rate 100mbit]
"""

from __future__ import annotations

import argparse
import json
import statistics

from testbed.fabric.budget import auto_rate_bps
from testbed.fabric.build import Fabric, FabricSpec
from testbed.models.schemes import Scheme
from testbed.run.experiment import run
from testbed.run.params import RunParams
from testbed.topology import FatTree
from testbed.topology.units import parse_rate, parse_seeds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--topology", default="fattree", choices=["fattree", "leafspine"])
    ap.add_argument("--seeds", type=parse_seeds, default=parse_seeds("1-20"))
    ap.add_argument("--rate", type=parse_rate, default=0, help="line rate (default: the auto rate)")
    a = ap.parse_args()
    rate = a.rate or auto_rate_bps(FatTree(a.k, "bskew", a.topology))
    runs = []
    with Fabric(FabricSpec(k=a.k, prefix="bskew", rate_bps=rate, topology=a.topology)) as fab:
        for seed in a.seeds:
            r = run(fab, RunParams("permutation", 1 << 20, 1.0, Scheme.OFAN, seed)).to_json()
            f = r["fidelity"]
            runs.append(
                {
                    "seed": seed,
                    "start_skew_pkts": f["start_skew_pkts"],
                    "start_skew_us": 1e6 * f["start_skew_s"],
                    "valid": f["valid"],
                    "reasons": f["reasons"],
                    "cct_increase": r["cct_increase"],
                }
            )
    skews = sorted(x["start_skew_pkts"] for x in runs)
    print(
        json.dumps(
            {
                "bench": "start_skew",
                "k": a.k,
                "topology": a.topology,
                "rate_bps": rate,
                "runs": runs,
                "start_skew_pkts": {
                    "min": skews[0],
                    "median": statistics.median(skews),
                    "p90": skews[min(len(skews) - 1, int(0.9 * len(skews)))],
                    "max": skews[-1],
                },
                "valid": sum(x["valid"] for x in runs),
                "of": len(runs),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
