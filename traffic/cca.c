/* cca.c: the rules of cca.h. */
#include "cca.h"

static double clamp(const struct cca_params *p, double w)
{
    return w < p->min_cwnd ? p->min_cwnd : w > p->max_cwnd ? p->max_cwnd : w;
}

void cca_init(struct cca *c, const struct cca_params *p, uint64_t now_ns)
{
    *c = (struct cca){.cwnd = clamp(p, p->init_cwnd), .srtt_ns = p->base_rtt_ns, .alpha = 1.0,
                      .win_start_ns = now_ns, .last_eta_ns = now_ns, .fast_since_ns = now_ns,
                      .epoch_start_ns = now_ns, .fast_ok = 1};
}

/* a decrease at most once per `period` */
static int may_decrease(uint64_t now, uint64_t last, double period)
{
    return last == 0 || (double)(now - last) >= period;
}

static int dctcp_ack(struct cca *c, const struct cca_params *p, uint64_t now, int ecn)
{
    c->win_acked++;
    c->win_marked += ecn != 0;
    if ((double)(now - c->win_start_ns) >= c->srtt_ns) { /* one RTT: the marked fraction enters alpha */
        double f = c->win_acked ? (double)c->win_marked / c->win_acked : 0.0;
        c->alpha = (1 - p->dctcp_g) * c->alpha + p->dctcp_g * f;
        c->win_acked = c->win_marked = 0;
        c->win_start_ns = now;
    }
    if (ecn) {
        if (!may_decrease(now, c->last_cut_ns, c->srtt_ns))
            return CCA_R_HELD;
        c->cwnd = clamp(p, c->cwnd * (1 - c->alpha / 2));
        c->last_cut_ns = now;
        return CCA_R_DECREASE;
    }
    c->cwnd = clamp(p, c->cwnd + 1.0 / c->cwnd);
    return CCA_R_INCREASE;
}

static int swift_ack(struct cca *c, const struct cca_params *p, uint64_t now, double rtt)
{
    if (rtt < p->swift_target_ns) {
        c->cwnd = clamp(p, c->cwnd + p->swift_ai / c->cwnd);
        return CCA_R_INCREASE;
    }
    if (!may_decrease(now, c->last_cut_ns, c->srtt_ns))
        return CCA_R_HELD;
    double f = 1 - p->swift_beta * (rtt - p->swift_target_ns) / rtt;
    if (f < 1 - p->swift_max_mdf)
        f = 1 - p->swift_max_mdf;
    c->cwnd = clamp(p, c->cwnd * f);
    c->last_cut_ns = now;
    return CCA_R_DECREASE;
}

/* nscc quick adapt: a window that achieved less than an eighth of the largest one restarts from what it
 * achieved */
static int nscc_quick_adapt(struct cca *c, const struct cca_params *p)
{
    double achieved = c->last_epoch_acked;
    if (achieved < p->max_cwnd / 8 && achieved < c->cwnd) {
        c->cwnd = clamp(p, achieved);
        return 1;
    }
    return 0;
}

static int nscc_ack(struct cca *c, const struct cca_params *p, uint64_t now, double rtt, int ecn)
{
    double delay = rtt - p->base_rtt_ns;
    if (delay < 0)
        delay = 0;
    c->avg_delay_ns = c->avg_delay_ns == 0 ? delay : (1 - p->nscc_ewma) * c->avg_delay_ns + p->nscc_ewma * delay;
    c->epoch_acked++;
    if ((double)(now - c->epoch_start_ns) >= p->base_rtt_ns) {
        c->last_epoch_acked = c->epoch_acked;
        c->epoch_acked = 0;
        c->epoch_start_ns = now;
    }
    if (delay > 4 * p->nscc_target_ns && nscc_quick_adapt(c, p))
        return CCA_R_QUICK;
    int rule;
    double target = p->nscc_target_ns;
    if (delay > p->nscc_fast_ns)
        c->fast_ok = 0;
    if ((double)(now - c->fast_since_ns) >= c->srtt_ns) { /* a window has passed: was all of it fast? */
        int fast = c->fast_ok;
        c->fast_ok = 1;
        c->fast_since_ns = now;
        if (fast && !ecn && delay < target) {
            c->cwnd = clamp(p, c->cwnd + c->cwnd * p->nscc_fi_scale);
            return CCA_R_FAST;
        }
    }
    if (!ecn && delay >= target) {
        c->inc += p->nscc_fi;
        rule = CCA_R_FAIR;
    } else if (!ecn) {
        c->inc += p->nscc_alpha * (target - delay);
        rule = CCA_R_PROP;
    } else if (delay >= target) {
        if (!may_decrease(now, c->last_cut_ns, p->base_rtt_ns))
            return CCA_R_HELD;
        double avg = c->avg_delay_ns > target ? c->avg_delay_ns : delay;
        double f = 1 - p->nscc_gamma * (avg - target) / avg;
        c->cwnd = clamp(p, c->cwnd * (f < 0.5 ? 0.5 : f));
        c->last_cut_ns = now;
        c->inc = 0;
        return CCA_R_DECREASE;
    } else {
        return CCA_R_NOCHANGE;
    }
    c->cwnd = clamp(p, c->cwnd + c->inc / c->cwnd);
    c->inc = 0;
    if ((double)(now - c->last_eta_ns) >= c->srtt_ns) {
        c->cwnd = clamp(p, c->cwnd + p->nscc_eta);
        c->last_eta_ns = now;
    }
    return rule;
}

int cca_on_ack(struct cca *c, const struct cca_params *p, uint64_t now_ns, double rtt_ns, int ecn)
{
    c->srtt_ns = 0.875 * c->srtt_ns + 0.125 * rtt_ns;
    switch (p->kind) {
    case CCA_DCTCP:
        return dctcp_ack(c, p, now_ns, ecn);
    case CCA_SWIFT:
        return swift_ack(c, p, now_ns, rtt_ns);
    case CCA_NSCC:
        return nscc_ack(c, p, now_ns, rtt_ns, ecn);
    }
    return CCA_R_INCREASE;
}

int cca_on_loss(struct cca *c, const struct cca_params *p, uint64_t now_ns)
{
    switch (p->kind) {
    case CCA_DCTCP:
        c->cwnd = clamp(p, c->cwnd / 2);
        c->last_cut_ns = now_ns;
        break;
    case CCA_SWIFT:
        if (may_decrease(now_ns, c->last_cut_ns, c->srtt_ns)) {
            c->cwnd = clamp(p, c->cwnd * (1 - p->swift_max_mdf));
            c->last_cut_ns = now_ns;
        }
        break;
    case CCA_NSCC:
        if (nscc_quick_adapt(c, p))
            return CCA_R_QUICK;
        break;
    }
    return CCA_R_LOSS;
}

int cca_on_rto(struct cca *c, const struct cca_params *p, uint64_t now_ns)
{
    c->cwnd = p->min_cwnd;
    c->last_cut_ns = now_ns;
    c->inc = 0;
    return CCA_R_RTO;
}
