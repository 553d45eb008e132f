/* transport.h: the kernel's half of a transport run (run_cfg.cc = 1).
 *
 * Contract. A window-based transport runs in user space (traffic/transport.h);
 * the kernel gives it what a NIC would:
 *   transport_stamp()   at the edge switch, as a host NIC's data frame
 *                       arrives (its transmit time): the low 32 bits of
 *                       bpf_ktime_get_ns() go into the frame's first payload
 *                       bytes (DATA_PAYLOAD_OFF). The payload is opaque.
 *   transport_seen()    at the receiver, per data packet: sets the PSN's bit
 *                       in the flow's rx_seen words (atomic fetch-or) and
 *                       counts the packet in flow_rx.uniq or .dups, so every
 *                       byte is counted once however often it arrives. A PSN
 *                       beyond the flow's words counts as a duplicate.
 *   transport_echo()    the stamp read from the data packet, which ack.h
 *                       writes into the ACK's ICRC slot (ACK_ECHO_OFF): the
 *                       ACK stays 62 bytes.
 *   transport_ack()     at the sender, per ACK: one struct ack_event into the
 *                       ack_events ring buffer (no wake-up: the transport
 *                       polls on its own clock), with the fabric round trip
 *                       (ACK arrival minus the echoed stamp, mod 2^32 ns).
 * Nothing here runs unless run_cfg.cc is set: --cc none is untouched.
 */
#pragma once
#include "maps.h"

static __always_inline void transport_stamp(struct __sk_buff *skb, __u64 now)
{
    if (skb->len <= ACK_FRAME_BYTES)
        return; /* ACKs carry their data packet's stamp back */
    __u32 t = (__u32)now;
    bpf_skb_store_bytes(skb, DATA_PAYLOAD_OFF, &t, sizeof(t), 0);
}

static __always_inline void transport_seen(struct flow_rx *f, __u64 psn)
{
    __u64 w = psn >> 6;
    int idx = (int)(f->seen_base + w);
    __u64 *word = w < f->seen_words ? rx_seen.lookup(&idx) : NULL;
    __u64 bit = 1ULL << (psn & 63);
    if (word && !(__sync_fetch_and_or(word, bit) & bit))
        __sync_fetch_and_add(&f->uniq, 1);
    else
        __sync_fetch_and_add(&f->dups, 1);
}

static __always_inline __u32 transport_echo(struct __sk_buff *skb)
{
    __u32 t = 0;
    bpf_skb_load_bytes(skb, DATA_PAYLOAD_OFF, &t, sizeof(t));
    return t;
}

static __always_inline void transport_ack(struct __sk_buff *skb, __u32 flow, __u32 psn, __u32 marked, __u64 now)
{
    __u32 sent = 0;
    bpf_skb_load_bytes(skb, ACK_ECHO_OFF, &sent, sizeof(sent));
    struct ack_event ev = {.t_ns = now, .flow = flow, .psn = psn, .rtt_ns = (__u32)now - sent, .ecn = marked};
    ack_events.ringbuf_output(&ev, sizeof(ev), BPF_RB_NO_WAKEUP);
}
