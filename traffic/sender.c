/* testbed-sender: paced RoCEv2-like UDP senders for the testbed.
 *
 * One thread per source namespace. Each thread enters its namespace
 * (setns on /run/netns/NAME), opens one UDP socket per flow (bound to the
 * source address, connected to destination:4791, small SO_SNDBUF), waits on a
 * barrier with every other thread, then sends its flows round-robin, one
 * packet each, with blocking send(). Start together: once every thread is
 * ready, one starter thread per CPU, pinned to it, sends the first packet of
 * its share of the sources back to back (a socket sends in its own namespace
 * whichever thread calls send), and only then are the sender threads
 * released, so no NIC fills its queue while another has not started. A first
 * packet finds every bucket on its path full and crosses the whole fabric in
 * the sending CPU's softirq, about 25 us at k=4: one starter alone spread
 * the 16 first packets over 0.4 ms, one per CPU halves it. In paced runs the starters then queue the next
 * few packets of every source (prefill()), so no NIC waits for its thread to wake up. The host NIC (egress
 * TBF) does the pacing: send() blocks while the socket's send buffer is full.
 *
 * Packet: UDP payload = BTH (12 bytes: opcode, flags, pkey, dest QP, PSN)
 *         + payload bytes + 4-byte ICRC trailer; IP ECN field ECT(0), UDP
 *         checksum 0, as RoCEv2 NICs send them.
 *
 * stdin, one flow per line:  NSPATH FID SRC_IP SRC_PORT DST_IP SIZE_BYTES PAYLOAD [START_NS [DUPTHRESH BASE_RTT_NS
 *                            [AFTER_FID AFTER_NS]]]
 * (START_NS: the flow starts that long after the first packets; default 0; the rest: transport runs. A chained
 * flow (AFTER_FID > 0) starts AFTER_NS after the kernel saw the ACK that completed flow AFTER_FID's arrival: a
 * ring step that needs its input, which arrived then plus its path's propagation. The flows a chain waits for
 * must be listed before the flows that wait for them.)
 * argv: deadline_s sndbuf_bytes [fault] [KEY=VALUE ...]
 * With cc=dctcp|swift|nscc (and the constants of traffic/transport.py as KEY=VALUE) it is a transport run:
 * each flow window-limited and ACK-clocked (transport.h, cca.h), the ACKs read from the kernel's ring
 * (ring=PATH, ringbuf.h) by one ACK thread that acts on each its flow's base RTT after it reached the NIC;
 * after the flow lines, one line "LATENESS ..." and the window trace written to trace=PATH. With reps=PATH
 * (the pinned REPS state, reps_entries=N of them) a retransmission timeout freezes the flow's REPS
 * connection for reps_freeze_ns (ebpf/include/host_lb.h).
 * fault (for the tests of the fidelity verdict only): "late:G:US" starts the
 * sender thread of the G-th source namespace US microseconds after the
 * others; "stall:G:N:US" makes it sleep US microseconds after its N-th packet; "wake:US" makes every
 * sender thread sleep US microseconds after the release (a slow wake-up, which prefill() covers).
 * stdout after the run, one line per flow: FID PACKETS BYTES ERRORS NOROUTE
 * (NOROUTE is 1 when the source host had no route to the destination, its
 * NIC or its only link being down: such a flow sends nothing).
 * Exit status 0 unless setup failed (message on stderr).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cca.h"
#include "../ebpf/include/shared.h" /* struct reps_state */
#include "ringbuf.h"
#include "transport.h"

#define THREAD_STACK_BYTES (256 * 1024) /* one thread per source host: 2,048 on the k=64 leaf-spine */
#define ROCE_PORT 4791
#define BTH_LEN 12
#define ICRC_LEN 4
#define ECT0 0x02 /* IP ECN field: ECN-capable transport (0) */

