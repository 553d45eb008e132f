"""A failure schedule between runs, as the command line has none: on one k=4 fat tree under Ofan, run the same
1 MB permutation with every link up, with one aggregation-to-core link failed, with a second one failed, and
after healing both; print each run's CCT increase over the fault-free bound and its verdict, and write them as
JSON lines.

    sudo .venv/bin/python examples/failure_schedule.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import testbed

SCHEDULE = [(), ("a0_0-c0_0",), ("a0_0-c0_0", "a1_1-c1_1"), ()]  # links down during each run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("failure-schedule"))
    ap.add_argument("--prefix", default="exfs")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with testbed.build(k=4, scheme="ofan", prefix=a.prefix) as fab:
        down: set[str] = set()
        for step, links in enumerate(SCHEDULE):
            for link in sorted(down - set(links)):
                fab.heal(link)
            for link in sorted(set(links) - down):
                fab.fail(link)
            down = set(links)
            r = fab.run("permutation", size="1MB", seed=1, pace="rho_max", wait=True)
            row = {
                "step": step,
                "failed": sorted(down),
                "cct_increase_fault_free": r.cct_increase_fault_free,
                "rho_max": r.rho_max.get("rho_max", 1.0),
                "valid": r.valid,
                "reasons": r.verdict["reasons"],
            }
            rows.append(row)
            print(
                f"step {step}: {len(down)} link(s) down, CCT +{100 * r.cct_increase_fault_free:.2f} % over the "
                f"fault-free bound, {'valid' if r.valid else 'INVALID'}"
            )
    (a.out / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
