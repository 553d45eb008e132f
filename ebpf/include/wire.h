/* wire.h: what a packet carries that the programs, the senders and Python agree on.
 *
 * Contract: the RoCEv2 frame format (traffic/packet.py: ROCE_PORT,
 * ACK_FRAME_BYTES and the header sizes DATA_PAYLOAD_OFF and ACK_ECHO_OFF add up
 * to), the size classes that pick a scheme's pointer (testbed.models.decisions:
 * CLASS_*, N_CLASSES, SMALL_MAX_BYTES), the path label of the host-routed
 * schemes (testbed.models.decisions: LABEL_*) and the skb->priority of an ACK
 * (testbed.fabric.netlink: the HTB class it names). The senders (traffic/paced.c)
 * take ROCE_UDP_PORT from here. Checked by testbed/dataplane/contract.py when the
 * program is loaded and by tests/unit/test_header_contract.py.
 */
#pragma once

#define ROCE_UDP_PORT 4791  /* RoCEv2's UDP destination port: every data packet and ACK */

#define ACK_FRAME_BYTES 62  /* 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 4 AETH + 4 ICRC */
#define DATA_PAYLOAD_OFF 54 /* a data frame's payload, after its BTH: transport runs stamp it there */
#define ACK_ECHO_OFF 58     /* an ACK's ICRC slot: transport runs echo the data frame's stamp there */

/* Packet size classes for per-destination pointers (paper section 4.1). */
#define CLASS_DATA  0
#define CLASS_SMALL 1
#define N_CLASSES   2
#define SMALL_MAX_BYTES 256  /* frames shorter than this use CLASS_SMALL */
/* skb->priority of an ACK (a CLASS_SMALL frame) as it joins a queue: the class 10:1 of the HTB that orders each
 * link's TBF when a fabric serves ACKs first (testbed.fabric.netlink.ack_priority); 0 for data, whose default
 * class is 10:2 */
#define ACK_PRIORITY 0x00100001

/* A path label in the UDP source port (host-routed schemes): LABEL_TAG | agg index << 5 | core index.
 * The source edge switch takes the uplink of the aggregation index, the source aggregation switch that of
 * the core index (W <= 32). */
#define LABEL_TAG  0xC000
#define LABEL_MASK 0xFC00
#define LABEL_BITS 5
