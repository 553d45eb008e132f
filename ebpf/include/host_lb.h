/* host_lb.h: load balancing in the host NICs (REPS, DRB, Ethereal).
 *
 * Contract: host_lb_transmit(skb, rc, now) runs the scheme rc->host_lb
 * (HOST_LB_*) once on every frame a host sends, at its transmit time: when
 * the frame leaves the NIC's queue. A NIC picks a packet's entropy as it
 * transmits it; the host's TC egress hook runs when the packet enters the
 * NIC queue (the TBF), about ten packet times earlier, and choosing there
 * made REPS reuse entropies ten packet times stale and consume them in the
 * bursts in which the sender refills its queue (78 % recycled with marking
 * off, against over 90 % at transmit time). So the program at the far end
 * of the NIC's link (the edge switch's ingress, which sees the frame at the
 * instant the NIC sends it) runs this NIC code first, on the NIC's behalf,
 * before any switch decision. For a RoCEv2 data packet it picks the
 * packet's entropy (REPS) or path label (DRB, Ethereal), and for an ACK the
 * ACK's path label (DRB only), writes it into the UDP source port (the
 * switches hash it with ECMP, or follow the label in SCHEME_HOST_ROUTED
 * mode: lb_label.h) and returns it; it returns 0 and changes nothing
 * otherwise.
 * host_lb_ack(rc, flow, ev, marked, local, remote, now) runs in the NIC's
 * ingress program on every ACK: REPS recycles the entropy an unmarked ACK
 * brings back, one propagation round trip later (below). No user-space work
 * per packet: the state is in maps, as on a SmartNIC.
 *
 * REPS (uet-htsim uec_mp.{h,cpp} UecMpReps; REPS paper, Algorithms 1-2):
 *   per connection (flow id) a circular buffer of REPS_SLOTS entropies with
 *   valid bits and a head (struct reps_state, reps.h); a packet takes the
 *   oldest valid entropy, else a fresh random one; an unmarked ACK writes
 *   its entropy at the head (a full buffer overwrites its oldest), a marked
 *   one is discarded. The state word changes by compare-and-swap, so egress
 *   and ingress may race on two CPUs; an update that loses 4 races in a row
 *   gives up (a fresh entropy, or an entropy not recycled) and counts
 *   HLB_GIVEUP.
 *   Feedback delay (delay.h): an ACK reaches the NIC one propagation round
 *   trip early, so with run_cfg.prop_ns set its entropy (and its ECN echo)
 *   waits in a delay line per host and path class (a FIFO: every path of a
 *   class is as long, so entries become usable in order) until its ready
 *   time, and the buffer above sees it only then: whoever sends a data
 *   packet or receives an ACK of that class first applies every entry that
 *   is ready (at most REPS_DRAIN_MAX at a time). The line must hold every
 *   ACK of a round trip (REPS_DELAY_SLOTS); an entry overwritten before it
 *   was usable is lost and counted (HLB_DELAY_LOST). With prop_ns 0 the
 *   entropy is recycled at once, as before.
 *   Freezing (REPS paper, uet-htsim): the transport (traffic/acks.c) sets
 *   frozen_until on a retransmission timeout of a connection that is neither
 *   frozen nor exploring; while frozen, packets cycle through the 8 stored
 *   entropies in order, valid or not (HLB_FROZEN; HLB_FREEZES counts the
 *   freezes that sent a packet), and the first ACK applied after
 *   frozen_until unfreezes it: the buffer is cleared and the next
 *   REPS_EXPLORE_PKTS packets take fresh random entropies (HLB_EXPLORE).
 * DRB (Cao et al., CoNEXT 2013, as the Ofan paper describes it): per
 *   (flow, size class) a rotation pointer (fetch-add) over the paths valid
 *   for both ends, random start (testbed.dataplane.switches.reset_state).
 *   A flow is one (source, destination) pair in every workload, so this is
 *   DRB's pointer per (destination host, size class).
 * Ethereal (Addanki et al.): a flow is split into as many equal subflows as
 *   it has valid paths, each pinned to one path, served round robin one
 *   packet each: packet PSN p takes the (p mod s)-th valid path. Its ACK
 *   keeps the label the receiver copied from the data packet (ack.h), so it
 *   takes the reverse of its data packet's path.
 * Paths: host_paths[source edge * N_EDGES + destination edge] (the control
 * plane's testbed.models.control.host_paths, written by
 * testbed.dataplane.switches.set_host_paths) has bit agg * W + core for the
 * path through that core between pods of a fat tree (the bouncing switch of
 * DRB is the core), bit agg within a pod or a leaf-spine (the aggregation
 * switch or spine); a packet between two hosts of one edge switch has no
 * choice to make.
 * Mirrored by testbed.models.host (reps_take, reps_recycle,
 * host_label, HOST_MODELS) for a connection that is neither frozen nor
 * exploring, without propagation; the delay line, freezing and exploring are
 * tested on the kernel directly (tests/system/test_host_schemes_kernel.py).
 */
