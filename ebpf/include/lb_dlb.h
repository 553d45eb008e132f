/* lb_dlb.h: schemes that choose by sampled port quality (lb_sample.h).
 *
 * Contract: each returns a valid uplink slot (bit set in `mask`, never 0
 * here) of switch sw. Mirrored by testbed.models.decisions.model_dlb and
 * model_sglb.
 *   dlb:  Broadcom-style dynamic load balancing per packet, as the Ofan
 *         paper reads it (SGLB's two local kinds of information): the valid
 *         uplink whose last sampled quality band (lb_port.quality) is best;
 *         among ties the (draw mod ties)-th in slot order.
 *   sglb: DLB's local quality and the next switch's quality toward the
 *         destination edge e as it last flooded it (sglb_view[nbr * N_KEYS +
 *         e], nbr the switch at the far end of the uplink); a path is as good
 *         as the worse of the two; the best path, ties as dlb. An edge switch
 *         so rates edge->agg and agg->core (or agg->edge inside its pod, or
 *         spine->leaf in a leaf-spine), an aggregation switch agg->core and
 *         core->destination-pod agg.
 * Concurrency: sampled and flooded state is read racily, as in a switch ASIC.
 */
#pragma once
#include "maps.h"
#include "lb_arith.h"
#include "lb_queue.h"

/* The switch at the far end of uplink ifindex `ifx` (its port_info node); N_SWITCHES if unknown. */
static __always_inline __u32 lb_peer_switch(__u32 ifx)
{
    struct port_info *pi = port_info.lookup(&ifx);
    if (!pi)
        return N_SWITCHES;
    __u32 peer = pi->peer_ifindex;
    struct port_info *pp = port_info.lookup(&peer);
    return pp ? pp->node : N_SWITCHES;
}

/* Score every uplink by its quality (sglb: the worse of it and the neighbour's flooded quality toward
 * destination edge e; invalid ones LB_SCORE_INVALID) and pick among the best. */
static __always_inline __u32 lb_quality_pick(__u32 sw, __u32 mask, __u32 draw, __u32 e, int sglb)
{
    __u32 zero = 0;
    struct lb_scores *sc = lb_scratch.lookup(&zero);
    if (!sc)
        return 0;
#pragma clang loop unroll(disable)
    for (__u32 i = 0; i < W; i++) {
        __u32 idx = 0;
        struct lb_port *lp = lb_uplink_state(sw, i, &idx);
        if (!lp)
            return 0;
        __u64 v = lp->quality;
        if (sglb) {
            __u32 vkey = lb_peer_switch(idx) * N_KEYS + e;
            __u32 *r = sglb_view.lookup(&vkey);
            if (!r)
                return 0;
            __u64 rv = *r;
            v = lb_sel(lb_lt(v, rv), rv, v);
        }
        sc->score[i] = lb_sel((mask >> i) & 1, v, LB_SCORE_INVALID);
    }
    return lb_pick_min(sc, draw);
}

static __always_inline __u32 lb_dlb_pick(__u32 sw, __u32 mask, __u32 draw)
{
    return lb_quality_pick(sw, mask, draw, 0, 0);
}

static __always_inline __u32 lb_sglb_pick(__u32 sw, __u32 mask, __u32 draw, __u32 dst_edge)
{
    return lb_quality_pick(sw, mask, draw, dst_edge, 1);
}