struct flow {
    char ns[256];
    uint32_t fid;
    unsigned sport;
    char src[64], dst[64];
    uint64_t size, payload;
    int sock;
    uint64_t packets, bytes, errors;
    int noroute;
    uint64_t start_ns; /* when it starts, after the release (0: at once) */
    /* chained flows (transport runs): this flow starts after_ns after flow after_fid arrived in full, at ready_ns
     * (CLOCK_MONOTONIC; 0 while it has not, written once by the ACK thread) */
    uint32_t after_fid;
    uint64_t after_ns, ready_ns;
    int chain_started;
    /* a flow that others wait for: which of its packets the ACKs said arrived (ACK thread only) */
    uint8_t *arrived;
    uint32_t n_arrived;
    struct flow *waiting; /* the first flow chained to this one; each links to the next in `next_waiting` */
    struct flow *next_waiting;
    uint32_t next_psn; /* the next packet to send (1 after a starter sent the first) */
    /* transport runs (cc=...): the flow's window and loss recovery, under its group's lock */
    uint32_t dupthresh;
    uint64_t base_rtt_ns;   /* this flow's: its ACKs are acted on this long after they reached the NIC */
    int delay_class;        /* which of the ACK thread's FIFOs (one per distinct base RTT) holds its ACKs */
    struct cca_params cp;
    struct tp_flow tp;
    struct group *grp;
};

struct group {            /* the flows of one source namespace */
    struct flow **flows;
    int n;
    int index;
    /* transport runs: the lock of its flows' transport state; the sender thread waits on `more` while no
     * window has room, and the ACK thread wakes it (at `woken_ns`) when one opens */
    pthread_mutex_t mu;
    pthread_cond_t more;
    int waiting;
    uint64_t woken_ns;
    int rr;
    int prefilled, prefill_full; /* paced runs: packets the starter queued after the first (prefill()) */
};

static struct flow *flows;
static int n_flows;
static pthread_barrier_t ready;
static double deadline_s;
static int sndbuf;
static volatile int setup_failed;
/* Set once every first packet is out; the sender threads sleep on `release` until then (2,048 threads
 * spinning in sched_yield() would take the CPUs from the starters: the first packets of the k=64
 * leaf-spine spread over 240 ms that way). */
static int released;
static pthread_mutex_t release_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t release = PTHREAD_COND_INITIALIZER;

static double released_at; /* when the first packets went out: the flows' starts count from it */

static void release_all(void)
{
    pthread_mutex_lock(&release_lock);
    released = 1;
    pthread_cond_broadcast(&release);
    pthread_mutex_unlock(&release_lock);
}

static void wait_released(void)
{
    pthread_mutex_lock(&release_lock);
    while (!released)
        pthread_cond_wait(&release, &release_lock);
    pthread_mutex_unlock(&release_lock);
}
static struct { char kind; int group; unsigned long after, us; } fault = {.group = -1};

/* Transport runs (cc=dctcp|swift|nscc): each flow is window-limited and ACK-clocked (transport.h,
 * cca.h); the ACKs come from the kernel (ack_events ring, ebpf/include/transport.h) and are acted on
 * their flow's base RTT after they reached the sender's NIC: the emulated propagation round trip of its
 * path (or one fixed base RTT), as a delay on the return path. */
static struct {
    int kind;                /* CCA_*: 0, the paced blast */
    char ring[512];
    size_t ring_bytes;
    uint64_t base_ns;        /* the longest of the flows' base RTTs (the constants' reference) */
    uint64_t pkt_ns;         /* one data frame at line rate */
    double min_rto_ns;
    struct cca_params cp;    /* network-wide constants; each flow copies them with its own base RTT */
    char trace[512];
    size_t trace_cap;
    unsigned long stall_after, stall_us; /* fault ackstall:N:US: the ACK thread sleeps US after N ACKs */
    char reps[512];          /* REPS runs: the pinned reps map, mmapped (its entries are struct reps_state) */
    size_t reps_entries;
    uint64_t reps_freeze_ns; /* how long a timeout freezes a REPS connection */
    struct reps_state *reps_map;
} tcfg;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* lateness histograms, 1 us buckets up to 65.5 ms (the last bucket holds the rest) */
#define LATE_BUCKETS 65536
static uint32_t ack_late[LATE_BUCKETS], send_late[LATE_BUCKETS];
static uint64_t ack_late_max, send_late_max;

