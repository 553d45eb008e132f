/* transport.c: the rules of transport.h. */
#include <stdlib.h>
#include "transport.h"

int tp_init(struct tp_flow *f, uint32_t npkts, uint32_t dupthresh, const struct cca_params *p, double min_rto_ns,
            uint64_t now_ns)
{
    *f = (struct tp_flow){.npkts = npkts, .dupthresh = dupthresh ? dupthresh : 3, .p = p,
                          .min_rto_ns = min_rto_ns, .progress_ns = now_ns};
    f->st = calloc(npkts ? npkts : 1, 1);
    if (!f->st)
        return -1;
    f->rttvar_ns = p->base_rtt_ns / 2;
    cca_init(&f->cc, p, now_ns);
    return 0;
}

size_t tp_sizeof(void)
{
    return sizeof(struct tp_flow);
}

void tp_stats(const struct tp_flow *f, uint64_t out[10])
{
    uint64_t v[10] = {f->una, f->inflight, f->acked, f->lost, f->retransmits, f->fast_rtx, f->rtos, f->spurious,
                      (uint64_t)f->in_recovery, f->dupacks};
    for (int i = 0; i < 10; i++)
        out[i] = v[i];
}

void tp_free(struct tp_flow *f)
{
    free(f->st);
    f->st = NULL;
}

static int room(const struct tp_flow *f)
{
    return (double)f->inflight + 1 <= f->cc.cwnd + 1e-9;
}

int tp_can_send(const struct tp_flow *f)
{
    return (f->rtx_now && f->lost) || (room(f) && (f->lost || f->next_new < f->npkts));
}

static void take(struct tp_flow *f, uint32_t psn, uint64_t now_ns)
{
    if (f->inflight == 0)
        f->progress_ns = now_ns; /* the timer starts with the pipe */
    f->st[psn] = TP_INFLIGHT;
    f->inflight++;
}

int tp_next(struct tp_flow *f, uint64_t now_ns, uint32_t *psn, int *retransmit)
{
    int owed = f->rtx_now && f->lost;
    if (!owed && !room(f))
        return 0;
    if (f->lost) {
        for (uint32_t p = f->una; p < f->next_new; p++) {
            if (f->st[p] == TP_LOST) {
                f->lost--;
                take(f, p, now_ns);
                f->retransmits++;
                if (f->rtx_now)
                    f->rtx_now--;
                *psn = p;
                *retransmit = 1;
                return 1;
            }
        }
        f->lost = 0; /* none left (acknowledged meanwhile) */
        f->rtx_now = 0;
        if (!room(f))
            return 0;
    }
    if (f->next_new >= f->npkts)
        return 0;
    *psn = f->next_new++;
    *retransmit = 0;
    take(f, *psn, now_ns);
    return 1;
}

static void mark_lost(struct tp_flow *f, uint32_t psn)
{
    if (f->st[psn] != TP_INFLIGHT)
        return;
    f->st[psn] = TP_LOST;
    f->inflight--;
    f->lost++;
}

int tp_ack(struct tp_flow *f, uint64_t now_ns, uint32_t psn, double rtt_ns, int ecn)
{
    if (psn >= f->npkts || f->st[psn] == TP_UNSENT)
        return -1;
    f->acks++;
    f->ecn_acks += ecn != 0;
    uint8_t was = f->st[psn];
    if (was == TP_ACKED) {
        f->acked_twice++;
        return -1;
    }
    if (was == TP_INFLIGHT) {
        f->inflight--;
    } else { /* TP_LOST: it had arrived after all */
        f->lost--;
        f->spurious++;
    }
    f->st[psn] = TP_ACKED;
    f->acked++;
    double err = rtt_ns - f->cc.srtt_ns;
    f->rttvar_ns = 0.75 * f->rttvar_ns + 0.25 * (err < 0 ? -err : err);
    int rule = cca_on_ack(&f->cc, f->p, now_ns, rtt_ns, ecn);
    uint32_t una = f->una;
    while (f->una < f->npkts && f->st[f->una] == TP_ACKED)
        f->una++;
    if (f->una > una) {
        f->dupacks = 0;
        f->progress_ns = now_ns;
        f->backoff = 0;
        if (f->in_recovery) {
            if (f->una > f->recover)
                f->in_recovery = 0;
            else if (f->una < f->npkts && f->st[f->una] == TP_INFLIGHT) {
                mark_lost(f, f->una); /* partial ACK: the next hole */
                f->rtx_now++;
            }
        }
    } else if (psn > f->una && ++f->dupacks == f->dupthresh && !f->in_recovery &&
               f->st[f->una] == TP_INFLIGHT) {
        mark_lost(f, f->una);
        f->rtx_now++;
        f->in_recovery = 1;
        f->recover = f->next_new - 1;
        f->fast_rtx++;
        rule = cca_on_loss(&f->cc, f->p, now_ns);
    }
    return rule;
}

double tp_rto_ns(const struct tp_flow *f)
{
    double rto = f->cc.srtt_ns + 4 * f->rttvar_ns;
    if (rto < f->min_rto_ns)
        rto = f->min_rto_ns;
    return rto * (double)(1u << (f->backoff < 6 ? f->backoff : 6));
}

int tp_rto_due(const struct tp_flow *f, uint64_t now_ns)
{
    /* `now_ns` may be older than the progress a sender thread has just recorded (the ACK thread reads its
     * clock before it takes the flow's lock): that is no time elapsed, not 2^64 ns */
    return f->inflight > 0 && now_ns > f->progress_ns && (double)(now_ns - f->progress_ns) >= tp_rto_ns(f);
}

void tp_rto(struct tp_flow *f, uint64_t now_ns)
{
    for (uint32_t p = f->una; p < f->next_new; p++)
        mark_lost(f, p);
    f->in_recovery = 1;
    f->rtx_now = 0;
    f->recover = f->next_new ? f->next_new - 1 : 0;
    f->dupacks = 0;
    f->rtos++;
    f->backoff++;
    f->progress_ns = now_ns;
    cca_on_rto(&f->cc, f->p, now_ns);
}
