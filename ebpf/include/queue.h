/* queue.h: exact per-port queue occupancy.
 *
 * Contract: queue_add() is called once when a program sends a packet into an
 * egress port (before that port's qdisc), queue_sub() once when the packet
 * reaches the program at the far end of the link. In between the packet is
 * in the port's TBF or being handed over, i.e. it is "in the queue".
 * Busy time (occupancy > 0) is accumulated at each 1 -> 0 transition.
 * Concurrency: all fields are updated with atomic fetch-add; the maxima with
 * a bounded compare-and-swap loop, so concurrent CPUs never lose an update
 * except when the loop gives up after 4 contended attempts. busy_since is a
 * plain store: a 0 -> 1 and a 1 -> 0 transition racing on two CPUs can
 * misplace one busy period's start by the length of the race.
 */
#pragma once
#include "maps.h"

static __always_inline void queue_raise_max(__u64 *slot, __u64 v)
{
#pragma unroll
    for (int i = 0; i < 4; i++) {
        __u64 cur = *(volatile __u64 *)slot;
        if (v <= cur)
            return;
        if (__sync_val_compare_and_swap(slot, cur, v) == cur)
            return;
    }
}

static __always_inline void queue_set_once(__u64 *slot, __u64 v)
{
    if (*(volatile __u64 *)slot == 0)
        __sync_val_compare_and_swap(slot, 0, v);
}

static __always_inline void queue_add(__u32 ifindex, __u64 len, __u64 now)
{
    struct port_q *q = port_q.lookup(&ifindex);
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
    queue_raise_max(&q->max_pkts, p);
    queue_raise_max(&q->max_bytes, b);
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