static void late_add(uint32_t *h, uint64_t *max, uint64_t ns, int atomic)
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
static uint64_t late_quantile(const uint32_t *h, double q, uint64_t *count)
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

/* one window-trace record per ACK, timeout and fast retransmission (read by testbed.measure.transport) */
struct trace_rec {
    uint64_t t_ns;
    uint32_t fid, psn;
    float cwnd;
    uint32_t rtt_ns;   /* the round trip the CCA was given: fabric + emulated base */
    uint32_t inflight;
    uint8_t ecn, rule; /* CCA_R_* */
    uint16_t pad;
};
static struct trace_rec *trace;
static size_t trace_n;

static void trace_add(uint64_t t, struct flow *f, uint32_t psn, uint32_t rtt, int ecn, int rule)
{
    if (!trace || trace_n >= tcfg.trace_cap)
        return;
    trace[trace_n++] = (struct trace_rec){.t_ns = t, .fid = f->fid, .psn = psn, .cwnd = (float)f->tp.cc.cwnd,
                                          .rtt_ns = rtt, .inflight = f->tp.inflight, .ecn = (uint8_t)ecn,
                                          .rule = (uint8_t)rule};
}

static void sleep_us(unsigned long us)
{
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void put_bth(uint8_t *b, uint32_t qp, uint32_t psn)
{
    b[0] = 0x04; /* RC SEND only */
    b[1] = 0;
    b[2] = 0xFF; b[3] = 0xFF; /* default P_Key */
    uint32_t dq = htonl(qp & 0xFFFFFF), ps = htonl(psn & 0xFFFFFF);
    memcpy(b + 4, &dq, 4);
    memcpy(b + 8, &ps, 4);
}

static int open_flow(struct flow *f)
{
    struct sockaddr_in src = {.sin_family = AF_INET, .sin_port = htons(f->sport)}, dst = {.sin_family = AF_INET, .sin_port = htons(ROCE_PORT)};
    if (inet_pton(AF_INET, f->src, &src.sin_addr) != 1 || inet_pton(AF_INET, f->dst, &dst.sin_addr) != 1)
        return -1;
    f->sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (f->sock < 0)
        return -1;
    if (setsockopt(f->sock, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) < 0)
        return -1;
    /* RoCEv2: ECN-capable transport, ECT(0), and UDP checksum 0 (the ICRC protects the packet; the host NIC
     * rewrites the source port for the host schemes) */
    int tos = ECT0, one = 1;
    if (setsockopt(f->sock, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) < 0 ||
        setsockopt(f->sock, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one)) < 0)
        return -1;
    if (bind(f->sock, (struct sockaddr *)&src, sizeof(src)) < 0)
        return -1;
    if (connect(f->sock, (struct sockaddr *)&dst, sizeof(dst)) < 0)
        return -1;
    return 0;
}

/* One packet; with MSG_DONTWAIT in `flags`, a full send buffer returns -1 with errno EAGAIN and is no error. */
static int send_packet_flags(struct flow *f, uint8_t *buf, uint32_t psn, int flags)
{
    uint64_t done = (uint64_t)psn * f->payload;
    uint64_t len = f->size - done < f->payload ? f->size - done : f->payload;
    put_bth(buf, f->fid, psn);
    ssize_t rc;
    do {
        rc = send(f->sock, buf, BTH_LEN + len + ICRC_LEN, flags);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        if (!((flags & MSG_DONTWAIT) && (errno == EAGAIN || errno == EWOULDBLOCK)))
            f->errors++;
        return -1;
    }
    f->packets++;
    f->bytes += (uint64_t)rc;
    return 0;
}

