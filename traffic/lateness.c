/* lateness.c: how late the transport acted, and its window trace.
 *
 * Contract. late_add() counts one lateness in a histogram (ack_late: the ACK
 * thread, act_on() in acks.c, without atomics; send_late: the sender
 * threads, send_windowed() in window.c, atomically) and keeps its maximum;
 * late_quantile() reads one after the run (transport_report(), acks.c).
 * trace_add() appends one window-trace record while there is room (the
 * ACK thread only: trace_n is not atomic); transport_setup() allocates
 * `trace` (tcfg.trace_cap records) and transport_report() writes it out.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>

#include "sender.h"

uint32_t ack_late[LATE_BUCKETS], send_late[LATE_BUCKETS];
uint64_t ack_late_max, send_late_max;

void late_add(uint32_t *h, uint64_t *max, uint64_t ns, int atomic)
{
    uint64_t b = ns / 1000;
    if (b >= LATE_BUCKETS)
        b = LATE_BUCKETS - 1;
    if (atomic) {
        __atomic_fetch_add(&h[b], 1, __ATOMIC_RELAXED);
        uint64_t m = __atomic_load_n(max, __ATOMIC_RELAXED);
        while (ns > m && !__atomic_compare_exchange_n(max, &m, ns, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            ;
    } else {
        h[b]++;
        if (ns > *max)
            *max = ns;
    }
}

/* the q-quantile of a histogram, in ns (bucket upper edge), and its count */
uint64_t late_quantile(const uint32_t *h, double q, uint64_t *count)
{
    uint64_t n = 0, acc = 0;
    for (int i = 0; i < LATE_BUCKETS; i++)
        n += h[i];
    *count = n;
    if (!n)
        return 0;
    for (int i = 0; i < LATE_BUCKETS; i++) {
        acc += h[i];
        if ((double)acc >= q * (double)n)
            return (uint64_t)(i + 1) * 1000;
    }
    return (uint64_t)LATE_BUCKETS * 1000;
}

struct trace_rec *trace;
size_t trace_n;

void trace_add(uint64_t t, struct flow *f, uint32_t psn, uint32_t rtt, int ecn, int rule)
{
    if (!trace || trace_n >= tcfg.trace_cap)
        return;
    trace[trace_n++] = (struct trace_rec){.t_ns = t, .fid = f->fid, .psn = psn, .cwnd = (float)f->tp.cc.cwnd,
                                          .rtt_ns = rtt, .inflight = f->tp.inflight, .ecn = (uint8_t)ecn,
                                          .rule = (uint8_t)rule};
}
