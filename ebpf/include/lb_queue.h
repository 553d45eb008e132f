/* lb_queue.h: schemes that read the uplinks' queues (exact occupancy, bytes).
 *
 * Contract: each returns a valid uplink slot (bit set in `mask`, never 0
 * here) of switch sw. Mirrored by testbed.models.decisions.jsq_port, ar_port,
 * drill_port and choice_port. Invalid uplinks score worst and are never chosen.
 *   jsq:   the valid uplink with the fewest queued bytes; among ties, the
 *          (draw mod ties)-th tied uplink in slot order (section 3.1).
 *   ar:    quantised adaptive routing (section 3.1, Table 1): a queue of q
 *          bytes is at level = number of thresholds t with q >= t; among the
 *          valid uplinks at the lowest level, the (draw mod count)-th.
 *   drill: DRILL(d, m) (Ghorbani et al., SIGCOMM 2017), d in 1..4 and m in
 *          0..2 from lb_cfg.drill (unset: d = 2, m = 1, the paper's
 *          setting): candidates are the m remembered uplinks (one no longer
 *          valid stands in as the first sample), then d uniformly drawn valid
 *          uplinks (draw j: the packet's draws 0 and 1, then lb_drill_draw);
 *          the one with the fewest queued bytes wins (ties: the earlier
 *          candidate) and becomes memory 0; with m = 2 the least loaded of
 *          the others (ties: earlier) becomes memory 1.
 *   choice: DRILL(2, 0), the power of two choices without memory: of two
 *          uniformly drawn valid uplinks, the one with fewer queued bytes
 *          (ties: the first).
 * Concurrency: queue reads are racy snapshots, as in a switch ASIC; DRILL's
 * memory is a plain per-switch store (last writer wins).
 */
#pragma once
#include "maps.h"
#include "lb_mask.h"
#include "lb_arith.h"
#include "lb_ecmp.h"

/* The queue of uplink `slot` of switch sw; NULL only if the maps are not
 * programmed. Callers return at once on NULL rather than score the uplink:
 * a constant score on that path would make the verifier track the scores
 * exactly (see lb_arith.h). */
static __always_inline struct port_q *lb_uplink_q(__u32 sw, __u32 slot)
{
    __u32 key = sw * W + slot;
    __u32 *ifx = uplinks.lookup(&key);
    if (!ifx)
        return NULL;
    __u32 idx = *ifx;
    return port_q.lookup(&idx);
}

/* The sampled state (lb_sample.h) of uplink `slot` of switch sw; NULL only if the maps are not programmed
 * (callers return at once, as for lb_uplink_q). */
static __always_inline struct lb_port *lb_uplink_state(__u32 sw, __u32 slot, __u32 *ifindex)
{
    __u32 key = sw * W + slot;
    __u32 *ifx = uplinks.lookup(&key);
    if (!ifx)
        return NULL;
    __u32 idx = *ifx;
    *ifindex = idx;
    return lb_port.lookup(&idx);
}

/* AR's quantisation thresholds, a missing one as never reached. */
static __always_inline __u64 lb_ar_threshold(__u32 i)
{
    __u64 *t = ar_thresh.lookup(&i);
    return t ? *t : LB_SCORE_INVALID;
}

/* Number of thresholds at or below `bytes` (signed: a transiently negative
 * occupancy is level 0). Thresholds and occupancies are far below 2^62. */
static __always_inline __u64 lb_ar_level(__u64 bytes, __u64 t0, __u64 t1, __u64 t2)
{
    __u64 neg = bytes >> 63;
    lb_hide(neg);
    __u64 level = 3 - lb_lt(bytes, t0) - lb_lt(bytes, t1) - lb_lt(bytes, t2);
    return lb_sel(neg, 0, level);
}

/* The (draw mod count)-th slot, in slot order, among those whose score
 * equals the minimum score (scores at most LB_SCORE_INVALID). */
static __always_inline __u32 lb_pick_min(struct lb_scores *sc, __u32 draw)
{
    __u64 best = LB_SCORE_INVALID;
#pragma clang loop unroll(disable)
    for (__u32 i = 0; i < W; i++)
        best = lb_sel(lb_lt(sc->score[i], best), sc->score[i], best);
    __u64 ties = 0;
#pragma clang loop unroll(disable)
    for (__u32 i = 0; i < W; i++)
        ties += lb_eq(sc->score[i], best);
    __u64 want = (__u64)draw % ties; /* ties >= 1: the minimum is one of the scores */
    __u64 seen = 0, pick = 0;
#pragma clang loop unroll(disable)
    for (__u32 i = 0; i < W; i++) {
        __u64 tie = lb_eq(sc->score[i], best);
        pick = lb_sel(tie & lb_eq(seen, want), i, pick);
        seen += tie;
    }
    return pick;
}

/* Score every uplink of switch sw (`ar`: by its quantised level, else by its
 * queued bytes; invalid ones LB_SCORE_INVALID) and pick among the lowest. */
static __always_inline __u32 lb_score_pick(__u32 sw, __u32 mask, __u32 draw, int ar)
{
    __u32 zero = 0;
    struct lb_scores *sc = lb_scratch.lookup(&zero);
    if (!sc)
        return 0;
    __u64 t0 = 0, t1 = 0, t2 = 0;
    if (ar) {
        t0 = lb_ar_threshold(0);
        t1 = lb_ar_threshold(1);
        t2 = lb_ar_threshold(2);
    }
#pragma clang loop unroll(disable)
    for (__u32 i = 0; i < W; i++) {
        struct port_q *q = lb_uplink_q(sw, i);
        if (!q)
            return 0;
        __u64 v = ar ? lb_ar_level(q->bytes, t0, t1, t2) : lb_score_clamp(q->bytes);
        sc->score[i] = lb_sel((mask >> i) & 1, v, LB_SCORE_INVALID);
    }
    return lb_pick_min(sc, draw);
}

