"""The machine's processes and threads as /proc lists them: pid, name and /proc/PID/stat fields.

One reader for the two users: the run's check of CPU taken by other processes
(testbed.measure.outside) and the ksoftirqd finder (testbed.fabric.softirq).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

PF_KTHREAD = 0x00200000  # task flag (stat field 9): a kernel thread


def stats(proc: str = "/proc") -> Iterator[tuple[int, str, list[str]]]:
    """(pid, name, fields from field 3, the state, on) of every process listed; one gone meanwhile is
    skipped. The name is what lies between the first '(' and the last ')', parentheses and all."""
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/stat") as f:
                text = f.read()
        except OSError:
            continue
        yield int(entry), text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()


def is_kernel_thread(fields: list[str]) -> bool:
    return bool(int(fields[6]) & PF_KTHREAD)
