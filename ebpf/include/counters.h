/* counters.h: what the programs count for the measurements: queues, flows, ACKs, drops, host NICs.
 *
 * Contract: the programs only add to these; Python reads them (testbed.measure.collector)
 * and zeroes them between runs. The structs are mirrored field by field in
 * testbed/dataplane/maps.py (PortQ, FlowRx, AckRx: checked against the compiled
 * program when it is loaded), the indices CNT_*, RX_* and HLB_* by the constants of
 * the same names there (HLB_COUNTERS: HOST_LB_COUNTERS; every CNT_* has a name in
 * COUNTER_NAMES, every HLB_* one in HOST_LB_COUNTER_NAMES): checked by
 * testbed/dataplane/contract.py when the program is loaded and by
 * tests/unit/test_header_contract.py. All integer fields are host-endian; times
 * are bpf_ktime_get_ns() (CLOCK_MONOTONIC) nanoseconds.
 */
#pragma once

/* Exact occupancy of one egress port: port_q[ifindex].
 * Packets are added when a program sends into the port and subtracted when
 * they reach the program at the far end. area_* hold sum(-t_in + t_out) over
 * packets (modulo 2^64), so the occupancy-time integral up to time T is
 * area + occupancy * T: exact time-weighted averages from atomic adds only. */
struct port_q {
    __u64 pkts;         /* current occupancy, packets */
    __u64 bytes;        /* current occupancy, bytes */
    __u64 max_pkts;
    __u64 max_bytes;
    __u64 area_pkts;    /* packet-ns integral minus occupancy * now */
    __u64 area_bytes;   /* byte-ns integral minus occupancy * now */
    __u64 tx_pkts;      /* packets sent into the port */
    __u64 tx_bytes;
    __u64 rx_pkts;      /* packets that reached the far end */
    __u64 rx_bytes;
    __u64 first_rx_ns;  /* first and last arrival at the far end */
    __u64 last_rx_ns;
    __u64 first_tx_ns;
    __u64 last_tx_ns;
    __u64 busy_ns;      /* time with at least one packet in the queue */
    __u64 busy_since;   /* start of the current busy period */
    __u64 busy_periods;
    __u64 max_giveups;  /* raises of max_pkts/max_bytes that lost 4 compare-and-swap races: the maxima may be low */
    /* Host NIC departures (filled only for a host's NIC queue, at its edge switch's ingress): */
    __u64 nic_last_ns;      /* previous data frame's departure */
    __u64 nic_work_ns;      /* work of a strictly periodic server at the paced rate, left after this departure */
    __u64 nic_work_max_ns;  /* its maximum: (max - one frame time) / frame time = frames beyond periodicity */
    __u64 nic_last_data_ns; /* previous data frame (bigger than an ACK) */
    __u64 nic_gap_max_ns;   /* longest gap between two data frames */
    __u64 nic_b2b;          /* data frames that left less than half a frame time after the previous frame */
    __u64 ecn_marked;       /* packets this port's switch marked CE on entering the queue (ecn.h) */
    __u64 nic_data_bytes;   /* bytes the NIC had sent (ACKs included) up to its last data frame */
    __u64 buf_drops;        /* data packets dropped because the port's buffer (run_cfg.buffer_bytes) was full */
    __u64 buf_ack_drops;    /* ACKs dropped so */
    __u64 nic_dry;          /* host NIC: no data frame waited in its queue when its previous data frame reached the switch */
    __u64 nic_dry_gap_max_ns; /* longest gap between two data frames that began with no data frame in the NIC's queue */
    __u64 nic_data_pkts;    /* host NIC: data frames in its queue now (its ACKs, served first, left out) */
    __u64 nic_held_gap_max_ns; /* longest gap between two data frames that began with data frames waiting: the NIC's own */
};

/* Per-flow receive counters at the destination host: flow_rx[flow id]. */
struct flow_rx {
    __u64 pkts;
    __u64 bytes;
    __u64 first_ns;
    __u64 last_ns;
    __u64 max_psn;      /* highest PSN seen + 1 (0: none yet) */
    __u64 ooo;          /* arrivals with a PSN below the highest seen */
    __u64 max_disp;     /* largest (highest PSN - PSN) at an arrival */
    __u64 ce;           /* arrivals marked CE */
    __u64 uniq;         /* transport runs: arrivals of a PSN not seen before (what the application gets) */
    __u64 dups;         /* transport runs: arrivals of a PSN already received */
    __u64 seen_base;    /* transport runs, set by the run: this flow's first word in rx_seen */
    __u64 seen_words;   /* and its number of words (one bit per PSN) */
};

/* Per-flow ACK counters at the sender: ack_rx[flow id]. */
struct ack_rx {
    __u64 acks;
    __u64 first_ns;
    __u64 last_ns;
    __u64 ecn;          /* ACKs echoing CE (BECN set) */
};

/* Per host NIC: host_lb_cnt[host id * HLB_COUNTERS + i] */
#define HLB_RECYCLED 0  /* REPS: data packets sent on a recycled entropy */
#define HLB_FRESH    1  /* REPS: on a fresh random one, after the connection's first ACK came back */
#define HLB_LABELLED 2  /* DRB, Ethereal: data packets given a path label */
#define HLB_GIVEUP   3  /* REPS: state updates that lost 4 compare-and-swap races (entropy drawn fresh) */
#define HLB_FIRST_RTT 4 /* REPS: on a fresh one before any ACK came back (the first round trip) */
#define HLB_DELAY_LOST 5 /* REPS: returned entropies overwritten in a full delay line before they were usable */
#define HLB_FROZEN   6  /* REPS: data packets sent while the connection was frozen */
#define HLB_FREEZES  7  /* REPS: times a connection entered freezing (a retransmission timeout) */
#define HLB_EXPLORE  8  /* REPS: data packets sent exploring (fresh random entropies after freezing) */
#define HLB_COUNTERS 9

/* Counter indices: counters[i]. */
#define CNT_NO_ROUTE   0   /* destination unknown: dropped */
#define CNT_NOT_IPV4   1   /* not IPv4: dropped at a switch */
#define CNT_REDIRECT_ERR 2 /* bpf_(clone_)redirect failed */
#define CNT_BAD_PORT   3   /* ingress port not in port_info */
#define CNT_ACK_ERR    4   /* a data packet could not be turned into an ACK */
#define CNT_UNREACHABLE 5  /* destination cut off by failures: dropped at the first switch that knows */
#define CNT_BAD_FLOW   6   /* a RoCEv2 packet whose flow id is beyond N_FLOWS: not counted */
#define CNT_LABEL_INVALID 7 /* host-routed: the label named an uplink that is not valid: ECMP chose instead */
#define CNT_LB_SAMPLES 8    /* runs of a switch's sampling timer (lb_sample.h): not drops */
#define CNT_LB_FLOODS  9    /* runs of a switch's flood timer */
#define CNT_LB_DECAYS  10   /* runs of a switch's DRE decay timer */
#define N_COUNTERS     11

/* rx_total indices */
#define RX_DATA 0
#define RX_ACKS 1
