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
 *
 * Parts (sender.h lists them): this file holds main(); start.c the start,
 * paced.c the sender threads and the packets, window.c and acks.c the
 * transport, lateness.c its histograms and trace, clock.c the clocks.
 */
#define _GNU_SOURCE
#include <pthread.h>
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
