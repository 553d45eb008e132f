/* run.h: the run-wide settings, and what the kernel hands a run's user-space transport.
 *
 * Contract: run_cfg[0] is written by Python before a run (testbed/run/experiment.py)
 * and only read by the programs; struct run_cfg is mirrored field by field in
 * testbed/dataplane/maps.py (RunCfg: checked against the compiled program when it is
 * loaded), ECN_* by the constants of the same names there. struct ack_event is what
 * transport.h writes into the ack_events ring buffer of ACK_EVENT_PAGES pages, which
 * traffic/acks.c reads (its struct ack_event_rec has the same fields, in order);
 * the ring's size is testbed.dataplane.maps.ACK_EVENT_BYTES and
 * traffic.transport.RING_BYTES. Checked by testbed/dataplane/contract.py when the
 * program is loaded and by tests/unit/test_header_contract.py.
 */
#pragma once

#define ECN_OFF   0
#define ECN_BYTES 1
#define ECN_PKTS  2

/* Run-wide settings: run_cfg[0]. */
struct run_cfg {
    __u32 acks;         /* 1: receivers answer every data packet with an ACK */
    __u32 nic_ps_per_byte; /* host NICs' paced rate as picoseconds per byte (0: no NIC accounting) */
    __u32 host_lb;      /* HOST_LB_* (schemes.h): the host NICs' load-balancing scheme */
    __u32 ecn_unit;     /* ECN_*: marking off, or its threshold in bytes or in packets */
    __u64 ecn_thresh;   /* mark CE when the queue a packet joins, itself included, holds more than this */
    __u32 cc;           /* 1: a user-space transport is in the loop (transport.h): data frames carry their NIC
                         * departure stamp, receivers drop duplicates (rx_seen), ACKs go to ack_events */
    __u32 wire_overhead; /* bytes every link charges per frame beyond skb->len (FCS, gap, preamble): the NICs'
                          * periodic server counts them (queue.h) */
    __u64 buffer_bytes; /* per switch port: a packet that would take its queue beyond this is dropped (0: no limit) */
    __u64 prop_ns;      /* propagation delay of one link: every feedback signal is usable 2 x links x this after it
                         * reached the data plane (delay.h); 0: at once */
};

/* One ACK back at its sender, for the user-space transport (ack_events). */
struct ack_event {
    __u64 t_ns;         /* arrival at the sender's NIC (bpf_ktime_get_ns: CLOCK_MONOTONIC) */
    __u32 flow;
    __u32 psn;          /* the data packet it acknowledges */
    __u32 rtt_ns;       /* that data frame's NIC departure to this ACK's arrival, through the fabric */
    __u32 ecn;          /* 1: the ACK echoes CE */
};

#define ACK_EVENT_PAGES 256 /* ack_events: 1 MB, 43,000 events */
