/* shared.h: structs and constants shared between the eBPF switch and Python.
 *
 * Contract: every struct here is mirrored once, field by field, in
 * testbed/dataplane/maps.py (ctypes). Change both together. All integer fields are
 * host-endian; times are bpf_ktime_get_ns() (CLOCK_MONOTONIC) nanoseconds.
 */
#pragma once

/* Node tiers (testbed.topology.Level). */
#define LEVEL_HOST 0
#define LEVEL_EDGE 1
#define LEVEL_AGG  2
#define LEVEL_CORE 3

/* Load-balancing schemes (testbed.dataplane.schemes.Scheme). */
#define SCHEME_ECMP  0
#define SCHEME_OFAN  1
#define SCHEME_RPS   2
#define SCHEME_RR    3
#define SCHEME_JSQ   4
#define SCHEME_AR    5
#define SCHEME_DRILL 6
#define SCHEME_POFAN 7

/* switch_cfg.pipe_size value for pOfan with per-CPU pointers */
#define PIPES_PER_CPU 0
/* Adaptive routing quantisation levels (thresholds in ar_thresh) */
#define AR_LEVELS 3

/* Packet size classes for per-destination pointers (paper section 4.1). */
#define CLASS_DATA  0
#define CLASS_SMALL 1
#define N_CLASSES   2
#define SMALL_MAX_BYTES 256  /* frames shorter than this use CLASS_SMALL */

/* Port of a switch or host: port_info[ifindex]. */
struct port_info {
    __u32 node;         /* switch id (switches) or host id (hosts) */
    __u32 level;        /* LEVEL_* of the node owning this port */
    __u32 peer_ifindex; /* ifindex of the other end of the link */
    __u32 stage;        /* testbed.topology.Stage of this port's egress */
    __u32 to_host;      /* 1 if the peer is a host */
    __u32 local;        /* port number inside its switch: downlinks first, then uplinks */
    __u8  mac[8];       /* this port's MAC (6 bytes used) */
};

/* Per-switch configuration: switch_cfg[switch id]. */
struct switch_cfg {
    __u32 level;
    __u32 pod;
    __u32 index;        /* edge/agg index inside the pod */
    __u32 edge_global;  /* pod * k/2 + index, edges only */
    __u32 scheme;       /* SCHEME_* */
    __u32 seed;         /* ECMP hash seed */
    __u32 pipe_size;    /* pOfan: ports per pipe, or PIPES_PER_CPU */
    __u32 pad;
};

/* Where a destination address lives: dst_info[IPv4 daddr, network order]. */
struct dst_info {
    __u32 host;
    __u32 pod;
    __u32 edge;         /* edge index inside the pod */
    __u32 edge_global;
    __u32 slot;         /* host index under its edge */
    __u32 pad;
    __u8  mac[8];
};

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
    __u64 nic_last_ns;      /* previous departure */
    __u64 nic_work_ns;      /* work of a strictly periodic server at the paced rate, left after this departure */
    __u64 nic_work_max_ns;  /* its maximum: (max - one frame time) / frame time = frames beyond periodicity */
    __u64 nic_last_data_ns; /* previous data frame (bigger than an ACK) */
    __u64 nic_gap_max_ns;   /* longest gap between two data frames */
    __u64 nic_b2b;          /* data frames that left less than half a frame time after the previous frame */
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
};

/* Per-flow ACK counters at the sender: ack_rx[flow id]. */
struct ack_rx {
    __u64 acks;
    __u64 first_ns;
    __u64 last_ns;
};

/* Run-wide settings: run_cfg[0]. */
struct run_cfg {
    __u32 acks;         /* 1: receivers answer every data packet with an ACK */
    __u32 nic_ps_per_byte; /* host NICs' paced rate as picoseconds per byte (0: no NIC accounting) */
};

#define ACK_FRAME_BYTES 62  /* 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 4 AETH + 4 ICRC */

/* Counter indices: counters[i]. */
#define CNT_NO_ROUTE   0   /* destination unknown: dropped */
#define CNT_NOT_IPV4   1   /* not IPv4: dropped at a switch */
#define CNT_REDIRECT_ERR 2 /* bpf_(clone_)redirect failed */
#define CNT_BAD_PORT   3   /* ingress port not in port_info */
#define CNT_ACK_ERR    4   /* a data packet could not be turned into an ACK */
#define CNT_UNREACHABLE 5  /* destination cut off by failures: dropped at the first switch that knows */
#define CNT_BAD_FLOW   6   /* a RoCEv2 packet whose flow id is beyond N_FLOWS: not counted */

/* rx_total indices */
#define RX_DATA 0
#define RX_ACKS 1
#define N_COUNTERS     8
