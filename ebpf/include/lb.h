/* lb.h: the upward choice of an LB switch, dispatched by its scheme.
 *
 * Contract: lb_pick_uplink() returns the uplink slot the switch's scheme
 * (switch_cfg.scheme) picks for a packet going up, among the uplinks still
 * valid for its destination key d (of n_keys; dst_edge: the destination's
 * edge switch, global index); NO_UPLINK if none is. One
 * case per scheme of testbed.models.schemes.Scheme, each calling its
 * lb_*.h helper; its Python model is testbed.models.decisions.MODELS
 * (docs/adding-a-scheme.md). Packets shorter than SMALL_MAX_BYTES use the
 * small size class (ACKs), the others the data class.
 */
#pragma once
#include "shared.h"
#include "maps.h"
#include "parse.h"
#include "lb_draw.h"
#include "lb_mask.h"
#include "lb_ecmp.h"
#include "lb_ofan.h"
#include "lb_simple.h"
#include "lb_queue.h"
#include "lb_label.h"
#include "lb_dlb.h"
#include "lb_conga.h"

#define NO_UPLINK 0xFFFFFFFF

static __always_inline __u32 lb_pick_uplink(struct __sk_buff *skb, __u32 sw, struct switch_cfg *cfg, __u32 local,
                                            __u32 d, __u32 n_keys, __u32 dst_edge, __u64 now,
                                            struct tb_ipv4 *ip, void *end)
{
    __u32 mask = lb_mask_get(sw, d);
    if (!mask)
        return NO_UPLINK;
    __u32 cls = skb->len < SMALL_MAX_BYTES ? CLASS_SMALL : CLASS_DATA;
    switch (cfg->scheme) {
    case SCHEME_OFAN:
        return lb_ofan_pick(sw, 0, d, n_keys, cls, mask);
    case SCHEME_WOFAN:
        return lb_wofan_pick(sw, d, n_keys, cls, mask);
    case SCHEME_POFAN:
        if (cfg->pipe_size == PIPES_PER_CPU)
            return lb_ofan_pick_percpu(sw, d, n_keys, cls, mask);
        return lb_ofan_pick(sw, (local / cfg->pipe_size) % K, d, n_keys, cls, mask);
    case SCHEME_RPS:
        return lb_rps_pick(mask, lb_draw(skb, 0));
    case SCHEME_RR:
        return lb_rr_pick(sw, mask);
    case SCHEME_JSQ:
        return lb_jsq_pick(sw, mask, lb_draw(skb, 0));
    case SCHEME_AR:
        return lb_ar_pick(sw, mask, lb_draw(skb, 0));
    case SCHEME_DRILL:
        return lb_drill_pick(sw, mask, lb_draw(skb, 0), lb_draw(skb, 1));
    case SCHEME_CHOICE:
        return lb_choice_pick(sw, mask, lb_draw(skb, 0), lb_draw(skb, 1));
    case SCHEME_DLB:
        return lb_dlb_pick(sw, mask, lb_draw(skb, 0));
    case SCHEME_SGLB:
        return lb_sglb_pick(sw, mask, lb_draw(skb, 0), dst_edge);
    case SCHEME_CONGA:
        return lb_conga_pick(sw, cfg, mask, lb_draw(skb, 0), dst_edge, now);
    case SCHEME_HOST_ROUTED: {
        __u32 slot = lb_label_slot(cfg, ip, end, mask);
        if (slot != NO_LABEL)
            return slot;
    } /* no label: ECMP */
    /* fall through */
    case SCHEME_ECMP:
    default: {
        __u32 ports = 0;
        __u32 *l4 = (void *)(ip + 1);
        if ((ip->protocol == IPPROTO_UDP || ip->protocol == IPPROTO_TCP) && (void *)(l4 + 1) <= end)
            ports = *l4;
        return lb_ecmp_pick(cfg->seed, ip->saddr, ip->daddr, ports, ip->protocol, mask);
    }
    }
}
