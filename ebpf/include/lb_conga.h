/* lb_conga.h: CONGA (Alizadeh et al., SIGCOMM 2014) adapted to packet spraying.
 *
 * Contract, decision (lb_conga_pick): returns a valid uplink slot (bit set in
 * `mask`, never 0 here) of switch sw. An uplink's local metric is its DRE
 * quantised to 3 bits, min(7, 8 X / (C tau)) (lb_port.dre, lb_cfg.conga_ctau).
 *   edge switch (a leaf): the uplink (tag) minimising max(local metric,
 *     Congestion-To-Leaf[destination edge][tag]), where an entry older than
 *     conga_age DRE periods reads 0;
 *   aggregation switch: the uplink with the lowest local metric (the
 *     3-tier reading: Congestion-To-Leaf is keyed by (destination edge, edge
 *     uplink) and aggregation switches use their local DRE only);
 *   ties: the (draw mod ties)-th in slot order (uniform: per packet, a first-
 *   slot tie-break would herd every packet onto one uplink).
 * No flowlet table: every packet is decided.
 * Contract, every hop (conga_hop, with LB_CONGA on, once the egress port is
 * known): the port's DRE grows by the frame's length (so the chosen uplink's
 * metric rises at once), and the packet's CONGA header, the IPv4 ID
 *   bits 15-11 LBTag, 10-8 CE, 7-3 FB_LBTag, 2-0 FB_Metric
 * (checksum updated), is
 *   written at the source edge switch going up: LBTag = the uplink taken,
 *     CE = its metric, and feedback for the reverse path: FB_LBTag = the
 *     next of a round robin over tags per (edge, destination edge)
 *     (conga_fb_ptr), FB_Metric = Congestion-From-Leaf[destination edge]
 *     [FB_LBTag] (aged as above);
 *   raised at aggregation and core switches: CE = max(CE, egress metric);
 *   read at the destination edge switch, from the fabric: Congestion-From-
 *     Leaf[source edge][LBTag] = CE and Congestion-To-Leaf[source edge]
 *     [FB_LBTag] = FB_Metric, both stamped with the DRE period.
 * Feedback delay (delay.h): a fed-back metric arrives one propagation round
 * trip between the two edge switches early (the CE crossed the forward path
 * and the feedback the reverse one without delay), so a Congestion-To-Leaf
 * entry is a delay line of CONGA_FB_SLOTS slots (struct conga_fb): a write
 * goes into the newest slot if that opened less than half a round trip ago,
 * else opens the next one; each slot is usable from its last write plus the
 * round trip (2 x 2 links x run_cfg.prop_ns within a pod, 2 x 4 between
 * pods), and a decision reads the newest usable slot, aged from when it
 * became usable. So the metric a decision sees is between one and one and a
 * half round trips old (exactly the last write without propagation).
 * Feedback rides on whatever goes the other way: run CONGA with ACKs.
 * Mirrored by testbed.models.decisions.model_conga and
 * testbed.models.sampled.conga_header.
 * Concurrency: the DRE takes fetch-adds; tables are plain stores (last
 * writer wins) read racily; the feedback pointer takes a fetch-add.
 */
#pragma once
#include "maps.h"
#include "parse.h"
#include "lb_arith.h"
#include "lb_queue.h"

#define CONGA_TAG_SHIFT 11
#define CONGA_CE_SHIFT 8
#define CONGA_FB_SHIFT 3

static __always_inline __u64 conga_metric(__u64 dre, __u64 ctau)
{
    __u64 m = lb_score_clamp(dre * 8 / (ctau | lb_eq(ctau, 0)));
    return lb_sel(lb_lt(m, LB_BANDS - 1), m, LB_BANDS - 1);
}

/* A table entry's metric in DRE period `epoch`: 0 once older than `age` periods. */
static __always_inline __u64 conga_aged(struct conga_entry *en, __u64 epoch, __u32 age)
{
    return lb_sel(lb_lt(age, lb_score_clamp(epoch - en->epoch)), 0, en->metric & 7);
}

static __always_inline __u64 conga_epoch(struct lb_cfg *c, __u64 now)
{
    return c->dre_ns ? now / c->dre_ns : 0;
}

/* Congestion-To-Leaf as a decision at `now` sees it: the newest slot usable by then, aged (0 if none). */
static __always_inline __u64 conga_fb_read(struct conga_fb *fb, __u64 now, __u64 epoch, __u32 age)
{
    __u64 best = 0, m = 0;
#pragma unroll
    for (int i = 0; i < CONGA_FB_SLOTS; i++) {
        struct conga_slot *sl = &fb->slot[i];
        __u64 r = sl->ready_ns;
        __u64 v = lb_sel(lb_lt(age, lb_score_clamp(epoch - sl->epoch)), 0, sl->metric & 7);
        __u64 take = lb_lt(r, now + 1) & lb_lt(best, r + 1) & lb_lt(0, r);
        m = lb_sel(take, v, m);
        best = lb_sel(take, r, best);
    }
    return m;
}

