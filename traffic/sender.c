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
 * Protocol (protocol.h defines every field, traffic/sender.py reads the same lists):
 * argv: DEADLINE_S SNDBUF_BYTES [NAME=VALUE ...], the options of SENDER_OPTIONS.
 * stdin: one line per flow, NAME=VALUE for every field of SENDER_FLOW (START_NS: the flow starts that long
 * after the first packets; DUPTHRESH, BASE_RTT_NS, AFTER_FID, AFTER_NS: transport runs, 0 otherwise). A chained
 * flow (after_fid > 0) starts after_ns after the kernel saw the ACK that completed flow after_fid's arrival: a
 * ring step that needs its input, which arrived then plus its path's propagation. The flows a chain waits for
 * must be listed before the flows that wait for them. A malformed line is an error (exit 2, one line on stderr
 * naming it), before anything is sent.
 * With cc=dctcp|swift|nscc (and the constants of traffic/transport.py as options) it is a transport run:
 * each flow window-limited and ACK-clocked (transport.h, cca.h), the ACKs read from the kernel's ring
 * (ring=PATH, ringbuf.h) by one ACK thread that acts on each its flow's base RTT after it reached the NIC;
 * after the flow lines, one line "LATENESS ..." and the window trace written to trace=PATH. With reps=PATH
 * (the pinned REPS state, reps_entries=N of them) a retransmission timeout freezes the flow's REPS
 * connection for reps_freeze_ns (ebpf/include/host_lb.h).
 * Faults (for the tests of the fidelity verdict only; traffic/faults.py parses their text): fault=late starts the
 * sender thread of the fault_group-th source namespace fault_us microseconds after the others; fault=stall
 * makes it sleep fault_us microseconds after its fault_after-th packet; fault=wake makes every sender thread
 * sleep fault_us microseconds after the release (a slow wake-up, which prefill() covers); ack_stall_after and
 * ack_stall_us make the ACK thread sleep, ack_ring caps the ACK events it holds.
 * stdout after the run, one line per flow: "FLOW" and SENDER_SENT's fields (NOROUTE is 1 when the source host
 * had no route to the destination, its NIC or its only link being down: such a flow sends nothing), with
 * SENDER_SENT_TRANSPORT's in a transport run.
 * Exit status 0 unless an argument or input line was bad (2) or setup failed (1; message on stderr).
 *
 * Parts (sender.h lists them): this file holds main(); start.c the start,
 * paced.c the sender threads and the packets, window.c and acks.c the
 * transport, lateness.c its histograms and trace, clock.c the clocks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cca.h"
#include "sender.h"

#define THREAD_STACK_BYTES (256 * 1024) /* one thread per source host: 2,048 on the k=64 leaf-spine */

struct flow *flows;
int n_flows;
pthread_barrier_t ready;
double deadline_s;
int sndbuf;
volatile int setup_failed;
struct fault fault = {.group = -1};
struct transport_config tcfg;

/* The protocol's fields (protocol.h) as the parser sees them: a name, a type, where the value goes (an option's
 * variable, or the offset of a flow's member) and its size. */
enum { T_STR, T_U32, T_U64, T_INT, T_F64, T_CC, T_FAULT };
#define SIZE_STR 0 /* any: the array's */
#define SIZE_U32 sizeof(uint32_t)
#define SIZE_U64 sizeof(uint64_t)
#define SIZE_INT sizeof(int)
#define SIZE_F64 sizeof(double)
#define SIZE_CC sizeof(int)
#define SIZE_FAULT sizeof(char)

struct field {
    const char *name;
    int type;
    void *at;   /* an option's variable */
    size_t off; /* a flow field's offset in struct flow */
    size_t size;
};

