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
#define SCHEME_HOST_ROUTED 8  /* host-routed: the uplink the packet's path label names (host_lb.h, lb_label.h) */
/* 9-11: the host schemes of testbed.dataplane.schemes.Scheme (never in switch_cfg.scheme) */
#define SCHEME_CHOICE 12 /* DRILL(2, 0): the less loaded of two random uplinks (lb_queue.h) */
#define SCHEME_CONGA 13  /* CONGA adapted to packet spraying (lb_conga.h) */
#define SCHEME_DLB   14  /* Broadcom-style dynamic load balancing: best sampled port quality (lb_dlb.h) */
#define SCHEME_SGLB  15  /* DLB plus the next switch's flooded quality toward the destination (lb_dlb.h) */

/* Host NIC load-balancing schemes, run_cfg.host_lb (testbed.dataplane.schemes.Scheme.host_lb) */
#define HOST_LB_NONE     0
#define HOST_LB_REPS     1
#define HOST_LB_DRB      2
#define HOST_LB_ETHEREAL 3

/* A path label in the UDP source port (host-routed schemes): LABEL_TAG | agg index << 5 | core index.
 * The source edge switch takes the uplink of the aggregation index, the source aggregation switch that of
 * the core index (W <= 32). */
#define LABEL_TAG  0xC000
#define LABEL_MASK 0xFC00
#define LABEL_BITS 5
/* REPS: entropies per connection (uet-htsim uec_mp.h: 8-slot circular buffer) */
#define REPS_SLOTS 8
/* REPS's delay line (host_lb.h): the entropies ACKs bring back wait here, per host NIC and path class, until
 * one propagation round trip after their ACK reached the NIC. A path class is a path's number of links: 2, 4 or
 * 6 (class = links / 2 - 1). A line holds REPS_DELAY_SLOTS ACKs; the propagation a run may ask for with REPS is
 * bounded by it (testbed.run.params). */
#define PATH_CLASSES 3
#define REPS_DELAY_LOG2 10
#define REPS_DELAY_SLOTS (1 << REPS_DELAY_LOG2)
#define REPS_DRAIN_MAX 8   /* ready entries applied per packet sent or ACK received */
#define REPS_EXPLORE_PKTS 16 /* fresh random entropies after a connection leaves freezing (uet-htsim) */
/* CONGA's fed-back metrics (lb_conga.h): each Congestion-To-Leaf entry is a short delay line */
#define CONGA_FB_SLOTS 4

/* switch_cfg.pipe_size value for pOfan with per-CPU pointers */
#define PIPES_PER_CPU 0
/* Adaptive routing quantisation levels (thresholds in ar_thresh) */
#define AR_LEVELS 3

/* Packet size classes for per-destination pointers (paper section 4.1). */
#define CLASS_DATA  0
#define CLASS_SMALL 1
#define N_CLASSES   2
#define SMALL_MAX_BYTES 256  /* frames shorter than this use CLASS_SMALL */
/* skb->priority of an ACK (a CLASS_SMALL frame) as it joins a queue: the class 10:1 of the HTB that orders each
 * link's TBF when a fabric serves ACKs first (testbed.fabric.netlink.ack_priority); 0 for data, whose default
 * class is 10:2 */
#define ACK_PRIORITY 0x00100001

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
    __u32 top;          /* 1 for a switch with no uplinks (a core, or a spine of a leaf-spine) */
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

/* REPS state of one connection: reps[flow id]. `ctl` packs the valid bits of the 8 slots (bits 0-7), the
 * head (bits 8-10: the slot the next recycled entropy is written to), the number of valid slots
 * (bits 12-15) and whether any ACK came back yet (bit 16); it changes by compare-and-swap only, so the
 * NIC's transmit (a packet takes the oldest valid entropy) and its ingress (an ACK returns one) may run
 * on two CPUs at once. */
struct reps_state {
    __u64 ctl;
    __u16 ev[REPS_SLOTS];
    __u64 frozen_until; /* freezing (host_lb.h): while now < this, cycle through ev[] valid or not; 0: not frozen.
                         * Written by the transport (traffic/acks.c) on a retransmission timeout */
    __u64 frozen_pos;   /* the next slot a frozen connection sends on */
    __u64 explore;      /* packets still to send on fresh random entropies (after leaving freezing) */
};

/* One ACK's entropy in a delay line: reps_delay[(host * PATH_CLASSES + class) * REPS_DELAY_SLOTS + i % SLOTS].
 * meta packs flow (bits 0-23), entropy (24-39), marked (40) and a generation (48-55: (i / SLOTS + 1) mod 256),
 * written last, so a reader knows entry i from a stale one. */
struct reps_pending {
    __u64 ready_ns;     /* when the entropy becomes usable: the ACK's arrival + the path's propagation RTT */
    __u64 meta;
};

