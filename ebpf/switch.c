/* switch.c: the switches of the data plane, one program for every switch.
 *
 * Entry point (SCHED_CLS, direct action):
 *   switch_ingress  TC ingress of every switch port: forward by destination,
 *                   pick the uplink with the switch's scheme (lb.h) on the
 *                   way up (after the sampled schemes' timers, lb_sample.h;
 *                   CONGA's header at every hop, lb_conga.h), mark CE
 *                   above the ECN threshold (ecn.h), drop
 *                   what a finite port buffer cannot take (queue.h). For a
 *                   frame that just left a host's NIC, first the NIC's own
 *                   load-balancing choice (host_lb.h): its transmit time is
 *                   when it reaches this program.
 * The host NICs' programs are in host.c; both files are compiled together
 * into one object (testbed.dataplane.compile), so they share every map.
 * The program writes its egress choice to cb[0] for BPF_PROG_TEST_RUN; the
 * build for those tests (-DTB_TEST_RUN) stops there and forwards nothing.
 */

#include "shared.h"
#include "maps.h"
#include "parse.h"
#include "queue.h"
#include "ecn.h"
#include "lb_sample.h"
#include "lb.h"
#include "host_lb.h"
#include "transport.h"

static __always_inline __u32 slot_ifindex(void *map_lookup_result)
{
    __u32 *p = map_lookup_result;
    return p ? *p : 0;
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
    __u32 zero = 0;
    struct run_cfg *rc = run_cfg.lookup(&zero);
    if (pi->to_host && rc) {
        /* the NIC's departure: the time its link handed the frame over (netif_rx stamps skb->tstamp, on the
         * real-time clock, while a run keeps timestamping on), not when this softirq got to it */
        queue_nic_depart(pi->peer_ifindex, skb->len, skb->tstamp ? skb->tstamp : now, rc->nic_ps_per_byte,
                         rc->wire_overhead);
        /* the host NIC's load-balancing choice, made as the frame leaves the NIC (host_lb.h) */
        skb->cb[4] = rc->host_lb ? host_lb_transmit(skb, rc, now) : 0;
        if (rc->cc)
            transport_stamp(skb, now); /* before the parse below: it may move the packet's data */
    }

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
    lb_timers(sw, cfg, now);

    /* Down by destination, or up with destination key d (of n_keys) */
    __u32 out = 0, key = 0, up = 0, d = 0, n_keys = 0, slot = 0;
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
        slot = lb_pick_uplink(skb, sw, cfg, pi->local, d, n_keys, dst->edge_global, now, ip, end);
        if (slot == NO_UPLINK)
            return drop_unreachable(sw);
        key = sw * W + slot;
        out = slot_ifindex(uplinks.lookup(&key));
        __u64 *cnt = uplink_pkts.lookup(&key);
        if (cnt)
            __sync_fetch_and_add(cnt, 1);
    } else {
        out = slot_ifindex(downlinks.lookup(&key));
        if (cfg->top) {
            __u32 t = sw * N_HOSTS + dst->host;
            __u64 *c = top_dst_pkts.lookup(&t);
            if (c)
                __sync_fetch_and_add(c, 1);
        }
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
    /* looked up here again, not kept from lb_timers: a map pointer live across the decision took the k=64
     * leaf-spine's verification past 1 M instructions (396 k this way) */
    struct lb_cfg *lbc = lb_cfg.lookup(&zero);
    if (lbc && (lbc->active & LB_CONGA))
        conga_hop(skb, ip, sw, cfg, pi, out, up, slot, dst->edge_global, now);
    if (rc && queue_full(out, skb->len, rc->buffer_bytes))
        return TC_ACT_SHOT; /* a finite buffer, full: counted in the port's buf_drops */
    __u64 q_pkts, q_bytes;
    queue_join(out, skb->len, now, &q_pkts, &q_bytes);
    ecn_mark(skb, rc, out, q_pkts, q_bytes);
    skb->priority = skb->len < SMALL_MAX_BYTES ? ACK_PRIORITY : 0; /* ACKs first, where the link orders them */
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
        return TC_ACT_CONSUMED;
    }
    return bpf_redirect(out, 0);
}
