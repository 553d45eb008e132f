/* shared.h: everything the programs share with Python and with the senders, one include for all of it.
 *
 * Contract: this header only includes the headers of the C-Python contract, one per
 * concern, each saying in its own contract comment what it holds and which Python
 * module mirrors it:
 *   topology.h  node tiers, ports, switches and destinations (port_info, switch_cfg, dst_info)
 *   schemes.h   the schemes' numbers (SCHEME_*, HOST_LB_*) and fixed parameters
 *   wire.h      the frame format, size classes, ACK priority and path labels
 *   counters.h  what the programs count (port_q, flow_rx, ack_rx, CNT_*, RX_*, HLB_*)
 *   run.h       the run-wide settings (run_cfg, ECN_*) and the transport's ACK events
 *   reps.h      REPS's per-connection state and delay lines
 *   sampled.h   the sampled schemes', CONGA's and DRILL's settings and state (lb_cfg, lb_port, conga_*)
 * Every struct is mirrored once, field by field, in testbed/dataplane/maps.py
 * (ctypes) and checked against the compiled program when it is loaded
 * (testbed.dataplane.compile.check_mirrors); every #define of these headers is
 * mirrored in Python or listed as C-only in testbed/dataplane/contract.py, which
 * checks the values on every load and in tests/unit/test_header_contract.py.
 * Change both sides together. The senders (traffic/sender.h) include this header
 * too: traffic/sender.py rebuilds them when any header it pulls in changes
 * (ebpf.headers). All integer fields are host-endian; times are
 * bpf_ktime_get_ns() (CLOCK_MONOTONIC) nanoseconds.
 */
#pragma once
#include "topology.h"
#include "schemes.h"
#include "wire.h"
#include "counters.h"
#include "run.h"
#include "reps.h"
#include "sampled.h"
