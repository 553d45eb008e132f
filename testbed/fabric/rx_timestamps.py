"""Keep receive timestamping on during a run, so the data plane can tell when
a host NIC really sent a frame.

A host NIC's frame crosses its link (the veth) in the NIC's dequeue, and the
edge switch's program sees it later, when a softirq gets to it. Under load
that delay varies by up to half a packet time at k=4 and 25 Mbit/s (with
ACKs on, more frames share the softirqs): measured at the switch, NICs
seemed to run 0.5-0.7 frames ahead of strict periodicity and runs were
rejected for it. While any socket asks for receive timestamps the kernel
stamps every packet as it is handed over (netif_rx, net.core's
netdev_tstamp_prequeue), and the switch program takes the NIC's departure
from that stamp (ebpf/include/queue.h, queue_nic_depart): the same runs then
read 0.26-0.28 frames, the NICs' own quarter-frame bucket.

One socket with SO_TIMESTAMPNS, open for the run: the kernel turns the stamps
off again when it is closed, also when the process is killed.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

SO_TIMESTAMPNS = 35  # SO_TIMESTAMPNS_OLD (asm-generic/socket.h): Python's socket module does not export it


@contextmanager
def on() -> Iterator[bool]:
    """Receive timestamps on while inside; yields whether the request took."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    try:
        try:
            s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        except OSError:
            yield False
        else:
            yield True
    finally:
        s.close()
