/* lb_mask.h: which uplinks are valid for a destination, and choosing among them.
 *
 * Contract: uplink_mask[sw * N_KEYS + d] holds one bit per uplink slot of
 * switch sw: set when the uplink still leads to destination key d over a
 * valid shortest path (computed by testbed.models.control.routing, written by
 * testbed.dataplane.switches.set_uplink_masks). A mask of 0 means the
 * destination cannot be reached upward from this switch. lb_mask_nth(mask, n)
 * returns the slot of the n-th set bit (n < lb_mask_count(mask)), counting
 * from slot 0, without branches (lb_arith.h). Mirrored by
 * testbed.models.decisions.valid_slots.
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

/* Set bits among the low `width` bits of a mask (width a constant: the loop is bounded). */
static __always_inline __u32 lb_bits_count(__u64 mask, const __u32 width)
{
    __u32 n = 0;
#pragma clang loop unroll(disable)
    for (__u32 i = 0; i < width; i++)
        n += (mask >> i) & 1;
    return n;
}

/* The position of the n-th set bit (n < lb_bits_count), without branches. */
static __always_inline __u32 lb_bits_nth(__u64 mask, __u32 n, const __u32 width)
{
    __u64 seen = 0, pick = 0;
#pragma clang loop unroll(disable)
    for (__u32 i = 0; i < width; i++) {
        __u64 bit = (mask >> i) & 1;
        pick = lb_sel(bit & lb_eq(seen, n), i, pick);
        seen += bit;
    }
    return pick;
}

static __always_inline __u32 lb_mask_count(__u32 mask)
{
    return lb_bits_count(mask, W);
}

static __always_inline __u32 lb_mask_nth(__u32 mask, __u32 n)
{
    return lb_bits_nth(mask, n, W);
}

/* A uniformly drawn valid slot: the (draw mod count)-th valid one (slot 0 for an empty mask). */
static __always_inline __u32 lb_mask_draw(__u32 mask, __u32 draw)
{
    return lb_mask_nth(mask, (__u64)draw % lb_mask_count(mask));
}