/* A delay line's cursors: reps_cursor[host * PATH_CLASSES + class] (entries [tail, head) are waiting). */
struct reps_cursor {
    __u64 head;         /* entries written (fetch-add by the ACK path) */
    __u64 tail;         /* entries applied or skipped (compare-and-swap by whoever drains) */
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

/* Run-wide settings: run_cfg[0]. */
struct run_cfg {
    __u32 acks;         /* 1: receivers answer every data packet with an ACK */
    __u32 nic_ps_per_byte; /* host NICs' paced rate as picoseconds per byte (0: no NIC accounting) */
    __u32 host_lb;      /* HOST_LB_*: the host NICs' load-balancing scheme */
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

#define ECN_OFF   0
#define ECN_BYTES 1
#define ECN_PKTS  2

#define ACK_FRAME_BYTES 62  /* 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 4 AETH + 4 ICRC */
#define DATA_PAYLOAD_OFF 54 /* a data frame's payload, after its BTH: transport runs stamp it there */
#define ACK_ECHO_OFF 58     /* an ACK's ICRC slot: transport runs echo the data frame's stamp there */
#define ACK_EVENT_PAGES 256 /* ack_events: 1 MB, 43,000 events */

/* The emulated timers of the sampled schemes (lb_sample.h): lb_cfg.active bits, what runs */
#define LB_SAMPLE 1  /* DLB, SGLB: every switch port's load and queue sampled each sample_ns */
#define LB_FLOOD  2  /* SGLB: aggregation and top switches flood their qualities each flood_ns */
#define LB_CONGA  4  /* CONGA: a DRE on every switch port (decayed each dre_ns), CE and feedback in the IPv4 ID */
#define LB_TICK_SAMPLE 0 /* lb_epoch[sw * LB_TICKS + LB_TICK_*]: the last epoch each timer ran in */
#define LB_TICK_FLOOD  1
#define LB_TICK_DRE    2
#define LB_TICKS       3
#define LB_BANDS       8   /* quality bands 0 (best) .. 7, CONGA metrics 0 .. 7 (3 bits) */
#define LB_DECAY_STEPS 64  /* CONGA: decay factors for 0 .. 63 elapsed DRE periods (more: as 63) */
#define DRILL_D_MAX 4      /* DRILL(d, m): at most 4 samples and 2 remembered uplinks per decision */
#define DRILL_M_MAX 2

/* Run-wide settings of the switch schemes: the sampled schemes' timers and thresholds, DRILL's d and m: lb_cfg[0]
 * (testbed.dataplane.sampled). Intervals are ns; an epoch is now / interval. */
struct lb_cfg {
    __u32 active;        /* LB_* bits: which timers run */
    __u32 ewma_shift;    /* DLB load and queue EWMA: avg += (sample - avg) / 2^shift per sample */
    __u32 load_weight;   /* DLB quality = (load_weight * load band + (8 - load_weight) * queue band) / 8 */
    __u32 conga_age;     /* CONGA: a table entry older than this many DRE periods reads 0 */
    __u32 edges_per_pod; /* the fabric's (SGLB's flood: which pod a destination edge is in) */
    __u32 drill;         /* the drill scheme's DRILL(d, m): d | m << 8 (0: d = 2, m = 1) */
    __u64 sample_ns;     /* DLB, SGLB: sampling interval */
    __u64 flood_ns;      /* SGLB: flood interval */
    __u64 dre_ns;        /* CONGA: T_dre */
    __u64 load_lo;       /* DLB load bands: bytes transmitted per sample_ns; at or below lo: band 0 */
    __u64 load_hi;       /* at or above hi: band 7; in between: 1 .. 6, linearly */
    __u64 queue_lo;      /* DLB queue bands, bytes queued, likewise */
    __u64 queue_hi;
    __u64 conga_ctau;    /* CONGA: bytes a port sends in tau = T_dre / alpha at line rate: metric = 8 DRE / ctau */
    __u32 decay[LB_DECAY_STEPS]; /* CONGA: 65536 (1 - alpha)^n, the DRE's decay over n periods */
};

/* Sampled state of one switch port: lb_port[ifindex]. */
struct lb_port {
    __u64 dre;           /* CONGA: bytes sent into the port, decayed each dre_ns (the DRE's X) */
    __u64 last_rx;       /* DLB: port_q.rx_bytes at the previous sample */
    __u64 load;          /* DLB: EWMA of bytes transmitted per sampling interval */
    __u64 queue;         /* DLB: EWMA of bytes queued at the samples */
    __u32 quality;       /* DLB: the port's quality band, 0 (best) .. 7, of the last sample */
    __u32 pad;
};

/* A CONGA table entry: conga_from[(edge * N_EDGES + other edge) * W + tag]. */
struct conga_entry {
    __u32 metric;        /* 0 .. 7 */
    __u32 pad;
    __u64 epoch;         /* the DRE period it was written in */
};

/* A fed-back metric on its way: one slot of a Congestion-To-Leaf delay line (lb_conga.h). */
struct conga_slot {
    __u32 metric;        /* 0 .. 7 */
    __u32 pad;
    __u64 epoch;         /* the DRE period it becomes usable in */
    __u64 ready_ns;      /* usable from then: its last write + the edges' propagation RTT (0: never written) */
    __u64 open_ns;       /* its first write: a slot takes every write for half a round trip, then the next opens */
};

/* conga_to[(edge * N_EDGES + destination edge) * W + tag]: Congestion-To-Leaf, the path's metric from feedback. */
struct conga_fb {
    struct conga_slot slot[CONGA_FB_SLOTS];
    __u64 head;          /* the slot written last */
};

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

/* rx_total indices */
#define RX_DATA 0
#define RX_ACKS 1
#define N_COUNTERS     11
