/* lb_label.h: host-routed uplinks (switch scheme SCHEME_HOST_ROUTED, for the host
 * schemes DRB and Ethereal).
 *
 * Contract: lb_label_slot() returns the uplink slot named by the path label
 * a host NIC put in a RoCEv2 packet's UDP source port (host_lb.h:
 * LABEL_TAG | agg << LABEL_BITS | core): an edge switch takes its uplink to
 * aggregation switch `agg`, an aggregation switch its uplink to core `core`.
 * A packet without a label (not RoCEv2, or a port outside LABEL_TAG), or
 * whose labelled uplink is not valid for the destination (a host acting on a
 * stale view of the failures), gets NO_LABEL and is routed by ECMP among the
 * valid uplinks (lb.h); the second case counts CNT_LABEL_INVALID. Stateless.
 * Mirrored by testbed.models.decisions.label_slot.
 */
#pragma once
#include "maps.h"
#include "parse.h"

/* The labelled uplink, or NO_LABEL: ECMP decides (lb.h falls through to it). */
#define NO_LABEL 0xFFFFFFFF

static __always_inline __u32 lb_label_slot(struct switch_cfg *cfg, struct tb_ipv4 *ip, void *end, __u32 mask)
{
    struct tb_udp *udp = (void *)(ip + 1);
    if (ip->protocol != IPPROTO_UDP || (void *)(udp + 1) > end || udp->dest != TB_BE16(ROCE_UDP_PORT))
        return NO_LABEL;
    __u32 sport = TB_BE16(udp->source);
    if ((sport & LABEL_MASK) != LABEL_TAG)
        return NO_LABEL;
    __u32 shift = cfg->level == LEVEL_EDGE ? LABEL_BITS : 0;
    __u32 slot = (sport >> shift) & ((1 << LABEL_BITS) - 1);
    if (slot < W && ((mask >> slot) & 1))
        return slot;
    maps_count(CNT_LABEL_INVALID);
    return NO_LABEL;
}
