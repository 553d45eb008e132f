/* lb_arith.h: comparisons and selections without branches.
 *
 * Contract: for a, b < 2^62 (queue bytes and levels; larger values are
 * clamped by lb_score_clamp first) lb_lt(a, b) is 1 if a < b else 0,
 * lb_eq(a, b) is 1 if a == b else 0, and lb_sel(c, x, y) is x if c == 1 and
 * y if c == 0. They are plain ALU instructions: the verifier follows one path
 * through them whatever the values, so a decision built from them costs it
 * O(W) instructions instead of a path per outcome (an unrolled loop of
 * branches on known values is verified once per combination: 4^W for AR).
 * lb_hide() keeps the compiler from turning them back into branches, and
 * lb_sel multiplies rather than masks: this verifier forks its state on a
 * {-1, 0} mask ANDed with a constant, one fork per selection.
 */
#pragma once

#define LB_SCORE_MAX ((1ULL << 62) - 1)  /* the largest score of a valid uplink */
#define LB_SCORE_INVALID (1ULL << 62)    /* the score of an invalid uplink: above every valid one */

#define lb_hide(v) asm volatile("" : "+r"(v))

static __always_inline __u64 lb_lt(__u64 a, __u64 b)
{
    __u64 d = a - b;
    lb_hide(d);
    return d >> 63;
}

static __always_inline __u64 lb_eq(__u64 a, __u64 b)
{
    __u64 d = (a - b) | (b - a);
    lb_hide(d);
    return 1 - (d >> 63);
}

static __always_inline __u64 lb_sel(__u64 c, __u64 x, __u64 y)
{
    lb_hide(c);
    return y + c * (x - y);
}

/* min(v, LB_SCORE_MAX) for any u64 v (a transiently negative occupancy reads as a huge one). */
static __always_inline __u64 lb_score_clamp(__u64 v)
{
    __u64 hi = v >> 62;
    lb_hide(hi);
    __u64 any = hi | -hi;  /* top bit set iff v >= 2^62 */
    lb_hide(any);
    return lb_sel(any >> 63, LB_SCORE_MAX, v);
}