#pragma once
#include "maps.h"
#include "parse.h"
#include "ack.h"
#include "delay.h"
#include "lb_mask.h"
#include "lb_draw.h"

#define REPS_TRIES 4
#define HOST_PATH_BITS 64

static __always_inline void host_lb_count(__u32 host, __u32 what)
{
    __u32 key = host * HLB_COUNTERS + what;
    __u64 *c = host_lb_cnt.lookup(&key);
    if (c)
        __sync_fetch_and_add(c, 1);
}

/* The entropy of the next data packet: while exploring, `fresh`; while frozen, the next stored slot in order;
 * else the oldest valid one, or `fresh`. *kind says which: HLB_RECYCLED, HLB_FRESH, HLB_FIRST_RTT (fresh, no
 * ACK back yet), HLB_EXPLORE or HLB_FROZEN. */
static __always_inline __u16 reps_take(struct reps_state *st, __u16 fresh, __u64 now, __u32 *kind, __u32 *gave_up,
                                       __u32 *froze)
{
    __u64 acked = *(volatile __u64 *)&st->ctl & REPS_ACKED;
    *kind = acked ? HLB_FRESH : HLB_FIRST_RTT;
    *gave_up = 0;
    *froze = 0;
    __u64 ex = *(volatile __u64 *)&st->explore;
    if (ex && __sync_val_compare_and_swap(&st->explore, ex, ex - 1) == ex) {
        *kind = HLB_EXPLORE;
        return fresh;
    }
    __u64 fu = *(volatile __u64 *)&st->frozen_until;
    if (fu && now < fu) {
        __u64 pos = __sync_fetch_and_add(&st->frozen_pos, 1);
        *froze = pos == 0;
        if (!acked)
            return fresh; /* nothing stored yet */
        *kind = HLB_FROZEN;
        return st->ev[pos & (REPS_SLOTS - 1)];
    }
#pragma unroll
    for (int i = 0; i < REPS_TRIES; i++) {
        __u64 ctl = *(volatile __u64 *)&st->ctl;
        __u64 n = (ctl >> REPS_COUNT_SHIFT) & 0xF;
        if (n == 0)
            return fresh;
        __u64 head = (ctl >> REPS_HEAD_SHIFT) & (REPS_SLOTS - 1);
        __u64 slot = (head - n) & (REPS_SLOTS - 1);
        __u16 ev = st->ev[slot];
        __u64 next = (ctl & ~(1ULL << slot) & ~(0xFULL << REPS_COUNT_SHIFT)) | ((n - 1) << REPS_COUNT_SHIFT);
        if (__sync_val_compare_and_swap(&st->ctl, ctl, next) == ctl) {
            *kind = HLB_RECYCLED;
            return ev;
        }
    }
    *gave_up = 1;
    return fresh;
}

/* An unmarked ACK brings entropy `ev` back: write it at the head. Returns 1 if it gave up. */
static __always_inline __u32 reps_recycle(struct reps_state *st, __u16 ev)
{
#pragma unroll
    for (int i = 0; i < REPS_TRIES; i++) {
        __u64 ctl = *(volatile __u64 *)&st->ctl;
        __u64 n = (ctl >> REPS_COUNT_SHIFT) & 0xF;
        __u64 head = (ctl >> REPS_HEAD_SHIFT) & (REPS_SLOTS - 1);
        st->ev[head] = ev;
        __u64 n2 = n < REPS_SLOTS ? n + 1 : REPS_SLOTS;
        __u64 next = ((ctl | (1ULL << head)) & 0xFF) | (((head + 1) & (REPS_SLOTS - 1)) << REPS_HEAD_SHIFT) |
                     (n2 << REPS_COUNT_SHIFT) | REPS_ACKED;
        if (__sync_val_compare_and_swap(&st->ctl, ctl, next) == ctl)
            return 0;
    }
    return 1;
}

