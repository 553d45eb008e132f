/* maps.h: every map of the switch program, declared once.
 *
 * Sizes come from -D flags set by testbed/dataplane/compile.py:
 *   N_IFINDEX (max ifindex + 1), N_SWITCHES, N_HOSTS, W (uplinks per switch),
 *   K (ports of a switch), N_KEYS (destination keys per switch: max of the
 *   number of edge switches and k), N_PTR (pointer slots per switch and pipe),
 *   N_FLOWS (flow ids + 1: a workload's largest flow id must be below it),
 *   N_SEEN (words of rx_seen: one bit per data packet of a transport run).
 * All maps are pinned by Python after load so other processes can reach them.
 */
#pragma once
#include "shared.h"

/* ifindex => port_info */
BPF_ARRAY(port_info, struct port_info, N_IFINDEX);
/* ifindex => port_q (exact queue occupancy of that egress port) */
BPF_F_TABLE("array", int, struct port_q, port_q, N_IFINDEX, (1U << 10) /* BPF_F_MMAPABLE: read in place */);
/* switch id => switch_cfg */
BPF_ARRAY(switch_cfg, struct switch_cfg, N_SWITCHES);
/* switch id * W + uplink slot => egress ifindex */
BPF_ARRAY(uplinks, __u32, N_SWITCHES * W);
/* switch id * K + downlink slot => egress ifindex (slot: host, edge or pod index) */
BPF_ARRAY(downlinks, __u32, N_SWITCHES * K);
/* switch id * N_KEYS + destination key => bitmask of valid uplink slots */
BPF_ARRAY(uplink_mask, __u32, N_SWITCHES * N_KEYS);
/* switch id => packets dropped here because their destination is unreachable */
BPF_ARRAY(sw_drops, __u64, N_SWITCHES);
/* IPv4 daddr (network order) => dst_info */
BPF_HASH(dst_info, __u32, struct dst_info, N_HOSTS);
/* (switch id * K + pipe) * N_PTR + pointer id => Ofan/pOfan rotation pointer
 * (fetch-add counter). Ofan uses pipe 0 only; pOfan one pointer set per pipe. */
BPF_ARRAY(ofan_ptr, __u64, N_SWITCHES * K * N_PTR);
/* (switch id * N_KEYS + destination key) * WOFAN_ROUNDS + round => weighted Ofan's round: the uplink slots eligible
 * in that round (low 32 bits) and the number of rounds (high 32 bits, the same in each of the key's
 * entries; 0: no rounds, every valid uplink eligible, i.e. Ofan). Written by
 * testbed.dataplane.switches.set_wofan_rounds from testbed.models.control.routing. */
BPF_ARRAY(wofan_round, __u64, N_SWITCHES * N_KEYS * WOFAN_ROUNDS);
/* switch id * N_PTR + pointer id => pOfan pointer, one copy per CPU (no atomics) */
BPF_PERCPU_ARRAY(ofan_ptr_cpu, __u64, N_SWITCHES * N_PTR);
/* switch id => Simple RR pointer shared by all destinations (fetch-add counter) */
BPF_ARRAY(rr_ptr, __u64, N_SWITCHES);
/* switch id * DRILL_M_MAX + j => DRILL's j-th remembered uplink slot */
BPF_ARRAY(drill_mem, __u32, N_SWITCHES * DRILL_M_MAX);
/* level in [0, AR_LEVELS) => adaptive routing threshold, bytes of queue */
BPF_ARRAY(ar_thresh, __u64, AR_LEVELS);
/* i in [0, W) => P[i], the Ofan basis permutation (paper appendix F.2) */
BPF_ARRAY(ofan_basis, __u32, W);
/* flow id (RoCEv2 destination QP, 1 .. N_FLOWS - 1) => flow_rx */
BPF_ARRAY(flow_rx, struct flow_rx, N_FLOWS);
/* flow id => ack_rx (ACKs back at the sender) */
BPF_ARRAY(ack_rx, struct ack_rx, N_FLOWS);
/* RX_DATA => data packets the hosts received, RX_ACKS => ACKs (per CPU, no atomics: the sum is the count) */
BPF_PERCPU_ARRAY(rx_total, __u64, 2);
/* 0 => run_cfg */
BPF_ARRAY(run_cfg, struct run_cfg, 1);
/* switch id * W + uplink slot => packets sent up through that slot */
BPF_ARRAY(uplink_pkts, __u64, N_SWITCHES * W);
/* 0 => the per-uplink scores of the decision this CPU is making (JSQ, AR):
 * W of them do not fit the 512-byte stack at large W. A program runs to its
 * end on its CPU, so no other decision shares the entry. Not pinned. */
