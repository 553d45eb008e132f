/* sampled.h: the run-wide settings and state of the switch schemes that keep state beyond a queue: the
 * sampled schemes (DLB, SGLB: lb_sample.h, lb_dlb.h), CONGA (lb_conga.h) and DRILL's (d, m) (lb_queue.h).
 *
 * Contract: lb_cfg[0] is written by Python (testbed/dataplane/switches.py, from
 * testbed.models.sampled.settings) and only read by the programs; lb_port, the CONGA
 * tables and lb_epoch are the programs' own. The structs are mirrored field by field
 * in testbed/dataplane/maps.py (LbCfg, LbPort, CongaEntry, CongaSlot, CongaFb: checked
 * against the compiled program when it is loaded), LB_DECAY_STEPS and CONGA_FB_SLOTS
 * by the constants of those names there; the LB_* bits, ticks and bands and
 * DRILL_D_MAX, DRILL_M_MAX by testbed.models.sampled: checked by
 * testbed/dataplane/contract.py when the program is loaded and by
 * tests/unit/test_header_contract.py. Intervals are ns; an epoch is now / interval.
 */
#pragma once

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
/* CONGA's fed-back metrics (lb_conga.h): each Congestion-To-Leaf entry is a short delay line */
#define CONGA_FB_SLOTS 4

/* Run-wide settings of the switch schemes: the sampled schemes' timers and thresholds, DRILL's d and m: lb_cfg[0]
 * (testbed.models.sampled). */
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