/* A fed-back metric arrived at `now`; usable after `delay` ns. */
static __always_inline void conga_fb_put(struct conga_fb *fb, __u32 metric, __u64 now, __u64 delay, struct lb_cfg *c)
{
    __u64 h = fb->head & (CONGA_FB_SLOTS - 1);
    struct conga_slot *sl = &fb->slot[h];
    if (!delay || !sl->ready_ns || now - sl->open_ns >= delay / 2) {
        h = (h + 1) & (CONGA_FB_SLOTS - 1);
        fb->head = h;
        sl = &fb->slot[h];
        sl->open_ns = now;
    }
    sl->metric = metric;
    sl->epoch = conga_epoch(c, now + delay);
    sl->ready_ns = now + delay;
}

static __always_inline __u32 lb_conga_pick(__u32 sw, struct switch_cfg *cfg, __u32 mask, __u32 draw,
                                           __u32 dst_edge, __u64 now)
{
    __u32 zero = 0;
    struct lb_scores *sc = lb_scratch.lookup(&zero);
    struct lb_cfg *c = lb_cfg.lookup(&zero);
    if (!sc || !c)
        return 0;
    __u64 epoch = conga_epoch(c, now), ctau = c->conga_ctau;
    __u32 age = c->conga_age, edge = cfg->level == LEVEL_EDGE;
    __u32 base = (cfg->edge_global * N_EDGES + dst_edge) * W;
#pragma clang loop unroll(disable)
    for (__u32 i = 0; i < W; i++) {
        __u32 idx = 0;
        struct lb_port *lp = lb_uplink_state(sw, i, &idx);
        if (!lp)
            return 0;
        __u64 v = conga_metric(lp->dre, ctau);
        if (edge) {
            __u32 tk = base + i;
            struct conga_fb *fb = conga_to.lookup(&tk);
            if (!fb)
                return 0;
            __u64 r = conga_fb_read(fb, now, epoch, age);
            v = lb_sel(lb_lt(v, r), r, v);
        }
        sc->score[i] = lb_sel((mask >> i) & 1, v, LB_SCORE_INVALID);
    }
    return lb_pick_min(sc, draw);
}

static __always_inline void conga_set_id(struct tb_ipv4 *ip, __u16 host_id)
{
    __u16 old = ip->id, new = bpf_htons(host_id);
    __u32 sum = (__u16)~ip->check;
    sum += (__u16)~old;
    sum += new;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    ip->id = new;
    ip->check = ~sum;
}

static __always_inline void conga_put(void *map_lookup_result, __u32 metric, __u64 epoch)
{
    struct conga_entry *en = map_lookup_result;
    if (en) {
        en->metric = metric;
        en->epoch = epoch;
    }
}

/* The hop of a packet through switch sw (cfg) into egress port `out`, which arrived on port pi: `up` with
 * uplink `slot` taken, toward destination edge dst_edge. */
static __always_inline void conga_hop(struct __sk_buff *skb, struct tb_ipv4 *ip, __u32 sw, struct switch_cfg *cfg,
                                      struct port_info *pi, __u32 out, __u32 up, __u32 slot, __u32 dst_edge,
                                      __u64 now)
{
    __u32 zero = 0;
    struct lb_cfg *c = lb_cfg.lookup(&zero);
    struct lb_port *lp = lb_port.lookup(&out);
    if (!c || !lp)
        return;
    __u64 len = skb->len;
    __u64 m = conga_metric(__sync_fetch_and_add(&lp->dre, len) + len, c->conga_ctau);
    __u64 epoch = conga_epoch(c, now);
    __u32 id = bpf_ntohs(ip->id);
    if (cfg->level != LEVEL_EDGE) {
        __u32 ce = (id >> CONGA_CE_SHIFT) & 7;
        if (m > ce)
            conga_set_id(ip, (id & ~(7u << CONGA_CE_SHIFT)) | m << CONGA_CE_SHIFT);
        return;
    }
    if (up) {
        __u32 pk = cfg->edge_global * N_EDGES + dst_edge;
        __u64 *ptr = conga_fb_ptr.lookup(&pk);
        if (!ptr)
            return;
        __u32 f = __sync_fetch_and_add(ptr, 1) % W;
        __u32 ek = pk * W + f;
        struct conga_entry *en = conga_from.lookup(&ek);
        if (!en)
            return;
        __u64 fm = conga_aged(en, epoch, c->conga_age);
        conga_set_id(ip, slot << CONGA_TAG_SHIFT | m << CONGA_CE_SHIFT | f << CONGA_FB_SHIFT | fm);
        return;
    }
    if (pi->to_host)
        return; /* between two hosts of this edge switch: no fabric path */
    __u32 saddr = ip->saddr;
    struct dst_info *src = dst_info.lookup(&saddr);
    if (!src)
        return;
    __u32 pk = (cfg->edge_global * N_EDGES + src->edge_global) * W;
    __u32 tag = id >> CONGA_TAG_SHIFT, ft = (id >> CONGA_FB_SHIFT) & 31;
    if (tag < W) {
        __u32 k1 = pk + tag;
        conga_put(conga_from.lookup(&k1), (id >> CONGA_CE_SHIFT) & 7, epoch);
    }
    struct run_cfg *rc = run_cfg.lookup(&zero);
    struct conga_fb *fb;
    if (ft < W && rc) {
        __u32 k2 = pk + ft;
        fb = conga_to.lookup(&k2);
        if (fb) /* the edges' round trip: 2 links each way within a pod, 4 between pods */
            conga_fb_put(fb, id & 7, now, 2 * (cfg->pod == src->pod ? 2 : 4) * rc->prop_ns, c);
    }
}
