/* lb_simple.h: destination-oblivious schemes without queue state.
 *
 * Contract: each returns an uplink slot in [0, W). Mirrored by
 * testbed.schemes.rps_port and rr_port.
 *   rps: a uniformly random uplink per packet (the paper's RSQ, equivalent
 *        to host-based RPS; section 3.1).
 *   rr:  Simple RR, one pointer per switch shared by all destinations,
 *        visiting the uplinks in slot order (section 3.1).
 * Concurrency: the RR pointer is shared by all CPUs; the 64-bit fetch-add
 * gives each packet its own pointer value.
 */
#pragma once
#include "maps.h"

static __always_inline __u32 lb_rps_pick(__u32 draw)
{
    return draw % W;
}

static __always_inline __u32 lb_rr_pick(__u32 sw)
{
    __u64 *ptr = rr_ptr.lookup(&sw);
    if (!ptr)
        return 0;
    return __sync_fetch_and_add(ptr, 1) % W;
}
