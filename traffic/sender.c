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
 * the 16 first packets over 0.4 ms, one per CPU halves it. The host NIC (egress TBF) does the pacing: send() blocks
 * while the socket's send buffer is full.
 *
 * Packet: UDP payload = BTH (12 bytes: opcode, flags, pkey, dest QP, PSN)
 *         + payload bytes + 4-byte ICRC trailer; IP ECN field ECT(0), UDP
 *         checksum 0, as RoCEv2 NICs send them.
 *
 * stdin, one flow per line:  NSPATH FID SRC_IP SRC_PORT DST_IP SIZE_BYTES PAYLOAD [START_NS]
 * (START_NS: the flow starts that long after the first packets; default 0)
 * argv: deadline_s sndbuf_bytes [fault]
 * fault (for the tests of the fidelity verdict only): "late:G:US" starts the
 * sender thread of the G-th source namespace US microseconds after the
 * others; "stall:G:N:US" makes it sleep US microseconds after its N-th packet.
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
    uint32_t next_psn; /* the next packet to send (1 after a starter sent the first) */
};

struct group {            /* the flows of one source namespace */
    struct flow **flows;
    int n;
    int index;
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

static int send_packet(struct flow *f, uint8_t *buf, uint32_t psn)
{
    uint64_t done = (uint64_t)psn * f->payload;
    uint64_t len = f->size - done < f->payload ? f->size - done : f->payload;
    put_bth(buf, f->fid, psn);
    ssize_t rc;
    do {
        rc = send(f->sock, buf, BTH_LEN + len + ICRC_LEN, 0);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        f->errors++;
        return -1;
    }
    f->packets++;
    f->bytes += (uint64_t)rc;
    return 0;
}

/* The first flow of a group that has a route, or NULL. */
static struct flow *first_flow(struct group *g)
{
    for (int i = 0; i < g->n; i++)
        if (!g->flows[i]->noroute && g->flows[i]->sock >= 0)
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
            send_packet(f, st->buf, 0);
            f->next_psn = 1;
        }
    }
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
    if (faulty && fault.kind == 'l')
        sleep_us(fault.us);
    if (setup_failed || !buf) {
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
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: testbed-sender DEADLINE_S SNDBUF_BYTES [late:G:US | stall:G:N:US] < flows\n");
        return 2;
    }
    if (argc == 4 && !(sscanf(argv[3], "late:%d:%lu", &fault.group, &fault.us) == 2 && (fault.kind = 'l')) &&
        !(sscanf(argv[3], "stall:%d:%lu:%lu", &fault.group, &fault.after, &fault.us) == 3 && (fault.kind = 's'))) {
        fprintf(stderr, "testbed-sender: bad fault %s\n", argv[3]);
        return 2;
    }
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
        if (sscanf(line, "%255s %u %63s %u %63s %lu %lu %lu", f->ns, &f->fid, f->src, &f->sport, f->dst, &f->size,
                   &f->payload, &f->start_ns) < 7)
            continue;
        if (f->payload == 0 || f->size == 0)
            continue;
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
    if (!setup_failed)
        start_together(groups, n_groups, maxlen);
    else
        release_all();
    for (int g = 0; g < n_groups; g++)
        pthread_join(th[g], NULL);
    if (setup_failed)
        return 1;
    for (int i = 0; i < n_flows; i++)
        printf("%u %lu %lu %lu %d\n", flows[i].fid, flows[i].packets, flows[i].bytes, flows[i].errors,
               flows[i].noroute);
    return 0;
}
