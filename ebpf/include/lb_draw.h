/* lb_draw.h: the random numbers of the randomised schemes.
 *
 * Contract: lb_draw(skb, i) returns the i-th (0 or 1) 32-bit random draw of
 * a decision. On a live fabric it is bpf_get_prandom_u32(). In the build used
 * by the differential tests (-DTB_TEST_RUN) the draws are read from the
 * packet's mark (draw 0) and priority (draw 1), which BPF_PROG_TEST_RUN lets
 * the caller set, so the Python model can be given the very same draws.
 */
#pragma once

#ifdef TB_TEST_RUN
static __always_inline __u32 lb_draw(struct __sk_buff *skb, int i)
{
    return i == 0 ? skb->mark : skb->priority;
}
#else
static __always_inline __u32 lb_draw(struct __sk_buff *skb, int i)
{
    return bpf_get_prandom_u32();
}
#endif
