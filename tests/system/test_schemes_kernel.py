"""The eBPF switch against the Python reference model, decision by decision.

No namespaces: the test build of the switch (random draws supplied in the
packet's cb, nothing forwarded) runs on crafted packets through
BPF_PROG_TEST_RUN, with map state set per case. Deterministic parts: at least
1000 random cases per scheme, zero mismatches. Randomised parts: chi-square
tests over 10,000 decisions drawn from the kernel's own generator.
"""

from __future__ import annotations

import functools
import random
import struct
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from testbed.dataplane import models, switches
from testbed.dataplane.compile import Compiled, Dims
from testbed.dataplane.maps import Maps, PortQ, SkBuff, prog_test_run
from testbed.dataplane.models import Decision
from testbed.dataplane.schemes import PIPES_PER_CPU, Scheme, SchemeConfig
from testbed.topology import FatTree, Level, Node, Port

from .helpers import loaded_program

pytestmark = pytest.mark.root

CASES = 1000
DRAWS_SUPPLIED = 1
QUEUE_CHOICES = (0, 4154, 8308, 41000, 81920, 90000, 163840, 400000)


@dataclass
class Harness:
    tree: FatTree
    compiled: Compiled
    maps: Maps
    basis: tuple[int, ...]

    @property
    def fd(self) -> int:
        return self.compiled.fds["switch_ingress"]


# w = 2, 3, 4, 6 (fat trees) and 32 (the paper's k=64 leaf-spine): every loop of the switch at its extremes
FABRICS = [("fattree", 4), ("fattree", 6), ("fattree", 8), ("fattree", 12), ("leafspine", 64)]


@pytest.fixture(scope="module", params=FABRICS, ids=[f"{kind[0]}{k}" for kind, k in FABRICS])
def h(request: pytest.FixtureRequest) -> Iterator[Harness]:
    kind, k = request.param
    with loaded_program(f"t{kind[0]}{k}", kind, k) as (tree, compiled, maps):
        switches.set_scheme(maps, tree, Scheme.ECMP, seed=1)
        yield Harness(tree, compiled, maps, models.choose_basis(tree.w))


def packet(tree: FatTree, src: Node, dst: Node, frame_len: int, sport: int) -> bytes:
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, frame_len - 14, 0, 0, 64, 17, 0, tree.host_ip(src).packed,
                     tree.host_ip(dst).packed)
    udp = struct.pack("!HHHH", sport, 4791, frame_len - 34, 0)
    return bytes(6) + bytes(6) + b"\x08\x00" + ip + udp + bytes(frame_len - 42)


@functools.lru_cache(maxsize=None)
def _upward(tree: FatTree) -> list[tuple[Node, list[Port], list[Node], list[tuple[Node, int]], int]]:
    """Per switch with uplinks: its downlinks, the hosts below it, the destinations it must send up to
    (with their destination key), and its number of keys."""
    out = []
    for sw in tree.switches:
        if sw.level is Level.CORE or not tree.uplinks(sw.name):
            continue
        if sw.level is Level.EDGE:
            below = [hst for hst in tree.hosts if tree.edge_of(hst.name) == sw.name]
            dests = [(hst, tree.edge_global(tree.by_name[tree.edge_of(hst.name)])) for hst in tree.hosts
                     if tree.edge_of(hst.name) != sw.name]
            out.append((sw, tree.downlinks(sw.name), below, dests, tree.n_edges))
        else:
            below = [hst for hst in tree.hosts if hst.pod == sw.pod]
            dests = [(hst, hst.pod) for hst in tree.hosts if hst.pod != sw.pod]
            out.append((sw, tree.downlinks(sw.name), below, dests, tree.k))
    return out


def upward_case(tree: FatTree, rng: random.Random) -> tuple[Node, Port, Node, Node, int, int]:
    """A switch, a downlink it receives on, a source below it and a destination it must send up to;
    the destination key and the number of keys of that switch."""
    sw, downs, below, dests, n_keys = rng.choice(_upward(tree))
    inport = rng.choice(downs)
    src = rng.choice(below)
    dst, d = rng.choice(dests)
    return sw, inport, src, dst, d, n_keys


