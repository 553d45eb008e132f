/* protocol.h: testbed-sender's protocol with traffic/sender.py, written once.
 *
 * Contract. What the program is told and what it answers, field by field:
 * each SENDER_* list below is an X-macro of X(name, TYPE, where) entries.
 * sender.c and acks.c expand them into their parser and their printers;
 * traffic/protocol.py reads the same lists from this text (each entry's name
 * and TYPE, in order), and traffic/sender.py writes and reads every field by
 * its name. A field added, renamed or retyped here is so on both sides (the
 * sender's digest covers this file: it is rebuilt), and a Python record that
 * lacks a field of its list is refused when traffic.sender is imported.
 *
 *   argv    DEADLINE_S SNDBUF_BYTES, then NAME=VALUE options, each of
 *           SENDER_OPTIONS (where: the variable it sets). Transport runs
 *           give cc= and its constants (traffic/transport.py), the faults
 *           their numbers (traffic/faults.py).
 *   stdin   one line per flow: NAME=VALUE for every field of SENDER_FLOW
 *           (where: the member of struct flow it sets), in any order, each
 *           once. A line that is not that, or longer than
 *           SENDER_LINE_MAX - 2 characters, ends the program before it sends
 *           anything: exit status 2 and one line on stderr naming the input
 *           line ("testbed-sender: stdin line N: ..."). Flows that wait for
 *           another (after_fid > 0) must come after it.
 *   stdout  after the run, one line per flow: "FLOW", then NAME=VALUE for
 *           every field of SENDER_SENT and, in a transport run, of
 *           SENDER_SENT_TRANSPORT (where: its value, of struct flow *f);
 *           then, in a transport run, one line "LATENESS" and NAME=VALUE for
 *           every field of SENDER_LATENESS (where: a local of
 *           transport_report(), acks.c).
 *   exit    0, or 2 for a bad argument or input line, 1 when set-up failed
 *           (a message on stderr).
 *
 * Types: STR text without blanks (at most its array's size - 1 bytes);
 * U32, U64 decimal unsigned integers; INT a decimal int; BOOL 0 or 1; F64 a
 * decimal number (strtod's); CC a congestion controller's name, one of
 * SENDER_CCS; FAULT a fault's name, one of SENDER_FAULTS. Values are
 * printed as SENDER_FMT_<TYPE> gives.
 */
#pragma once

#define SENDER_LINE_MAX 4096 /* bytes of one stdin line, its newline and terminator included */

/* argv's options: X(name, TYPE, the variable it sets) */
#define SENDER_OPTIONS(X)                                                                                        \
    X(cc, CC, tcfg.kind)                          /* a transport run: its congestion controller */              \
    X(ring, STR, tcfg.ring)                       /* the pinned ack_events ring */                               \
    X(ring_bytes, U64, tcfg.ring_bytes)                                                                          \
    X(reps, STR, tcfg.reps)                       /* REPS: its pinned state, mapped */                           \
    X(reps_entries, U64, tcfg.reps_entries)                                                                      \
    X(reps_freeze_ns, U64, tcfg.reps_freeze_ns)   /* how long a timeout freezes a REPS connection */             \
    X(base_ns, U64, tcfg.base_ns)                 /* the longest base RTT: the constants' reference */           \
    X(pkt_ns, U64, tcfg.pkt_ns)                                                                                  \
    X(min_rto_ns, F64, tcfg.min_rto_ns)                                                                          \
    X(trace, STR, tcfg.trace)                     /* where the window trace goes */                              \
    X(trace_cap, U64, tcfg.trace_cap)                                                                            \
    X(init_cwnd, F64, tcfg.cp.init_cwnd)                                                                         \
    X(min_cwnd, F64, tcfg.cp.min_cwnd)                                                                           \
    X(max_cwnd, F64, tcfg.cp.max_cwnd)                                                                           \
    X(dctcp_g, F64, tcfg.cp.dctcp_g)                                                                             \
    X(swift_target_q_ns, F64, tcfg.cp.swift_target_ns)                                                           \
    X(swift_ai, F64, tcfg.cp.swift_ai)                                                                           \
    X(swift_beta, F64, tcfg.cp.swift_beta)                                                                       \
    X(swift_max_mdf, F64, tcfg.cp.swift_max_mdf)                                                                 \
    X(nscc_target_ns, F64, tcfg.cp.nscc_target_ns)                                                               \
    X(nscc_alpha, F64, tcfg.cp.nscc_alpha)                                                                       \
    X(nscc_fi, F64, tcfg.cp.nscc_fi)                                                                             \
    X(nscc_eta, F64, tcfg.cp.nscc_eta)                                                                           \
    X(nscc_gamma, F64, tcfg.cp.nscc_gamma)                                                                       \
    X(nscc_fi_scale, F64, tcfg.cp.nscc_fi_scale)                                                                 \
    X(nscc_ewma, F64, tcfg.cp.nscc_ewma)                                                                         \
    X(nscc_fast_ns, F64, tcfg.cp.nscc_fast_ns)                                                                   \
    X(fault, FAULT, fault.kind)                   /* faults late, stall, wake: which */                          \
    X(fault_group, INT, fault.group)              /* late, stall: the source namespace, in order of first flow */ \
    X(fault_after, U64, fault.after)              /* stall: after this many packets */                           \
    X(fault_us, U64, fault.us)                    /* how long it sleeps */                                       \
    X(ack_stall_after, U64, tcfg.stall_after)     /* fault ackstall: the ACK thread sleeps after this many ACKs */ \
    X(ack_stall_us, U64, tcfg.stall_us)           /* ... this long */                                            \
    X(ack_ring, U64, pending_cap)                 /* fault ackring: ACK events held per delay class (0: one) */

