/* lb_mask.h: which uplinks are valid for a destination, and choosing among them.
 *
 * Contract: uplink_mask[sw * N_KEYS + d] holds one bit per uplink slot of
 * switch sw: set when the uplink still leads to destination key d over a
 * valid shortest path (written by testbed.dataplane.control). A mask of 0 means the
 * destination cannot be reached upward from this switch. lb_mask_nth(mask, n)
 * returns the slot of the n-th set bit (n < lb_mask_count(mask)), counting
 * from slot 0, without branches (lb_arith.h). Mirrored by
 * testbed.dataplane.models.valid_slots.
 */
#pragma once
#include "maps.h"
#include "lb_arith.h"

#define ALL_UPLINKS ((__u32)((1ULL << W) - 1)) /* W <= 32 */

static __always_inline __u32 lb_mask_get(__u32 sw, __u32 d)
{
    __u32 key = sw * N_KEYS + d;
    __u32 *m = uplink_mask.lookup(&key);
    return m ? *m & ALL_UPLINKS : 0;
}

static __always_inline __u32 lb_mask_count(__u32 mask)
{
    __u32 n = 0;
#pragma clang loop unroll(disable)
    for (__u32 i = 0; i < W; i++)
        n += (mask >> i) & 1;
    return n;
}

static __always_inline __u32 lb_mask_nth(__u32 mask, __u32 n)
{
    __u64 seen = 0, pick = 0;
#pragma clang loop unroll(disable)
    for (__u32 i = 0; i < W; i++) {
        __u64 bit = (mask >> i) & 1;
        pick = lb_sel(bit & lb_eq(seen, n), i, pick);
        seen += bit;
    }
    return pick;
}

/* A uniformly drawn valid slot: the (draw mod count)-th valid one (slot 0 for an empty mask). */
static __always_inline __u32 lb_mask_draw(__u32 mask, __u32 draw)
{
    return lb_mask_nth(mask, (__u64)draw % lb_mask_count(mask));
}
