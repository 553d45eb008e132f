"""Build and teardown time of the fabric, k=4 and k=8. Prints one JSON object.

Build: namespaces, veth pairs, a TBF on every port, clsact and the eBPF
program on every port, maps programmed (bcc compile included). Teardown is
measured until the switch programs are freed, which the kernel does only once
every device holding a filter is gone: the veths are really gone, not just the
namespace names.

Usage: sudo .venv/bin/python bench/setup.py [--reps N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from testbed.fabric.build import Fabric, FabricSpec

TARGET_UP_S = {4: 0.5, 8: 2.0}


def measure(k: int, reps: int) -> dict[str, object]:
    ups, downs, compile_wait = [], [], []
    for _ in range(reps):
        fab = Fabric(FabricSpec(k=k, prefix="bench"))
        fab.__enter__()
        ups.append(fab.times.total_s)
        compile_wait.append(fab.times.compile_wait_s)
        t0 = time.perf_counter()
        fab.teardown()
        downs.append(time.perf_counter() - t0)
    tree = fab.tree
    return {
        "k": k, "namespaces": len(tree.nodes), "veth_pairs": len(tree.links), "tbf_qdiscs": tree.n_ports,
        "bpf_filters": tree.n_ports + len(tree.hosts),
        "up_s_median": statistics.median(ups), "up_s_all": ups,
        "down_s_median": statistics.median(downs), "down_s_all": downs,
        "compile_wait_s_median": statistics.median(compile_wait),
        "down_over_up": statistics.median(downs) / statistics.median(ups),
        "target_up_s": TARGET_UP_S[k], "meets_target": statistics.median(ups) <= TARGET_UP_S[k],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    print(json.dumps({"bench": "setup", "results": [measure(k, a.reps) for k in (4, 8)]}, indent=1))


if __name__ == "__main__":
    main()
