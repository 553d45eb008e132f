/* start.c: starting every source together (sender.c's top comment, "Start together").
 *
 * Contract. main() calls start_together() once every sender thread is ready
 * (the `ready` barrier passed): one starter thread per CPU, pinned to it,
 * sends the first packet of its share of the sources (through the
 * transport's window in transport runs), in paced runs then prefill()s
 * their NICs, and start_together() releases the sender threads
 * (release_all(); main() calls it alone when set-up failed). The sender
 * threads (run_group(), paced.c) wait in wait_released(). released_at, the
 * moment the first packets went out, is what the flows' starts count from.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sender.h"
#include "transport.h"

/* Set once every first packet is out; the sender threads sleep on `release` until then (2,048 threads
 * spinning in sched_yield() would take the CPUs from the starters: the first packets of the k=64
 * leaf-spine spread over 240 ms that way). */
static int released;
static pthread_mutex_t release_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t release = PTHREAD_COND_INITIALIZER;

double released_at; /* when the first packets went out: the flows' starts count from it */

void release_all(void)
{
    pthread_mutex_lock(&release_lock);
    released = 1;
    pthread_cond_broadcast(&release);
    pthread_mutex_unlock(&release_lock);
}

void wait_released(void)
{
    pthread_mutex_lock(&release_lock);
    while (!released)
        pthread_cond_wait(&release, &release_lock);
    pthread_mutex_unlock(&release_lock);
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
void start_together(struct group *groups, int n_groups, uint64_t maxlen)
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
