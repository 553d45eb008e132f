"""A comparison loop that writes a figure: ECMP, RPS, Ofan and 4Ofan over a few seeds of a 1 MB permutation
on one k=4 fat tree, switched between runs by map writes (set_scheme), the CCT increase of each run and the
mean of its valid ones drawn per scheme.

    sudo .venv/bin/python examples/compare_loop.py [--seeds 1-3] [--out DIR]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import testbed
from testbed.topology.units import parse_seeds

SCHEMES = ("ecmp", "rps", "ofan", "pofan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=parse_seeds, default=(1, 2, 3))
    ap.add_argument("--out", type=Path, default=Path("compare-loop"))
    ap.add_argument("--prefix", default="excl")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    got: dict[str, list[tuple[float, bool]]] = {s: [] for s in SCHEMES}
    with testbed.build(k=4, prefix=a.prefix) as fab:
        for scheme in SCHEMES:
            fab.set_scheme(scheme)  # every LB switch, by map writes
            for seed in a.seeds:
                r = fab.run("permutation", size="1MB", seed=seed, wait=True)  # each switch keeps its scheme
                got[scheme].append((r.cct_increase, r.valid))
                print(f"{scheme} seed {seed}: +{100 * r.cct_increase:.2f} % ({'valid' if r.valid else 'INVALID'})")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for i, scheme in enumerate(SCHEMES):
        ax.scatter(
            [i] * len(got[scheme]), [100 * x for x, _ in got[scheme]], c=["C0" if v else "C3" for _, v in got[scheme]]
        )
        valid = [100 * x for x, v in got[scheme] if v]
        if valid:
            ax.hlines(statistics.mean(valid), i - 0.3, i + 0.3, colors="k")
    ax.set_xticks(range(len(SCHEMES)), ["ECMP", "RPS", "Ofan", "4Ofan"])
    ax.set_ylabel("CCT increase over the lower bound (%)")
    ax.set_yscale("symlog", linthresh=1)
    ax.set_title("1 MB permutation, k=4 (red: rejected by the verdict)")
    fig.tight_layout()
    fig.savefig(a.out / "compare.png", dpi=110)
    print(f"figure in {a.out / 'compare.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
