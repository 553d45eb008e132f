/* queue.h: exact per-port queue occupancy.
 *
 * Contract: queue_add() (or queue_join(), which also returns the queue the
 * packet joined) is called once when a program sends a packet into an
 * egress port (before that port's qdisc), queue_sub() once when the packet
 * reaches the program at the far end of the link. In between the packet is
 * in the port's TBF or being handed over, i.e. it is "in the queue".
 * Busy time (occupancy > 0) is accumulated at each 1 -> 0 transition.
 * Concurrency: all fields are updated with atomic fetch-add; the maxima with
 * a bounded compare-and-swap loop, so concurrent CPUs never lose an update
 * except when the loop gives up after 4 contended attempts. busy_since is a
 * plain store: a 0 -> 1 and a 1 -> 0 transition racing on two CPUs can
 * misplace one busy period's start by the length of the race.
 * A raise that loses 4 races in a row gives up and counts itself in
 * max_giveups, so a maximum that may be low is flagged, never silent.
 *
 * queue_full() is asked before queue_join() when ports have a finite buffer:
 * 1 (and the port's buf_drops, or buf_ack_drops for an ACK, counted) when the packet would take the
 * port's queue beyond `limit` bytes; the caller then drops it. Two CPUs
 * joining at once can each see room for their own packet: the buffer can
 * overshoot by one packet per CPU.
 *
 * queue_nic_depart() is called once per frame a host NIC sends, when it
 * reaches the edge switch, after queue_sub(), with the NIC's paced rate as ps
 * per byte. Over the NIC's data frames (ACKs leave when data arrives, so
 * they say nothing of the NIC's own timing, only share its link) it keeps
 * the work a strictly periodic server of that rate would have left (Lindley:
 * w = max(0, w + frame time - gap)), whose maximum minus one frame time is
 * how far the NIC ran ahead of strict periodicity in any window; the longest
 * gap between data frames (a stall), and the longest of those that began
 * with the NIC's queue empty as its frame reached the switch (its sender
 * had not queued the next frame: a late sender, or a pause the workload
 * means; the other gaps are the NIC's own); the number of data frames sent back to
 * back (less than half a frame time after the previous one); and the time of
 * the last data frame with the bytes the NIC had sent up to it, ACKs
 * included (how late the NIC finished its own data). Frame times and those
 * bytes count `overhead` per frame: the line time the TBF charges. A host's
 * frames leave one TBF in order; two CPUs' softirqs racing on the same NIC
 * can misorder a pair, which these plain stores then see as one short gap.
 */
#pragma once
#include "maps.h"

/* Compare-and-swap attempts per raise of a maximum. A fault test builds with 0 (FabricSpec.queue_max_tries):
 * no raise gets its turn, as if every race were lost, and the verdict must say the maxima may be low. */
#ifndef QUEUE_MAX_TRIES
#define QUEUE_MAX_TRIES 4
#endif

/* 0 when the maximum holds v (or more), 1 when it gave up */
static __always_inline int queue_raise_max(__u64 *slot, __u64 v)
{
#pragma unroll
    for (int i = 0; i < QUEUE_MAX_TRIES; i++) {
        __u64 cur = *(volatile __u64 *)slot;
        if (v <= cur)
            return 0;
        if (__sync_val_compare_and_swap(slot, cur, v) == cur)
            return 0;
    }
    return *(volatile __u64 *)slot < v; /* lost every race: gave up only if the maximum is still below v */
}

static __always_inline void queue_set_once(__u64 *slot, __u64 v)
{
    if (*(volatile __u64 *)slot == 0)
        __sync_val_compare_and_swap(slot, 0, v);
}

/* Returns the port's queue after the add (this packet included) in *pkts_out and *bytes_out (0 if the port
 * is unknown). */
