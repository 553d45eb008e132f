/* delay.h: the propagation the kernel cannot hold, applied to feedback.
 *
 * Contract: delay_links(a, b) is the number of links between two hosts
 * (dst_info): 2 under one edge switch, 4 within a pod (a leaf-spine is one
 * pod), 6 between pods (testbed.topology.timebase.path_links).
 * delay_ready_ns(rc, now, links) is when a signal that reached the data plane
 * now over a path of `links` links one way becomes usable: now + 2 x links x
 * run_cfg.prop_ns, the propagation round trip that the emulated path does not
 * have (the data crossed it without delay, and so did the signal back). Every
 * feedback loop stamps its entries with it and ignores them until then: REPS's
 * recycled entropies (host_lb.h), CONGA's fed-back metrics (lb_conga.h). The
 * transport's ACKs are held in user space (traffic/acks.c) likewise.
 */
#pragma once
#include "shared.h"

static __always_inline __u32 delay_links(struct dst_info *a, struct dst_info *b)
{
    if (a->edge_global == b->edge_global)
        return 2;
    return a->pod == b->pod ? 4 : 6;
}

static __always_inline __u64 delay_ready_ns(struct run_cfg *rc, __u64 now, __u32 links)
{
    return now + 2 * (__u64)links * rc->prop_ns;
}