static __always_inline __u32 lb_jsq_pick(__u32 sw, __u32 mask, __u32 draw)
{
    return lb_score_pick(sw, mask, draw, 0);
}

static __always_inline __u32 lb_ar_pick(__u32 sw, __u32 mask, __u32 draw)
{
    return lb_score_pick(sw, mask, draw, 1);
}

/* The j-th random draw of a DRILL decision: the packet's two draws, then a mix of both (lb_ecmp.h's mixer). */
static __always_inline __u32 lb_drill_draw(__u32 j, __u32 draw0, __u32 draw1)
{
    return lb_ecmp_mix(lb_ecmp_mix(draw0, j), draw1);
}

/* Candidate i of a DRILL decision: its slot, and its queued bytes if it takes part (else LB_SCORE_INVALID). */
static __always_inline int lb_drill_cand(__u32 sw, __u32 slot, __u64 part, __u32 *slots, __u64 *bytes, __u32 i)
{
    struct port_q *q = lb_uplink_q(sw, slot);
    if (!q)
        return -1;
    slots[i] = slot;
    bytes[i] = lb_sel(part, lb_score_clamp(q->bytes), LB_SCORE_INVALID);
    return 0;
}

/* The first candidate with the fewest bytes, leaving out candidate `skip` (6: none). */
static __always_inline __u32 lb_drill_least(__u64 *bytes, __u32 skip)
{
    __u64 low = LB_SCORE_INVALID + 1;
    __u32 at = 0;
#pragma unroll
    for (__u32 i = 0; i < DRILL_M_MAX + DRILL_D_MAX; i++) {
        __u64 better = lb_lt(bytes[i], low) & (1 - lb_eq(i, skip));
        low = lb_sel(better, bytes[i], low);
        at = lb_sel(better, i, at);
    }
    return at;
}

static __always_inline __u32 lb_drill_pick(__u32 sw, __u32 mask, __u32 draw0, __u32 draw1)
{
    __u32 zero = 0;
    struct lb_cfg *c = lb_cfg.lookup(&zero);
    __u32 drill = c && c->drill ? c->drill : 2 | 1 << 8;
    __u64 d = drill & 0xFF, m = (drill >> 8) & 0xFF;
    __u32 count = lb_mask_count(mask);
    __u32 s0 = lb_mask_nth(mask, (__u64)draw0 % count), s1 = lb_mask_nth(mask, (__u64)draw1 % count);
    __u32 s2 = lb_mask_nth(mask, (__u64)lb_drill_draw(2, draw0, draw1) % count);
    __u32 s3 = lb_mask_nth(mask, (__u64)lb_drill_draw(3, draw0, draw1) % count);
    __u32 k0 = sw * DRILL_M_MAX, k1 = k0 + 1;
    __u32 *mem0 = drill_mem.lookup(&k0), *mem1 = drill_mem.lookup(&k1);
    if (!mem0 || !mem1)
        return s0;
    __u32 r0 = *mem0 % W, r1 = *mem1 % W;
    r0 = lb_sel((mask >> r0) & 1, r0, s0);
    r1 = lb_sel((mask >> r1) & 1, r1, s0);
    /* candidates in order: memories 0, 1, samples 0 .. 3; those beyond m and d take no part */
    __u32 slots[DRILL_M_MAX + DRILL_D_MAX];
    __u64 bytes[DRILL_M_MAX + DRILL_D_MAX];
    if (lb_drill_cand(sw, r0, lb_lt(0, m), slots, bytes, 0) || lb_drill_cand(sw, r1, lb_lt(1, m), slots, bytes, 1) ||
        lb_drill_cand(sw, s0, 1, slots, bytes, 2) || lb_drill_cand(sw, s1, lb_lt(1, d), slots, bytes, 3) ||
        lb_drill_cand(sw, s2, lb_lt(2, d), slots, bytes, 4) || lb_drill_cand(sw, s3, lb_lt(3, d), slots, bytes, 5))
        return s0;
    __u32 first = lb_drill_least(bytes, DRILL_M_MAX + DRILL_D_MAX);
    __u32 second = lb_drill_least(bytes, first);
    if (first >= DRILL_M_MAX + DRILL_D_MAX || second >= DRILL_M_MAX + DRILL_D_MAX)
        return s0;
    __u32 best = slots[first];
    *mem0 = lb_sel(lb_lt(0, m), best, *mem0);
    *mem1 = lb_sel(lb_lt(1, m), slots[second], *mem1);
    return best;
}

static __always_inline __u32 lb_choice_pick(__u32 sw, __u32 mask, __u32 draw0, __u32 draw1)
{
    __u32 a = lb_mask_draw(mask, draw0), b = lb_mask_draw(mask, draw1);
    struct port_q *qa = lb_uplink_q(sw, a), *qb = lb_uplink_q(sw, b);
    if (!qa || !qb)
        return a;
    return lb_sel(lb_lt(lb_score_clamp(qb->bytes), lb_score_clamp(qa->bytes)), b, a);
}
