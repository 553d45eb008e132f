"""The host NICs' load balancing (REPS, DRB, Ethereal) and the switches' ECN
marking against their models, decision by decision, through
BPF_PROG_TEST_RUN on crafted packets (no namespaces; the test build takes
its random draws from the packet's cb).

- the NIC's transmit choice (made where the frame leaves the NIC, by the
  edge switch's ingress program on the NIC's behalf): the UDP source port it
  writes (entropy or path label), and the state it leaves (REPS buffer, DRB
  pointer): 1,000 random cases per host scheme and fabric, zero mismatches.
- host_ingress: REPS recycles the entropy of an unmarked ACK, drops a
  marked one's; with propagation, only once its ready time has come (a
  propagation round trip after the ACK reached the NIC), oldest first, and an
  entry overwritten in a full delay line is counted lost, never applied.
- switch_ingress: CE is set exactly when the queue a packet joins, itself
  included, holds more than the threshold (packets or bytes) of the exact
  queue map, and only on ECN-capable packets.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from testbed.dataplane.compile import Compiled, Dims
from testbed.dataplane.maps import ECN_BYTES, ECN_OFF, ECN_PKTS, Maps, PortQ, RunCfg, SkBuff, prog_test_run_data
from testbed.dataplane.maps import RepsState as CRepsState
from testbed.models import decisions
from testbed.models import host as host_models
from testbed.models.host import HostDecision, RepsState
from testbed.models.schemes import Scheme
from testbed.topology import FatTree, Node

from .helpers import entry, loaded_program

pytestmark = pytest.mark.root

CASES = 1000
DRAWS_SUPPLIED = 1
OPCODE_SEND, OPCODE_ACK = 0x04, 0x11

# the schemes compared with their models here (tests/unit/test_scheme_registry.py checks the list)
HOST_DIFFERENTIAL_SCHEMES = (Scheme.REPS, Scheme.DRB, Scheme.ETHEREAL)

FABRICS = [("fattree", 4), ("fattree", 8), ("leafspine", 16)]


@dataclass
class Harness:
    tree: FatTree
    compiled: Compiled
    maps: Maps


@pytest.fixture(scope="module", params=FABRICS, ids=[f"{kind[0]}{k}" for kind, k in FABRICS])
def h(request: pytest.FixtureRequest) -> Iterator[Harness]:
    kind, k = request.param
    with loaded_program(f"th{kind[0]}{k}", kind, k) as (tree, compiled, maps):
        yield Harness(tree, compiled, maps)


def roce(
    tree: FatTree,
    src: Node,
    dst: Node,
    sport: int,
    opcode: int,
    flow: int,
    psn: int,
    tos: int = 0x02,
    becn: bool = False,
) -> bytes:
    """A RoCEv2 frame from src to dst: a 1,500-byte data packet or a 62-byte ACK."""
    frame_len = 62 if opcode == OPCODE_ACK else 1500
    ip = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        tos,
        frame_len - 14,
        0,
        0x4000,
        64,
        17,
        0,
        tree.host_ip(src).packed,
        tree.host_ip(dst).packed,
    )
    udp = struct.pack("!HHHH", sport, 4791, frame_len - 34, 0)
    bth = struct.pack("!BBHII", opcode, 0, 0xFFFF, (0x40 << 24 if becn else 0) | flow, psn)
    return bytes(6) + bytes(6) + b"\x08\x00" + ip + udp + bth + bytes(frame_len - 54)


def random_reps(rng: random.Random) -> RepsState:
    """A reachable REPS state: the `count` most recently written slots before `head` are valid."""
    count, head = rng.randrange(9), rng.randrange(8)
    valid = 0
    for i in range(1, count + 1):
        valid |= 1 << ((head - i) % 8)
    return RepsState.pack(valid, head, count, tuple(rng.randrange(1 << 16) for _ in range(8)), rng.random() < 0.7)


def c_reps(st: RepsState) -> CRepsState:
    v = CRepsState()
    v.ctl = st.ctl
    for i, e in enumerate(st.ev):
        v.ev[i] = e
    return v


def py_reps(v: CRepsState) -> RepsState:
    return RepsState(int(v.ctl), tuple(int(e) for e in v.ev))


def set_cfg(maps: Maps, host_lb: int = 0, ecn_unit: int = ECN_OFF, ecn_thresh: int = 0, prop_ns: int = 0) -> None:
    maps.run_cfg.set(
        0, RunCfg(acks=1, nic_ps_per_byte=0, host_lb=host_lb, ecn_unit=ecn_unit, ecn_thresh=ecn_thresh, prop_ns=prop_ns)
    )


def egress_case(
    hs: Harness, scheme: Scheme, rng: random.Random
) -> tuple[tuple[int, int, RepsState], tuple[int, int, RepsState], HostDecision]:
    """One random NIC decision: (kernel's port, DRB pointer and REPS state after; the model's; inputs)."""
    tree, maps = hs.tree, hs.maps
    src, dst = rng.sample(list(tree.hosts), 2)
    e_s, e_d = tree.by_name[tree.edge_of(src.name)], tree.by_name[tree.edge_of(dst.name)]
    between = src.pod != dst.pod
    n_paths = tree.w * tree.w if between else tree.w
    full = (1 << n_paths) - 1
    mask = full if rng.random() < 0.3 else (0 if rng.random() < 0.05 else rng.randrange(1, full + 1))
    if e_s != e_d:
        maps.host_paths.set(tree.edge_global(e_s) * tree.n_edges + tree.edge_global(e_d), mask)
    flow = rng.randrange(1, Dims.of(tree).n_flows)
    is_ack = rng.random() < 0.3
    psn = rng.randrange(1 << 24)
    cls = decisions.CLASS_SMALL if is_ack else decisions.CLASS_DATA
    pointer = rng.getrandbits(40)
    maps.drb_ptr.set(flow * decisions.N_CLASSES + cls, pointer)
    reps = random_reps(rng)
    maps.reps.set(flow, c_reps(reps))
    draw = rng.getrandbits(32)
    set_cfg(maps, scheme.host_lb)

    sport = rng.randrange(1024, 65536)
    ctx = SkBuff(ingress_ifindex=tree.port(e_s.name, src.name).ifindex)  # the frame arrives from src's NIC
    ctx.cb[1], ctx.cb[2] = DRAWS_SUPPLIED, draw
    pkt = roce(tree, src, dst, sport, OPCODE_ACK if is_ack else OPCODE_SEND, flow, psn)
    rv, out, data = prog_test_run_data(hs.compiled.fds["switch_ingress"], pkt, ctx)
    assert rv == 0
    port = struct.unpack("!H", data[34:36])[0]
    assert port == (out.cb[4] or sport)
    kernel = (
        out.cb[4],
        int(entry(maps.drb_ptr, flow * decisions.N_CLASSES + cls).value),
        py_reps(entry(maps.reps, flow)),
    )

    x = HostDecision(scheme, tree.w, is_ack, psn, mask, between, e_s == e_d, pointer, reps, draw)
    m = host_models.decide(x)
    return kernel, (m.port, m.drb_pointer, m.reps), x


@pytest.mark.parametrize("scheme", HOST_DIFFERENTIAL_SCHEMES)
def test_nic_matches_model(h: Harness, scheme: Scheme) -> None:
    rng = random.Random(31 + h.tree.k + scheme.value)
    mismatches = []
    for _ in range(CASES):
        kernel, model, x = egress_case(h, scheme, rng)
        if kernel != model:
            mismatches.append((kernel, model, x))
    assert not mismatches, f"{scheme.label}: {len(mismatches)} of {CASES} differ, e.g. {mismatches[0]}"


def test_reps_recycles_unmarked_acks(h: Harness) -> None:
    tree, maps = h.tree, h.maps
    rng = random.Random(5)
    set_cfg(maps, Scheme.REPS.host_lb)
    src, dst = tree.hosts[0], tree.hosts[-1]
    mismatches = 0
    for _ in range(CASES):
        flow = rng.randrange(1, Dims.of(tree).n_flows)
        st = random_reps(rng)
        maps.reps.set(flow, c_reps(st))
        ev, marked = rng.randrange(1 << 16), rng.random() < 0.5
        rv, _, _ = prog_test_run_data(
            h.compiled.fds["host_ingress"], roce(tree, dst, src, ev, OPCODE_ACK, flow, 0, tos=0, becn=marked), SkBuff()
        )
        assert rv == 2  # TC_ACT_CONSUMED (SHOT): an ACK ends at its sender's NIC
        mismatches += py_reps(entry(maps.reps, flow)) != host_models.reps_recycle(st, ev, marked)
    assert mismatches == 0


def _reps_send(h: Harness, src: Node, dst: Node, flow: int, draw: int) -> int:
    """A data packet of `flow` leaving src's NIC (the edge switch's ingress on its behalf): its entropy."""
    tree = h.tree
    ctx = SkBuff(ingress_ifindex=tree.port(tree.edge_of(src.name), src.name).ifindex)
    ctx.cb[1], ctx.cb[2] = DRAWS_SUPPLIED, draw
    rv, _out, data = prog_test_run_data(
        h.compiled.fds["switch_ingress"], roce(tree, src, dst, 1, OPCODE_SEND, flow, 0), ctx
    )
    assert rv == 0
    return int(struct.unpack("!H", data[34:36])[0])


def _reps_ack(h: Harness, src: Node, dst: Node, flow: int, ev: int, marked: bool = False) -> None:
    rv, _, _ = prog_test_run_data(
        h.compiled.fds["host_ingress"], roce(h.tree, dst, src, ev, OPCODE_ACK, flow, 0, tos=0, becn=marked), SkBuff()
    )
    assert rv == 2  # TC_ACT_CONSUMED


def test_reps_entropy_waits_for_its_ready_time(h: Harness) -> None:
    import time

    from testbed.dataplane.maps import HLB_DELAY_LOST, HOST_LB_COUNTERS, PATH_CLASSES, REPS_DELAY_SLOTS
    from testbed.dataplane.switches import reset_host_state
    from testbed.topology.timebase import path_links

    tree, maps = h.tree, h.maps
    src, dst = tree.hosts[0], tree.hosts[-1]
    links = path_links(tree, src.nid, dst.nid)
    line = src.nid * PATH_CLASSES + links // 2 - 1
    prop_ns = 2_000_000  # per link: the entropy is usable 2 x links x 2 ms after its ACK came back
    flow, fresh = 7, 0x1111
    reset_host_state(maps, tree, 1, 64)
    set_cfg(maps, Scheme.REPS.host_lb, prop_ns=prop_ns)
    t0 = time.monotonic()
    for ev in (0xA001, 0xA002, 0xA003):
        _reps_ack(h, src, dst, flow, ev)
    assert entry(maps.reps_cursor, line).head - entry(maps.reps_cursor, line).tail == 3  # waiting in the line
    taken = _reps_send(h, src, dst, flow, fresh)
    if time.monotonic() - t0 < 2 * links * prop_ns / 1e9:  # (a slow machine may have passed the ready time)
        assert taken == fresh and py_reps(entry(maps.reps, flow)).count == 0
    time.sleep(2 * links * prop_ns / 1e9 + 0.005)
    assert [_reps_send(h, src, dst, flow, fresh) for _ in range(4)] == [0xA001, 0xA002, 0xA003, fresh]
    assert entry(maps.reps_cursor, line).tail == entry(maps.reps_cursor, line).head

    # a full line: REPS_DELAY_SLOTS + 5 ACKs before any is usable; the 5 oldest are overwritten, never applied
    reset_host_state(maps, tree, 1, 64)
    prop_ns = 20_000_000  # long enough for all the ACKs to arrive before the first is usable
    set_cfg(maps, Scheme.REPS.host_lb, prop_ns=prop_ns)
    t0 = time.monotonic()
    for i in range(REPS_DELAY_SLOTS + 5):
        _reps_ack(h, src, dst, flow, 0xB000 + i)
    assert time.monotonic() - t0 < 2 * links * prop_ns / 1e9
    time.sleep(2 * links * prop_ns / 1e9 + 0.005)
    for _ in range(REPS_DELAY_SLOTS):  # each send applies up to REPS_DRAIN_MAX ready entries, then takes one
        _reps_send(h, src, dst, flow, fresh)
    assert entry(maps.reps_cursor, line).tail == entry(maps.reps_cursor, line).head
    assert int(entry(maps.host_lb_cnt, src.nid * HOST_LB_COUNTERS + HLB_DELAY_LOST).value) == 5
    st = py_reps(entry(maps.reps, flow))
    assert 0xB000 + 4 not in st.ev  # an overwritten entry never reaches the buffer
    set_cfg(maps)


def test_reps_freezing_cycles_the_stored_entropies_then_explores(h: Harness) -> None:
    """Frozen (the transport saw a timeout): packets take the 8 stored entropies in order, valid or not. The
    first ACK applied after the freeze ends it: the buffer is emptied and 16 packets explore on fresh
    entropies before recycling resumes."""
    import time

    from testbed.dataplane.maps import HLB_EXPLORE, HLB_FREEZES, HLB_FROZEN, HOST_LB_COUNTERS
    from testbed.dataplane.switches import reset_host_state

    tree, maps = h.tree, h.maps
    src, dst = tree.hosts[0], tree.hosts[-1]
    flow, fresh = 9, 0x2222
    reset_host_state(maps, tree, 1, 64)
    set_cfg(maps, Scheme.REPS.host_lb)
    st = c_reps(RepsState.pack(0b11, 2, 2, tuple(0xE000 + i for i in range(8)), acked=True))  # slots 0, 1 valid
    st.frozen_until = time.monotonic_ns() + 200_000_000
    st.frozen_pos = 0
    maps.reps.set(flow, st)
    taken = [_reps_send(h, src, dst, flow, fresh) for _ in range(10)]
    assert taken == [0xE000 + i % 8 for i in range(10)]  # in order, invalid slots included, wrapping
    cnt = [int(entry(maps.host_lb_cnt, src.nid * HOST_LB_COUNTERS + i).value) for i in (HLB_FROZEN, HLB_FREEZES)]
    assert cnt == [10, 1]
    time.sleep(0.21)
    _reps_ack(h, src, dst, flow, 0xF000)  # the freeze is over: cleared, exploring, and this entropy recycled
    after = entry(maps.reps, flow)
    assert after.frozen_until == 0 and after.explore == 16 and py_reps(after).count == 1
    taken = [_reps_send(h, src, dst, flow, fresh) for _ in range(17)]
    assert taken == [fresh] * 16 + [0xF000]
    assert int(entry(maps.host_lb_cnt, src.nid * HOST_LB_COUNTERS + HLB_EXPLORE).value) == 16
    set_cfg(maps)


def test_reps_buffer_fills_then_recycles_in_order() -> None:
    """The model itself: eight unmarked ACKs fill the buffer; packets then reuse them oldest first."""
    st = RepsState()
    for ev in range(100, 110):
        st = host_models.reps_recycle(st, ev, marked=False)
    assert st.count == 8
    taken = []
    for _ in range(9):
        ev, recycled, st = host_models.reps_take(st, fresh=7)
        taken.append((ev, recycled))
    assert taken == [(e, True) for e in range(102, 110)] + [(7, False)]


def _down_case(tree: FatTree) -> tuple[Node, Node, Node, int, int]:
    """A packet an edge switch receives from an aggregation switch for one of its hosts: (edge, agg, host,
    ingress ifindex, egress ifindex)."""
    host = tree.hosts[0]
    edge = tree.by_name[tree.edge_of(host.name)]
    agg = tree.by_name[tree.uplinks(edge.name)[0].peer]
    return edge, agg, host, tree.port(edge.name, agg.name).ifindex, tree.port(edge.name, host.name).ifindex


@pytest.mark.parametrize("unit", ["packets", "bytes"])
def test_ce_marks_only_above_the_threshold(h: Harness, unit: str) -> None:
    tree, maps = h.tree, h.maps
    edge, _, host, inport, out = _down_case(tree)
    src = next(x for x in tree.hosts if tree.edge_of(x.name) != edge.name)
    frame = 1500
    n = 5
    thresh = n if unit == "packets" else n * frame
    set_cfg(maps, ecn_unit=ECN_PKTS if unit == "packets" else ECN_BYTES, ecn_thresh=thresh)
    for queued in range(2 * n):
        for tos, ect in ((0x02, True), (0x00, False), (0x01, True)):
            maps.port_q.set(out, PortQ(pkts=queued, bytes=queued * frame))
            _, o, data = prog_test_run_data(
                h.compiled.fds["switch_ingress"],
                roce(tree, src, host, 50000, OPCODE_SEND, 1, 0, tos=tos),
                SkBuff(ingress_ifindex=inport),
            )
            assert o.cb[0] == out
            marked = data[15] & 3 == 3
            joined = queued + 1  # the queue the packet joins, itself included
            assert marked == (ect and joined > n), (unit, queued, tos)
            assert int(entry(maps.port_q, out).ecn_marked) == int(marked)
    set_cfg(maps, ecn_unit=ECN_BYTES, ecn_thresh=0)  # threshold 0: every ECN-capable packet
    maps.port_q.set(out, PortQ())
    _, _, data = prog_test_run_data(
        h.compiled.fds["switch_ingress"],
        roce(tree, src, host, 50000, OPCODE_SEND, 1, 0),
        SkBuff(ingress_ifindex=inport),
    )
    assert data[15] & 3 == 3
    set_cfg(maps)
