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

import hashlib
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import ebpf

from . import protocol
from .faults import SenderFault
from .packet import Packetizer
from .transport import Transport
from .workloads import Flow

SOURCE = Path(__file__).with_name("sender.c")
# the sender's parts and the transport's, compiled together (HEADERS: what they include; protocol.h, the protocol
# with this module; shared.h and the headers it pulls in from the data plane's sources, ebpf.INCLUDE: struct
# reps_state, ROCE_UDP_PORT)
SOURCES = tuple(
    Path(__file__).with_name(n)
    for n in ("sender.c", "start.c", "paced.c", "window.c", "acks.c", "lateness.c", "clock.c", "cca.c", "transport.c")
)
HEADERS = (
    *tuple(Path(__file__).with_name(n) for n in ("sender.h", "protocol.h", "cca.h", "transport.h", "ringbuf.h")),
    *ebpf.headers("shared.h"),
)
# where compiled senders are kept, one per digest of their sources (a source tree and an installed package alike)
BUILD_DIR = Path(os.environ.get("TESTBED_SENDER_DIR", "/var/cache/testbed/sender"))
# Kernel doubles this; at ~8.7 KB of truesize per 4 KB packet it lets about
# ten packets wait in the NIC queue: the NIC never starves while its sender
# wakes up, and the queue stays short.
SNDBUF_BYTES = 40_000
# Transport runs: about two packets. The receiver's ACKs leave through the same NIC queue as its own data,
# so a deep queue there adds its length to every round trip the transport sees (ten packets: +3 % at a
# base RTT of 150 packet times); the sender thread runs at real-time priority and refills it in time.
SNDBUF_TRANSPORT_BYTES = 12_000
# A paced run's buffer scales with the payload (as many frames queued whatever their size), up to this many times
# the 4 KB one: uncapped, 32 KB MoE payloads gave each sender about 20 frames to copy at the release, 128 sources
# about 40 MB in the first tenth of a second, a CPU saturated and 3 of 4 runs at k=8 invalid; at 3.5 (about
# 8 such frames, 150 ms of line time at 14 Mbit/s) a late sender thread still finds its NIC busy.
SNDBUF_MAX_SCALE = 3.5


def send_buffer_bytes(payload: int, transport: bool) -> int:
    """SO_SNDBUF for a source's sockets (the kernel doubles it): the paced or the transport run's 4 KB
    buffer, times payload / 4 KB (at least 1). Paced runs cap that at SNDBUF_MAX_SCALE; a transport run's
    buffer holds about two frames already, and its window, not the buffer, bounds what it sends at once."""
    scale = max(1.0, payload / 4096)
    if transport:
        return round(SNDBUF_TRANSPORT_BYTES * scale)
    return round(SNDBUF_BYTES * min(SNDBUF_MAX_SCALE, scale))


def source_port(fid: int, seed: int) -> int:
    """UDP source port of a flow: fixed by flow id and seed, so ECMP hashes
    (and so runs) are reproducible; distinct for the flow ids of one run."""
    return 49152 + (fid - 1 + seed * 7919) % 16384


class SenderError(RuntimeError):
    """The sender program failed to set up or run."""


def sender_binary() -> Path:
    """Path of the compiled sender, built if no sender of these very sources was (a digest of their text
    names it: an edit, or another checkout, never runs a stale binary)."""
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in SOURCES + HEADERS)).hexdigest()[:16]
    binary = BUILD_DIR / f"testbed-sender-{digest}"
    if not binary.exists():
        BUILD_DIR.mkdir(parents=True, exist_ok=True)
        tmp = binary.with_suffix(f".tmp{os.getpid()}")
        r = subprocess.run(
            ["gcc", "-O2", "-Wall", "-pthread", "-I", str(ebpf.INCLUDE), "-o", str(tmp), *map(str, SOURCES)],
            capture_output=True,
            text=True,
            check=False,
        )
        if r.returncode != 0:
            raise SenderError(f"cannot compile {SOURCE}: {r.stderr.strip()}")
        os.replace(tmp, binary)
    return binary


@dataclass(frozen=True)
class Endpoint:
    """A sending or receiving host as the sender sees it: the path of its
    network namespace (/run/netns/NAME) and its IPv4 address."""

    netns_path: str
    ip: str


