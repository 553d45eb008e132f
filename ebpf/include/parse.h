/* parse.h: bounds-checked header parsing for TC programs.
 *
 * Contract: each helper checks that the header it returns lies inside the
 * packet and returns NULL otherwise. IPv4 packets with options are not
 * parsed (the testbed never sends them). The header structs are declared
 * here rather than taken from kernel uapi headers: bcc compiles at run time,
 * and the uapi include tree triples the compile time.
 */
#pragma once
#include "wire.h" /* ROCE_UDP_PORT */

#define ETH_ALEN 6
#define ETH_P_IP 0x0800
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17

#define TC_ACT_OK 0
#define TC_ACT_SHOT 2
/* A packet that ends here (a receiver counted it; an edge switch forwarded its clone): freed, nothing
 * sent on. Not TC_ACT_STOLEN: the TCX hooks the fabric attaches to know only pass, drop, redirect and
 * next, and read STOLEN as next, which would hand the packet to the namespace's IP stack. */
#define TC_ACT_CONSUMED TC_ACT_SHOT

#define TB_BE16(x) __builtin_bswap16(x)  /* network <-> host order */
#define TB_BE32(x) __builtin_bswap32(x)

struct tb_eth {
    __u8 dst[ETH_ALEN];
    __u8 src[ETH_ALEN];
    __u16 proto;   /* network order */
} __attribute__((packed));

struct tb_ipv4 {
    __u8 ver_ihl;  /* version 4 | IHL 5 */
    __u8 tos;
    __u16 tot_len;
    __u16 id;
    __u16 frag_off;
    __u8 ttl;
    __u8 protocol;
    __u16 check;
    __u32 saddr;   /* network order */
    __u32 daddr;   /* network order */
};

struct tb_udp {
    __u16 source;
    __u16 dest;
    __u16 len;
    __u16 check;
};

/* RoCEv2 base transport header (IBA BTH), 12 bytes. */
struct tb_bth {
    __u8  opcode;
    __u8  flags;
    __u16 pkey;
    __u32 dqpn;    /* reserved(8) | destination QP(24), network order */
    __u32 apsn;    /* ack-request(1) | reserved(7) | PSN(24), network order */
};

static __always_inline struct tb_eth *parse_eth(void *data, void *end)
{
    struct tb_eth *eth = data;
    if ((void *)(eth + 1) > end)
        return NULL;
    return eth;
}

static __always_inline struct tb_ipv4 *parse_ipv4(struct tb_eth *eth, void *end)
{
    if (eth->proto != TB_BE16(ETH_P_IP))
        return NULL;
    struct tb_ipv4 *ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > end || ip->ver_ihl != 0x45)
        return NULL;
    return ip;
}

/* UDP header if the packet is UDP, else NULL. */
static __always_inline struct tb_udp *parse_udp(struct tb_ipv4 *ip, void *end)
{
    if (ip->protocol != IPPROTO_UDP)
        return NULL;
    struct tb_udp *udp = (void *)(ip + 1);
    if ((void *)(udp + 1) > end)
        return NULL;
    return udp;
}

/* BTH if the packet is RoCEv2 (UDP destination port 4791), else NULL. */
static __always_inline struct tb_bth *parse_bth(struct tb_udp *udp, void *end)
{
    if (udp->dest != TB_BE16(ROCE_UDP_PORT))
        return NULL;
    struct tb_bth *b = (void *)(udp + 1);
    if ((void *)(b + 1) > end)
        return NULL;
    return b;
}

/* The BTH of a RoCEv2 packet starting at `data`, or NULL; also returns the
 * Ethernet, IPv4 and UDP headers it lies under. parse_roce_skb(): the same
 * for a program's packet. */
static __always_inline struct tb_bth *parse_roce(void *data, void *end, struct tb_eth **eth,
                                                 struct tb_ipv4 **ip, struct tb_udp **udp)
{
    *eth = parse_eth(data, end);
    *ip = *eth ? parse_ipv4(*eth, end) : NULL;
    *udp = *ip ? parse_udp(*ip, end) : NULL;
    return *udp ? parse_bth(*udp, end) : NULL;
}

#define ROCE_HEADERS (sizeof(struct tb_eth) + sizeof(struct tb_ipv4) + sizeof(struct tb_udp) + sizeof(struct tb_bth))

static __always_inline struct tb_bth *parse_roce_skb(struct __sk_buff *skb, struct tb_eth **eth, struct tb_ipv4 **ip,
                                                     struct tb_udp **udp)
{
    /* A datagram above about 16 KB leaves the socket with only its IP and UDP headers in the linear
     * part (the rest in pages, where direct access cannot reach): pull the BTH in first. Pointers
     * taken before this call are invalid after it. */
    if ((long)skb->data + ROCE_HEADERS > (long)skb->data_end && skb->len >= ROCE_HEADERS)
        bpf_skb_pull_data(skb, ROCE_HEADERS);
    return parse_roce((void *)(long)skb->data, (void *)(long)skb->data_end, eth, ip, udp);
}
