"""Does a verdict depend on the link model? Each claim the ideal fabric can compute (testbed.models.ideal: its
schemes, one flow per host, no ACKs, no failures, hosts at line rate) is judged again, by its own rule, on the
ideal fabric's runs of its experiments' cells under both link models: the emulator's (a token bucket of two
frames per port, no serialisation per hop) and the paper's (htsim's: one frame in service per port,
store-and-forward at every hop). Propagation is in the event times of both, per link, as the check's runs have
it, and the NICs are released over a packet time, as the kernel's are (ideal.START_JITTER: with all released at
once RR's and JSQ's downlink queues grow as m^0.5 on the ideal fabric instead of m^1). The claims are named here, not discovered: a rule that reads schemes the ideal fabric does not model would
be judged on part of its runs.

- C9 (Ofan's edge-uplink queue within w + 1): Ofan's cells of fig3, fig6 and fig17;
- C11 (DRB's largest queue over Ofan's as the network grows): fig17's DRB and Ofan cells;
- C12 (DRB worse at small messages than large and than Ofan): fig4's DRB and Ofan cells;
- C14 (1Ofan's share of the DRB-Ofan gap): fig6's DRB, 1Ofan and Ofan cells;
- C31 (Ofan's mean queue per layer against the ND/D/1 model): fig17's Ofan cells;
- C34 and C35 (Table 1's uplink and downlink growth of RR, JSQ and RPS): fig4's cells of those schemes;
- C36 (4Ofan beside Ofan as the network grows): fig5's Ofan and 4Ofan cells;
- C38 (pOfan's gap to Ofan as the network grows): fig6's cells (DRB, pOfan with pipes of 1, 2 and 4, Ofan).

Fig. 8's (C17) are not: its payloads need the fabric's own buckets for large frames, and its rule reads the
CCT in seconds.

The ideal fabric counts packet times, so its rows carry the CCT increase over each model's own bound, the
largest queue per stage in frames and each stage's mean queue over the sending window, which is all these rules
read."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pandas as pd

from traffic.packet import WIRE_EXTRA, Packetizer
from traffic.workloads import WorkloadSpec, make_spec

from ...measure.claim_rules import Data, judge
from ...models import ideal
from ...topology import FatTree
from ...topology.timebase import Propagation, parse_propagation
from ..sweep import Cell, Matrix
from .catalogue import Claim
from .store import Store

LINKS = ideal.LINKS  # ("emulator", "paper")
# claim -> the scheme labels of its experiments' cells the ideal fabric plays for it
CLAIMS: dict[str, tuple[str, ...]] = {
    "C9": ("ofan",),
    "C11": ("drb", "ofan"),
    "C12": ("drb", "ofan"),
    "C14": ("drb", "1ofan", "ofan"),
    "C31": ("ofan",),
    "C34": ("rr", "jsq"),
    "C35": ("rps",),
    "C36": ("ofan", "4ofan"),
    "C38": ("drb", "1ofan", "2ofan", "4ofan", "ofan"),
}


def modelled(cell: Cell, m: Matrix, labels: tuple[str, ...]) -> bool:
    """Whether the ideal fabric plays this cell: a scheme it models among `labels`, one flow per host, no failure,
    no congestion control, hosts at line rate. It has no ACKs: where the kernel's cells had them (fig4's, for
    REPS and CONGA), the two link models are still compared like with like."""
    return (
        cell.label in labels
        and cell.failure == 0
        and cell.option(m, "workload") == "permutation"
        and cell.option(m, "cc") == "none"
        and float(cell.option(m, "load")) == 1.0
    )


def ideal_row(cell: Cell, m: Matrix, link: str) -> dict[str, Any]:
    """One cell played on the ideal fabric under `link`: the columns the rules read."""
    tree = FatTree(cell.k, "ideal", m.topology)
    spec = WorkloadSpec("permutation", cell.size, cell.seed, inter_pod=bool(cell.option(m, "inter_pod")))
    flows = make_spec(spec, tree.n_hosts, tree.hosts_per_pod)
    pk = Packetizer(wire_overhead=WIRE_EXTRA)
    prop = cell.option(m, "propagation")
    prop = prop if isinstance(prop, Propagation) else parse_propagation(str(prop))
    d = prop.link_pkts(1.0, pk.wire_len(pk.payload))
    r = ideal.simulate(
        tree, cell.config, flows, cell.seed, pk=pk, propagation=d, link=link, start_jitter=ideal.START_JITTER
    )
    queues: dict[str, float] = {f"queue_{st}_max_pkts": q for st, q in r.max_queue.items()}
    for st, q in r.mean_queue_sending.items():
        queues[f"queue_{st}_avg_pkts"] = queues[f"queue_{st}_avg_sending_pkts"] = q
    switch = [q for st, q in r.max_queue.items() if st != "host_edge"]
    return {
        **cell.columns(),
        "seed": cell.seed,
        "k": cell.k,
        "size_bytes": cell.size,
        "load": 1.0,
        "fidelity_valid": True,
        "cct_increase": r.cct_increase,
        "server_bucket_frames": ideal.LINK_BUCKET if link == "emulator" else 0.0,  # C31's model: this link's server
        "max_queue_pkts": max(switch, default=0),
        **queues,
    }


class Cache:
    """The ideal fabric's rows already played, by (experiment, cell, link model): a check's store keeps them
    (testbed.run.claims.store), so that the page is judged again from them without playing a cell twice."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store
        self.rows: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        self.added: set[str] = set()

    def of(self, name: str) -> dict[tuple[str, str], dict[str, Any]]:
        if name not in self.rows:
            held = self.store.ideal_rows(name) if self.store is not None else []
            self.rows[name] = {(r["cell"], r["link"]): {k: v for k, v in r.items() if k != "link"} for r in held}
        return self.rows[name]

    def row(self, name: str, cell: Cell, m: Matrix, link: str) -> dict[str, Any]:
        rows = self.of(name)
        if (cell.name, link) not in rows:
            played = {"cell": cell.name, **ideal_row(cell, m, link)}
            rows[cell.name, link] = json.loads(json.dumps(played))  # as the store gives it back: one path
            self.added.add(name)
        return rows[cell.name, link]

    def save(self) -> None:
        """The rows played here added to the store."""
        if self.store is None:
            return
        for name in sorted(self.added):
            self.store.save_ideal_rows(name, [{**r, "link": link} for (_, link), r in self.rows[name].items()])
        self.added.clear()


