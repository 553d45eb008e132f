"""Keep the CPUs awake during a run: a PM QoS request on /dev/cpu_dma_latency.

On a virtual machine an idle vCPU halts, and waking it costs the hypervisor a
round trip: measured on this machine kind, a 1 kHz timer in an idle process
woke 75-133 us late at the median and 0.4-1.2 ms late at the 99th percentile.
Every emulated link is a TBF whose next frame waits for a timer, so a halted
CPU makes links and NICs late; the NICs' small bucket (a quarter frame of
catch-up) cannot absorb it, and a 16 MB Ofan permutation at k=4 and 50 Mbit/s
finished 1.0-2.3 % late for that alone. Writing 0 to /dev/cpu_dma_latency
and keeping the file open asks the kernel to use no idle state with any exit
latency: idle CPUs poll instead of halting (19-22 us median, 29-38 us p99 on
the same timer), and the same runs finished within 0.06 % of their bound.

The request lives exactly as long as the file descriptor: the kernel drops it
when the file is closed, also when the process is killed, so nothing is left
to clean up. Idle CPUs spin while it is held, which is why only runs hold it.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager

DEVICE = "/dev/cpu_dma_latency"


@contextmanager
def awake(device: str = DEVICE) -> Iterator[bool]:
    """Hold a 0 us CPU wake-up latency request while inside; yields whether it
    is held (False where the device is missing or not writable: the run goes
    on, and its manifest says so)."""
    try:
        fd = os.open(device, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        yield False
        return
    try:
        try:
            os.write(fd, struct.pack("i", 0))
        except OSError:
            held = False
        else:
            held = True
        yield held
    finally:
        os.close(fd)
