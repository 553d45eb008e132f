/* acks.c: transport runs, the ACK thread, and the transport's set-up and report.
 *
 * Contract. main() calls transport_setup() before any thread starts (it
 * opens the kernel's ACK ring, maps the REPS state if asked, sorts the flows
 * into delay classes, initialises every flow's transport state and the
 * chains, allocates the window trace), starts run_acks() once the sender
 * threads are ready (n_transport set), and calls transport_report() after
 * every thread ended (the LATENESS line, protocol.h; the window trace file). run_acks()
 * is the one ACK thread: it reads the ring (on_event(), which also records
 * the arrivals chained flows wait for: chain_arrival()), acts on each ACK its
 * flow's base RTT after it reached the sender's NIC (act_on(): tp_ack() under
 * the group's lock, waking its sender thread), and checks the retransmission
 * timeouts (check_timeouts(), which freezes the flow's REPS connection:
 * reps_freeze()). It ends at the deadline or when every flow is done.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cca.h"
#include "ringbuf.h"
#include "sender.h"
#include "transport.h"

/* The ACK thread: ACK events from the kernel's ring, each acted on its flow's base RTT after it reached the
 * sender's NIC (one FIFO per distinct base RTT, so each stays in due order), then timeouts. */
struct pending {
    struct ack_event_rec {
        uint64_t t_ns;
        uint32_t flow, psn, rtt_ns, ecn;
    } ev;
};
/* ACK events held per delay class until due; the fault ackring (ack_ring=N) makes it N (its overflow is counted) */
uint64_t pending_cap = 1u << 18;
#define PENDING_CAP pending_cap
#define DELAY_CLASSES 8
static struct fifo {
    struct pending *q;
    uint64_t head, tail, delay_ns;
} fifos[DELAY_CLASSES];
static int n_fifos;
static uint64_t ring_overflow;
static struct flow **by_fid;
static uint32_t max_fid;
int n_transport;             /* flows the transport must complete */
static int n_complete;       /* of which done (ACK thread only) */

static uint64_t transport_start_ns; /* ACK events older than this are a previous run's: dropped */

/* Chained flows: packet `psn` of f arrived (its ACK reached the sender's NIC at t_ns, which is when the kernel,
 * without propagation of its own, delivered it: the ACK crosses the fabric ahead of data). When the last of f's
 * packets has, every flow chained to f may start its after_ns later; its sender thread is told. */
static void chain_arrival(struct flow *f, uint32_t psn, uint64_t t_ns)
{
    if (!f->arrived || psn >= f->tp.npkts || f->arrived[psn])
        return;
    f->arrived[psn] = 1;
    if (++f->n_arrived < f->tp.npkts)
        return;
    for (struct flow *w = f->waiting; w; w = w->next_waiting) {
        __atomic_store_n(&w->ready_ns, t_ns + w->after_ns, __ATOMIC_RELEASE);
        pthread_mutex_lock(&w->grp->mu);
        pthread_cond_signal(&w->grp->more);
        pthread_mutex_unlock(&w->grp->mu);
    }
}

static void on_event(void *ctx, const void *rec, uint32_t len)
{
    (void)ctx;
    const struct ack_event_rec *ev = rec;
    if (len < sizeof(struct ack_event_rec) || ev->t_ns < transport_start_ns)
        return;
    if (ev->flow > max_fid || !by_fid[ev->flow])
        return;
    chain_arrival(by_fid[ev->flow], ev->psn, ev->t_ns);
    struct fifo *q = &fifos[by_fid[ev->flow]->delay_class];
    if (q->tail - q->head >= PENDING_CAP) {
        ring_overflow++;
        return;
    }
    memcpy(&q->q[q->tail++ % PENDING_CAP].ev, rec, sizeof(struct ack_event_rec));
}

static void act_on(struct ack_event_rec *ev, uint64_t now)
{
    if (ev->flow > max_fid || !by_fid[ev->flow])
        return;
    struct flow *f = by_fid[ev->flow];
    struct group *g = f->grp;
    uint64_t due = ev->t_ns + f->base_rtt_ns;
    late_add(ack_late, &ack_late_max, now > due ? now - due : 0, 0);
    double rtt = (double)ev->rtt_ns + (double)f->base_rtt_ns;
    pthread_mutex_lock(&g->mu);
    int was_done = tp_done(&f->tp);
    int rule = tp_ack(&f->tp, now, ev->psn, rtt, ev->ecn != 0);
    trace_add(now, f, ev->psn, (uint32_t)rtt, ev->ecn != 0, rule < 0 ? 255 : rule);
    if (!was_done && tp_done(&f->tp))
        n_complete++;
    if (g->waiting && tp_can_send(&f->tp) && !g->woken_ns) {
        g->woken_ns = now;
        pthread_cond_signal(&g->more);
    }
    pthread_mutex_unlock(&g->mu);
}

