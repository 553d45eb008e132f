"""A run's experiment as an htsim twin: its flows as a connection matrix, the
matching fat tree as a topology file, and the command line of uet-htsim's
`htsim_uec` (REPRODUCTION.md in the project's design notes has what the twin
showed and the pitfalls met setting it up).

    DIR/flows.cm        Nodes N / Connections C / "SRC->DST id I start 0 size B", hosts in the testbed's order
                        (pods, then edge switches, then hosts: the order htsim numbers them in)
    DIR/topology.topo   FatTreeTopologyCfg: the paper's 800 Gbit/s links, each with the run's propagation (its
                        packet times at 800 Gbit/s), the run's port buffers (or huge ones), no switch latency
    DIR/command.sh      the htsim_uec command line, with the run's seed, ECN threshold and load balancer
    DIR/README.txt      what maps to what, and what has no htsim counterpart

htsim runs at the paper's 800 Gbit/s and 4,096 B payloads; the testbed keeps
every duration in packet times, so the twin's CCT increase is comparable,
its absolute times are the paper's. Pure: reads a result directory only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traffic.packet import PAPER_HEADER_BYTES

from ..topology import FatTree
from ..topology.timebase import PAPER_RATE_BPS, PAPER_WIRE_FRAME_BYTES
from .results import RunResults

HUGE_QUEUE_BYTES = 500_000_000  # no loss: what the twin of a run without a buffer limit gets
ENTROPIES = 8192  # htsim's -paths: many, so that its hash gives every flow an even spread (REPRODUCTION.md)
LB = {"reps": "reps", "rps": "oblivious"}  # the testbed's schemes with an htsim_uec counterpart
ECN_OFF_PKTS = 1_000_000  # no marking: a threshold no queue reaches


class ExportError(ValueError):
    """A result directory that cannot be exported."""


@dataclass(frozen=True)
class Twin:
    cm: str
    topology: str
    command: str
    notes: str


def twin(res: RunResults) -> Twin:
    m = res.manifest
    params = m.get("params") or {}
    k = int(m["k"])
    tree = FatTree(k, "x", str(m.get("topology") or "fattree"))
    flows = res.flows
    if flows.empty:
        raise ExportError("the run has no flows")
    index = {h.name: h.nid for h in tree.hosts}
    lines = [f"Nodes {tree.n_hosts}", f"Connections {len(flows)}"]
    for f in flows.itertuples():
        lines.append(f"{index[f.src]}->{index[f.dst]} id {int(f.fid)} start 0 size {int(f.size_bytes)}")
    prop = m.get("propagation") or {}
    link_pkts = float(prop.get("link_pkts", 0.0))
    link_ns = round(link_pkts * PAPER_WIRE_FRAME_BYTES * 8 / PAPER_RATE_BPS * 1e9)
    buffer = int(m.get("port_buffer_bytes") or 0) or HUGE_QUEUE_BYTES
    topo = _topology(tree, link_ns, buffer)
    scheme = str(m.get("scheme"))
    lb = LB.get(scheme, "oblivious")
    mtu = int(params.get("payload", 4096)) + PAPER_HEADER_BYTES + 2  # htsim's -mtu counts a 64 B header
    ecn = m.get("ecn") or (m.get("summary") or {}).get("ecn") or {}
    ecn_pkts = _ecn_packets(ecn, int(params.get("payload", 4096)))
    seed = int(params.get("seed", 1))
    cmd = (
        f"htsim_uec -tm flows.cm -topo topology.topo -end 1000000 -linkspeed {int(PAPER_RATE_BPS // 1e6)} "
        f"-mtu {mtu} -sender_cc_only -sender_cc_algo constant -cwnd {HUGE_QUEUE_BYTES} "
        f"-q {buffer // (mtu + 20)} -ecn {ecn_pkts} {ecn_pkts} -load_balancing_algo {lb} -paths {ENTROPIES} "
        f"-seed {seed} -sack_threshold {mtu}"
    )
    notes = [
        f"run: {m.get('params', {}).get('workload')} {scheme} k={k} ({tree.kind}), seed {seed}, {len(flows)} flows",
        f"propagation: {link_pkts:.2f} packet times per link = {link_ns} ns at 800 Gbit/s "
        f"(downlink_latency_ns of every tier)",
        "buffers: "
        + (
            f"the run's {buffer} bytes per port"
            if m.get("port_buffer_bytes")
            else "none in the run: huge ones (no loss)"
        ),
        f"load balancer: {scheme} -> {lb}"
        + (
            ""
            if scheme in LB
            else f" ({scheme} has no htsim_uec counterpart; oblivious spraying "
            f"stands in, so compare the testbed's rps with it)"
        ),
        "congestion control: none (a constant window larger than the message), per-packet ACKs "
        "(-sack_threshold one packet), as the testbed's runs without --cc",
        "htsim's -load_balancing_algo oblivious is a per-flow shuffled round robin over the entropies, not "
        "i.i.d. random; with -paths 8192 its hash spreads every flow evenly",
        "htsim reports 'finished at' when the last ACK returns; the testbed's CCT with ACKs ends there too",
    ]
    return Twin("\n".join(lines) + "\n", topo, cmd, "\n".join(notes) + "\n")


def _ecn_packets(ecn: dict[str, Any], payload: int) -> int:
    unit, value = ecn.get("unit", "off"), int(ecn.get("threshold", 0))
    if unit == "packets":
        return value
    if unit == "bytes":
        return max(1, round(value / (payload + PAPER_HEADER_BYTES)))
    return ECN_OFF_PKTS


def _topology(tree: FatTree, link_ns: int, buffer: int) -> str:
    w = tree.w
    tiers = 2 if tree.kind == "leafspine" else 3
    lines = [f"Nodes {tree.n_hosts}", f"Tiers {tiers}", f"Podsize {tree.hosts_per_pod}"]
    radix = [(w, w), (w, w)] if tiers == 3 else [(w, w)]
    for tier in range(tiers):
        lines += [f"Tier {tier}", f"Downlink_speed_Gbps {int(PAPER_RATE_BPS // 1e9)}"]
        if tier < tiers - 1:
            down, up = radix[tier]
            lines += [f"Radix_Up {up}", f"Radix_Down {down}", f"Queue_Up {buffer}"]
        else:
            lines += [f"Radix_Down {tree.k}"]
        lines += [f"Queue_Down {buffer}", f"Downlink_Latency_ns {max(1, link_ns)}", "Switch_Latency_ns 0"]
    return "\n".join(lines) + "\n"


def write(res: RunResults, out: Path) -> list[Path]:
    t = twin(res)
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "flows.cm": t.cm,
        "topology.topo": t.topology,
        "command.sh": "#!/bin/sh\n" + t.command + "\n",
        "README.txt": t.notes,
    }
    for name, text in files.items():
        (out / name).write_text(text)
    (out / "command.sh").chmod(0o755)
    return [out / n for n in files]
