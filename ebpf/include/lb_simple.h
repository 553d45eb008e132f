/* lb_simple.h: destination-oblivious schemes without queue state.
 *
 * Contract: each returns a valid uplink slot (bit set in `mask`, which is
 * never 0 here). Mirrored by testbed.models.decisions.rps_port, rr_port,
 * ecmp_port.
 *   rps:  a uniformly random valid uplink per packet (the paper's RSQ,
 *         equivalent to host-based RPS; section 3.1).
 *   rr:   Simple RR, one pointer per switch shared by all destinations,
 *         visiting the uplinks in slot order and skipping invalid ones (each
 *         skip advances the pointer, as in Ofan).
 *   ecmp: hash mod the number of valid uplinks selects among them.
 * Concurrency: the RR pointer is shared by all CPUs; the 64-bit fetch-add
 * gives each packet its own pointer value.
 */
#pragma once
#include "maps.h"
#include "lb_mask.h"
#include "lb_ofan.h"

static __always_inline __u32 lb_rps_pick(__u32 mask, __u32 draw)
{
    return lb_mask_draw(mask, draw);
}

static __always_inline __u32 lb_rr_pick(__u32 sw, __u32 mask)
{
    __u64 *ptr = rr_ptr.lookup(&sw);
    return ptr ? lb_rotate(ptr, 1, 0, 0, mask) : 0;
}
