"""Paced RoCEv2-like senders: a small C program, one thread per source host.

`testbed-sender` (sender.c beside this file, compiled on first use) enters
each source host's namespace in its own thread, opens one UDP socket per flow
(its own source port, as a QP would have), and once every thread is ready
they all start together. Pacing is the host NIC's job (the host's egress TBF
at load x line rate): send() blocks while the socket's small send buffer is
full and wakes as soon as the first switch has taken a packet. A host with
several flows serves them round-robin, one packet each.

A C sender rather than Python threads: at k=4 and 50 Mbit/s the fabric needs
about 24,000 sends per second from 16 hosts, and Python threads, waking
behind the GIL, left the NIC queues empty often enough to miss the paced rate
by 5-15 %.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .packet import Packetizer
from .workloads import Flow

SOURCE = Path(__file__).with_name("sender.c")
BINARY = Path(__file__).resolve().parents[1] / "build" / "testbed-sender"
# Kernel doubles this; at ~8.7 KB of truesize per 4 KB packet it lets about
# ten packets wait in the NIC queue: the NIC never starves while its sender
# wakes up, and the queue stays short.
SNDBUF_BYTES = 40_000


def source_port(fid: int, seed: int) -> int:
    """UDP source port of a flow: fixed by flow id and seed, so ECMP hashes
    (and so runs) are reproducible; distinct for the flow ids of one run."""
    return 49152 + (fid - 1 + seed * 7919) % 16384


class SenderError(RuntimeError):
    """The sender program failed to set up or run."""


def sender_binary() -> Path:
    """Path of the compiled sender, (re)built if missing or older than its source."""
    if not BINARY.exists() or BINARY.stat().st_mtime < SOURCE.stat().st_mtime:
        BINARY.parent.mkdir(parents=True, exist_ok=True)
        tmp = BINARY.with_suffix(".tmp")
        r = subprocess.run(["gcc", "-O2", "-Wall", "-pthread", "-o", str(tmp), str(SOURCE)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SenderError(f"cannot compile {SOURCE}: {r.stderr.strip()}")
        os.replace(tmp, BINARY)
    return BINARY


@dataclass(frozen=True)
class Endpoint:
    """A sending or receiving host as the sender sees it: the path of its
    network namespace (/run/netns/NAME) and its IPv4 address."""

    netns_path: str
    ip: str


@dataclass
class FlowSent:
    fid: int
    packets: int = 0
    bytes: int = 0  # UDP payload bytes handed to the kernel
    errors: int = 0
    noroute: bool = False  # the source had no route to the destination: nothing was sent


@dataclass
class SendReport:
    flows: dict[int, FlowSent] = field(default_factory=dict)

    @property
    def packets(self) -> int:
        return sum(f.packets for f in self.flows.values())

    @property
    def errors(self) -> int:
        return sum(f.errors for f in self.flows.values())


class Senders:
    """The senders of one collective."""

    def __init__(self, hosts: Sequence[Endpoint], flows: list[Flow], packetizer: Packetizer, seed: int = 0,
                 fault: str | None = None, line_rate_bps: int = 0) -> None:
        """`hosts[i]` is host id i of the flows. `fault` is for the tests of the
        fidelity verdict only: "late:G:US" or "stall:G:N:US" (see sender.c), G
        counting source hosts in order of their first flow. A flow with a start
        (start_bits) begins start_bits / line_rate_bps seconds after the rest."""
        self.line_rate_bps = line_rate_bps
        self.seed = seed
        self.fault = fault
        self.hosts = hosts
        self.flows = flows
        self.packetizer = packetizer
        self.binary = sender_binary()

    def plan(self) -> str:
        lines = []
        for f in self.flows:
            src, dst = self.hosts[f.src], self.hosts[f.dst]
            start_ns = round(f.start_bits / self.line_rate_bps * 1e9) if f.start_bits and self.line_rate_bps else 0
            lines.append(f"{src.netns_path} {f.fid} {src.ip} {source_port(f.fid, self.seed)} {dst.ip} "
                         f"{f.size_bytes} {self.packetizer.payload} {start_ns}")
        return "\n".join(lines) + "\n"

    def run(self, timeout_s: float, on_start: Callable[[int], None] = lambda pid: None) -> SendReport:
        """Send every flow once; `on_start(pid)` is called with the sender's PID."""
        argv = [str(self.binary), f"{timeout_s:.3f}", str(SNDBUF_BYTES)] + ([self.fault] if self.fault else [])
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        on_start(proc.pid)
        try:
            out, err = proc.communicate(self.plan(), timeout=timeout_s + 30)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        if proc.returncode != 0:
            raise SenderError(f"testbed-sender exited {proc.returncode}: {err.strip()}")
        report = SendReport(flows={f.fid: FlowSent(f.fid) for f in self.flows})
        for line in out.splitlines():
            fid, pkts, nbytes, errors, noroute = (int(x) for x in line.split())
            report.flows[fid] = FlowSent(fid, pkts, nbytes, errors, bool(noroute))
        return report
