/* lb_queue.h: schemes that read the uplinks' queues (exact occupancy, bytes).
 *
 * Contract: each returns a valid uplink slot (bit set in `mask`, never 0
 * here) of switch sw. Mirrored by testbed.dataplane.models.jsq_port, ar_port and
 * drill_port. Invalid uplinks score worst and are never chosen.
 *   jsq:   the valid uplink with the fewest queued bytes; among ties, the
 *          (draw mod ties)-th tied uplink in slot order (section 3.1).
 *   ar:    quantised adaptive routing (section 3.1, Table 1): a queue of q
 *          bytes is at level = number of thresholds t with q >= t; among the
 *          valid uplinks at the lowest level, the (draw mod count)-th.
 *   drill: DRILL(d=2, m=1) (Ghorbani et al., SIGCOMM 2017): candidates are the
 *          remembered uplink (if still valid), then two uniformly drawn valid
 *          uplinks; the one with the fewest queued bytes wins (ties: earlier
 *          candidate) and is remembered.
 * Concurrency: queue reads are racy snapshots, as in a switch ASIC; DRILL's
 * memory is a plain per-switch store (last writer wins).
 */
#pragma once
#include "maps.h"
#include "lb_mask.h"

#define SCORE_INVALID (~0ULL)

static __always_inline __u64 lb_uplink_bytes(__u32 sw, __u32 slot)
{
    __u32 key = sw * W + slot;
    __u32 *ifx = uplinks.lookup(&key);
    if (!ifx)
        return ~0ULL;
    __u32 idx = *ifx;
    struct port_q *q = port_q.lookup(&idx);
    return q ? q->bytes : ~0ULL;
}

static __always_inline __u32 lb_ar_level(__u64 bytes)
{
    __u32 level = 0;
#pragma unroll
    for (__u32 i = 0; i < AR_LEVELS; i++) {
        __u32 k = i;
        __u64 *t = ar_thresh.lookup(&k);
        if (t && (__s64)bytes >= (__s64)*t)
            level = i + 1;
    }
    return level;
}

/* The (draw mod count)-th slot whose score equals the minimum score. */
static __always_inline __u32 lb_pick_min(__u64 *score, __u32 draw)
{
    __u64 best = ~0ULL;
    __u32 ties = 0;
#pragma unroll
    for (__u32 i = 0; i < W; i++) {
        if (score[i] < best) {
            best = score[i];
            ties = 1;
        } else if (score[i] == best) {
            ties++;
        }
    }
    __u32 want = ties ? draw % ties : 0;
    __u32 seen = 0, pick = 0;
#pragma unroll
    for (__u32 i = 0; i < W; i++) {
        if (score[i] == best) {
            if (seen == want)
                pick = i;
            seen++;
        }
    }
    return pick;
}

static __always_inline __u32 lb_jsq_pick(__u32 sw, __u32 mask, __u32 draw)
{
    __u64 score[W];
#pragma unroll
    for (__u32 i = 0; i < W; i++)
        score[i] = (mask >> i) & 1 ? lb_uplink_bytes(sw, i) : SCORE_INVALID;
    return lb_pick_min(score, draw);
}

static __always_inline __u32 lb_ar_pick(__u32 sw, __u32 mask, __u32 draw)
{
    __u64 score[W];
#pragma unroll
    for (__u32 i = 0; i < W; i++)
        score[i] = (mask >> i) & 1 ? lb_ar_level(lb_uplink_bytes(sw, i)) : SCORE_INVALID;
    return lb_pick_min(score, draw);
}

static __always_inline __u32 lb_drill_pick(__u32 sw, __u32 mask, __u32 draw0, __u32 draw1)
{
    __u32 *mem = drill_mem.lookup(&sw);
    __u32 s0 = lb_mask_draw(mask, draw0), s1 = lb_mask_draw(mask, draw1);
    __u32 best = mem ? *mem % W : s0;
    if (!((mask >> best) & 1))
        best = s0;
    __u64 best_q = lb_uplink_bytes(sw, best);
    __u64 q = lb_uplink_bytes(sw, s0);
    if (q < best_q) {
        best = s0;
        best_q = q;
    }
    q = lb_uplink_bytes(sw, s1);
    if (q < best_q)
        best = s1;
    if (mem)
        *mem = best;
    return best;
}
