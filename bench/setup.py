"""Build and teardown time of the fabric, from k=4 to the paper's k=16 fat
tree and k=64 leaf-spine. Prints one JSON object.

Build: namespaces, veth pairs, a TBF on every port, the eBPF programs on
every port (switch ingress; host egress and ingress), maps programmed, bcc
compile included, and every port operationally up. Teardown is measured
until the kernel has freed the programs, which it does only once every
device holding a filter (every port) is gone: the veths are really gone, not
just the namespace names. Between repetitions the machine is left alone for
--settle seconds, since the kernel finishes destroying namespaces in the
background.

Each repetition builds twice: warm, with the program cache primed (what every
`up` after the first with the same program sees: no clang), and cold, with the
cache off (a fresh clone's first `up`, or a changed program). `up_s_median` is
the warm figure, the one the targets are for; `up_cold_s_median` and the ratio
cold/warm of the same run are beside it.

Usage: sudo .venv/bin/python bench/setup.py [--reps N] [--only fattree:12,leafspine:64] [--settle S]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import asdict

from testbed.dataplane.compile import Compiled, Dims
from testbed.fabric.build import Fabric, FabricSpec
from testbed.topology import FatTree

# (topology, k) -> target seconds for `up` on this machine kind (2 cores)
TARGET_UP_S = {
    ("fattree", 4): 0.5,
    ("fattree", 8): 0.5,
    ("fattree", 12): 2.0,
    ("fattree", 16): 5.0,
    ("leafspine", 32): 3.0,
    ("leafspine", 64): 6.0,
}
REPS = {("fattree", 4): 5, ("fattree", 8): 5}  # others: 3


def build_once(kind: str, k: int, cache: bool) -> tuple[float, dict[str, float], float]:
    """One up and down: (up s, up phases, down s)."""
    saved = os.environ.get("TESTBED_PROGRAM_CACHE")
    if not cache:
        os.environ["TESTBED_PROGRAM_CACHE"] = "off"
    try:
        fab = Fabric(FabricSpec(k=k, prefix="bench", topology=kind, rate_bps=1_000_000))
        fab.__enter__()
    finally:
        if saved is None:
            os.environ.pop("TESTBED_PROGRAM_CACHE", None)
        else:
            os.environ["TESTBED_PROGRAM_CACHE"] = saved
    up, phases = fab.times.total_s, asdict(fab.times)
    t0 = time.perf_counter()
    fab.teardown()
    return up, phases, time.perf_counter() - t0


def measure(kind: str, k: int, reps: int, settle_s: float) -> dict[str, object]:
    ups: list[float] = []
    colds: list[float] = []
    downs: list[float] = []
    phases: list[dict[str, float]] = []
    cold_phases: list[dict[str, float]] = []
    with Compiled(Dims.of(FatTree(k, "bench", kind))):
        pass  # primes the cache for the warm builds
    for _ in range(reps):
        for cache in (True, False):
            up, ph, down = build_once(kind, k, cache)
            (ups if cache else colds).append(up)
            (phases if cache else cold_phases).append(ph)
            downs.append(down)
            time.sleep(settle_s)
    tree = FatTree(k, "bench", kind)
    up = statistics.median(ups)
    return {
        "topology": kind,
        "k": k,
        "hosts": tree.n_hosts,
        "namespaces": len(tree.nodes),
        "veth_pairs": len(tree.links),
        "tbf_qdiscs": tree.n_ports,
        "bpf_filters": tree.n_ports + len(tree.hosts),
        "up_s_median": up,
        "up_s_all": ups,
        "phases_s_median": {name: statistics.median(p[name] for p in phases) for name in phases[0]},
        "up_cold_s_median": statistics.median(colds),
        "up_cold_s_all": colds,
        "cold_phases_s_median": {name: statistics.median(p[name] for p in cold_phases) for name in cold_phases[0]},
        "cold_over_warm": statistics.median(c / w for c, w in zip(colds, ups, strict=True)),
        "down_s_median": statistics.median(downs),
        "down_s_all": downs,
        "target_up_s": TARGET_UP_S[(kind, k)],
        "meets_target": up <= TARGET_UP_S[(kind, k)],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=0, help="repetitions per fabric (default 5 for k<=8, else 3)")
    ap.add_argument("--only", default="", help="comma-separated topology:k, e.g. fattree:12,leafspine:64")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds of quiet between repetitions (default 3)")
    a = ap.parse_args()
    todo = list(TARGET_UP_S)
    if a.only:
        todo = [(kind, int(k)) for kind, k in (item.split(":") for item in a.only.split(","))]
    results = [measure(kind, k, a.reps or REPS.get((kind, k), 3), a.settle) for kind, k in todo]
    print(json.dumps({"bench": "setup", "results": results}, indent=1))


if __name__ == "__main__":
    main()
