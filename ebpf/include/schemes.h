/* schemes.h: the load-balancing schemes' numbers and their fixed parameters.
 *
 * Contract: SCHEME_<NAME> is testbed.models.schemes.Scheme.<NAME> (the switch
 * schemes, in switch_cfg.scheme); HOST_LB_<NAME> is Scheme.<NAME>.host_lb (the
 * host schemes, in run_cfg.host_lb; HOST_LB_NONE: none); PIPES_PER_CPU is
 * testbed.models.schemes.PIPES_PER_CPU; WOFAN_ROUNDS is
 * testbed.models.decisions.WOFAN_ROUNDS; AR_LEVELS is the number of
 * testbed.models.decisions.AR_PERCENTS. Checked by testbed/dataplane/contract.py
 * when the program is loaded and by tests/unit/test_header_contract.py. Adding a
 * scheme: docs/adding-a-scheme.md.
 */
#pragma once

/* Load-balancing schemes (testbed.models.schemes.Scheme). */
#define SCHEME_ECMP  0
#define SCHEME_OFAN  1
#define SCHEME_RPS   2
#define SCHEME_RR    3
#define SCHEME_JSQ   4
#define SCHEME_AR    5
#define SCHEME_DRILL 6
#define SCHEME_POFAN 7
#define SCHEME_HOST_ROUTED 8  /* host-routed: the uplink the packet's path label names (host_lb.h, lb_label.h) */
/* 9-11: the host schemes of testbed.models.schemes.Scheme (never in switch_cfg.scheme) */
#define SCHEME_CHOICE 12 /* DRILL(2, 0): the less loaded of two random uplinks (lb_queue.h) */
#define SCHEME_CONGA 13  /* CONGA adapted to packet spraying (lb_conga.h) */
#define SCHEME_DLB   14  /* Broadcom-style dynamic load balancing: best sampled port quality (lb_dlb.h) */
#define SCHEME_SGLB  15  /* DLB plus the next switch's flooded quality toward the destination (lb_dlb.h) */
#define SCHEME_WOFAN 16  /* weighted Ofan: per-destination rotation in rounds of eligible ports (lb_ofan.h) */

/* Host NIC load-balancing schemes, run_cfg.host_lb (testbed.models.schemes.Scheme.host_lb) */
#define HOST_LB_NONE     0
#define HOST_LB_REPS     1
#define HOST_LB_DRB      2
#define HOST_LB_ETHEREAL 3

/* switch_cfg.pipe_size value for pOfan with per-CPU pointers */
#define PIPES_PER_CPU 0
/* Weighted Ofan: the most rounds a destination key's rotation has (wofan_round entries per key) */
#define WOFAN_ROUNDS 64
/* Adaptive routing quantisation levels (thresholds in ar_thresh) */
#define AR_LEVELS 3
