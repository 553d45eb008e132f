"""What the switches are told, through the pinned maps: a fat tree's
forwarding state, each switch's scheme, and the per-switch state the schemes
keep (ECMP seeds, Ofan/pOfan and RR pointers, DRILL memory, and the sampled
schemes' settings and timer state: `set_sampled()`).

`program()` writes a fat tree's ports, switches, links and destinations;
`set_uplink_masks()` and `set_downlinks()` change the routes live (the
control plane's output); `reset_state()`, `apply_schemes()` and
`set_scheme()` change schemes by map writes only.
"""

from __future__ import annotations

import ctypes as ct
import random
import time
from typing import Any

import numpy as np

from ..models import control, decisions, sampled, schemes
from ..models.schemes import Scheme
from ..topology import FatTree, Level, Node
from .compile import Dims
from .maps import HOST_LB_COUNTERS, PATH_CLASSES, DstInfo, LbCfg, Maps, PortInfo, SwitchCfg


def _mac8(mac: bytes) -> Any:
    return (ct.c_uint8 * 8)(*mac)


def program(maps: Maps, tree: FatTree) -> None:
    """Write the fat tree's ports, switches, links and destinations."""
    for p in tree.ports:
        node = tree.by_name[p.node]
        peer = tree.by_name[p.peer]
        maps.port_info.set(
            p.ifindex,
            PortInfo(
                node=node.nid,
                level=int(node.level),
                peer_ifindex=p.peer_ifindex,
                stage=int(p.stage),
                to_host=int(peer.is_host),
                local=tree.local_index(p),
                mac=_mac8(p.mac),
            ),
        )
    for sw in tree.switches:
        maps.switch_cfg.set(
            sw.nid,
            SwitchCfg(
                level=int(sw.level),
                pod=max(sw.pod, 0),
                index=sw.index,
                edge_global=tree.edge_global(sw) if sw.level is Level.EDGE else 0,
                scheme=int(Scheme.ECMP),
                seed=0,
                top=int(not tree.uplinks(sw.name)),
            ),
        )
        for slot, p in enumerate(tree.downlinks(sw.name)):
            maps.downlinks.set(sw.nid * tree.k + slot, p.ifindex)
        if sw.level is not Level.CORE:
            for slot, p in enumerate(tree.uplinks(sw.name)):
                maps.uplinks.set(sw.nid * tree.w + slot, p.ifindex)
    maps.sw_ports.set_many(
        [
            (tree.by_name[p.node].nid * tree.switch_ports + tree.local_index(p), p.ifindex)
            for p in tree.ports
            if not tree.by_name[p.node].is_host
        ]
    )
    for h in tree.hosts:
        edge = tree.by_name[tree.edge_of(h.name)]
        key = int.from_bytes(tree.host_ip(h).packed, "little")
        maps.dst_info.set(
            key,
            DstInfo(
                host=h.nid,
                pod=h.pod,
                edge=edge.index,
                edge_global=tree.edge_global(edge),
                slot=h.index,
                mac=_mac8(tree.host_port(h.name).mac),
            ),
        )
    for i, v in enumerate(decisions.choose_basis(tree.w)):
        maps.ofan_basis.set(i, v)
    set_ar_thresholds(maps, decisions.ar_thresholds())
    full = (1 << tree.w) - 1
    set_uplink_masks(maps, tree, {(sw.nid, d): full for sw in lb_switches(tree) for d in range(n_keys(tree, sw.level))})
    set_host_paths(maps, tree, control.host_paths(tree, control.Reach(tree, [])))
    set_wofan_rounds(maps, tree, control.routing(tree, []).rounds)  # one round per key: Ofan's rotation


def host_routable(tree: FatTree) -> bool:
    """Whether the host schemes can label every path of this fabric: host_paths holds 64 bits per pair of
    edge switches, w x w of them between the pods of a fat tree (k <= 16), w in a leaf-spine."""
    return tree.w <= 32 if tree.kind == "leafspine" else tree.w * tree.w <= 64


def set_host_paths(maps: Maps, tree: FatTree, paths: dict[tuple[int, int], int]) -> None:
    """Host-routed paths by (source edge, destination edge), in one batch (none on a fabric too large for them)."""
    if host_routable(tree):
        maps.host_paths.set_many([(e * tree.n_edges + f, m) for (e, f), m in paths.items()])


