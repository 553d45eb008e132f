"""Single-try validity: the share of runs the verdict accepts on their first
and only try, per fabric and rate. The suite asserts shares of single tries
(tests/system/test_run.py and others) instead of retrying until a run is
valid; this bench measures the share those assertions rest on, and the
docs/results/envelopes.md quotes it.

For each k it builds one fabric per rate (all of them up at once, under
their own prefixes) and runs, for every seed in turn, the same workload on
each fabric, interleaved, so every rate sees the same hours of the machine.
One try per run. Each rejected try is counted under the first words of each
of its reasons.

Prints one JSON object: per fabric and rate, tries, valid, share, the
causes, and each run's CCT increase and busiest CPU (over the run and over
its busiest 100 ms window).

A rate "auto" is the fabric's auto rate for the run's payload and ACK
setting (what the presets use; "auto:0.75" three quarters of it), so that
`--rates auto --size 4MB --acks --scheme reps` measures what a preset's
cell of that kind gets on its first try.

Usage: sudo .venv/bin/python bench/validity.py [--k 4] [--topology fattree] [--rates 50mbit,100mbit|auto]
         [--seeds 1-40] [--scheme ofan[,ecmp]] [--workload permutation] [--size 1MB] [--payload 4096] [--acks]
         [--cc nscc] [--gpus-per-server 4] [--steps 3]
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import time
from collections import Counter
from contextlib import ExitStack
from fractions import Fraction
from typing import Any

from testbed.fabric.budget import auto_rate_bps, round_down
from testbed.fabric.build import Fabric, FabricSpec
from testbed.models.schemes import Scheme
from testbed.run.experiment import run
from testbed.run.params import RunParams
from testbed.run.sweep import Matrix
from testbed.topology import FatTree
from testbed.topology.units import format_rate, parse_ints, parse_rate, parse_seeds, parse_size
from traffic.packet import DEFAULT_PAYLOAD


def cause(reason: str) -> str:
    """A reason's kind: its first words, numbers dropped ("NIC of h3_1_0 stalled for 4.6 ..." -> "NIC stalled")."""
    words = [w for w in re.split(r"\s+", reason) if not re.search(r"\d", w)]
    return " ".join(words[:4])


def _rate(text: str, tree: FatTree, payload: int, acks: bool, host_lb: bool, *, cc: str, workload: str) -> int:
    """A rate, or "auto[:FACTOR]": the fabric's auto rate for this payload, ACK setting, congestion control,
    workload and kind of scheme (a sweep's, derated if a host scheme is among them), times FACTOR."""
    if not text.startswith("auto"):
        return parse_rate(text)
    auto = auto_rate_bps(tree, payload, acks, host_lb, cc=cc != "none", chained=workload == "fsdp")
    return auto if text == "auto" else round_down(Fraction(auto) * Fraction(text.split(":")[1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=parse_ints, default=[4])
    ap.add_argument("--rates", default="50mbit,100mbit")
    ap.add_argument("--seeds", type=parse_seeds, default=list(range(1, 41)))
    ap.add_argument("--scheme", default="ofan", help="one or more, comma-separated: each run of a seed in turn")
    ap.add_argument("--workload", default="permutation")
    ap.add_argument("--size", default="1MB")
    ap.add_argument("--payload", type=int, default=DEFAULT_PAYLOAD)
    ap.add_argument("--topology", default="fattree")
    ap.add_argument("--acks", action="store_true")
    ap.add_argument("--cc", default="none", help="congestion control (turns --acks on)")
    ap.add_argument("--gpus-per-server", type=int, default=None, help="fsdp, moe: GPUs a server")
    ap.add_argument("--steps", type=int, default=None, help="fsdp: ring steps")
    a = ap.parse_args()
    a.acks = a.acks or a.cc != "none"
    extra = {n: v for n, v in (("gpus_per_server", a.gpus_per_server), ("steps", a.steps)) if v is not None}
    schemes, size = [Scheme.parse(x) for x in a.scheme.split(",")], parse_size(a.size)
    out: dict[str, Any] = {
        "schemes": [x.label for x in schemes],
        "workload": a.workload,
        "size_bytes": size,
        "payload": a.payload,
        "acks": a.acks,
        "cc": a.cc,
        **extra,
        "topology": a.topology,
        "seeds": len(a.seeds),
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "fabrics": {},
    }
    mtu = Matrix.mtu_for(a.payload)
    for k in a.k:
        rates = [
            _rate(
                r,
                FatTree(k, "bv", a.topology),
                a.payload,
                a.acks,
                any(x.is_host for x in schemes),
                cc=a.cc,
                workload=a.workload,
            )
            for r in a.rates.split(",")
        ]
        with ExitStack() as stack:
            fabs = {
                r: stack.enter_context(
                    Fabric(
                        FabricSpec(k=k, rate_bps=r, prefix=f"bv{i}", topology=a.topology, ack_priority=a.acks, mtu=mtu)
                    )
                )
                for i, r in enumerate(rates)
            }
            runs: dict[int, list[dict[str, Any]]] = {r: [] for r in rates}
            for seed in a.seeds:
                for (r, fab), scheme in itertools.product(fabs.items(), schemes):
                    p = RunParams(
                        a.workload, size, 1.0, scheme, seed=seed, acks=a.acks, payload=a.payload, cc=a.cc, **extra
                    )
                    res = run(fab, p).to_json()
                    f = res["fidelity"]
                    runs[r].append(
                        {
                            "seed": seed,
                            "scheme": scheme.label,
                            "valid": f["valid"],
                            "reasons": f["reasons"],
                            "cct_increase": res["cct_increase"],
                            "cpu_busiest": f["cpu_busiest"],
                            "cpu_busiest_window": f["cpu_busiest_window"],
                        }
                    )
                    print(
                        f"k={k} {format_rate(r)} {scheme.label} seed {seed}: {'valid' if f['valid'] else f['reasons']}",
                        file=sys.stderr,
                        flush=True,
                    )
            out["fabrics"][f"{a.topology} k={k}"] = {
                format_rate(r): {
                    "tries": len(rs),
                    "valid": sum(x["valid"] for x in rs),
                    "share": sum(x["valid"] for x in rs) / len(rs),
                    "causes": dict(Counter(cause(x) for r_ in rs for x in r_["reasons"])),
                    "runs": rs,
                }
                for r, rs in runs.items()
            }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