@dataclass
class FlowSent:
    """What the sender reported of one flow: its fields are protocol.h's SENDER_SENT and SENDER_SENT_TRANSPORT,
    by name."""

    fid: int
    packets: int = 0
    bytes: int = 0  # UDP payload bytes handed to the kernel
    errors: int = 0
    noroute: bool = False  # the source had no route to the destination: nothing was sent
    # transport runs only (the sender's own view; the receiver's counts are in the results)
    retransmits: int = 0
    fast_retransmits: int = 0
    timeouts: int = 0
    acks: int = 0  # ACKs acted on
    ecn_acks: int = 0
    acked_twice: int = 0  # ACKs of a packet acknowledged before: it had arrived twice
    spurious: int = 0  # packets declared lost that had arrived after all
    final_cwnd: float = 0.0
    acked: int = 0  # distinct packets acknowledged
    npkts: int = 0


@dataclass(frozen=True)
class Lateness:
    """How late the transport acted, in ns: ACKs against their due time (arrival + base RTT), and packets
    against the moment an ACK opened their window (the sender thread's wake-up). Its fields are protocol.h's
    SENDER_LATENESS, by name."""

    acks: int
    ack_p50_ns: int
    ack_p99_ns: int
    ack_max_ns: int
    sends: int
    send_p50_ns: int
    send_p99_ns: int
    send_max_ns: int
    ring_overflow: int  # ACK events the transport had no room to hold (lost to it)
    trace_records: int


@dataclass(frozen=True)
class RepsFreeze:
    """REPS in a transport run: the pinned map of its connections' state (`entries` of them), mapped by the
    sender, and how long a retransmission timeout freezes a connection."""

    map_path: str
    entries: int
    freeze_ns: int


@dataclass
class SendReport:
    flows: dict[int, FlowSent] = field(default_factory=dict)
    lateness: Lateness | None = None  # transport runs only

    @property
    def packets(self) -> int:
        return sum(f.packets for f in self.flows.values())

    @property
    def errors(self) -> int:
        return sum(f.errors for f in self.flows.values())


def _check_records() -> None:
    """FlowSent and Lateness hold exactly the fields of the report lines protocol.h defines (at import: a field
    added to the header and not here, or the reverse, fails before any run)."""
    p = protocol.protocol()
    for record, listed in ((FlowSent, p.sent + p.sent_transport), (Lateness, p.lateness)):
        ours, theirs = [f.name for f in fields(record)], [f.name for f in listed]
        if ours != theirs:
            raise protocol.ProtocolError(
                f"{record.__name__}'s fields {ours} are not those protocol.h reports: {theirs}"
            )


_check_records()


def execute(
    args: Sequence[str], flow_lines: str, timeout_s: float, on_start: Callable[[int], None] = lambda pid: None
) -> str:
    """Run the sender program with `args` (its path first) and `flow_lines` on its stdin; its stdout. A program
    that exits non-zero (a bad option or input line, a set-up that failed) is a SenderError with its message."""
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    on_start(proc.pid)
    try:
        out, err = proc.communicate(flow_lines, timeout=timeout_s + 30)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if proc.returncode != 0:
        raise SenderError(f"testbed-sender exited {proc.returncode}: {err.strip()}")
    return out