/* An ACK, as the paper's sender would see it (one propagation round trip after it reached the NIC): it ends a
 * freeze that is over, then recycles its entropy unless it echoes CE. */
static __always_inline void reps_apply(__u32 flow, __u16 ev, __u32 marked, __u64 now, __u32 host)
{
    struct reps_state *st = reps.lookup(&flow);
    if (!st)
        return;
    __u64 fu = *(volatile __u64 *)&st->frozen_until;
    if (fu && now >= fu && __sync_val_compare_and_swap(&st->frozen_until, fu, 0) == fu) {
#pragma unroll
        for (int i = 0; i < REPS_TRIES; i++) { /* clear the buffer: no valid slot, head and ACKED kept */
            __u64 ctl = *(volatile __u64 *)&st->ctl;
            if (__sync_val_compare_and_swap(&st->ctl, ctl, ctl & ~(0xFFULL | (0xFULL << REPS_COUNT_SHIFT))) == ctl)
                break;
        }
        st->explore = REPS_EXPLORE_PKTS;
    }
    if (!marked && reps_recycle(st, ev))
        host_lb_count(host, HLB_GIVEUP);
}

/* Apply the entries of delay line `line` (host * PATH_CLASSES + class) that are ready by `now`, oldest first. */
static __always_inline void reps_drain(__u32 line, __u64 now, __u32 host)
{
    struct reps_cursor *cur = reps_cursor.lookup(&line);
    if (!cur)
        return;
#pragma clang loop unroll(disable)
    for (int i = 0; i < REPS_DRAIN_MAX; i++) {
        __u64 t = *(volatile __u64 *)&cur->tail;
        __u64 h = *(volatile __u64 *)&cur->head;
        if (t >= h)
            return;
        __u32 idx = line * REPS_DELAY_SLOTS + (__u32)(t & (REPS_DELAY_SLOTS - 1));
        struct reps_pending *e = reps_delay.lookup(&idx);
        if (!e)
            return;
        __u64 meta = *(volatile __u64 *)&e->meta;
        __s8 gen = (__s8)(((meta >> 48) & 0xFF) - (((t >> REPS_DELAY_LOG2) + 1) & 0xFF));
        if (gen < 0)
            return; /* entry t is still being written */
        if (gen == 0 && *(volatile __u64 *)&e->ready_ns > now)
            return; /* not usable yet, nor any after it */
        if (__sync_val_compare_and_swap(&cur->tail, t, t + 1) != t)
            continue; /* another CPU took it */
        if (gen > 0) {
            host_lb_count(host, HLB_DELAY_LOST); /* overwritten by entry t + REPS_DELAY_SLOTS: the line was full */
            continue;
        }
        reps_apply(meta & 0xFFFFFF, (meta >> 24) & 0xFFFF, (meta >> 40) & 1, now, host);
    }
}

/* The UDP source port that labels path bit `bit` (see the contract). */
static __always_inline __u16 host_label(__u32 bit, __u32 between_pods)
{
    __u32 agg = between_pods ? bit / W : bit;
    __u32 core = between_pods ? bit % W : 0;
    return LABEL_TAG | (agg << LABEL_BITS) | core;
}

