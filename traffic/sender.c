/* testbed-sender: paced RoCEv2-like UDP senders for the testbed.
 *
 * One thread per source namespace. Each thread enters its namespace
 * (setns on /run/netns/NAME), opens one UDP socket per flow (bound to the
 * source address, connected to destination:4791, small SO_SNDBUF), waits on a
 * barrier with every other thread, then sends its flows round-robin, one
 * packet each, with blocking send(). Start together: every thread sends its
 * first packet, then yields until all threads have sent theirs, so that no
 * thread fills its NIC queue while another has not started (16 threads on two
 * cores would otherwise start up to a few ms apart). The host NIC (egress TBF) does the
 * pacing: send() blocks while the socket's send buffer is full.
 *
 * Packet: UDP payload = BTH (12 bytes: opcode, flags, pkey, dest QP, PSN)
 *         + payload bytes + 4-byte ICRC trailer.
 *
 * stdin, one flow per line:  NSPATH FID SRC_IP SRC_PORT DST_IP SIZE_BYTES PAYLOAD
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

struct flow {
    char ns[256];
    uint32_t fid;
    unsigned sport;
    char src[64], dst[64];
    uint64_t size, payload;
    int sock;
    uint64_t packets, bytes, errors;
    int noroute;
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
static int started;         /* threads that sent their first packet (or have none to send) */
static int n_started_goal;  /* every thread */
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
    if (bind(f->sock, (struct sockaddr *)&src, sizeof(src)) < 0)
        return -1;
    if (connect(f->sock, (struct sockaddr *)&dst, sizeof(dst)) < 0)
        return -1;
    return 0;
}

/* once per thread, after its first packet: wait until every thread has sent its first */
static void start_gate(int *gate)
{
    if (!*gate)
        return;
    *gate = 0;
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < n_started_goal && now_s() < deadline_s)
        sched_yield();
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
    pthread_barrier_wait(&ready);
    int gate = 1; /* until this thread's first packet is out */
    int faulty = g->index == fault.group;
    unsigned long sent = 0;
    if (faulty && fault.kind == 'l') {
        start_gate(&gate); /* a late sender does not hold the others */
        sleep_us(fault.us);
    }
    if (setup_failed || !buf) {
        start_gate(&gate);
        free(buf);
        return NULL;
    }
    for (uint32_t psn = 0;; psn++) {
        int active = 0;
        if (now_s() > deadline_s)
            break;
        for (int i = 0; i < g->n; i++) {
            struct flow *f = g->flows[i];
            uint64_t done = (uint64_t)psn * f->payload;
            if (done >= f->size || f->noroute)
                continue;
            active = 1;
            uint64_t len = f->size - done < f->payload ? f->size - done : f->payload;
            put_bth(buf, f->fid, psn);
            size_t total = BTH_LEN + len + ICRC_LEN;
            ssize_t rc;
            do {
                rc = send(f->sock, buf, total, 0);
            } while (rc < 0 && errno == EINTR);
            if (rc < 0) {
                f->errors++;
            } else {
                f->packets++;
                f->bytes += (uint64_t)rc;
            }
            start_gate(&gate);
            if (faulty && fault.kind == 's' && ++sent == fault.after)
                sleep_us(fault.us);
        }
        if (!active)
            break;
    }
    start_gate(&gate); /* nothing to send: do not hold the others */
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
        if (sscanf(line, "%255s %u %63s %u %63s %lu %lu", f->ns, &f->fid, f->src, &f->sport, f->dst, &f->size,
                   &f->payload) != 7)
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
    pthread_barrier_init(&ready, NULL, n_groups);
    n_started_goal = n_groups;
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
    for (int g = 0; g < n_groups; g++)
        pthread_join(th[g], NULL);
    if (setup_failed)
        return 1;
    for (int i = 0; i < n_flows; i++)
        printf("%u %lu %lu %lu %d\n", flows[i].fid, flows[i].packets, flows[i].bytes, flows[i].errors,
               flows[i].noroute);
    return 0;
}
