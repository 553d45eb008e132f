/* lb_sample.h: the emulated timers of the sampled schemes (DLB, SGLB, CONGA).
 *
 * Contract: lb_timers(sw, cfg, now) is called once per packet a switch
 * handles, before its decision. Each timer of a switch (LB_TICK_*) runs at
 * most once per epoch (now / its interval), on the first packet of the
 * switch in a new epoch, by the CPU whose compare-and-swap moves
 * lb_epoch[sw * LB_TICKS + tick] to the current epoch; it is told n, the
 * epochs elapsed since it last ran. A switch that handles no packet in an
 * epoch runs its timers late, on its next packet: its ports then carried
 * nothing new through it, so only what they drained is seen late.
 *   sample (LB_SAMPLE, sample_ns): for every port of the switch, the bytes
 *     it transmitted since the last sample (port_q.rx_bytes), divided by
 *     min(n, 64), and the bytes queued now (port_q.bytes, negative as 0) feed
 *     two EWMAs, avg = avg - avg / 2^s + sample / 2^s; each is put in one of
 *     8 bands between its thresholds (lb_band) and the port's quality is
 *     (wl x load band + (8 - wl) x queue band) / 8 (DLB; SAI ARS, Juniper).
 *   flood (LB_FLOOD, flood_ns; aggregation and top switches): for every
 *     destination edge e, the quality band the switch offers toward e is
 *     copied to sglb_view[sw * N_KEYS + e], which is all its neighbours ever
 *     read of it (SGLB's next-next-hop state, a flood every flood_ns):
 *     its downlink's quality toward e's pod or edge, or, toward another
 *     pod, the best quality among its uplinks valid for that pod.
 *   dre (LB_CONGA, dre_ns): every port's DRE decays, X = X decay[min(n, 63)]
 *     / 65536 (CONGA's X = X (1 - alpha) once per T_dre, n times).
 * Each run of a timer is counted (CNT_LB_SAMPLES, CNT_LB_FLOODS, CNT_LB_DECAYS:
 * a run's switch_counters lb_samples, lb_floods, lb_decays).
 * Mirrored by testbed.models.sampled (sample_port, flood_view, decay_dre).
 * Concurrency: one CPU runs a timer for a switch in an epoch; the state it
 * writes (plain stores) is read racily by decisions on other CPUs, as a
 * switch's decisions read its last sample. The DRE is also added to by
 * every packet (fetch-add), so a decay racing an add can lose that add.
 */
#pragma once
#include "maps.h"
#include "lb_arith.h"
#include "lb_mask.h"

/* Epochs elapsed (>= 1) if this CPU is to run timer `tick` of switch sw now, else 0. */
static __always_inline __u64 lb_tick(__u32 sw, __u32 tick, __u64 now, __u64 interval)
{
    __u32 key = sw * LB_TICKS + tick;
    __u64 *last = lb_epoch.lookup(&key);
    if (!last || !interval)
        return 0;
    __u64 e = now / interval, prev = *(volatile __u64 *)last;
    if (e <= prev)
        return 0;
    if (__sync_val_compare_and_swap(last, prev, e) != prev)
        return 0;
    return e - prev;
}

/* Port number i of switch sw (sw_ports): its sampled state, and its ifindex in *ifindex; NULL when the maps
 * are not programmed (the timer stops there). */
static __always_inline struct lb_port *lb_switch_port(__u32 sw, __u32 i, __u32 *ifindex)
{
    __u32 key = sw * K + i;
    __u32 *ifx = sw_ports.lookup(&key);
    if (!ifx)
        return NULL;
    __u32 idx = *ifx;
    *ifindex = idx;
    return lb_port.lookup(&idx);
}

/* A value's band between lo and hi: 0 at or below lo, 7 at or above hi, 1 + 6 (v - lo) / (hi - lo) between
 * (values and thresholds below 2^56). */
static __always_inline __u64 lb_band(__u64 v, __u64 lo, __u64 hi)
{
    __u64 span = hi - lo + lb_eq(hi, lo);
    __u64 off = lb_sel(lb_lt(lo, v), v - lo, 0);
    __u64 mid = 1 + 6 * off / span;
    __u64 b = lb_sel(lb_lt(lo, v), mid, 0);
    return lb_sel(lb_lt(v, hi), b, LB_BANDS - 1);
}

/* A u64 counter that may be transiently below zero, as 0 then. */
static __always_inline __u64 lb_nonneg(__u64 v)
{
    __u64 neg = v >> 63;
    lb_hide(neg);
    return lb_sel(neg, 0, v);
}