static int send_packet(struct flow *f, uint8_t *buf, uint32_t psn)
{
    return send_packet_flags(f, buf, psn, 0);
}

/* The first flow of a group that has a route, or NULL. */
static struct flow *first_flow(struct group *g)
{
    for (int i = 0; i < g->n; i++)
        if (!g->flows[i]->noroute && g->flows[i]->sock >= 0 && !g->flows[i]->after_fid)
            return g->flows[i];
    return NULL;
}

/* One starter per CPU, each pinned to its CPU: the first packet of its share of the sources, back to back. */
struct starter {
    pthread_t th;
    int cpu, n_cpus;
    struct group *groups;
    int n_groups;
    uint8_t *buf;
};

static pthread_barrier_t go;

/* Paced runs: after the first packets, the starter queues the next ones at every NIC of its share, round by
 * round (one pass over a source's started flows, as its sender thread makes them, per round), without
 * blocking, until a source has PREFILL_PKTS queued or its socket is full. The NIC sends them on its own
 * schedule while the released sender threads wake up: without them, every NIC at k=4 and 100 Mbit/s sent
 * its second frame 2-3.3 packet times after its first (the wake-up of 16 threads took 0.7-1.1 ms), a stall
 * that made most runs there invalid. */
#define PREFILL_PKTS 8

static void prefill(struct starter *st)
{
    int more = 1;
    for (int round = 0; more && round < PREFILL_PKTS; round++) {
        more = 0;
        for (int g = st->cpu; g < st->n_groups; g += st->n_cpus) {
            struct group *grp = &st->groups[g];
            if ((g == fault.group && fault.kind == 'l') || grp->prefilled >= PREFILL_PKTS || grp->prefill_full)
                continue;
            for (int i = 0; i < grp->n && !grp->prefill_full; i++) {
                struct flow *f = grp->flows[i];
                if ((uint64_t)f->next_psn * f->payload >= f->size || f->noroute || f->sock < 0 || f->start_ns)
                    continue;
                if (send_packet_flags(f, st->buf, f->next_psn, MSG_DONTWAIT) < 0) {
                    grp->prefill_full = 1;
                    break;
                }
                f->next_psn++;
                grp->prefilled++;
            }
            more |= !grp->prefill_full && grp->prefilled < PREFILL_PKTS;
        }
    }
}

static void *start_share(void *arg)
{
    struct starter *st = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(st->cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set); /* best effort */
    pthread_barrier_wait(&go);
    for (int g = st->cpu; g < st->n_groups; g += st->n_cpus) {
        if (g == fault.group && fault.kind == 'l')
            continue; /* a late sender starts on its own */
        struct flow *f = first_flow(&st->groups[g]);
        if (f && f->start_ns == 0) {
            uint32_t psn = 0;
            int rtx, ok = 1;
            if (tcfg.kind) { /* the transport's first packet: its window has room for it */
                pthread_mutex_lock(&f->grp->mu);
                ok = tp_next(&f->tp, mono_ns(), &psn, &rtx);
                pthread_mutex_unlock(&f->grp->mu);
            }
            if (ok)
                send_packet(f, st->buf, psn);
            f->next_psn = 1;
        }
    }
    if (!tcfg.kind)
        prefill(st);
    return NULL;
}