class Senders:
    """The senders of one collective."""

    def __init__(
        self,
        hosts: Sequence[Endpoint],
        flows: list[Flow],
        packetizer: Packetizer,
        *,
        seed: int = 0,
        fault: SenderFault | None = None,
        line_rate_bps: int = 0,
        transport: Transport | None = None,
        paths: dict[int, int] | None = None,
        ring_path: str = "",
        trace_path: str = "",
        base_rtts_ns: dict[int, int] | None = None,
        reps: RepsFreeze | None = None,
        after_ns: dict[int, int] | None = None,
    ) -> None:
        """`hosts[i]` is host id i of the flows. `fault` is for the tests of the
        fidelity verdict only: the part of an injected fault the sender program carries out (traffic/faults.py),
        its numbers passed as the program's options. A flow with a start
        (start_bits) begins start_bits / line_rate_bps seconds after the rest.
        With a `transport` that is on, every flow is window-limited (traffic/transport.py): `paths[fid]` is
        its number of equal-cost paths (the duplicate-ACK threshold is 3 more), `base_rtts_ns[fid]` its base
        RTT (how long after reaching the sender's NIC its ACKs are acted on; default the transport's),
        `ring_path` the pinned ack_events ring, `trace_path` where the window trace goes. With `reps`, a
        retransmission timeout freezes the flow's REPS connection (ebpf/include/host_lb.h). A chained flow
        (`Flow.after`) starts `after_ns[fid]` (default 0) after the flow it waits for arrived in full, which the
        sender learns from that flow's ACKs: chains need a transport."""
        if any(f.after for f in flows) and (transport is None or not transport.on):
            raise SenderError(
                "chained flows need a transport: a step starts when its input arrived, which only "
                "the ACKs tell the sender"
            )
        self.after_ns = after_ns or {}
        self.transport = transport if transport is not None and transport.on else None
        self.paths = paths or {}
        self.base_rtts_ns = base_rtts_ns or {}
        self.reps = reps
        self.ring_path = ring_path
        self.trace_path = trace_path
        self.line_rate_bps = line_rate_bps
        self.seed = seed
        self.fault = fault
        self.hosts = hosts
        self.flows = flows
        self.packetizer = packetizer
        self.binary = sender_binary()

    def flow_fields(self, f: Flow) -> dict[str, object]:
        """One flow's line, field by field (protocol.h's SENDER_FLOW); a transport run's fields are 0 without
        one."""
        src, dst, tp = self.hosts[f.src], self.hosts[f.dst], self.transport
        start_ns = round(f.start_bits / self.line_rate_bps * 1e9) if f.start_bits and self.line_rate_bps else 0
        return {
            "ns": src.netns_path,
            "fid": f.fid,
            "src_ip": src.ip,
            "src_port": source_port(f.fid, self.seed),
            "dst_ip": dst.ip,
            "size": f.size_bytes,
            "payload": self.packetizer.payload,
            "start_ns": start_ns,
            "dupthresh": tp.dupthresh(self.paths.get(f.fid, 1)) if tp is not None else 0,
            "base_rtt_ns": self.base_rtts_ns.get(f.fid, tp.base_rtt_ns) if tp is not None else 0,
            "after_fid": f.after if tp is not None else 0,
            "after_ns": self.after_ns.get(f.fid, 0) if tp is not None and f.after else 0,
        }

    def plan(self) -> str:
        """The program's stdin: one line per flow."""
        return "".join(protocol.flow_line(self.flow_fields(f)) + "\n" for f in self.flows)

    def args(self, timeout_s: float) -> list[str]:
        """The program's argv: its path, the deadline and the sockets' buffer, then its options (protocol.h's
        SENDER_OPTIONS): the transport's, its ring, trace and REPS state, the fault's numbers."""
        # as many packets in the NIC's queue whatever their size: 32 KB payloads in a 40 KB buffer left one, and a
        # sender thread a little late left its NIC idle (MoE runs paced 2-16 % short); capped (SNDBUF_MAX_SCALE)
        sndbuf = send_buffer_bytes(self.packetizer.payload, self.transport is not None)
        options: dict[str, object] = dict(self.fault.options()) if self.fault is not None else {}
        args = [str(self.binary), f"{timeout_s:.3f}", str(sndbuf)]
        if self.transport is not None:
            args += protocol.check_option_args(self.transport.options())
            options["ring"] = self.ring_path
            if self.trace_path:
                options["trace"] = self.trace_path
            if self.reps is not None:
                r = self.reps
                options |= {"reps": r.map_path, "reps_entries": r.entries, "reps_freeze_ns": r.freeze_ns}
        return args + protocol.option_args(options)

    def run(self, timeout_s: float, on_start: Callable[[int], None] = lambda pid: None) -> SendReport:
        """Send every flow once; `on_start(pid)` is called with the sender's PID."""
        out = execute(self.args(timeout_s), self.plan(), timeout_s, on_start)
        try:
            answer = protocol.read_report(out, transport=self.transport is not None)
        except protocol.ProtocolError as e:
            raise SenderError(f"testbed-sender's report: {e}") from None
        report = SendReport(flows={f.fid: FlowSent(f.fid) for f in self.flows})
        for values in answer.flows:
            report.flows[values["fid"]] = FlowSent(**values)
        report.lateness = Lateness(**answer.lateness) if answer.lateness is not None else None
        return report
