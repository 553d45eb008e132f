/* sender.h: what the parts of testbed-sender share (the program: sender.c's top comment).
 *
 * Contract. The types every part sees (struct flow: one flow, its socket and
 * counters, its chain and its transport state; struct group: the flows of one
 * source namespace and the lock of their transport state; the fault; the
 * transport's configuration), the globals more than one file reads, each
 * defined in exactly one .c (named below), and the functions one file calls in
 * another. The parts:
 *   sender.c    main(): argv (fixed arguments, NAME=VALUE options), the
 *               flows from stdin, grouping by namespace, the threads, the
 *               per-flow report, each as protocol.h defines it. Defines
 *               flows, n_flows, ready, deadline_s, sndbuf, setup_failed,
 *               fault, tcfg.
 *   start.c     starting together: one starter per CPU sends the first
 *               packets (and, paced, prefill()s the NICs), then releases the
 *               sender threads. Defines released_at.
 *   paced.c     a source namespace's sender thread (run_group()): its
 *               namespace and sockets, the packet format, the paced loop.
 *   window.c    transport runs, the sender side: send_windowed().
 *   acks.c      transport runs, the ACK thread and the transport's set-up and
 *               report. Defines pending_cap, n_transport.
 *   lateness.c  the lateness histograms and the window trace. Defines
 *               ack_late, send_late, their maxima, trace, trace_n.
 *   clock.c     the clocks, sleeping and real-time priority of the threads.
 * Every thread but main's runs after main() has parsed everything: the
 * configuration globals are written before the threads start and only read
 * after.
 */
#pragma once
#include <linux/types.h> /* __u64, __u16 of shared.h */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cca.h"
#include "protocol.h" /* what the program is told and answers: options, flow lines, report lines */
#include "shared.h"   /* ebpf/include, on the include path: struct reps_state, ROCE_UDP_PORT */
#include "transport.h"

#define BTH_LEN 12 /* traffic.packet.BTH */
#define ICRC_LEN 4 /* traffic.packet.ICRC */

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

/* defined in sender.c */
extern struct flow *flows;
extern int n_flows;
extern pthread_barrier_t ready;
extern double deadline_s;
extern int sndbuf;
extern volatile int setup_failed;
/* faults late, stall, wake (the options fault=, fault_group=, fault_after=, fault_us=): kind 'l', 's' or 'w' */
struct fault { char kind; int group; unsigned long after, us; };
extern struct fault fault;

/* One field of a report line (protocol.h's SENDER_SENT, SENDER_SENT_TRANSPORT, SENDER_LATENESS): " NAME=VALUE",
 * the value printed as its type's SENDER_FMT_ says. */
#define SENDER_ARG_U32(v) ((unsigned)(v))
#define SENDER_ARG_U64(v) ((unsigned long)(v))
#define SENDER_ARG_INT(v) ((int)(v))
#define SENDER_ARG_BOOL(v) ((int)(v))
#define SENDER_ARG_F64(v) ((double)(v))
#define SENDER_PRINT_FIELD(name, type, value) printf(" " #name "=" SENDER_FMT_##type, SENDER_ARG_##type(value));

/* Transport runs (cc=dctcp|swift|nscc): each flow is window-limited and ACK-clocked (transport.h,
 * cca.h); the ACKs come from the kernel (ack_events ring, ebpf/include/transport.h) and are acted on
 * their flow's base RTT after they reached the sender's NIC: the emulated propagation round trip of its
 * path (or one fixed base RTT), as a delay on the return path. */
struct transport_config {
    int kind;                /* CCA_*: 0, the paced blast */
    char ring[512];
    size_t ring_bytes;
    uint64_t base_ns;        /* the longest of the flows' base RTTs (the constants' reference) */
    uint64_t pkt_ns;         /* one data frame at line rate */
    double min_rto_ns;
    struct cca_params cp;    /* network-wide constants; each flow copies them with its own base RTT */
    char trace[512];
    size_t trace_cap;
    unsigned long stall_after, stall_us; /* fault ackstall: the ACK thread sleeps stall_us after stall_after ACKs */
    char reps[512];          /* REPS runs: the pinned reps map, mmapped (its entries are struct reps_state) */
    size_t reps_entries;
    uint64_t reps_freeze_ns; /* how long a timeout freezes a REPS connection */
    struct reps_state *reps_map;
};
extern struct transport_config tcfg;

/* start.c */
extern double released_at; /* when the first packets went out: the flows' starts count from it */
void release_all(void);
void wait_released(void);
void start_together(struct group *groups, int n_groups, uint64_t maxlen);

/* clock.c */
uint64_t mono_ns(void);
double now_s(void);
void sleep_us(unsigned long us);
void realtime(int prio);

/* lateness.c */
/* lateness histograms, 1 us buckets up to 65.5 ms (the last bucket holds the rest) */
#define LATE_BUCKETS 65536
extern uint32_t ack_late[LATE_BUCKETS], send_late[LATE_BUCKETS];
extern uint64_t ack_late_max, send_late_max;
void late_add(uint32_t *h, uint64_t *max, uint64_t ns, int atomic);
uint64_t late_quantile(const uint32_t *h, double q, uint64_t *count);

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
extern struct trace_rec *trace;
extern size_t trace_n;
void trace_add(uint64_t t, struct flow *f, uint32_t psn, uint32_t rtt, int ecn, int rule);

/* paced.c */
int send_packet_flags(struct flow *f, uint8_t *buf, uint32_t psn, int flags);
int send_packet(struct flow *f, uint8_t *buf, uint32_t psn);
void *run_group(void *arg);

/* window.c */
void send_windowed(struct group *g, uint8_t *buf);

/* acks.c */
extern uint64_t pending_cap; /* ACK events held per delay class; the fault ackring (ack_ring=N) makes it N */
extern int n_transport;      /* flows the transport must complete */
void *run_acks(void *arg);
int transport_setup(struct group *groups, int n_groups);
void transport_report(void);
