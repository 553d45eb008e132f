/* switch.c: the testbed's data plane, one object for every node.
 *
 * Entry points (SCHED_CLS, direct action):
 *   switch_ingress  TC ingress of every switch port: forward by destination,
 *                   pick the uplink with the switch's scheme on the way up.
 *   host_egress     TC egress of a host NIC: account the NIC queue.
 *   host_ingress    TC ingress of a host NIC: account the last hop, count
 *                   RoCEv2 packets per flow and consume them (the host stack
 *                   never sees them, so no ICMP errors flow back), or, with
 *                   ACKs on, turn each data packet into its ACK and send it
 *                   back out of the NIC; count the ACKs that come back.
 * Every program writes its egress choice to cb[0] for BPF_PROG_TEST_RUN; the
 * build for those tests (-DTB_TEST_RUN) stops there and forwards nothing.
 */


#include "shared.h"
#include "maps.h"
#include "parse.h"
#include "queue.h"
#include "lb_draw.h"
#include "lb_mask.h"
#include "lb_ecmp.h"
#include "lb_ofan.h"
#include "lb_simple.h"
#include "lb_queue.h"
#include "ack.h"

#define SMALL_MAX_BYTES 256  /* frames shorter than this use CLASS_SMALL */

static __always_inline __u32 slot_ifindex(void *map_lookup_result)
{
    __u32 *p = map_lookup_result;
    return p ? *p : 0;
}

#define NO_UPLINK 0xFFFFFFFF

/* Uplink slot for a packet going up at switch sw (destination key d of n_keys),
 * arriving on the switch's port number `local`; NO_UPLINK if no uplink still
 * leads to the destination. */
static __always_inline __u32 pick_uplink(struct __sk_buff *skb, __u32 sw, struct switch_cfg *cfg, __u32 local,
                                         __u32 d, __u32 n_keys, struct tb_ipv4 *ip, void *end)
{
    __u32 mask = lb_mask_get(sw, d);
    if (!mask)
        return NO_UPLINK;
    __u32 cls = skb->len < SMALL_MAX_BYTES ? CLASS_SMALL : CLASS_DATA;
    switch (cfg->scheme) {
    case SCHEME_OFAN:
        return lb_ofan_pick(sw, 0, d, n_keys, cls, mask);
    case SCHEME_POFAN:
        if (cfg->pipe_size == PIPES_PER_CPU)
            return lb_ofan_pick_percpu(sw, d, n_keys, cls, mask);
        return lb_ofan_pick(sw, (local / cfg->pipe_size) % K, d, n_keys, cls, mask);
    case SCHEME_RPS:
        return lb_rps_pick(mask, lb_draw(skb, 0));
    case SCHEME_RR:
        return lb_rr_pick(sw, mask);
    case SCHEME_JSQ:
        return lb_jsq_pick(sw, mask, lb_draw(skb, 0));
    case SCHEME_AR:
        return lb_ar_pick(sw, mask, lb_draw(skb, 0));
    case SCHEME_DRILL:
        return lb_drill_pick(sw, mask, lb_draw(skb, 0), lb_draw(skb, 1));
    default: {
        __u32 ports = 0;
        __u32 *l4 = (void *)(ip + 1);
        if ((ip->protocol == IPPROTO_UDP || ip->protocol == IPPROTO_TCP) && (void *)(l4 + 1) <= end)
            ports = *l4;
        return lb_ecmp_pick(cfg->seed, ip->saddr, ip->daddr, ports, ip->protocol, mask);
    }
    }
}

/* Drop a packet this switch cannot deliver (destination cut off by failures). */
static __always_inline int drop_unreachable(__u32 sw)
{
    __u64 *c = sw_drops.lookup(&sw);
    if (c)
        __sync_fetch_and_add(c, 1);
    maps_count(CNT_UNREACHABLE);
    return TC_ACT_SHOT;
}