def ideal_data(c: Claim, mats: dict[str, Matrix], scale: str, link: str, cache: Cache | None = None) -> Data:
    """The ideal fabric's rows of every cell of `c`'s experiments it plays, under `link`."""
    labels = CLAIMS[c.cid]
    cache = cache or Cache()
    rows = {
        n: pd.DataFrame(
            [cache.row(n, cell, mats[n], link) for cell in mats[n].cells() if modelled(cell, mats[n], labels)]
        )
        for n in c.experiments
    }
    return Data(scale, rows)


def verdicts(
    selected: list[Claim],
    mats: dict[str, Matrix],
    scale: str,
    announce: Callable[[str], None] = lambda line: None,
    store: Store | None = None,
    save: bool = False,
) -> dict[str, dict[str, str]]:
    """Per claim the ideal fabric computes, its verdict under each link model (`mats`: the check's matrices, with
    the seeds it reached); the cells the `store` has played are read from it, the others played (and added to it
    if `save`)."""
    cache = Cache(store)
    out: dict[str, dict[str, str]] = {}
    for c in selected:
        if c.cid not in CLAIMS or c.check is None or not all(n in mats for n in c.experiments):
            continue
        announce(f"{c.cid}: the ideal fabric under both link models")
        out[c.cid] = {
            link: judge(c.decisions, c.check(ideal_data(c, mats, scale, link, cache))).verdict for link in LINKS
        }
    if save:
        cache.save()
    return out
