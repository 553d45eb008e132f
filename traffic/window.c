/* window.c: transport runs, the sender side.
 *
 * Contract. run_group() (paced.c) calls send_windowed() in a transport run,
 * after the release, from the group's sender thread: it sends what its
 * flows' windows allow (transport.h, under the group's lock) until every
 * flow is done or the deadline passes, and sleeps on the group's `more`
 * while none may send; the ACK thread (acks.c) wakes it when a window opens,
 * a timeout fires or a chained flow's input arrived. It counts in send_late
 * (lateness.c) how long a window stood open before its packet went out.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "sender.h"
#include "transport.h"

/* Transport runs: a host's sender thread sends, round robin over its flows, one packet of any flow whose
 * window has room (retransmissions first); with none, it waits for the ACK thread. send() still blocks
 * while the NIC's queue is full: the NIC caps the host at line rate. */
void send_windowed(struct group *g, uint8_t *buf)
{
    realtime(1);
    pthread_mutex_lock(&g->mu);
    for (;;) {
        double now = now_s();
        if (now > deadline_s)
            break;
        uint64_t now_n = mono_ns();
        int done = 1, sent = 0;
        double earliest = 0;
        for (int j = 0; j < g->n && !sent; j++) {
            int i = (g->rr + j) % g->n;
            struct flow *f = g->flows[i];
            if (f->noroute || tp_done(&f->tp))
                continue;
            done = 0;
            double start = released_at + f->start_ns * 1e-9;
            uint64_t ready = f->after_fid ? __atomic_load_n(&f->ready_ns, __ATOMIC_ACQUIRE) : 0;
            if (f->after_fid && !ready)
                continue; /* its input has not arrived: the ACK thread wakes this thread when it has */
            if (ready)
                start = ready * 1e-9;
            if (now < start) {
                earliest = earliest == 0 || start < earliest ? start : earliest;
                continue;
            }
            uint32_t psn;
            int rtx;
            if (!tp_next(&f->tp, now_n, &psn, &rtx))
                continue;
            g->rr = i + 1;
            uint64_t woken = g->woken_ns;
            g->woken_ns = 0;
            if (ready && !f->chain_started) { /* a chained flow's first packet: late against its ready time */
                f->chain_started = 1;
                woken = ready;
            }
            pthread_mutex_unlock(&g->mu);
            if (woken) /* how long the window stood open before this packet went out */
                late_add(send_late, &send_late_max, mono_ns() - woken, 1);
            send_packet(f, buf, psn);
            pthread_mutex_lock(&g->mu);
            sent = 1;
        }
        if (done)
            break;
        if (sent)
            continue;
        /* nothing may go: sleep until an ACK opens a window, a flow starts, or the deadline */
        double until = earliest ? earliest : deadline_s;
        if (until > deadline_s)
            until = deadline_s;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts); /* pthread_cond_timedwait's clock */
        double wait = until - now_s();
        if (wait > 0.05)
            wait = 0.05;
        if (wait < 0)
            wait = 0;
        uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)(wait * 1e9);
        ts.tv_sec += (time_t)(ns / 1000000000ull);
        ts.tv_nsec = (long)(ns % 1000000000ull);
        g->waiting = 1;
        g->woken_ns = 0;
        pthread_cond_timedwait(&g->more, &g->mu, &ts);
        g->waiting = 0;
    }
    pthread_mutex_unlock(&g->mu);
}
