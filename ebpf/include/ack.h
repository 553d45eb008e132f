/* ack.h: receiver-side ACKs, made in the kernel from the data packet itself.
 *
 * Contract: ack_reflect() turns a RoCEv2 data packet that reached its
 * destination host into a 62-byte RC Acknowledge (Ethernet, IPv4, UDP:4791,
 * BTH opcode 0x11 with the same destination QP and PSN, AETH, ICRC-sized
 * trailer, which carries `echo`: 0, or a transport run's stamp) addressed back to the sender, and returns the ifindex to send it
 * out of (the host's own NIC), or 0 if the packet could not be rewritten.
 * The ACK echoes congestion: BECN set in its BTH when the data packet
 * arrived marked CE (RoCEv2 NICs send a separate CNP instead; one ACK per
 * packet that carries the echo is what the schemes here need, and Wireshark
 * decodes the bit). Its UDP source port is the data packet's: it carries the
 * data packet's entropy back (REPS) and, for the host-routed schemes, its
 * path label (host_lb.h). ACKs are sent Not-ECT.
 * The ACK travels back through the fabric as a small packet, so Ofan and
 * pOfan use their small-class pointers for it.
 */
#pragma once
#include "parse.h"

#define OPCODE_RC_ACK 0x11

struct tb_aeth {
    __u32 syndrome_msn;  /* syndrome(8) | MSN(24), network order */
};

static __always_inline __u16 ack_ip_csum(struct tb_ipv4 *ip)
{
    __u16 *w = (__u16 *)ip;
    __u32 sum = 0;
#pragma unroll
    for (int i = 0; i < 10; i++)
        sum += w[i];
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum = (sum & 0xFFFF) + (sum >> 16);
    return ~sum;
}

#define BTH_BECN 0x40 /* first byte of the BTH's destination-QP word: FECN 0x80, BECN 0x40 */

static __always_inline __u32 ack_reflect(struct __sk_buff *skb, __u32 ce, __u32 echo)
{
    struct tb_eth *eth;
    struct tb_ipv4 *ip;
    struct tb_udp *udp;
    struct tb_bth *b = parse_roce_skb(skb, &eth, &ip, &udp);
    if (!b)
        return 0;
    __u8 mac_a[ETH_ALEN], mac_b[ETH_ALEN];
    __builtin_memcpy(mac_a, eth->src, ETH_ALEN);
    __builtin_memcpy(mac_b, eth->dst, ETH_ALEN);
    __u32 saddr = ip->saddr, daddr = ip->daddr;
    __u16 sport = udp->source;
    __u32 dqpn = b->dqpn, apsn = b->apsn;

    if (bpf_skb_change_tail(skb, ACK_FRAME_BYTES, 0))
        return 0;
    void *data = (void *)(long)skb->data;
    void *end = (void *)(long)skb->data_end;
    eth = data;
    ip = (void *)(eth + 1);
    udp = (void *)(ip + 1);
    b = (void *)(udp + 1);
    struct tb_aeth *aeth = (void *)(b + 1);
    __u32 *icrc = (void *)(aeth + 1);
    if ((void *)(icrc + 1) > end)
        return 0;
    __builtin_memcpy(eth->dst, mac_a, ETH_ALEN);
    __builtin_memcpy(eth->src, mac_b, ETH_ALEN);
    ip->tot_len = TB_BE16(ACK_FRAME_BYTES - 14);
    ip->id = 0;
    ip->frag_off = TB_BE16(0x4000); /* DF */
    ip->ttl = 64;
    ip->tos = 0; /* Not-ECT */
    ip->saddr = daddr;
    ip->daddr = saddr;
    ip->check = 0;
    ip->check = ack_ip_csum(ip);
    udp->source = sport;
    udp->dest = TB_BE16(ROCE_UDP_PORT);
    udp->len = TB_BE16(ACK_FRAME_BYTES - 34);
    udp->check = 0;
    b->opcode = OPCODE_RC_ACK;
    b->flags = 0;
    b->pkey = 0xFFFF;
    b->dqpn = dqpn & TB_BE32(0x00FFFFFF);
    if (ce)
        *(__u8 *)&b->dqpn |= BTH_BECN;
    b->apsn = apsn & TB_BE32(0x00FFFFFF);
    aeth->syndrome_msn = apsn & TB_BE32(0x00FFFFFF); /* syndrome 0: ACK; MSN = PSN */
    *icrc = echo; /* 0, or in a transport run the data frame's departure stamp (transport.h) */
    return skb->ifindex;
}