/* The FIFO whose oldest ACK is due first, if that one is due by `now`. */
static struct fifo *next_due(uint64_t now)
{
    struct fifo *best = NULL;
    uint64_t best_due = 0;
    for (int c = 0; c < n_fifos; c++) {
        struct fifo *f = &fifos[c];
        if (f->head >= f->tail)
            continue;
        uint64_t due = f->q[f->head % PENDING_CAP].ev.t_ns + f->delay_ns;
        if (due <= now && (!best || due < best_due)) {
            best = f;
            best_due = due;
        }
    }
    return best;
}

/* A retransmission timeout of flow `fid` freezes its REPS connection, unless it is frozen or exploring already
 * (REPS paper, uet-htsim): the NIC then cycles through its stored entropies until the freeze is over. */
static void reps_freeze(uint32_t fid, uint64_t now)
{
    if (!tcfg.reps_map || fid >= tcfg.reps_entries)
        return;
    struct reps_state *st = &tcfg.reps_map[fid];
    if (__atomic_load_n(&st->frozen_until, __ATOMIC_ACQUIRE) || __atomic_load_n(&st->explore, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&st->frozen_pos, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&st->frozen_until, now + tcfg.reps_freeze_ns, __ATOMIC_RELEASE);
}

static void check_timeouts(uint64_t now)
{
    for (int i = 0; i < n_flows; i++) {
        struct flow *f = &flows[i];
        if (f->noroute || f->sock < 0 || tp_done(&f->tp))
            continue;
        struct group *g = f->grp;
        pthread_mutex_lock(&g->mu);
        if (tp_rto_due(&f->tp, now)) {
            tp_rto(&f->tp, now);
            reps_freeze(f->fid, now);
            trace_add(now, f, f->tp.una, 0, 0, CCA_R_RTO);
            if (g->waiting && !g->woken_ns) {
                g->woken_ns = now;
                pthread_cond_signal(&g->more);
            }
        }
        pthread_mutex_unlock(&g->mu);
    }
}

static struct rb ring;

void *run_acks(void *arg)
{
    (void)arg;
    realtime(2);
    uint64_t poll = fifos[0].delay_ns / 4; /* a quarter of a base RTT (the shortest) */
    for (int c = 1; c < n_fifos; c++)
        if (fifos[c].delay_ns / 4 < poll)
            poll = fifos[c].delay_ns / 4;
    if (poll > 2000000)
        poll = 2000000;
    if (poll < 50000)
        poll = 50000;
    uint64_t next_rto = 0, acted = 0;
    while (now_s() <= deadline_s && n_complete < n_transport) {
        rb_consume(&ring, on_event, NULL);
        uint64_t now = mono_ns();
        struct fifo *q;
        while ((q = next_due(now)) != NULL) {
            act_on(&q->q[q->head % PENDING_CAP].ev, now);
            q->head++;
            if (++acted == tcfg.stall_after && tcfg.stall_us)
                sleep_us(tcfg.stall_us); /* fault ackstall: the transport starved */
            now = mono_ns();
        }
        if (now >= next_rto) {
            check_timeouts(now);
            next_rto = now + poll;
        }
        uint64_t wake = now + poll;
        for (int c = 0; c < n_fifos; c++) {
            struct fifo *f = &fifos[c];
            if (f->head < f->tail && f->q[f->head % PENDING_CAP].ev.t_ns + f->delay_ns < wake)
                wake = f->q[f->head % PENDING_CAP].ev.t_ns + f->delay_ns;
        }
        struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000ull), .tv_nsec = (long)(wake % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
    return NULL; /* the sender threads wait at most 50 ms at a time and see the deadline or their flows done */
}

static int reps_open(void)
{
    union bpf_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.pathname = (uint64_t)(unsigned long)tcfg.reps;
    int fd = (int)syscall(__NR_bpf, BPF_OBJ_GET, &attr, sizeof(attr));
    if (fd < 0)
        return -1;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = (tcfg.reps_entries * sizeof(struct reps_state) + page - 1) / page * page;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    tcfg.reps_map = m;
    return 0;
}

int transport_setup(struct group *groups, int n_groups)
{
    if (rb_open(&ring, tcfg.ring, tcfg.ring_bytes) < 0) {
        fprintf(stderr, "testbed-sender: cannot open the ACK ring %s: %s\n", tcfg.ring, strerror(errno));
        return -1;
    }
    if (tcfg.reps[0] && reps_open() < 0) {
        fprintf(stderr, "testbed-sender: cannot map the REPS state %s: %s\n", tcfg.reps, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n_flows; i++) {
        struct flow *f = &flows[i];
        if (f->fid > max_fid)
            max_fid = f->fid;
        int c = 0;
        while (c < n_fifos && fifos[c].delay_ns != f->base_rtt_ns)
            c++;
        if (c == n_fifos) {
            if (n_fifos == DELAY_CLASSES) {
                fprintf(stderr, "testbed-sender: more than %d distinct base RTTs\n", DELAY_CLASSES);
                return -1;
            }
            fifos[n_fifos].delay_ns = f->base_rtt_ns;
            fifos[n_fifos].q = calloc(PENDING_CAP, sizeof(struct pending)); /* calloc: every page faulted in */
            if (!fifos[n_fifos].q)
                return -1;
            memset(fifos[n_fifos].q, 0, PENDING_CAP * sizeof(struct pending));
            n_fifos++;
        }
        f->delay_class = c;
    }
    by_fid = calloc(max_fid + 1, sizeof(*by_fid));
    if (!by_fid)
        return -1;
    if (tcfg.trace[0] && tcfg.trace_cap) {
        trace = malloc(tcfg.trace_cap * sizeof(*trace));
        if (!trace)
            return -1;
        memset(trace, 0, tcfg.trace_cap * sizeof(*trace)); /* fault every page in now, not during the run */
    }
    uint64_t now = mono_ns();
    transport_start_ns = now;
    rb_consume(&ring, on_event, NULL); /* what a previous run left in the ring (its last duplicate ACKs) */
    for (int gi = 0; gi < n_groups; gi++) {
        pthread_mutex_init(&groups[gi].mu, NULL);
        pthread_cond_init(&groups[gi].more, NULL);
        for (int j = 0; j < groups[gi].n; j++)
            groups[gi].flows[j]->grp = &groups[gi];
    }
    for (int i = 0; i < n_flows; i++) {
        struct flow *f = &flows[i];
        f->cp = tcfg.cp;
        f->cp.base_rtt_ns = (double)f->base_rtt_ns;
        if (f->cp.kind == CCA_SWIFT)
            f->cp.swift_target_ns += (double)f->base_rtt_ns; /* the target queueing delay on top of the base */
        uint32_t npkts = (uint32_t)((f->size + f->payload - 1) / f->payload);
        if (tp_init(&f->tp, npkts, f->dupthresh, &f->cp, tcfg.min_rto_ns, now) < 0)
            return -1;
        by_fid[f->fid] = f;
    }
    for (int i = 0; i < n_flows; i++) { /* chains: each waited-for flow learns who waits, and tracks arrivals */
        struct flow *f = &flows[i], *p = f->after_fid <= max_fid ? by_fid[f->after_fid] : NULL;
        if (!f->after_fid)
            continue;
        if (!p || p >= f) {
            fprintf(stderr, "testbed-sender: flow %u waits for flow %u, which is not listed before it\n", f->fid,
                    f->after_fid);
            return -1;
        }
        if (!p->arrived && !(p->arrived = calloc(p->tp.npkts ? p->tp.npkts : 1, 1)))
            return -1;
        f->next_waiting = p->waiting;
        p->waiting = f;
    }
    return 0;
}

void transport_report(void)
{
    uint64_t na, ns;
    uint64_t a50 = late_quantile(ack_late, 0.5, &na), a99 = late_quantile(ack_late, 0.99, &na);
    uint64_t s50 = late_quantile(send_late, 0.5, &ns), s99 = late_quantile(send_late, 0.99, &ns);
    printf("LATENESS");
    SENDER_LATENESS(SENDER_PRINT_FIELD)
    printf("\n");
    if (trace && tcfg.trace[0]) {
        FILE *t = fopen(tcfg.trace, "wb");
        if (!t || fwrite(trace, sizeof(*trace), trace_n, t) != trace_n)
            fprintf(stderr, "testbed-sender: cannot write the window trace %s\n", tcfg.trace);
        if (t)
            fclose(t);
    }
}