#define OPTION(name, type, var) {#name, T_##type, &(var), 0, sizeof(var)},
static const struct field options[] = {SENDER_OPTIONS(OPTION)};
#define FLOW_FIELD(name, type, member) \
    {#name, T_##type, NULL, offsetof(struct flow, member), sizeof(((struct flow *)0)->member)},
static const struct field flow_fields[] = {SENDER_FLOW(FLOW_FIELD)};
#define N_OPTIONS (sizeof(options) / sizeof(options[0]))
#define N_FLOW_FIELDS (sizeof(flow_fields) / sizeof(flow_fields[0]))

/* every field has its type's size (an array of any size for STR) */
#define CHECK_OPTION(name, type, var) \
    _Static_assert(SIZE_##type == 0 || sizeof(var) == SIZE_##type, "option " #name " is not a " #type);
SENDER_OPTIONS(CHECK_OPTION)
#define CHECK_FLOW_FIELD(name, type, member)                                                                 \
    _Static_assert(SIZE_##type == 0 || sizeof(((struct flow *)0)->member) == SIZE_##type, "flow field " #name \
                                                                                         " is not a " #type);
SENDER_FLOW(CHECK_FLOW_FIELD)
_Static_assert(N_FLOW_FIELDS <= 64 && N_OPTIONS <= 64, "the fields fit a mask of the ones seen");

/* Text `v` as a value of `type` into `at` (`size` bytes): 0, or -1 when it is not one. */
static int put_value(int type, void *at, size_t size, const char *v)
{
    char *end;
    errno = 0;
    switch (type) {
    case T_STR: {
        size_t n = strlen(v);
        if (n == 0 || n >= size)
            return -1;
        memcpy(at, v, n + 1);
        return 0;
    }
    case T_U32:
    case T_U64: {
        if (*v < '0' || *v > '9')
            return -1;
        unsigned long long x = strtoull(v, &end, 10);
        if (*end || errno || (type == T_U32 && x > UINT32_MAX))
            return -1;
        if (type == T_U32) {
            uint32_t y = (uint32_t)x;
            memcpy(at, &y, sizeof(y));
        } else {
            uint64_t y = x;
            memcpy(at, &y, sizeof(y));
        }
        return 0;
    }
    case T_INT: {
        long x = strtol(v, &end, 10);
        if (end == v || *end || errno || x < INT_MIN || x > INT_MAX)
            return -1;
        int y = (int)x;
        memcpy(at, &y, sizeof(y));
        return 0;
    }
    case T_F64: {
        double x = strtod(v, &end);
        if (end == v || *end)
            return -1;
        memcpy(at, &x, sizeof(x));
        return 0;
    }
    case T_CC: {
#define CC_NAMED(name, kind)        \
    if (strcmp(v, #name) == 0) {    \
        int y = kind;               \
        memcpy(at, &y, sizeof(y));  \
        return 0;                   \
    }
        SENDER_CCS(CC_NAMED)
        return -1;
    }
    case T_FAULT: {
#define FAULT_NAMED(name, kind)     \
    if (strcmp(v, #name) == 0) {    \
        char y = kind;              \
        memcpy(at, &y, sizeof(y));  \
        return 0;                   \
    }
        SENDER_FAULTS(FAULT_NAMED)
        return -1;
    }
    }
    return -1;
}

/* One NAME=VALUE of `fields` (n of them) into `base` (options: NULL, their variables), marking it in *seen.
 * NULL, or what is wrong with it (in `why`). */
static const char *put_field(const struct field *fields, size_t n, char *base, char *tok, uint64_t *seen,
                             char *why, size_t why_len)
{
    char *v = strchr(tok, '=');
    size_t i = 0;
    if (!v) {
        snprintf(why, why_len, "%s is not NAME=VALUE", tok);
        return why;
    }
    *v++ = 0;
    while (i < n && strcmp(fields[i].name, tok) != 0)
        i++;
    if (i == n)
        snprintf(why, why_len, "unknown name %s", tok);
    else if (*seen & (1ull << i))
        snprintf(why, why_len, "%s given twice", tok);
    else if (put_value(fields[i].type, base ? base + fields[i].off : fields[i].at, fields[i].size, v) < 0)
        snprintf(why, why_len, "bad value %s=%s", tok, v);
    else {
        *seen |= 1ull << i;
        return NULL;
    }
    return why;
}

/* One stdin line (newline stripped) into *f: every field of SENDER_FLOW once. NULL, or what is wrong. */
static const char *parse_flow(char *line, struct flow *f, char *why, size_t why_len)
{
    uint64_t seen = 0;
    char *save = NULL;
    for (char *tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save))
        if (put_field(flow_fields, N_FLOW_FIELDS, (char *)f, tok, &seen, why, why_len))
            return why;
    for (size_t i = 0; i < N_FLOW_FIELDS; i++)
        if (!(seen & (1ull << i))) {
            snprintf(why, why_len, "missing %s=", flow_fields[i].name);
            return why;
        }
    return NULL;
}

/* The flows of stdin into `flows` (n_flows): 0, or 2 after a message on stderr. */
static int read_flows(void)
{
    char line[SENDER_LINE_MAX], text[SENDER_LINE_MAX], why[128];
    int cap = 0, lineno = 0;
    while (fgets(line, sizeof(line), stdin)) {
        lineno++;
        size_t len = strlen(line);
        int whole = len > 0 && line[len - 1] == '\n';
        if (!whole && !feof(stdin)) {
            fprintf(stderr, "testbed-sender: stdin line %d: longer than %d characters\n", lineno,
                    SENDER_LINE_MAX - 2);
            return 2;
        }
        if (whole)
            line[--len] = 0;
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
        memcpy(text, line, len + 1);
        if (parse_flow(line, f, why, sizeof(why))) {
            fprintf(stderr, "testbed-sender: stdin line %d: %s in \"%s\"\n", lineno, why, text);
            return 2;
        }
        if (f->payload == 0 || f->size == 0)
            continue; /* nothing to send */
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
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: testbed-sender DEADLINE_S SNDBUF_BYTES [NAME=VALUE...] < flows (traffic/protocol.h)\n");
        return 2;
    }
    uint64_t seen = 0;
    for (int a = 3; a < argc; a++) {
        char why[128];
        if (put_field(options, N_OPTIONS, NULL, argv[a], &seen, why, sizeof(why))) {
            fprintf(stderr, "testbed-sender: bad option: %s\n", why);
            return 2;
        }
    }
    if (!pending_cap)
        pending_cap = 1; /* fault ackring: at least one ACK event held */
    if (tcfg.kind && (!tcfg.ring[0] || !tcfg.ring_bytes)) {
        fprintf(stderr, "testbed-sender: cc needs ring= and ring_bytes=\n");
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
    int bad = read_flows();
    if (bad)
        return bad;
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
        printf("FLOW");
        SENDER_SENT(SENDER_PRINT_FIELD)
        if (tcfg.kind) {
            SENDER_SENT_TRANSPORT(SENDER_PRINT_FIELD)
        }
        printf("\n");
    }
    if (tcfg.kind)
        transport_report();
    return 0;
}
