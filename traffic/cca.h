/* cca.h: the congestion-control algorithms of the user-space transport.
 *
 * Contract. Pure functions of one flow's state: no clock, no I/O, no
 * locks (the caller holds its host's lock). Windows are in packets of the
 * flow's payload (the MSS), times in nanoseconds of the emulated clock.
 *   cca_init()     the flow's starting state: a window of one BDP.
 *   cca_on_ack()   one ACK of a packet not acknowledged before, acted on at
 *                  `now`, with the round trip the model says it had (the
 *                  fabric's measured round trip plus the emulated base RTT)
 *                  and its CE echo. Returns the rule that fired (CCA_R_*),
 *                  for the window traces.
 *   cca_on_loss()  a fast retransmission (duplicate-ACK threshold reached).
 *   cca_on_rto()   a retransmission timeout.
 * The rules (docs/traffic.md, "Congestion control", has the sources and constants):
 *   dctcp  alpha <- (1 - g) alpha + g F once per RTT (F: fraction of marked
 *          ACKs in it); on a marked ACK at most one cut per RTT,
 *          cwnd <- cwnd (1 - alpha / 2); else cwnd += 1 / cwnd; loss halves.
 *   swift  delay-target window: RTT below the target, cwnd += ai / cwnd;
 *          above, at most once per RTT, cwnd <- cwnd max(1 - beta (rtt -
 *          target) / rtt, 1 - max_mdf); loss: cwnd (1 - max_mdf).
 *   nscc   UEC's four cases on (ECN, queueing delay against the target):
 *          no ECN and delay >= target: fair increase; no ECN and below:
 *          proportional increase (fast increase after a whole window with
 *          almost no delay); ECN and delay >= target: multiplicative
 *          decrease, at most once per base RTT; ECN and below: no change.
 *          Increases go in as cwnd += inc / cwnd, plus eta once per RTT.
 *          Quick adapt on loss or delay above 4 targets.
 * Every window stays in [min_cwnd, max_cwnd].
 */
#pragma once
#include <stdint.h>

enum { CCA_NONE = 0, CCA_DCTCP = 1, CCA_SWIFT = 2, CCA_NSCC = 3 };

/* the rule an ACK fired, for the traces */
enum {
    CCA_R_INCREASE = 0,   /* dctcp, swift: additive increase */
    CCA_R_DECREASE = 1,   /* dctcp cut, swift or nscc multiplicative decrease */
    CCA_R_HELD = 2,       /* a decrease was due but one already happened in the last RTT */
    CCA_R_FAIR = 3,       /* nscc: no ECN, delay >= target */
    CCA_R_PROP = 4,       /* nscc: no ECN, delay < target */
    CCA_R_FAST = 5,       /* nscc: fast increase */
    CCA_R_NOCHANGE = 6,   /* nscc: ECN, delay < target */
    CCA_R_LOSS = 7,       /* cca_on_loss */
    CCA_R_RTO = 8,        /* cca_on_rto */
    CCA_R_QUICK = 9,      /* nscc quick adapt */
};

struct cca_params {
    int kind;
    double base_rtt_ns;  /* the flow's round trip on an idle path: emulated base RTT + serialisation */
    double init_cwnd, min_cwnd, max_cwnd; /* packets */
    double dctcp_g;      /* 1/16 */
    double swift_target_ns; /* target RTT: base + target queueing delay */
    double swift_ai, swift_beta, swift_max_mdf;
    double nscc_target_ns;  /* target queueing delay (RTT - base RTT) */
    double nscc_alpha;   /* packets per ns of delay below target, per packet acked */
    double nscc_fi, nscc_eta, nscc_gamma, nscc_fi_scale, nscc_ewma, nscc_fast_ns;
};

struct cca {
    double cwnd;
    double srtt_ns;
    /* dctcp */
    double alpha;
    uint32_t win_acked, win_marked;
    uint64_t win_start_ns, last_cut_ns;
    /* nscc */
    double avg_delay_ns, inc;
    uint64_t last_eta_ns, fast_since_ns, epoch_start_ns;
    uint32_t epoch_acked, last_epoch_acked;
    int fast_ok;
};

void cca_init(struct cca *c, const struct cca_params *p, uint64_t now_ns);
int cca_on_ack(struct cca *c, const struct cca_params *p, uint64_t now_ns, double rtt_ns, int ecn);
int cca_on_loss(struct cca *c, const struct cca_params *p, uint64_t now_ns);
int cca_on_rto(struct cca *c, const struct cca_params *p, uint64_t now_ns);