static __always_inline __u32 host_lb_transmit(struct __sk_buff *skb, struct run_cfg *rc, __u64 now)
{
    __u32 scheme = rc->host_lb;
    struct tb_eth *eth;
    struct tb_ipv4 *ip;
    struct tb_udp *udp;
    struct tb_bth *b = parse_roce_skb(skb, &eth, &ip, &udp);
    if (!b)
        return 0;
    __u32 flow = TB_BE32(b->dqpn) & 0xFFFFFF;
    __u32 psn = TB_BE32(b->apsn) & 0xFFFFFF;
    __u32 is_ack = b->opcode == OPCODE_RC_ACK;
    __u32 saddr = ip->saddr, daddr = ip->daddr;
    __u16 old_port = udp->source;
    if (!flow || flow >= N_FLOWS)
        return 0;
    struct dst_info *src = dst_info.lookup(&saddr);
    struct dst_info *dst = dst_info.lookup(&daddr);
    if (!src || !dst)
        return 0;

    __u16 port = 0;
    if (scheme == HOST_LB_REPS) {
        if (is_ack)
            return 0; /* the ACK carries its data packet's entropy back (ack.h) */
        struct reps_state *st = reps.lookup(&flow);
        if (!st)
            return 0;
        if (rc->prop_ns) /* what of this path class's feedback is usable by now */
            reps_drain(src->host * PATH_CLASSES + delay_links(src, dst) / 2 - 1, now, src->host);
        __u32 kind, gave_up, froze;
        port = reps_take(st, lb_draw(skb, 0) & 0xFFFF, now, &kind, &gave_up, &froze);
        host_lb_count(src->host, kind);
        if (gave_up)
            host_lb_count(src->host, HLB_GIVEUP);
        if (froze)
            host_lb_count(src->host, HLB_FREEZES);
    } else if (scheme == HOST_LB_DRB || scheme == HOST_LB_ETHEREAL) {
        if (is_ack && scheme == HOST_LB_ETHEREAL)
            return 0; /* the reverse of its data packet's path */
        if (src->edge_global == dst->edge_global)
            return 0;
        __u32 pk = src->edge_global * N_EDGES + dst->edge_global;
        __u64 *pm = host_paths.lookup(&pk);
        __u64 mask = pm ? *pm : 0;
        __u32 n = lb_bits_count(mask, HOST_PATH_BITS);
        if (!n)
            return 0; /* no valid path: the first switch drops it as unreachable */
        __u32 pos;
        if (scheme == HOST_LB_DRB) {
            __u32 key = flow * N_CLASSES + (is_ack ? CLASS_SMALL : CLASS_DATA);
            __u64 *ptr = drb_ptr.lookup(&key);
            if (!ptr)
                return 0;
            pos = __sync_fetch_and_add(ptr, 1) % n;
        } else {
            pos = psn % n;
        }
        port = host_label(lb_bits_nth(mask, pos, HOST_PATH_BITS), src->pod != dst->pod);
        if (!is_ack)
            host_lb_count(src->host, HLB_LABELLED);
    } else {
        return 0;
    }
    __u16 be = TB_BE16(port);
    __u32 off = sizeof(struct tb_eth) + sizeof(struct tb_ipv4);
    bpf_l4_csum_replace(skb, off + 6, old_port, be, 0x20 /* BPF_F_MARK_MANGLED_0: a 0 checksum stays 0 */ | 2);
    bpf_skb_store_bytes(skb, off, &be, 2, 0);
    return port;
}

/* An ACK reached the sender's NIC: REPS applies it one propagation round trip later (at once without
 * propagation). `local` and `remote` are the sender's and the receiver's dst_info. */
static __always_inline void host_lb_ack(struct run_cfg *rc, __u32 flow, __u16 ev, __u32 marked,
                                        struct dst_info *local, struct dst_info *remote, __u64 now)
{
    if (rc->host_lb != HOST_LB_REPS)
        return;
    if (!rc->prop_ns) {
        reps_apply(flow, ev, marked, now, local->host);
        return;
    }
    __u32 links = delay_links(local, remote);
    __u32 line = local->host * PATH_CLASSES + links / 2 - 1;
    struct reps_cursor *cur = reps_cursor.lookup(&line);
    if (!cur)
        return;
    __u64 i = __sync_fetch_and_add(&cur->head, 1);
    __u32 idx = line * REPS_DELAY_SLOTS + (__u32)(i & (REPS_DELAY_SLOTS - 1));
    struct reps_pending *e = reps_delay.lookup(&idx);
    if (!e)
        return;
    *(volatile __u64 *)&e->ready_ns = delay_ready_ns(rc, now, links);
    *(volatile __u64 *)&e->meta = (__u64)(flow & 0xFFFFFF) | (__u64)ev << 24 | (__u64)(marked & 1) << 40 |
                                  (((i >> REPS_DELAY_LOG2) + 1) & 0xFF) << 48; /* last: the entry is whole */
    reps_drain(line, now, local->host);
}
