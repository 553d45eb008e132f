/* reps.h: the state of REPS, the host NICs' recycled entropies (host_lb.h).
 *
 * Contract: the programs keep it; Python zeroes it between runs and the transport
 * (traffic/acks.c, through the pinned reps map: traffic/sender.h includes this
 * header) freezes a connection by writing its frozen_until. The structs are
 * mirrored field by field in testbed/dataplane/maps.py (RepsState, RepsPending,
 * RepsCursor: checked against the compiled program when it is loaded), the
 * constants by REPS_SLOTS, PATH_CLASSES and REPS_DELAY_SLOTS there, and the model
 * of a connection (testbed.models.host.RepsState) packs `ctl` as
 * REPS_HEAD_SHIFT, REPS_COUNT_SHIFT and REPS_ACKED say: checked by
 * testbed/dataplane/contract.py when the program is loaded and by
 * tests/unit/test_header_contract.py.
 */
#pragma once

/* REPS: entropies per connection (uet-htsim uec_mp.h: 8-slot circular buffer) */
#define REPS_SLOTS 8
/* reps_state.ctl: valid bits 0-7, head from bit REPS_HEAD_SHIFT, count from bit REPS_COUNT_SHIFT, any ACK back */
#define REPS_HEAD_SHIFT 8
#define REPS_COUNT_SHIFT 12
#define REPS_ACKED (1ULL << 16)
/* REPS's delay line (host_lb.h): the entropies ACKs bring back wait here, per host NIC and path class, until
 * one propagation round trip after their ACK reached the NIC. A path class is a path's number of links: 2, 4 or
 * 6 (class = links / 2 - 1). A line holds REPS_DELAY_SLOTS ACKs; the propagation a run may ask for with REPS is
 * bounded by it (testbed.run.params). */
#define PATH_CLASSES 3
#define REPS_DELAY_LOG2 10
#define REPS_DELAY_SLOTS (1 << REPS_DELAY_LOG2)
#define REPS_DRAIN_MAX 8   /* ready entries applied per packet sent or ACK received */
#define REPS_EXPLORE_PKTS 16 /* fresh random entropies after a connection leaves freezing (uet-htsim) */

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