def set_uplink_masks(maps: Maps, tree: FatTree, masks: dict[tuple[int, int], int]) -> None:
    """Valid-uplink bitmasks by (switch id, destination key), in one batch."""
    nk = Dims.of(tree).n_keys
    maps.uplink_mask.set_many([(sw * nk + d, m) for (sw, d), m in masks.items()])


def set_wofan_rounds(maps: Maps, tree: FatTree, rounds: dict[tuple[int, int], tuple[int, ...]]) -> None:
    """Weighted Ofan's rounds by (switch id, destination key), in one batch: round j's eligible slots in the low
    32 bits, the number of rounds in the high 32 (lb_ofan.h); none is written as 0 (Ofan's rotation over the
    valid uplinks). The masks (set_uplink_masks) are written first, and the data plane takes
    a round within them, so rounds that lag a failure never name a failed uplink."""
    nk = Dims.of(tree).n_keys
    entries: list[tuple[int, int]] = []
    for (sw, d), rs in rounds.items():
        base = (sw * nk + d) * decisions.WOFAN_ROUNDS
        if not rs:
            entries.append((base, 0))
        else:
            entries += [(base + j, len(rs) << 32 | m) for j, m in enumerate(rs)]
    maps.wofan_round.set_many(entries)


def set_downlinks(maps: Maps, tree: FatTree, routes: dict[tuple[int, int], int]) -> None:
    """Downward routes by (switch id, slot): egress ifindex, or 0 to withdraw the route."""
    maps.downlinks.set_many([(sw * tree.k + slot, ifx) for (sw, slot), ifx in routes.items()])


def set_ar_thresholds(maps: Maps, thresholds: tuple[int, ...]) -> None:
    for i, t in enumerate(thresholds):
        maps.ar_thresh.set(i, t)


def ar_thresholds(maps: Maps) -> tuple[int, ...]:
    out = []
    for i in range(3):
        t = maps.ar_thresh.get(i)
        assert t is not None  # an array map: every index below its size exists
        out.append(int(t.value))
    return tuple(out)


def n_keys(tree: FatTree, level: Level) -> int:
    """Destination keys of a switch tier: destination edges (edge), pods (agg)."""
    return tree.n_edges if level is Level.EDGE else tree.pods


def lb_switches(tree: FatTree) -> list[Node]:
    return [sw for sw in tree.switches if sw.level is not Level.CORE]


def reset_state(maps: Maps, tree: FatTree, seed: int, switches: list[str] | None = None) -> None:
    """Fresh per-switch state drawn from `seed`, so repeated runs with one seed
    are identical and runs with different seeds independent: ECMP seeds, Ofan
    and pOfan pointers (every pipe, every CPU; data pointers uniform in [0, w),
    small-class pointers half a rotation away), Simple RR pointers, DRILL memory."""
    rng = random.Random(seed)
    dims = Dims.of(tree)
    ncpu = maps.ofan_ptr_cpu.ncpu
    ptrs: list[tuple[int, int]] = []
    for sw in lb_switches(tree):
        if switches is not None and sw.name not in switches:
            continue
        cfg = maps.switch_cfg.get(sw.nid)
        assert cfg is not None  # an array map: every switch id has an entry
        cfg.seed = rng.getrandbits(32)
        maps.switch_cfg.set(sw.nid, cfg)
        nk = n_keys(tree, sw.level)
        for pipe in range(tree.switch_ports):
            base = (sw.nid * tree.switch_ports + pipe) * dims.n_ptr
            ptrs += [(base + pid, v) for pid, v in enumerate(decisions.ofan_initial_pointers(nk, tree.w, rng))]
        per_cpu = [decisions.ofan_initial_pointers(nk, tree.w, rng) for _ in range(ncpu)]
        for pid in range(2 * nk):
            maps.ofan_ptr_cpu.set(sw.nid * dims.n_ptr + pid, [per_cpu[c][pid] for c in range(ncpu)])
        maps.rr_ptr.set(sw.nid, rng.randrange(tree.w))
        for j in range(decisions.DRILL_M_MAX):
            maps.drill_mem.set(sw.nid * decisions.DRILL_M_MAX + j, rng.randrange(tree.w))
    maps.ofan_ptr.set_many(ptrs)