/* Once every sender thread is ready: the first packet of every source, spread over the CPUs, then release. */
static void start_together(struct group *groups, int n_groups, uint64_t maxlen)
{
    released_at = now_s();
    int n_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (n_cpus < 1)
        n_cpus = 1;
    if (n_cpus > n_groups)
        n_cpus = n_groups;
    struct starter *st = calloc(n_cpus, sizeof(*st));
    int ok = st != NULL;
    for (int c = 0; ok && c < n_cpus; c++) {
        st[c] = (struct starter){.cpu = c, .n_cpus = n_cpus, .groups = groups, .n_groups = n_groups,
                                 .buf = calloc(1, maxlen + BTH_LEN + ICRC_LEN)};
        ok = st[c].buf != NULL;
    }
    if (ok) {
        pthread_barrier_init(&go, NULL, n_cpus);
        int made = 1;
        for (int c = 1; c < n_cpus && made == c; c++)
            if (pthread_create(&st[c].th, NULL, start_share, &st[c]) == 0)
                made++;
        if (made == n_cpus) {
            start_share(&st[0]);
            for (int c = 1; c < n_cpus; c++)
                pthread_join(st[c].th, NULL);
        } else {
            fprintf(stderr, "testbed-sender: cannot start the starter threads\n");
            setup_failed = 1;
        }
    } else {
        fprintf(stderr, "testbed-sender: out of memory\n");
        setup_failed = 1;
    }
    for (int c = 0; st && c < n_cpus; c++)
        free(st[c].buf);
    free(st);
    release_all();
}


/* Real-time priority for the transport's threads (best effort: the verdict measures what it achieved). The
 * ACK thread above the sender threads: under a loaded fabric a normal thread woke hundreds of us late. */
static void realtime(int prio)
{
    struct sched_param sp = {.sched_priority = prio};
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}

/* Transport runs: a host's sender thread sends, round robin over its flows, one packet of any flow whose
 * window has room (retransmissions first); with none, it waits for the ACK thread. send() still blocks
 * while the NIC's queue is full: the NIC caps the host at line rate. */
static void send_windowed(struct group *g, uint8_t *buf)
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

/* The ACK thread: ACK events from the kernel's ring, each acted on its flow's base RTT after it reached the
 * sender's NIC (one FIFO per distinct base RTT, so each stays in due order), then timeouts. */
struct pending {
    struct ack_event_rec {
        uint64_t t_ns;
        uint32_t flow, psn, rtt_ns, ecn;
    } ev;
};
/* ACK events held per delay class until due; a fault "ackring=N" makes it N (its overflow is counted) */
static uint64_t pending_cap = 1u << 18;
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
static int n_transport;      /* flows the transport must complete */
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

static void *run_acks(void *arg)
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

static int transport_setup(struct group *groups, int n_groups)
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

static void transport_report(void)
{
    uint64_t na, ns;
    uint64_t a50 = late_quantile(ack_late, 0.5, &na), a99 = late_quantile(ack_late, 0.99, &na);
    uint64_t s50 = late_quantile(send_late, 0.5, &ns), s99 = late_quantile(send_late, 0.99, &ns);
    printf("LATENESS %lu %lu %lu %lu %lu %lu %lu %lu %lu %lu\n", na, a50, a99, ack_late_max, ns, s50, s99,
           send_late_max, ring_overflow, (unsigned long)trace_n);
    if (trace && tcfg.trace[0]) {
        FILE *t = fopen(tcfg.trace, "wb");
        if (!t || fwrite(trace, sizeof(*trace), trace_n, t) != trace_n)
            fprintf(stderr, "testbed-sender: cannot write the window trace %s\n", tcfg.trace);
        if (t)
            fclose(t);
    }
}

