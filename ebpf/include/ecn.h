/* ecn.h: ECN marking where a switch sends a packet into an egress queue.
 *
 * Contract: ecn_mark() is called once per packet a switch sends into an
 * egress port, with the queue the packet joins, itself included (from
 * queue_join). When run_cfg turns marking on and that queue holds more than
 * the threshold (bytes or packets, ECN_*), the packet is marked CE if it is
 * ECN-capable (bpf_skb_ecn_set_ce leaves Not-ECT packets alone: ACKs are sent
 * Not-ECT) and the port's port_q.ecn_marked counts it. A threshold of 0
 * marks every ECN-capable packet. Marking changes one header field and never
 * where the packet goes. Like htsim's ecnqueue a single threshold, but
 * applied as the packet joins the queue (the Ofan paper's section 6: 80 KB,
 * 10 % of an 800 KB buffer), not as it leaves.
 */
#pragma once
#include "maps.h"

static __always_inline void ecn_mark(struct __sk_buff *skb, struct run_cfg *rc, __u32 ifindex, __u64 pkts,
                                     __u64 bytes)
{
    if (!rc || rc->ecn_unit == ECN_OFF)
        return;
    __u64 q = rc->ecn_unit == ECN_PKTS ? pkts : bytes;
    if (q <= rc->ecn_thresh)
        return;
    if (bpf_skb_ecn_set_ce(skb)) {
        struct port_q *pq = port_q.lookup(&ifindex);
        if (pq)
            __sync_fetch_and_add(&pq->ecn_marked, 1);
    }
}