static __always_inline void lb_sample(__u32 sw, __u64 n, struct lb_cfg *c)
{
    __u64 div = n < 64 ? n : 64;
    __u32 s = c->ewma_shift & 31, wl = c->load_weight & 15;
#pragma clang loop unroll(disable)
    for (__u32 i = 0; i < K; i++) {
        __u32 idx = 0;
        struct lb_port *lp = lb_switch_port(sw, i, &idx);
        struct port_q *q = port_q.lookup(&idx);
        if (!lp || !q)
            return;
        __u64 rx = q->rx_bytes;
        __u64 sent = lb_nonneg(rx - lp->last_rx);
        lp->last_rx = rx;
        __u64 load = lp->load - (lp->load >> s) + ((sent / div) >> s);
        __u64 queue = lp->queue - (lp->queue >> s) + (lb_nonneg(q->bytes) >> s);
        lp->load = load;
        lp->queue = queue;
        lp->quality = (wl * lb_band(load, c->load_lo, c->load_hi) +
                       (8 - wl) * lb_band(queue, c->queue_lo, c->queue_hi)) >> 3;
    }
}

static __always_inline __u64 lb_quality_of(__u32 ifindex)
{
    struct lb_port *lp = lb_port.lookup(&ifindex);
    return lp ? lp->quality : LB_BANDS - 1;
}

static __always_inline void lb_flood(__u32 sw, struct switch_cfg *cfg, struct lb_cfg *c)
{
    __u32 zero = 0;
    struct lb_scores *up = lb_scratch.lookup(&zero);
    if (!up)
        return;
    __u32 epp = c->edges_per_pod ? c->edges_per_pod : 1;
    if (!cfg->top) {
#pragma clang loop unroll(disable)
        for (__u32 t = 0; t < W; t++) {
            __u32 key = sw * W + t;
            __u32 *ifx = uplinks.lookup(&key);
            if (!ifx)
                return;
            up->score[t] = lb_quality_of(*ifx);
        }
    }
#pragma clang loop unroll(disable)
    for (__u32 e = 0; e < N_EDGES; e++) {
        __u32 pod = e / epp;
        __u32 q = LB_BANDS - 1;
        if (cfg->top || pod == cfg->pod) {
            /* down: a core's downlink is by pod, an aggregation switch's (or a spine's) by edge index */
            __u32 dkey = sw * K + (cfg->level == LEVEL_CORE ? pod : e % epp);
            __u32 *ifx = downlinks.lookup(&dkey);
            if (ifx && *ifx)
                q = lb_quality_of(*ifx);
        } else {
            __u32 mask = lb_mask_get(sw, pod);
            __u64 best = LB_BANDS - 1;
#pragma clang loop unroll(disable)
            for (__u32 t = 0; t < W; t++)
                best = lb_sel(((mask >> t) & 1) & lb_lt(up->score[t], best), up->score[t], best);
            q = best;
        }
        __u32 vkey = sw * N_KEYS + e;
        __u32 *v = sglb_view.lookup(&vkey);
        if (v)
            *v = q;
    }
}

static __always_inline void lb_decay_dre(__u32 sw, __u64 n, struct lb_cfg *c)
{
    __u32 step = n < LB_DECAY_STEPS - 1 ? n : LB_DECAY_STEPS - 1;
    __u64 f = c->decay[step & (LB_DECAY_STEPS - 1)];
#pragma clang loop unroll(disable)
    for (__u32 i = 0; i < K; i++) {
        __u32 idx = 0;
        struct lb_port *lp = lb_switch_port(sw, i, &idx);
        if (!lp)
            return;
        lp->dre = lp->dre * f >> 16;
    }
}

static __always_inline void lb_timers(__u32 sw, struct switch_cfg *cfg, __u64 now)
{
    __u32 zero = 0;
    struct lb_cfg *c = lb_cfg.lookup(&zero);
    if (!c || !c->active)
        return;
    __u64 n;
    if (c->active & LB_SAMPLE) {
        n = lb_tick(sw, LB_TICK_SAMPLE, now, c->sample_ns);
        if (n) {
            lb_sample(sw, n, c);
            maps_count(CNT_LB_SAMPLES);
        }
    }
    if ((c->active & LB_FLOOD) && cfg->level != LEVEL_EDGE) {
        n = lb_tick(sw, LB_TICK_FLOOD, now, c->flood_ns);
        if (n) {
            lb_flood(sw, cfg, c);
            maps_count(CNT_LB_FLOODS);
        }
    }
    if (c->active & LB_CONGA) {
        n = lb_tick(sw, LB_TICK_DRE, now, c->dre_ns);
        if (n) {
            lb_decay_dre(sw, n, c);
            maps_count(CNT_LB_DECAYS);
        }
    }
}
