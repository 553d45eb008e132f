/* host.c: the host NICs of the data plane.
 *
 * Entry points (SCHED_CLS, direct action):
 *   host_egress     TC egress of a host NIC: account the NIC queue. (The
 *                   NIC's load-balancing choice, host_lb.h, is made where the
 *                   frame leaves the NIC queue: see switch.c.)
 *   host_ingress    TC ingress of a host NIC: account the last hop, count
 *                   RoCEv2 packets per flow and consume them (the host stack
 *                   never sees them, so no ICMP errors flow back), or, with
 *                   ACKs on, turn each data packet into its ACK and send it
 *                   back out of the NIC (echoing CE); count the ACKs that
 *                   come back and hand REPS their entropies. In a transport
 *                   run (transport.h), also drop duplicates from the count
 *                   and pass every ACK to the user-space transport.
 * Compiled together with switch.c into one object: the maps are shared.
 * Every program writes its result to cb[0] for BPF_PROG_TEST_RUN.
 */

#include "shared.h"
#include "maps.h"
#include "parse.h"
#include "queue.h"
#include "ack.h"
#include "host_lb.h"
#include "transport.h"

int host_egress(struct __sk_buff *skb)
{
    queue_nic_enqueue(skb->ifindex, skb->len, bpf_ktime_get_ns());
    skb->cb[0] = skb->ifindex;
    return TC_ACT_OK;
}

static __always_inline void host_rx_count(__u32 what)
{
    __u64 *c = rx_total.lookup(&what);
    if (c)
        *c += 1; /* per CPU */
}

int host_ingress(struct __sk_buff *skb)
{
    __u64 now = bpf_ktime_get_ns();
    __u32 in = skb->ifindex;
    struct port_info *pi = port_info.lookup(&in);
    if (pi)
        queue_sub(pi->peer_ifindex, skb->len, now);

    struct tb_eth *eth;
    struct tb_ipv4 *ip;
    struct tb_udp *udp;
    struct tb_bth *b = parse_roce_skb(skb, &eth, &ip, &udp);
    if (!b)
        return TC_ACT_OK;

    __u32 flow = TB_BE32(b->dqpn) & 0xFFFFFF;
    skb->cb[0] = flow;
    __u32 zero_key = 0;
    struct run_cfg *rc = run_cfg.lookup(&zero_key);
    if (b->opcode == OPCODE_RC_ACK) {
        struct ack_rx *a = ack_rx.lookup(&flow);
        if (!a || !flow) {
            maps_count(CNT_BAD_FLOW);
            return TC_ACT_CONSUMED;
        }
        __u32 marked = (*(__u8 *)&b->dqpn & BTH_BECN) != 0;
        host_rx_count(RX_ACKS);
        __sync_fetch_and_add(&a->acks, 1);
        if (marked)
            __sync_fetch_and_add(&a->ecn, 1);
        queue_set_once(&a->first_ns, now);
        a->last_ns = now;
        if (rc && rc->host_lb) {
            __u32 la = ip->daddr, ra = ip->saddr;
            struct dst_info *local = dst_info.lookup(&la);
            struct dst_info *remote = dst_info.lookup(&ra);
            if (local && remote)
                host_lb_ack(rc, flow, TB_BE16(udp->source), marked, local, remote, now);
        }
        if (rc && rc->cc)
            transport_ack(skb, flow, TB_BE32(b->apsn) & 0xFFFFFF, marked, now);
        return TC_ACT_CONSUMED;
    }

    __u64 psn = TB_BE32(b->apsn) & 0xFFFFFF;
    struct flow_rx *f = flow_rx.lookup(&flow);
    if (!f || !flow) {
        maps_count(CNT_BAD_FLOW);
        return TC_ACT_CONSUMED;
    }
    __u32 ce = (ip->tos & 3) == 3;
    host_rx_count(RX_DATA);
    __sync_fetch_and_add(&f->pkts, 1);
    if (ce)
        __sync_fetch_and_add(&f->ce, 1);
    __sync_fetch_and_add(&f->bytes, skb->len);
    queue_set_once(&f->first_ns, now);
    f->last_ns = now;
    __u64 seen = f->max_psn; /* highest PSN so far + 1 */
    if (psn + 1 > seen) {
        f->max_psn = psn + 1;
    } else {
        __sync_fetch_and_add(&f->ooo, 1);
        queue_raise_max(&f->max_disp, seen - 1 - psn);
    }

    __u32 echo = 0;
    if (rc && rc->cc) {
        transport_seen(f, psn);
        echo = transport_echo(skb);
    }
    if (!rc || !rc->acks)
        return TC_ACT_CONSUMED;
    __u32 out = ack_reflect(skb, ce, echo);
    if (!out) {
        maps_count(CNT_ACK_ERR);
        return TC_ACT_SHOT;
    }
    skb->priority = ACK_PRIORITY; /* ahead of the NIC's data frames, where the fabric orders its queues */
    return bpf_redirect(out, 0);
}
