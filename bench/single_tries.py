"""Single tries: how many runs at one rate are valid without retries, and
whose each rejected try was. The figures behind the single-try
validity and the knobs tried (Choosing the rate).

On one k=4 fabric at --rate, one 1 MB Ofan permutation at load 1.0 per seed,
one try each (no retries). Each rejected try is counted under the cause of
its latest NIC's longest gap (the verdict's `latest_nic_gap_cause`: sender,
cpu or nic; see testbed.measure.fidelity.gap_cause). With --arm, every seed
runs twice, interleaved, so both arms see the same hours of the machine:
once with the defaults, once with the arm's change:

  peak=R                 the host NICs' peak rate, R x the paced rate (build.NIC_PEAK_RATIO)
  sndbuf=BYTES           the paced senders' socket buffer (traffic.sender.SNDBUF_BYTES)
  sysctl:KEY=VALUE       a sysctl (e.g. net.core.netdev_budget), restored after each run

Prints JSON: per arm the valid count and the causes, and every rejected try.

Usage: sudo .venv/bin/python bench/single_tries.py [--rate 100mbit] [--seeds 1-30] [--arm peak=1.25]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from testbed.fabric import build
from testbed.fabric.build import Fabric, FabricSpec
from testbed.models.schemes import Scheme
from testbed.run import experiment
from testbed.run.experiment import run
from testbed.run.params import RunParams
from testbed.topology.units import parse_rate, parse_seeds
from traffic import sender


@contextmanager
def _constant(module: Any, name: str, value: object) -> Iterator[None]:
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


@contextmanager
def _peak(ratio: float) -> Iterator[None]:
    with _constant(build, "NIC_PEAK_RATIO", ratio), _constant(experiment, "NIC_PEAK_RATIO", ratio):  # the manifest's
        yield


@contextmanager
def _sysctl(key: str, value: str) -> Iterator[None]:
    path = Path("/proc/sys") / key.replace(".", "/")
    old = path.read_text().strip()
    path.write_text(value)
    try:
        yield
    finally:
        path.write_text(old)


def arm(text: str) -> Callable[[], Any]:
    """The change an --arm names, as a context-manager factory; ArgumentTypeError if none."""
    kind, _, value = text.partition("=") if not text.startswith("sysctl:") else ("sysctl", "", text[7:])
    try:
        if kind == "peak":
            ratio = float(value)
            return lambda: _peak(ratio)
        if kind == "sndbuf":
            size = int(value)
            return lambda: _constant(sender, "SNDBUF_BYTES", size)
        if kind == "sysctl" and "=" in value:
            key, _, v = value.partition("=")
            if (Path("/proc/sys") / key.replace(".", "/")).is_file():
                return lambda: _sysctl(key, v)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"unknown arm {text!r} (peak=R, sndbuf=BYTES or sysctl:KEY=VALUE)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=parse_rate, default=100_000_000)
    ap.add_argument("--seeds", type=parse_seeds, default=parse_seeds("1-30"))
    ap.add_argument("--arm", default=None, help="peak=R, sndbuf=BYTES or sysctl:KEY=VALUE")
    ap.add_argument("--size", type=int, default=1 << 20)
    a = ap.parse_args()
    arms: dict[str, Callable[[], Any] | None] = {"defaults": None}
    if a.arm is not None:
        try:
            arms[a.arm] = arm(a.arm)
        except argparse.ArgumentTypeError as e:
            ap.error(str(e))
    tries: dict[str, list[dict[str, Any]]] = {name: [] for name in arms}
    with Fabric(FabricSpec(k=4, prefix="bsingle", rate_bps=a.rate)) as fab:
        for seed in a.seeds:
            for name, change in arms.items():
                p = RunParams("permutation", a.size, 1.0, Scheme.OFAN, seed)
                if change is None:
                    r = run(fab, p).to_json()
                else:
                    with change():
                        r = run(fab, p).to_json()
                f = r["fidelity"]
                tries[name].append(
                    {
                        "seed": seed,
                        "valid": f["valid"],
                        "cct_increase": r["cct_increase"],
                        "timing_excess_share": f["timing_excess_share"],
                        "cause": f["latest_nic_gap_cause"],
                        "reasons": f["reasons"],
                    }
                )
    out = {}
    for name, ts in tries.items():
        rejected = [t for t in ts if not t["valid"]]
        out[name] = {
            "valid": len(ts) - len(rejected),
            "of": len(ts),
            "causes": dict(Counter(t["cause"] for t in rejected)),
            "rejected": rejected,
        }
    print(
        json.dumps({"bench": "single_tries", "k": 4, "rate_bps": a.rate, "size_bytes": a.size, "arms": out}, indent=1)
    )


if __name__ == "__main__":
    main()