static void *run_group(void *arg)
{
    struct group *g = arg;
    uint64_t maxlen = 0;
    int fd = open(g->flows[0]->ns, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
        fprintf(stderr, "testbed-sender: cannot enter %s: %s\n", g->flows[0]->ns, strerror(errno));
        setup_failed = 1;
    }
    if (fd >= 0)
        close(fd);
    for (int i = 0; i < g->n && !setup_failed; i++) {
        if (open_flow(g->flows[i]) < 0) {
            if (errno == ENETUNREACH || errno == EHOSTUNREACH || errno == ENETDOWN) {
                g->flows[i]->noroute = 1;
            } else {
                fprintf(stderr, "testbed-sender: flow %u: %s\n", g->flows[i]->fid, strerror(errno));
                setup_failed = 1;
            }
        }
        if (g->flows[i]->payload > maxlen)
            maxlen = g->flows[i]->payload;
    }
    uint8_t *buf = calloc(1, maxlen + BTH_LEN + ICRC_LEN);
    pthread_barrier_wait(&ready); /* every thread ready: the starters send the first packets */
    wait_released();
    int faulty = g->index == fault.group;
    unsigned long sent = 0;
    if ((faulty && fault.kind == 'l') || fault.kind == 'w')
        sleep_us(fault.us);
    if (setup_failed || !buf) {
        free(buf);
        return NULL;
    }
    if (tcfg.kind) {
        send_windowed(g, buf);
        free(buf);
        return NULL;
    }
    /* round robin, one packet per flow that has started and has packets left; a flow that has not started
     * yet waits for its time (start_ns after the release), and a host with none started sleeps until one is */
    for (;;) {
        if (now_s() > deadline_s)
            break;
        double now = now_s();
        int sent_any = 0;
        double earliest = 0;
        for (int i = 0; i < g->n; i++) {
            struct flow *f = g->flows[i];
            if ((uint64_t)f->next_psn * f->payload >= f->size || f->noroute)
                continue;
            double start = released_at + f->start_ns * 1e-9;
            if (now < start) {
                earliest = earliest == 0 || start < earliest ? start : earliest;
                continue;
            }
            send_packet(f, buf, f->next_psn++);
            sent_any = 1;
            if (faulty && fault.kind == 's' && ++sent == fault.after)
                sleep_us(fault.us);
        }
        if (!sent_any) {
            if (earliest == 0)
                break; /* every flow is done */
            sleep_us((unsigned long)((earliest - now_s()) * 1e6) + 1);
        }
    }
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: testbed-sender DEADLINE_S SNDBUF_BYTES [late:G:US | stall:G:N:US | wake:US] [KEY=VALUE...] "
                        "< flows\n");
        return 2;
    }
    for (int a = 3; a < argc; a++) {
        const char *v = strchr(argv[a], '=');
        if (!v) {
            if (!(sscanf(argv[a], "late:%d:%lu", &fault.group, &fault.us) == 2 && (fault.kind = 'l')) &&
                !(sscanf(argv[a], "stall:%d:%lu:%lu", &fault.group, &fault.after, &fault.us) == 3 &&
                  (fault.kind = 's')) &&
                !(sscanf(argv[a], "wake:%lu", &fault.us) == 1 && (fault.kind = 'w'))) {
                fprintf(stderr, "testbed-sender: bad fault %s\n", argv[a]);
                return 2;
            }
            continue;
        }
        size_t kl = (size_t)(v - argv[a]);
        v++;
#define KEY(k) (kl == strlen(k) && strncmp(argv[a], k, kl) == 0)
        if (KEY("cc"))
            tcfg.kind = strcmp(v, "dctcp") == 0 ? CCA_DCTCP : strcmp(v, "swift") == 0 ? CCA_SWIFT
                      : strcmp(v, "nscc") == 0 ? CCA_NSCC : -1;
        else if (KEY("ring"))
            snprintf(tcfg.ring, sizeof(tcfg.ring), "%s", v);
        else if (KEY("ring_bytes"))
            tcfg.ring_bytes = strtoull(v, NULL, 10);
        else if (KEY("reps"))
            snprintf(tcfg.reps, sizeof(tcfg.reps), "%s", v);
        else if (KEY("reps_entries"))
            tcfg.reps_entries = strtoull(v, NULL, 10);
        else if (KEY("reps_freeze_ns"))
            tcfg.reps_freeze_ns = strtoull(v, NULL, 10);
        else if (KEY("base_ns"))
            tcfg.base_ns = strtoull(v, NULL, 10);
        else if (KEY("pkt_ns"))
            tcfg.pkt_ns = strtoull(v, NULL, 10);
        else if (KEY("min_rto_ns"))
            tcfg.min_rto_ns = atof(v);
        else if (KEY("trace"))
            snprintf(tcfg.trace, sizeof(tcfg.trace), "%s", v);
        else if (KEY("trace_cap"))
            tcfg.trace_cap = strtoull(v, NULL, 10);
        else if (KEY("ackstall"))
            sscanf(v, "%lu:%lu", &tcfg.stall_after, &tcfg.stall_us);
        else if (KEY("ackring"))
            pending_cap = strtoul(v, NULL, 10) ? strtoul(v, NULL, 10) : 1; /* fault: the transport's queue */
        else if (KEY("init_cwnd"))
            tcfg.cp.init_cwnd = atof(v);
        else if (KEY("min_cwnd"))
            tcfg.cp.min_cwnd = atof(v);
        else if (KEY("max_cwnd"))
            tcfg.cp.max_cwnd = atof(v);
        else if (KEY("dctcp_g"))
            tcfg.cp.dctcp_g = atof(v);
        else if (KEY("swift_target_q_ns"))
            tcfg.cp.swift_target_ns = atof(v);
        else if (KEY("swift_ai"))
            tcfg.cp.swift_ai = atof(v);
        else if (KEY("swift_beta"))
            tcfg.cp.swift_beta = atof(v);
        else if (KEY("swift_max_mdf"))
            tcfg.cp.swift_max_mdf = atof(v);
        else if (KEY("nscc_target_ns"))
            tcfg.cp.nscc_target_ns = atof(v);
        else if (KEY("nscc_alpha"))
            tcfg.cp.nscc_alpha = atof(v);
        else if (KEY("nscc_fi"))
            tcfg.cp.nscc_fi = atof(v);
        else if (KEY("nscc_eta"))
            tcfg.cp.nscc_eta = atof(v);
        else if (KEY("nscc_gamma"))
            tcfg.cp.nscc_gamma = atof(v);
        else if (KEY("nscc_fi_scale"))
            tcfg.cp.nscc_fi_scale = atof(v);
        else if (KEY("nscc_ewma"))
            tcfg.cp.nscc_ewma = atof(v);
        else if (KEY("nscc_fast_ns"))
            tcfg.cp.nscc_fast_ns = atof(v);
        else {
            fprintf(stderr, "testbed-sender: unknown option %s\n", argv[a]);
            return 2;
        }
#undef KEY
    }
    if (tcfg.kind < 0 || (tcfg.kind && (!tcfg.ring[0] || !tcfg.ring_bytes))) {
        fprintf(stderr, "testbed-sender: cc needs dctcp, swift or nscc, and ring= and ring_bytes=\n");
        return 2;
    }
    tcfg.cp.kind = tcfg.kind;
    /* die with the process that started us: an orphan would send into the next run */
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
        return 1;
    deadline_s = atof(argv[1]);
    sndbuf = atoi(argv[2]);
    /* one socket per flow: as many open files as the hard limit allows (the caller checked the count) */
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit(RLIMIT_NOFILE, &nofile);
    }
    char line[1024];
    int cap = 0;
    while (fgets(line, sizeof(line), stdin)) {
        if (n_flows == cap) {
            cap = cap ? 2 * cap : 1024;
            flows = realloc(flows, cap * sizeof(*flows));
            if (!flows) {
                fprintf(stderr, "testbed-sender: out of memory for %d flows\n", cap);
                return 2;
            }
        }
        struct flow *f = &flows[n_flows];
        memset(f, 0, sizeof(*f)); /* realloc does not zero: counters and next_psn start at 0 */
        if (sscanf(line, "%255s %u %63s %u %63s %lu %lu %lu %u %lu %u %lu", f->ns, &f->fid, f->src, &f->sport, f->dst,
                   &f->size, &f->payload, &f->start_ns, &f->dupthresh, &f->base_rtt_ns, &f->after_fid,
                   &f->after_ns) < 7)
            continue;
        if (f->payload == 0 || f->size == 0)
            continue;
        if (f->after_fid && !tcfg.kind) {
            fprintf(stderr, "testbed-sender: flow %u is chained: chains need a transport (cc=)\n", f->fid);
            return 2;
        }
        f->sock = -1;
        n_flows++;
    }
    if (n_flows == 0) {
        fprintf(stderr, "testbed-sender: no flows on stdin\n");
        return 2;
    }
    /* group flows by namespace, in order of first appearance: a group index per flow, then exact arrays */
    struct group *groups = calloc(n_flows, sizeof(*groups));
    int *group_of = calloc(n_flows, sizeof(int));
    struct flow **first = calloc(n_flows, sizeof(*first));
    if (!groups || !group_of || !first) {
        fprintf(stderr, "testbed-sender: out of memory\n");
        return 2;
    }
    int n_groups = 0;
    for (int i = 0; i < n_flows; i++) {
        int g = n_groups && strcmp(first[n_groups - 1]->ns, flows[i].ns) == 0 ? n_groups - 1 : 0;
        while (g < n_groups && strcmp(first[g]->ns, flows[i].ns) != 0)
            g++;
        if (g == n_groups)
            first[n_groups++] = &flows[i];
        group_of[i] = g;
        groups[g].n++;
    }
    for (int g = 0; g < n_groups; g++) {
        groups[g].flows = calloc(groups[g].n, sizeof(struct flow *));
        groups[g].n = 0;
        groups[g].index = g;
    }
    for (int i = 0; i < n_flows; i++) {
        struct group *gr = &groups[group_of[i]];
        gr->flows[gr->n++] = &flows[i];
    }
    if (tcfg.kind && transport_setup(groups, n_groups) < 0) {
        fprintf(stderr, "testbed-sender: cannot set up the transport\n");
        return 1;
    }
    pthread_t *th = calloc(n_groups, sizeof(*th));
    pthread_barrier_init(&ready, NULL, n_groups + 1); /* the sender threads and this one */
    deadline_s += now_s();
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, THREAD_STACK_BYTES);
    for (int g = 0; g < n_groups; g++) {
        if (pthread_create(&th[g], &attr, run_group, &groups[g]) != 0) {
            fprintf(stderr, "testbed-sender: cannot start the sender thread of %s\n", groups[g].flows[0]->ns);
            return 1;
        }
    }
    uint64_t maxlen = 0;
    for (int i = 0; i < n_flows; i++)
        if (flows[i].payload > maxlen)
            maxlen = flows[i].payload;
    pthread_barrier_wait(&ready);
    pthread_t acks;
    int acks_started = 0;
    if (tcfg.kind && !setup_failed) {
        for (int i = 0; i < n_flows; i++)
            n_transport += !flows[i].noroute && flows[i].sock >= 0;
        if (pthread_create(&acks, NULL, run_acks, NULL) != 0) {
            fprintf(stderr, "testbed-sender: cannot start the ACK thread\n");
            setup_failed = 1;
        } else {
            acks_started = 1;
        }
    }
    if (!setup_failed)
        start_together(groups, n_groups, maxlen);
    else
        release_all();
    for (int g = 0; g < n_groups; g++)
        pthread_join(th[g], NULL);
    if (acks_started)
        pthread_join(acks, NULL);
    if (setup_failed)
        return 1;
    for (int i = 0; i < n_flows; i++) {
        struct flow *f = &flows[i];
        printf("%u %lu %lu %lu %d", f->fid, f->packets, f->bytes, f->errors, f->noroute);
        if (tcfg.kind) /* RETRANSMITS FAST_RTX RTOS ACKS ECN_ACKS ACKED_TWICE SPURIOUS CWND ACKED NPKTS */
            printf(" %lu %lu %lu %lu %lu %lu %lu %.3f %u %u", f->tp.retransmits, f->tp.fast_rtx, f->tp.rtos,
                   f->tp.acks, f->tp.ecn_acks, f->tp.acked_twice, f->tp.spurious, f->tp.cc.cwnd, f->tp.acked,
                   f->tp.npkts);
        printf("\n");
    }
    if (tcfg.kind)
        transport_report();
    return 0;
}