int switch_ingress(struct __sk_buff *skb)
{
    __u64 now = bpf_ktime_get_ns();
    __u32 in = skb->ingress_ifindex;
    struct port_info *pi = port_info.lookup(&in);
    if (!pi || pi->level == LEVEL_HOST) {
        maps_count(CNT_BAD_PORT);
        return TC_ACT_SHOT;
    }
    queue_sub(pi->peer_ifindex, skb->len, now);

    void *data = (void *)(long)skb->data;
    void *end = (void *)(long)skb->data_end;
    struct tb_eth *eth = parse_eth(data, end);
    struct tb_ipv4 *ip = eth ? parse_ipv4(eth, end) : NULL;
    if (!ip) {
        maps_count(CNT_NOT_IPV4);
        return TC_ACT_SHOT;
    }
    __u32 daddr = ip->daddr;
    struct dst_info *dst = dst_info.lookup(&daddr);
    __u32 sw = pi->node;
    struct switch_cfg *cfg = switch_cfg.lookup(&sw);
    if (!dst || !cfg) {
        maps_count(CNT_NO_ROUTE);
        return TC_ACT_SHOT;
    }

    /* Down by destination, or up with destination key d (of n_keys) */
    __u32 out = 0, key = 0, up = 0, d = 0, n_keys = 0;
    if (cfg->level == LEVEL_EDGE) {
        if (dst->edge_global == cfg->edge_global) {
            key = sw * K + dst->slot;
        } else {
            up = 1;
            d = dst->edge_global;
            n_keys = N_EDGES;
        }
    } else if (cfg->level == LEVEL_AGG) {
        if (dst->pod == cfg->pod) {
            key = sw * K + dst->edge;
        } else {
            up = 1;
            d = dst->pod;
            n_keys = K;
        }
    } else {
        key = sw * K + dst->pod;
    }
    if (up) {
        __u32 slot = pick_uplink(skb, sw, cfg, pi->local, d, n_keys, ip, end);
        if (slot == NO_UPLINK)
            return drop_unreachable(sw);
        key = sw * W + slot;
        out = slot_ifindex(uplinks.lookup(&key));
        __u64 *cnt = uplink_pkts.lookup(&key);
        if (cnt)
            __sync_fetch_and_add(cnt, 1);
    } else {
        out = slot_ifindex(downlinks.lookup(&key));
    }
    if (!out)
        return drop_unreachable(sw); /* downward route withdrawn by the control plane */
    struct port_info *po = port_info.lookup(&out);
    if (!po) {
        maps_count(CNT_NO_ROUTE);
        return TC_ACT_SHOT;
    }
    if (po->to_host) {
        /* last hop: address the frame to the host and from our port */
        __builtin_memcpy(eth->dst, dst->mac, ETH_ALEN);
        __builtin_memcpy(eth->src, po->mac, ETH_ALEN);
    }
    queue_add(out, skb->len, now);
    skb->cb[0] = out;
#ifdef TB_TEST_RUN
    return TC_ACT_OK; /* differential tests: report the choice in cb[0], send nothing */
#endif
    if (pi->to_host) {
        /* From a host: forward a clone (it has no socket owner) and consume the
         * original, which releases the sender's socket buffer now. A full
         * switch queue therefore never blocks the sender. */
        if (bpf_clone_redirect(skb, out, 0)) {
            maps_count(CNT_REDIRECT_ERR);
            return TC_ACT_SHOT;
        }
        return TC_ACT_STOLEN;
    }
    return bpf_redirect(out, 0);
}

int host_egress(struct __sk_buff *skb)
{
    queue_add(skb->ifindex, skb->len, bpf_ktime_get_ns());
    skb->cb[0] = skb->ifindex;
    return TC_ACT_OK;
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
    struct tb_bth *b = parse_roce((void *)(long)skb->data, (void *)(long)skb->data_end, &eth, &ip, &udp);
    if (!b)
        return TC_ACT_OK;

    __u32 flow = TB_BE32(b->dqpn) & 0xFFFFFF;
    skb->cb[0] = flow;
    if (b->opcode == OPCODE_RC_ACK) {
        struct ack_rx zero_ack = {};
        struct ack_rx *a = ack_rx.lookup_or_try_init(&flow, &zero_ack);
        if (!a)
            return TC_ACT_STOLEN;
        __sync_fetch_and_add(&a->acks, 1);
        queue_set_once(&a->first_ns, now);
        a->last_ns = now;
        return TC_ACT_STOLEN;
    }

    __u64 psn = TB_BE32(b->apsn) & 0xFFFFFF;
    struct flow_rx zero_flow = {};
    struct flow_rx *f = flow_rx.lookup_or_try_init(&flow, &zero_flow);
    if (!f)
        return TC_ACT_STOLEN;
    __sync_fetch_and_add(&f->pkts, 1);
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

    __u32 zero_key = 0;
    struct run_cfg *rc = run_cfg.lookup(&zero_key);
    if (!rc || !rc->acks)
        return TC_ACT_STOLEN;
    __u32 out = ack_reflect(skb);
    if (!out) {
        maps_count(CNT_ACK_ERR);
        return TC_ACT_SHOT;
    }
    return bpf_redirect(out, 0);
}
