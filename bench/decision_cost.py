"""What each switch scheme costs per packet in the switch program: the time
of one upward decision at an edge switch, through BPF_PROG_TEST_RUN with the
kernel repeating the program, for every switch scheme and fabric width.
Prints one JSON object: ns per packet per scheme and fabric, and each as a
ratio to ECMP measured in the same run (these machines are noisy; ratios
travel better than nanoseconds).

The sampled schemes run with their timers on at the defaults for a 100
Mbit/s fabric, so the figure includes the timers' share (one run per
interval per switch) as a live switch pays it. The test build is the one
measured (random draws from the kernel's generator, nothing forwarded): it
differs from the live program only in forwarding the frame.

Usage: sudo .venv/bin/python bench/decision_cost.py [--fabrics fattree:4,fattree:12,leafspine:64] [--repeat 20000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from testbed.dataplane import switches
from testbed.dataplane.compile import Compiled, Dims
from testbed.dataplane.maps import Maps, SkBuff, prog_test_run_timed, unpin
from testbed.models import sampled
from testbed.models.schemes import Scheme, SchemeConfig, switch_schemes
from testbed.topology import FatTree


def measure(kind: str, k: int, repeat: int, rounds: int) -> dict[str, object]:
    tree = FatTree(k, "tbdc", kind)
    unpin(tree.prefix)
    with Compiled(Dims.of(tree), test_run=True) as compiled:
        compiled.pin(tree.prefix)
        with Maps(tree.prefix) as maps:
            switches.program(maps, tree)
            edge = next(sw for sw in tree.switches if sw.level.name == "EDGE")
            src = next(h for h in tree.hosts if tree.edge_of(h.name) == edge.name)
            dst = next(
                h for h in tree.hosts if h.pod != src.pod or (kind == "leafspine" and tree.edge_of(h.name) != edge.name)
            )
            ip = struct.pack(
                "!BBHHHBBH4s4s", 0x45, 0, 1486, 0, 0, 64, 17, 0, tree.host_ip(src).packed, tree.host_ip(dst).packed
            )
            packet = bytes(12) + b"\x08\x00" + ip + struct.pack("!HHHH", 5000, 4791, 1466, 0) + bytes(1458)
            ctx = SkBuff(ingress_ifindex=tree.port(edge.name, src.name).ifindex)
            configs = [SchemeConfig(s) for s in switch_schemes() if s is not Scheme.HOST_ROUTED]
            ns: dict[str, list[float]] = {c.label: [] for c in configs}
            for _ in range(rounds):  # interleaved, so a slow moment hits every scheme alike
                for c in configs:
                    switches.set_scheme(maps, tree, c.scheme, seed=1)
                    switches.set_sampled(
                        maps,
                        tree,
                        sampled.settings(
                            sampled.SampledParams(),
                            100_000_000,
                            4154,
                            tree.edges_per_pod,
                            sampled.active_bits([c.scheme]),
                        ),
                    )
                    ns[c.label].append(prog_test_run_timed(compiled.fds["switch_ingress"], packet, ctx, repeat))
    unpin(tree.prefix)
    med = {label: statistics.median(v) for label, v in ns.items()}
    return {
        "topology": kind,
        "k": k,
        "w": tree.w,
        "repeat": repeat,
        "rounds": rounds,
        "ns_per_packet": {s: round(v, 1) for s, v in med.items()},
        "ratio_to_ecmp": {s: round(v / med["ecmp"], 2) for s, v in med.items()},
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabrics", default="fattree:4,fattree:12,leafspine:64")
    ap.add_argument("--repeat", type=int, default=20000, help="program runs per measurement (default 20000)")
    ap.add_argument("--rounds", type=int, default=5, help="measurements per scheme, median kept (default 5)")
    a = ap.parse_args()
    out = []
    for item in a.fabrics.split(","):
        kind, _, k = item.partition(":")
        out.append(measure(kind, int(k), a.repeat, a.rounds))
    print(json.dumps({"bench": "decision_cost", "results": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
