/* lb_draw.h: the random numbers of the randomised schemes.
 *
 * Contract: lb_draw(skb, i) returns the i-th (0 or 1) 32-bit random draw of
 * a decision: bpf_get_prandom_u32() on a live fabric. In the build used by
 * the differential tests (-DTB_TEST_RUN), a packet whose cb[1] is 1 carries
 * its draws in cb[2] and cb[3] (BPF_PROG_TEST_RUN lets the caller set cb), so
 * the Python model can be given the very same draws; any other packet uses
 * the kernel's generator, which the distribution tests exercise.
 */
#pragma once

#define DRAWS_SUPPLIED 1

static __always_inline __u32 lb_draw(struct __sk_buff *skb, int i)
{
#ifdef TB_TEST_RUN
    if (skb->cb[1] == DRAWS_SUPPLIED)
        return i == 0 ? skb->cb[2] : skb->cb[3];
#endif
    return bpf_get_prandom_u32();
}