/* the names of CC's values: X(name, CCA_* of cca.h) */
#define SENDER_CCS(X) X(dctcp, CCA_DCTCP) X(swift, CCA_SWIFT) X(nscc, CCA_NSCC)

/* the names of FAULT's values: X(name, struct fault's kind) */
#define SENDER_FAULTS(X) X(late, 'l') X(stall, 's') X(wake, 'w')

/* stdin, one line per flow: X(name, TYPE, the member of struct flow it sets) */
#define SENDER_FLOW(X)                                                                                           \
    X(ns, STR, ns)                   /* the source host's network namespace, /run/netns/NAME */                  \
    X(fid, U32, fid)                 /* its flow id, carried as the destination QP */                            \
    X(src_ip, STR, src)                                                                                          \
    X(src_port, U32, sport)          /* its UDP source port (traffic.sender.source_port) */                      \
    X(dst_ip, STR, dst)                                                                                          \
    X(size, U64, size)               /* bytes (a flow of 0 sends nothing) */                                     \
    X(payload, U64, payload)         /* bytes per packet */                                                      \
    X(start_ns, U64, start_ns)       /* it starts this long after the first packets */                          \
    X(dupthresh, U32, dupthresh)     /* transport runs: duplicate ACKs that declare a loss */                    \
    X(base_rtt_ns, U64, base_rtt_ns) /* transport runs: its ACKs are acted on this long after they reached the NIC */ \
    X(after_fid, U32, after_fid)     /* a chained flow (transport runs): the flow whose arrival it waits for */  \
    X(after_ns, U64, after_ns)       /* ... and how long after the ACK that completed it */

/* stdout, one line "FLOW ..." per flow: X(name, TYPE, its value, of struct flow *f) */
#define SENDER_SENT(X)                                                                                           \
    X(fid, U32, f->fid)                                                                                          \
    X(packets, U64, f->packets)                                                                                  \
    X(bytes, U64, f->bytes)          /* UDP payload bytes handed to the kernel */                                \
    X(errors, U64, f->errors)                                                                                    \
    X(noroute, BOOL, f->noroute)     /* the source had no route to the destination: nothing was sent */

/* the same line's fields in a transport run (the sender's own view of its flow) */
#define SENDER_SENT_TRANSPORT(X)                                                                                 \
    X(retransmits, U64, f->tp.retransmits)                                                                       \
    X(fast_retransmits, U64, f->tp.fast_rtx)                                                                     \
    X(timeouts, U64, f->tp.rtos)                                                                                 \
    X(acks, U64, f->tp.acks)                   /* ACKs acted on */                                               \
    X(ecn_acks, U64, f->tp.ecn_acks)                                                                             \
    X(acked_twice, U64, f->tp.acked_twice)     /* ACKs of a packet acknowledged before */                        \
    X(spurious, U64, f->tp.spurious)           /* packets declared lost that had arrived after all */            \
    X(final_cwnd, F64, f->tp.cc.cwnd)                                                                            \
    X(acked, U32, f->tp.acked)                 /* distinct packets acknowledged */                               \
    X(npkts, U32, f->tp.npkts)

/* stdout, transport runs, one line "LATENESS ...": how late the transport acted, in ns (1 us buckets) */
#define SENDER_LATENESS(X)                                                                                       \
    X(acks, U64, na)                           /* ACKs against their due time (arrival + base RTT) */            \
    X(ack_p50_ns, U64, a50)                                                                                      \
    X(ack_p99_ns, U64, a99)                                                                                      \
    X(ack_max_ns, U64, ack_late_max)                                                                             \
    X(sends, U64, ns)                          /* packets against the moment an ACK opened their window */       \
    X(send_p50_ns, U64, s50)                                                                                     \
    X(send_p99_ns, U64, s99)                                                                                     \
    X(send_max_ns, U64, send_late_max)                                                                           \
    X(ring_overflow, U64, ring_overflow)       /* ACK events the transport had no room to hold */                \
    X(trace_records, U64, trace_n)

#define SENDER_FMT_STR "%s"
#define SENDER_FMT_U32 "%u"
#define SENDER_FMT_U64 "%lu"
#define SENDER_FMT_INT "%d"
#define SENDER_FMT_BOOL "%d"
#define SENDER_FMT_F64 "%.3f"
