"""How faithful the emulation is at a given size and rate: the numbers behind
the README's "Choosing the rate" table and its edge-uplink maxima.

For each (k, rate) it runs a 1 MB permutation at load 1.0 under Ofan for
every seed and prints one JSON object: CCT increase over the lower bound,
worst host pacing error, largest edge->aggregation queue, the fidelity
verdict and the hypervisor's steal share of each run.

Usage: sudo .venv/bin/python bench/fidelity.py [--k 4] [--rates 25mbit,50mbit,100mbit] [--seeds 1,2,3]
"""

from __future__ import annotations

import argparse
import json

from testbed.dataplane.schemes import Scheme
from testbed.fabric.build import Fabric, FabricSpec
from testbed.run.experiment import RunParams, run
from testbed.topology.units import parse_rate, parse_size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", default="4", help="comma-separated k values")
    ap.add_argument("--rates", default="25mbit,50mbit,100mbit")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--size", default="1MB")
    ap.add_argument("--scheme", default="ofan")
    a = ap.parse_args()
    out = []
    for k in (int(x) for x in a.k.split(",")):
        for rate in (parse_rate(x) for x in a.rates.split(",")):
            rows = []
            with Fabric(FabricSpec(k=k, prefix="bfid", rate_bps=rate)) as fab:
                for seed in (int(x) for x in a.seeds.split(",")):
                    r = run(fab, RunParams("permutation", parse_size(a.size), 1.0, Scheme.parse(a.scheme),
                                           seed)).to_json()
                    rows.append({"seed": seed, "cct_increase": r["cct_increase"],
                                 "pacing_error_max": r["fidelity"]["pacing_error_max"],
                                 "edge_agg_max_pkts": r["queues"]["edge_agg"]["max_pkts"],
                                 "valid": r["fidelity"]["valid"], "cpu_steal": r["fidelity"]["cpu_steal"]})
            out.append({"k": k, "rate_bps": rate, "host_packets_per_s": fab.tree.n_hosts * rate / (8 * 4154),
                        "runs": rows})
    print(json.dumps({"bench": "fidelity", "scheme": a.scheme, "size": a.size, "results": out}, indent=1))


if __name__ == "__main__":
    main()