struct lb_scores {
    __u64 score[W];
};
BPF_PERCPU_ARRAY(lb_scratch, struct lb_scores, 1);
/* flow id => REPS state of the connection (host_lb.h); mmapped by the transport, which freezes a connection */
BPF_F_TABLE("array", int, struct reps_state, reps, N_FLOWS, (1U << 10) /* BPF_F_MMAPABLE */);
/* (host * PATH_CLASSES + path class) * REPS_DELAY_SLOTS + i => REPS's delay line of returned entropies */
BPF_ARRAY(reps_delay, struct reps_pending, N_HOSTS * PATH_CLASSES * REPS_DELAY_SLOTS);
/* host * PATH_CLASSES + path class => that delay line's cursors */
BPF_ARRAY(reps_cursor, struct reps_cursor, N_HOSTS * PATH_CLASSES);
/* flow id * N_CLASSES + size class => DRB rotation pointer (fetch-add counter) */
BPF_ARRAY(drb_ptr, __u64, N_FLOWS * N_CLASSES);
/* source edge (global index) * N_EDGES + destination edge => bitmask of the host-routed paths valid for both
 * ends: bit agg * W + core between pods of a fat tree, bit agg (or spine) within a pod (host_lb.h) */
BPF_ARRAY(host_paths, __u64, N_EDGES * N_EDGES);
/* host id * HLB_COUNTERS + HLB_* => count */
BPF_ARRAY(host_lb_cnt, __u64, N_HOSTS * HLB_COUNTERS);
/* switch id * N_HOSTS + destination host => packets a top-tier switch (core, or spine of a leaf-spine)
 * forwarded to that host: how each destination's traffic spreads over the bouncing layer */
BPF_ARRAY(top_dst_pkts, __u64, N_SWITCHES * N_HOSTS);
/* flow_rx[flow].seen_base + PSN / 64 => bit PSN % 64 set once that PSN arrived (transport runs, run_cfg.cc) */
BPF_F_TABLE("array", int, __u64, rx_seen, N_SEEN, (1U << 10) /* BPF_F_MMAPABLE: zeroed in place */);
/* struct ack_event per ACK back at its sender, read by the user-space transport (transport runs) */
BPF_RINGBUF_OUTPUT(ack_events, ACK_EVENT_PAGES);
/* 0 => lb_cfg, the sampled schemes' settings (lb_sample.h) */
BPF_ARRAY(lb_cfg, struct lb_cfg, 1);
/* ifindex of a switch port => lb_port, its sampled state (DLB quality, CONGA DRE) */
BPF_ARRAY(lb_port, struct lb_port, N_IFINDEX);
/* switch id * LB_TICKS + LB_TICK_* => the last epoch that timer of the switch ran in */
BPF_ARRAY(lb_epoch, __u64, N_SWITCHES * LB_TICKS);
/* switch id * K + port number (port_info.local) => ifindex: every port of a switch, for its timers */
BPF_ARRAY(sw_ports, __u32, N_SWITCHES * K);
/* switch id * N_KEYS + destination edge (global index) => SGLB: the quality band toward that edge the switch
 * last flooded to its neighbours (aggregation and top switches; lb_sample.h) */
BPF_ARRAY(sglb_view, __u32, N_SWITCHES * N_KEYS);
/* (edge * N_EDGES + destination edge) * W + tag => CONGA's Congestion-To-Leaf: the path's metric, from feedback,
 * as a delay line (usable one propagation round trip after it arrived) */
BPF_ARRAY(conga_to, struct conga_fb, N_EDGES * N_EDGES * W);
/* (edge * N_EDGES + source edge) * W + tag => CONGA's Congestion-From-Leaf: the CE that arrived on that path */
BPF_ARRAY(conga_from, struct conga_entry, N_EDGES * N_EDGES * W);
/* edge * N_EDGES + destination edge => CONGA: which tag's metric the next packet feeds back (fetch-add) */
BPF_ARRAY(conga_fb_ptr, __u64, N_EDGES * N_EDGES);
/* CNT_* => count */
BPF_ARRAY(counters, __u64, N_COUNTERS);

static __always_inline void maps_count(__u32 idx)
{
    __u64 *c = counters.lookup(&idx);
    if (c)
        __sync_fetch_and_add(c, 1);
}