static __always_inline void queue_join(__u32 ifindex, __u64 len, __u64 now, __u64 *pkts_out, __u64 *bytes_out)
{
    struct port_q *q = port_q.lookup(&ifindex);
    *pkts_out = 0;
    *bytes_out = 0;
    if (!q)
        return;
    __u64 p = __sync_fetch_and_add(&q->pkts, 1) + 1;
    if (p == 1) {
        q->busy_since = now;
        __sync_fetch_and_add(&q->busy_periods, 1);
    }
    __u64 b = __sync_fetch_and_add(&q->bytes, len) + len;
    __sync_fetch_and_add(&q->area_pkts, -now);
    __sync_fetch_and_add(&q->area_bytes, -(now * len));
    __sync_fetch_and_add(&q->tx_pkts, 1);
    __sync_fetch_and_add(&q->tx_bytes, len);
    queue_set_once(&q->first_tx_ns, now);
    q->last_tx_ns = now;
    if (queue_raise_max(&q->max_pkts, p) | queue_raise_max(&q->max_bytes, b))
        __sync_fetch_and_add(&q->max_giveups, 1);
    *pkts_out = p;
    *bytes_out = b;
}

static __always_inline int queue_full(__u32 ifindex, __u64 len, __u64 limit)
{
    if (!limit)
        return 0;
    struct port_q *q = port_q.lookup(&ifindex);
    if (!q || *(volatile __u64 *)&q->bytes + len <= limit)
        return 0;
    __sync_fetch_and_add(len <= ACK_FRAME_BYTES ? &q->buf_ack_drops : &q->buf_drops, 1);
    return 1;
}

static __always_inline void queue_add(__u32 ifindex, __u64 len, __u64 now)
{
    __u64 p, b;
    queue_join(ifindex, len, now, &p, &b);
}

/* A host NIC's queue takes a frame (host egress): its data frames are counted apart (queue_nic_depart). */
static __always_inline void queue_nic_enqueue(__u32 ifindex, __u64 len, __u64 now)
{
    queue_add(ifindex, len, now);
    struct port_q *q = len > ACK_FRAME_BYTES ? port_q.lookup(&ifindex) : NULL;
    if (q)
        __sync_fetch_and_add(&q->nic_data_pkts, 1);
}

static __always_inline void queue_sub(__u32 ifindex, __u64 len, __u64 now)
{
    struct port_q *q = port_q.lookup(&ifindex);
    if (!q)
        return;
    if (__sync_fetch_and_add(&q->pkts, -1) == 1)
        __sync_fetch_and_add(&q->busy_ns, now - q->busy_since);
    __sync_fetch_and_add(&q->bytes, -len);
    __sync_fetch_and_add(&q->area_pkts, now);
    __sync_fetch_and_add(&q->area_bytes, now * len);
    __sync_fetch_and_add(&q->rx_pkts, 1);
    __sync_fetch_and_add(&q->rx_bytes, len);
    queue_set_once(&q->first_rx_ns, now);
    q->last_rx_ns = now;
}

static __always_inline void queue_nic_depart(__u32 ifindex, __u64 len, __u64 now, __u32 ps_per_byte,
                                             __u32 overhead)
{
    struct port_q *q = port_q.lookup(&ifindex);
    if (!q || !ps_per_byte || len <= ACK_FRAME_BYTES)
        return; /* ACKs leave when data arrives: the NIC's own periodicity is its data frames' */
    __u64 frame_ns = (len + overhead) * ps_per_byte / 1000;
    __u64 last = q->nic_last_ns;
    __u64 gap = last && now > last ? now - last : 0;
    __u64 w = last ? q->nic_work_ns : 0;
    w = w > gap ? w - gap : 0;
    w += frame_ns;
    q->nic_work_ns = w;
    q->nic_last_ns = now;
    if (w > q->nic_work_max_ns)
        q->nic_work_max_ns = w;
    if (last && gap * 2 < frame_ns)
        __sync_fetch_and_add(&q->nic_b2b, 1);
    if (last && gap > q->nic_gap_max_ns)
        q->nic_gap_max_ns = gap;
    if (last && q->nic_dry && gap > q->nic_dry_gap_max_ns)
        q->nic_dry_gap_max_ns = gap;
    if (last && !q->nic_dry && gap > q->nic_held_gap_max_ns)
        q->nic_held_gap_max_ns = gap;
    /* the sender's gap, not the NIC's, when no data frame waited behind this one (ACKs waiting do not count:
     * they go first, and a host that receives while its window is closed has them) */
    q->nic_dry = __sync_fetch_and_add(&q->nic_data_pkts, -1) <= 1;
    /* every frame the NIC sent up to this data frame, ACKs included, in bytes of line time */
    q->nic_data_bytes = q->rx_bytes + q->rx_pkts * overhead;
    q->nic_last_data_ns = q->last_rx_ns; /* on the same clock as first_rx_ns (queue_sub) */
}
