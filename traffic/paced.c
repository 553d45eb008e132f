/* paced.c: a source namespace's sender thread, and the packets it sends.
 *
 * Contract. main() starts run_group() once per group (the flows of one source
 * namespace): it enters the namespace, opens one socket per flow (open_flow():
 * bound to the flow's source address and port, connected to the destination's
 * RoCE port, ROCE_UDP_PORT of ebpf/include/wire.h; a flow without a route is
 * marked noroute and sends nothing), waits on the `ready` barrier and for the
 * release (start.c), applies the faults late/stall/wake, then sends: in paced
 * runs round robin here, in transport runs through send_windowed() (window.c).
 * send_packet()/send_packet_flags() send one packet of a flow (BTH, payload,
 * ICRC: put_bth()) and count it; the starters (start.c) and send_windowed()
 * call them too.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sender.h"

#define ECT0 0x02 /* IP ECN field: ECN-capable transport (0) */

static void put_bth(uint8_t *b, uint32_t qp, uint32_t psn)
{
    b[0] = 0x04; /* RC SEND only */
    b[1] = 0;
    b[2] = 0xFF; b[3] = 0xFF; /* default P_Key */
    uint32_t dq = htonl(qp & 0xFFFFFF), ps = htonl(psn & 0xFFFFFF);
    memcpy(b + 4, &dq, 4);
    memcpy(b + 8, &ps, 4);
}

static int open_flow(struct flow *f)
{
    struct sockaddr_in src = {.sin_family = AF_INET, .sin_port = htons(f->sport)}, dst = {.sin_family = AF_INET, .sin_port = htons(ROCE_UDP_PORT)};
    if (inet_pton(AF_INET, f->src, &src.sin_addr) != 1 || inet_pton(AF_INET, f->dst, &dst.sin_addr) != 1)
        return -1;
    f->sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (f->sock < 0)
        return -1;
    if (setsockopt(f->sock, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) < 0)
        return -1;
    /* RoCEv2: ECN-capable transport, ECT(0), and UDP checksum 0 (the ICRC protects the packet; the host NIC
     * rewrites the source port for the host schemes) */
    int tos = ECT0, one = 1;
    if (setsockopt(f->sock, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) < 0 ||
        setsockopt(f->sock, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one)) < 0)
        return -1;
    if (bind(f->sock, (struct sockaddr *)&src, sizeof(src)) < 0)
        return -1;
    if (connect(f->sock, (struct sockaddr *)&dst, sizeof(dst)) < 0)
        return -1;
    return 0;
}

/* One packet; with MSG_DONTWAIT in `flags`, a full send buffer returns -1 with errno EAGAIN and is no error. */
int send_packet_flags(struct flow *f, uint8_t *buf, uint32_t psn, int flags)
{
    uint64_t done = (uint64_t)psn * f->payload;
    uint64_t len = f->size - done < f->payload ? f->size - done : f->payload;
    put_bth(buf, f->fid, psn);
    ssize_t rc;
    do {
        rc = send(f->sock, buf, BTH_LEN + len + ICRC_LEN, flags);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        if (!((flags & MSG_DONTWAIT) && (errno == EAGAIN || errno == EWOULDBLOCK)))
            f->errors++;
        return -1;
    }
    f->packets++;
    f->bytes += (uint64_t)rc;
    return 0;
}

int send_packet(struct flow *f, uint8_t *buf, uint32_t psn)
{
    return send_packet_flags(f, buf, psn, 0);
}

void *run_group(void *arg)
{
    struct group *g = arg;
    uint64_t maxlen = 0;
    int fd = open(g->flows[0]->ns, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
        fprintf(stderr, "testbed-sender: cannot enter %s: %s\n", g->flows[0]->ns, strerror(errno));
        setup_failed = 1;
    }
    if (fd >= 0)
        close(fd);
    for (int i = 0; i < g->n && !setup_failed; i++) {
        if (open_flow(g->flows[i]) < 0) {
            if (errno == ENETUNREACH || errno == EHOSTUNREACH || errno == ENETDOWN) {
                g->flows[i]->noroute = 1;
            } else {
                fprintf(stderr, "testbed-sender: flow %u: %s\n", g->flows[i]->fid, strerror(errno));
                setup_failed = 1;
            }
        }
        if (g->flows[i]->payload > maxlen)
            maxlen = g->flows[i]->payload;
    }
    uint8_t *buf = calloc(1, maxlen + BTH_LEN + ICRC_LEN);
    pthread_barrier_wait(&ready); /* every thread ready: the starters send the first packets */
    wait_released();
    int faulty = g->index == fault.group;
    unsigned long sent = 0;
    if ((faulty && fault.kind == 'l') || fault.kind == 'w')
        sleep_us(fault.us);
    if (setup_failed || !buf) {
        free(buf);
        return NULL;
    }
    if (tcfg.kind) {
        send_windowed(g, buf);
        free(buf);
        return NULL;
    }
    /* round robin, one packet per flow that has started and has packets left; a flow that has not started
     * yet waits for its time (start_ns after the release), and a host with none started sleeps until one is */
    for (;;) {
        if (now_s() > deadline_s)
            break;
        double now = now_s();
        int sent_any = 0;
        double earliest = 0;
        for (int i = 0; i < g->n; i++) {
            struct flow *f = g->flows[i];
            if ((uint64_t)f->next_psn * f->payload >= f->size || f->noroute)
                continue;
            double start = released_at + f->start_ns * 1e-9;
            if (now < start) {
                earliest = earliest == 0 || start < earliest ? start : earliest;
                continue;
            }
            send_packet(f, buf, f->next_psn++);
            sent_any = 1;
            if (faulty && fault.kind == 's' && ++sent == fault.after)
                sleep_us(fault.us);
        }
        if (!sent_any) {
            if (earliest == 0)
                break; /* every flow is done */
            sleep_us((unsigned long)((earliest - now_s()) * 1e6) + 1);
        }
    }
    free(buf);
    return NULL;
}