def set_sampled(maps: Maps, tree: FatTree, st: sampled.Settings) -> None:
    """The sampled schemes' settings (lb_cfg), the timers' state back to zero: every port's DRE and samples,
    every switch's epochs, the flooded views, CONGA's tables; CONGA's feedback round robins at 0."""
    d = Dims.of(tree)
    maps.lb_port.zero(d.n_ifindex)
    maps.lb_epoch.zero(d.n_switches * sampled.LB_TICKS)
    maps.sglb_view.zero(d.n_switches * d.n_keys)
    maps.conga_to.zero(d.n_edges * d.n_edges * d.w)
    maps.conga_from.zero(d.n_edges * d.n_edges * d.w)
    maps.conga_fb_ptr.zero(d.n_edges * d.n_edges)
    write_lb_cfg(maps, st)


def write_lb_cfg(maps: Maps, st: sampled.Settings) -> None:
    cfg = LbCfg(**{k: v for k, v in st.__dict__.items() if k != "decay"})
    cfg.decay[:] = st.decay
    maps.lb_cfg.set(0, cfg)


def set_sampled_active(maps: Maps, tree: FatTree) -> int:
    """lb_cfg.active from the schemes the switches run now: the timers of the sampled schemes in use."""
    cfg = maps.lb_cfg.get(0)
    assert cfg is not None  # an array map of one entry
    cfg.active = sampled.active_bits([c.scheme for c in current_schemes(maps, tree).values()])
    maps.lb_cfg.set(0, cfg)
    return int(cfg.active)


def reset_host_state(maps: Maps, tree: FatTree, seed: int, max_fid: int) -> None:
    """Fresh host NIC state for flow ids 1..max_fid, drawn from `seed`: REPS buffers empty and not frozen, REPS's
    delay lines skipped to their end (an entry left by an earlier run is never applied: a line's slots are
    only read at indices written from now on, whose generations differ), DRB pointers at a random start (each
    flow and size class), the per-host counters at 0."""
    rng = np.random.default_rng(seed)
    n = (max_fid + 1) * decisions.N_CLASSES
    maps.drb_ptr.set_range(rng.integers(0, 1 << 32, size=n, dtype=np.uint64))
    maps.reps.zero(max_fid + 1)
    lines = tree.n_hosts * PATH_CLASSES
    cursors = maps.reps_cursor.read_array(lines)
    for c in cursors:
        c.tail = c.head
    maps.reps_cursor.write(cursors)
    maps.host_lb_cnt.zero(tree.n_hosts * HOST_LB_COUNTERS)


def apply_schemes(maps: Maps, tree: FatTree, assignment: dict[str, schemes.SchemeConfig]) -> float:
    """Set each named switch's scheme by map writes only (the programs stay
    attached). Returns how long the writes took, in seconds: after the last
    write returns, every packet the switches process uses the new scheme."""
    by_name = tree.by_name
    cfgs: dict[str, SwitchCfg] = {}
    for name in assignment:
        cfg = maps.switch_cfg.get(by_name[name].nid)
        assert cfg is not None  # an array map: every switch id has an entry
        cfgs[name] = cfg
    t0 = time.perf_counter()
    for name, sc in assignment.items():
        cfg = cfgs[name]
        cfg.scheme = int(sc.scheme)
        cfg.pipe_size = sc.pipe_size
        maps.switch_cfg.set(by_name[name].nid, cfg)
    took = time.perf_counter() - t0
    set_sampled_active(maps, tree)  # a sampled scheme swapped in starts its timers (and CONGA its headers)
    return took


def current_schemes(maps: Maps, tree: FatTree) -> dict[str, schemes.SchemeConfig]:
    out = {}
    for sw in lb_switches(tree):
        cfg = maps.switch_cfg.get(sw.nid)
        assert cfg is not None  # an array map: every switch id has an entry
        out[sw.name] = schemes.SchemeConfig(Scheme(cfg.scheme), cfg.pipe_size)
    return out


def set_scheme(
    maps: Maps, tree: FatTree, scheme: Scheme, seed: int, switches: list[str] | None = None, pipe_size: int = 4
) -> None:
    """Reset the state of the given LB switches (all by default) from `seed`
    and set their scheme."""
    names = switches if switches is not None else [sw.name for sw in lb_switches(tree)]
    reset_state(maps, tree, seed, names)
    apply_schemes(maps, tree, {n: schemes.SchemeConfig(scheme, pipe_size) for n in names})
