"""RoCEv2-like packet layout: Ethernet | IPv4 | UDP:4791 | BTH | payload | ICRC.

Header overhead on the wire is 62 bytes as in the paper (section 6): 14
Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 4 ICRC + 4 FCS, and every frame is
followed by 20 bytes of inter-frame gap, preamble and start delimiter. A
veth frame carries neither FCS nor gap, so a frame as the kernel counts it
is 58 bytes plus the payload; the links charge the other 24 on the wire
(WIRE_EXTRA: the TBFs' ratespec overhead, testbed.fabric), so a 4,096-byte
payload takes 4,178 bytes of line time, as the paper's. ACKs are 62 bytes
on a veth, 86 on the wire (the paper's 64 + 20 = 84).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

# The data plane's C headers hold the same numbers (ebpf/include/wire.h ROCE_UDP_PORT, ACK_FRAME_BYTES and the
# offsets these sizes add up to, ack.h OPCODE_RC_ACK, traffic/sender.h BTH_LEN and ICRC_LEN): the program's load
# checks them against these (testbed/dataplane/contract.py).
ROCE_PORT = 4791
ETH, IPV4, UDP, BTH, ICRC, FCS = 14, 20, 8, 12, 4, 4
GAP = 12 + 8  # inter-frame gap, preamble and start-of-frame delimiter
FRAME_OVERHEAD = ETH + IPV4 + UDP + BTH + ICRC  # bytes of a veth frame that are not payload
PAPER_HEADER_BYTES = FRAME_OVERHEAD + FCS  # 62
WIRE_EXTRA = FCS + GAP  # bytes a link charges per frame beyond what the kernel counts (24)
DEFAULT_PAYLOAD = 4096
AETH = 4
ACK_FRAME_BYTES = ETH + IPV4 + UDP + BTH + AETH + ICRC  # 62 on a veth, 66 on a wire
OPCODE_RC_ACK = 0x11
OPCODE_RC_SEND_ONLY = 0x04
PKEY_DEFAULT = 0xFFFF
_BTH = struct.Struct("!BBHII")


@dataclass(frozen=True)
class Packetizer:
    """Splits a message into packets of at most `payload` bytes; its frames take `wire_overhead` bytes more on
    the wire than the kernel counts (WIRE_EXTRA on a fabric with the paper's frames, 0 without)."""

    payload: int = DEFAULT_PAYLOAD
    wire_overhead: int = 0

    def count(self, size_bytes: int) -> int:
        return -(-size_bytes // self.payload)

    def payload_sizes(self, size_bytes: int) -> list[int]:
        n, last = divmod(size_bytes, self.payload)
        return [self.payload] * n + ([last] if last else [])

    def frame_bytes(self, size_bytes: int) -> int:
        """Bytes of all frames of a message as the kernel counts them."""
        return size_bytes + self.count(size_bytes) * FRAME_OVERHEAD

    def frame_len(self, payload: int) -> int:
        """One frame as the kernel counts it (skb->len)."""
        return payload + FRAME_OVERHEAD

    def wire_len(self, payload: int) -> int:
        """One frame's bytes of line time."""
        return payload + FRAME_OVERHEAD + self.wire_overhead

    def wire_bytes(self, size_bytes: int) -> int:
        """Bytes of line time of all frames of a message."""
        return self.frame_bytes(size_bytes) + self.count(size_bytes) * self.wire_overhead


def bth(qp: int, psn: int, opcode: int = OPCODE_RC_SEND_ONLY, ack_req: bool = False) -> bytes:
    return _BTH.pack(opcode, 0, PKEY_DEFAULT, qp & 0xFFFFFF, (int(ack_req) << 31) | (psn & 0xFFFFFF))


def udp_payload(qp: int, psn: int, payload: int) -> bytearray:
    """BTH + zero payload + zero ICRC trailer, as one UDP payload."""
    return bytearray(bth(qp, psn) + bytes(payload) + bytes(ICRC))


def set_psn(buf: bytearray, psn: int) -> None:
    struct.pack_into("!I", buf, 8, psn & 0xFFFFFF)
