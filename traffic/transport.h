/* transport.h: one flow's reliable, window-limited delivery in the user-space transport.
 *
 * Contract. Pure functions of one flow's state (no clock, no I/O, no
 * locks: the caller holds its host's lock). A packet is identified by its
 * PSN, 0 .. npkts - 1; each is UNSENT, INFLIGHT, ACKED or LOST (declared
 * lost and waiting to be sent again).
 *   tp_init()      state for npkts packets, a duplicate-ACK threshold and
 *                  the congestion controller's parameters.
 *   tp_next()      the PSN to send now, if the window allows one: the lowest
 *                  LOST packet first, else the next new one. It becomes
 *                  INFLIGHT. Returns 0 when nothing may be sent.
 *   tp_ack()       one ACK (every data packet that arrives is acknowledged
 *                  with its own PSN: a selective ACK). A packet acknowledged
 *                  twice was received twice; that ACK feeds nothing. The
 *                  cumulative point `una` (lowest PSN not acknowledged) is
 *                  what a cumulative-ACK receiver would report: an ACK that
 *                  does not advance it is a duplicate ACK, and the
 *                  `dupthresh`-th one in a row declares `una` lost (fast
 *                  retransmission, once per recovery: NewReno; a partial
 *                  ACK in recovery declares the next hole lost at once).
 *                  Such a retransmission goes out at once, even when the
 *                  window is full, as TCP's fast retransmission does.
 *   tp_rto()       when nothing advanced `una` for a retransmission
 *                  timeout with packets in flight: every packet in flight is
 *                  declared lost (the receiver's selective ACKs say what
 *                  arrived), the window restarts, the timeout doubles.
 * Counters: retransmissions, fast retransmissions, timeouts, ACKs of
 * packets acknowledged before (duplicates at the receiver), ACKs of packets
 * declared lost that were not (spurious).
 */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "cca.h"

enum { TP_UNSENT = 0, TP_INFLIGHT = 1, TP_ACKED = 2, TP_LOST = 3 };

struct tp_flow {
    uint32_t npkts, dupthresh;
    uint8_t *st;
    uint32_t next_new, una, inflight, acked, dupacks, recover, lost;
    uint32_t rtx_now;     /* fast retransmissions owed at once, whatever the window (as TCP's) */
    int in_recovery;
    uint64_t progress_ns; /* last time una advanced, or the pipe was empty when a packet went out */
    double rttvar_ns, min_rto_ns;
    int backoff;
    uint64_t retransmits, fast_rtx, rtos, acks, ecn_acks, acked_twice, spurious;
    struct cca cc;
    const struct cca_params *p;
};

int tp_init(struct tp_flow *f, uint32_t npkts, uint32_t dupthresh, const struct cca_params *p, double min_rto_ns,
            uint64_t now_ns);
void tp_free(struct tp_flow *f);
int tp_next(struct tp_flow *f, uint64_t now_ns, uint32_t *psn, int *retransmit);
int tp_can_send(const struct tp_flow *f);
/* returns the CCA rule (CCA_R_*) the ACK fired, or -1 when it fed nothing */
int tp_ack(struct tp_flow *f, uint64_t now_ns, uint32_t psn, double rtt_ns, int ecn);
double tp_rto_ns(const struct tp_flow *f);
int tp_rto_due(const struct tp_flow *f, uint64_t now_ns);
void tp_rto(struct tp_flow *f, uint64_t now_ns);
size_t tp_sizeof(void);
/* una, inflight, acked, lost, retransmits, fast_rtx, rtos, spurious, in_recovery, dupacks */
void tp_stats(const struct tp_flow *f, uint64_t out[10]);
static inline int tp_done(const struct tp_flow *f) { return f->acked == f->npkts; }