def run_case(hs: Harness, config: SchemeConfig, rng: random.Random, supplied: bool = True,
             queues: tuple[int, ...] | None = None, memory: int | None = None,
             mask: int | None = None) -> tuple[int, int, Decision]:
    """Set up one random decision (a random non-empty set of valid uplinks
    unless `mask` is given); return (kernel slot, model slot, inputs)."""
    tree, maps, dims = hs.tree, hs.maps, Dims.of(hs.tree)
    sw, inport, src, dst, d, n_keys = upward_case(tree, rng)
    cls = rng.choice((models.CLASS_DATA, models.CLASS_SMALL))
    frame_len = 1500 if cls == models.CLASS_DATA else 64
    sport = rng.randrange(1024, 65536)
    if config.scheme is Scheme.HOST_ROUTED and rng.random() < 0.7:  # mostly labelled packets (host_lb.h)
        sport = models.LABEL_TAG | rng.randrange(1 << 10)
    ups = tree.uplinks(sw.name)
    local = tree.local_index(inport)

    cfg = maps.switch_cfg.get(sw.nid)
    cfg.scheme, cfg.pipe_size, cfg.seed = int(config.scheme), config.pipe_size, rng.getrandbits(32)
    maps.switch_cfg.set(sw.nid, cfg)
    pid = models.pointer_id(d, n_keys, cls)
    pointer = rng.getrandbits(40)
    if config.scheme is Scheme.RR:
        maps.rr_ptr.set(sw.nid, pointer)
    elif config.scheme is Scheme.OFAN:
        maps.ofan_ptr.set((sw.nid * tree.k + 0) * dims.n_ptr + pid, pointer)
    elif config.scheme is Scheme.POFAN and config.pipe_size != PIPES_PER_CPU:
        pipe = models.pofan_pipe(local, config.pipe_size, tree.k)
        maps.ofan_ptr.set((sw.nid * tree.k + pipe) * dims.n_ptr + pid, pointer)
    elif config.scheme is Scheme.POFAN:
        maps.ofan_ptr_cpu.set(sw.nid * dims.n_ptr + pid, [pointer] * maps.ofan_ptr_cpu.ncpu)
    qs = queues if queues is not None else tuple(rng.choice(QUEUE_CHOICES) for _ in ups)
    for p, q in zip(ups, qs):
        maps.port_q.set(p.ifindex, PortQ(pkts=q // 4154, bytes=q))
    mem = memory if memory is not None else rng.randrange(tree.w)
    maps.drill_mem.set(sw.nid, mem)
    full = (1 << tree.w) - 1
    valid = mask if mask is not None else (full if rng.random() < 0.3 else rng.randrange(1, full + 1))
    maps.uplink_mask.set(sw.nid * dims.n_keys + d, valid)
    draws = (rng.getrandbits(32), rng.getrandbits(32))

    ctx = SkBuff(ingress_ifindex=inport.ifindex)
    if supplied:
        ctx.cb[1], ctx.cb[2], ctx.cb[3] = DRAWS_SUPPLIED, draws[0], draws[1]
    rv, out = prog_test_run(hs.fd, packet(tree, src, dst, frame_len, sport), ctx)
    assert rv == 0  # TC_ACT_OK: the test build forwards nothing
    kernel_slot = [p.ifindex for p in ups].index(out.cb[0])

    x = Decision(config=config, w=tree.w, n_ports=tree.k, d=d, n_keys=n_keys, cls=cls, local_port=local,
                 pointer=pointer, queue_bytes=qs, draws=draws, memory=mem,
                 thresholds=switches.ar_thresholds(maps), ecmp_seed=cfg.seed,
                 five_tuple=(tree.host_ip(src).packed, tree.host_ip(dst).packed,
                             struct.pack("!HH", sport, 4791), 17), mask=valid, level=int(sw.level))
    model_slot, steps = models.decide(x, hs.basis)
    assert (valid >> kernel_slot) & 1, "the kernel chose an invalid uplink"

    # state after the decision: pointers advanced once per pointer value tried
    if config.scheme is Scheme.RR:
        assert int(maps.rr_ptr.get(sw.nid).value) == pointer + steps
    if config.scheme is Scheme.OFAN:
        assert int(maps.ofan_ptr.get((sw.nid * tree.k) * dims.n_ptr + pid).value) == pointer + steps
    if config.scheme is Scheme.DRILL:
        assert int(maps.drill_mem.get(sw.nid).value) == kernel_slot
    if config.scheme is Scheme.POFAN and config.pipe_size == PIPES_PER_CPU:
        vals = maps.ofan_ptr_cpu.get(sw.nid * dims.n_ptr + pid)
        assert sorted(vals) == [pointer] * (len(vals) - 1) + [pointer + steps]
    return kernel_slot, model_slot, x


# The schemes the differential test compares with their models: every scheme of the registry
# (tests/unit/test_scheme_registry.py checks it; docs/adding-a-scheme.md, step 6).
DIFFERENTIAL_SCHEMES = (Scheme.ECMP, Scheme.OFAN, Scheme.RPS, Scheme.RR, Scheme.JSQ, Scheme.AR, Scheme.DRILL,
                        Scheme.POFAN, Scheme.HOST_ROUTED)


def configs(k: int) -> list[SchemeConfig]:
    """Every differential scheme; pOfan with every pipe size that divides k, and per-CPU pointers."""
    pipes = [p for p in range(1, k + 1) if k % p == 0] + [PIPES_PER_CPU]
    return [SchemeConfig(s, p) for s in DIFFERENTIAL_SCHEMES for p in (pipes if s is Scheme.POFAN else [4])]


def test_kernel_matches_model(h: Harness) -> None:
    rng = random.Random(2024 + h.tree.k)
    for config in configs(h.tree.k):
        mismatches = []
        for _ in range(CASES):
            kernel, model, x = run_case(h, config, rng)
            if kernel != model:
                mismatches.append((kernel, model, x))
        assert not mismatches, f"{config.label}: {len(mismatches)} of {CASES} differ, e.g. {mismatches[0]}"


def test_ofan_pointer_rotates_through_every_uplink(h: Harness) -> None:
    """w consecutive packets to one destination edge take w different uplinks."""
    tree = h.tree
    rng = random.Random(7)
    switches.program(h.maps, tree)  # every uplink valid again
    switches.set_scheme(h.maps, tree, Scheme.OFAN, seed=3)
    sw = tree.by_name["e0_0"]
    src = tree.by_name["h0_0_0"]
    elsewhere = [hst for hst in tree.hosts if tree.edge_of(hst.name) != sw.name]
    for dst in (elsewhere[0], elsewhere[-1]):
        seen = []
        for _ in range(3 * tree.w):
            ctx = SkBuff(ingress_ifindex=tree.port(sw.name, src.name).ifindex)
            _, out = prog_test_run(h.fd, packet(tree, src, dst, 1500, rng.randrange(1024, 65536)), ctx)
            seen.append(out.cb[0])
        for i in range(0, len(seen), tree.w):
            assert len(set(seen[i:i + tree.w])) == tree.w, seen


def chi_square_ok(counts: Counter[int], probs: dict[int, float], n: int) -> tuple[bool, float]:
    from scipy.stats import chisquare

    obs = [counts.get(i, 0) for i in sorted(probs)]
    exp = [probs[i] * n for i in sorted(probs)]
    p = float(chisquare(obs, exp).pvalue)
    # 1e-6: the kernel's generator is not seeded, so these tests draw afresh on every run, and at 1e-4 the
    # suite's dozens of them failed a fair generator about once in a few hundred suites (one did: a 5195 / 4805
    # split, p = 1e-4). A 53 / 47 split over 10,000 draws still fails (p ~ 1e-9).
    return p > 1e-6, p


N_DRAWS = 10_000


@pytest.mark.parametrize("scheme", [Scheme.RPS, Scheme.JSQ, Scheme.AR])
def test_random_choices_are_uniform(h: Harness, scheme: Scheme) -> None:
    """RPS always, JSQ and AR when every uplink ties: uniform over the uplinks."""
    rng = random.Random(11)
    counts: Counter[int] = Counter()
    queues = (4154,) * h.tree.w  # all tied, and all at AR level 0
    for _ in range(N_DRAWS):
        kernel, _, _ = run_case(h, SchemeConfig(scheme), rng, supplied=False, queues=queues,
                                mask=(1 << h.tree.w) - 1)
        counts[kernel] += 1
    ok, p = chi_square_ok(counts, {i: 1 / h.tree.w for i in range(h.tree.w)}, N_DRAWS)
    assert ok, (counts, p)


def test_drill_distribution(h: Harness) -> None:
    """Remembered uplink 0 has the longest queue: DRILL keeps it only when both
    samples hit it (1/w^2); otherwise the first sample that is not 0 wins."""
    w = h.tree.w
    rng = random.Random(13)
    counts: Counter[int] = Counter()
    queues = (90000,) + (4154,) * (w - 1)
    for _ in range(N_DRAWS):
        kernel, _, _ = run_case(h, SchemeConfig(Scheme.DRILL), rng, supplied=False, queues=queues, memory=0,
                                mask=(1 << w) - 1)
        counts[kernel] += 1
    probs = {0: 1 / w**2, **{j: 1 / w + 1 / w**2 for j in range(1, w)}}
    ok, p = chi_square_ok(counts, probs, N_DRAWS)
    assert ok, (counts, p)


def test_reset_gives_fresh_pointers_with_small_class_half_a_rotation_away(h: Harness) -> None:
    tree, maps, dims = h.tree, h.maps, Dims.of(h.tree)
    w = tree.w
    firsts = []
    for seed in (1, 2):
        switches.reset_state(maps, tree, seed)
        snapshot = []
        for sw in switches.lb_switches(tree):
            nk = switches.n_keys(tree, sw.level)
            for pipe in range(tree.k):
                base = (sw.nid * tree.k + pipe) * dims.n_ptr
                data = [int(maps.ofan_ptr.get(base + d).value) for d in range(nk)]
                small = [int(maps.ofan_ptr.get(base + nk + d).value) for d in range(nk)]
                assert all(0 <= v < w for v in data)
                assert small == [(v + w // 2) % w for v in data]
                snapshot += data
            for d in range(nk):
                per_cpu = maps.ofan_ptr_cpu.get(sw.nid * dims.n_ptr + d)
                per_cpu_small = maps.ofan_ptr_cpu.get(sw.nid * dims.n_ptr + nk + d)
                assert per_cpu_small == [(v + w // 2) % w for v in per_cpu]
        firsts.append(snapshot)
        assert len(set(snapshot)) == w  # random starts use every value
    assert firsts[0] != firsts[1]
    # the same seed gives the same state
    switches.reset_state(maps, tree, 1)
    first_sw = [int(maps.ofan_ptr.get((sw.nid * tree.k) * dims.n_ptr).value) for sw in switches.lb_switches(tree)]
    switches.reset_state(maps, tree, 1)
    assert first_sw == [int(maps.ofan_ptr.get((sw.nid * tree.k) * dims.n_ptr).value)
                        for sw in switches.lb_switches(tree)]
