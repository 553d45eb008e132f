"""One run per fabric, and one per machine: exclusive locks that a run,
compare, demo or sweep holds for as long as it sends traffic. The machine's
lock (/run/testbed/machine-wide.lock) is taken first, whatever the prefix: two
fabrics sending at once on two cores would each be judged on averaged
figures while the other disturbed their timing.

The lock is flock(2) on /run/testbed/{prefix}.lock, so the kernel releases
it when its holder exits in any way, SIGKILL included: a lock file left by a
killed process is stale by construction and the next run takes it. The file
holds who has it (pid, command, since when), for the message a second run
prints. Commands that act during a run (fail, heal, flap, scheme set, status)
do not take it. Within one process the lock is re-entrant, so the CLI and
testbed.run.experiment can both ask for it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .state import STATE_DIR

_held: dict[str, int] = {}  # prefix -> depth, in this process
_guard = threading.Lock()


class FabricBusy(RuntimeError):
    """Another process holds the fabric's run lock."""


MACHINE = "machine-wide"  # the lock every run takes first; no prefix can be this (a prefix has no "-")


def path(prefix: str) -> str:
    return os.path.join(STATE_DIR, f"{prefix}.lock")


def holder(prefix: str) -> dict[str, object] | None:
    """Who holds (or last held) the lock, as written in the lock file."""
    try:
        with open(path(prefix)) as f:
            text = f.read()
        return dict(json.loads(text)) if text.strip() else None
    except (OSError, ValueError):
        return None


def _describe(info: dict[str, object] | None) -> str:
    if not info:
        return "another process"
    since = time.strftime("%H:%M:%S UTC", time.gmtime(float(str(info.get("since", 0)))))
    return f"pid {info.get('pid')} ({info.get('command')}) since {since}"


@contextmanager
def run_lock(prefix: str, wait: bool = False, command: str | None = None) -> Iterator[None]:
    """Hold the fabric's run lock for the block. Without `wait`, a lock held by
    another process raises FabricBusy naming the holder; with it, block until free."""
    with _guard:
        if _held.get(prefix):
            _held[prefix] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield
        finally:
            with _guard:
                _held[prefix] -= 1
        return
    command = command or " ".join(["testbed", *sys.argv[1:]])
    with machine_lock(wait, command):
        fd = _acquire(prefix, wait, command)
        with _guard:
            _held[prefix] = 1
        try:
            yield
        finally:
            with _guard:
                _held.pop(prefix, None)
            os.close(fd)  # releases the flock; the file stays (testbed down or clean removes it)


@contextmanager
def machine_lock(wait: bool = False, command: str | None = None) -> Iterator[None]:
    """The machine's run lock (re-entrant in a process, as run_lock): FabricBusy names the run that holds it."""
    with _guard:
        depth = _held.get(MACHINE, 0)
        _held[MACHINE] = depth + 1
    fd = -1
    try:
        if depth == 0:
            fd = _acquire(MACHINE, wait, command or " ".join(["testbed", *sys.argv[1:]]))
        yield
    finally:
        with _guard:
            _held[MACHINE] -= 1
            if not _held[MACHINE]:
                _held.pop(MACHINE)
        if fd >= 0:
            os.close(fd)


def _acquire(prefix: str, wait: bool, command: str) -> int:
    os.makedirs(STATE_DIR, exist_ok=True)
    while True:
        fd = os.open(path(prefix), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                if prefix == MACHINE:
                    raise FabricBusy(
                        f"another run is going on this machine: {_describe(holder(prefix))}; two "
                        f"at once disturb each other's timing: add --wait to queue behind it"
                    ) from None
                raise FabricBusy(
                    f"fabric {prefix!r} is busy: {_describe(holder(prefix))} is running on it; "
                    f"add --wait to queue behind it"
                ) from None
            raise
        try:
            same = os.fstat(fd).st_ino == os.stat(path(prefix)).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # the file was removed (testbed clean) while we waited: lock the new one
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "command": command, "since": time.time()}).encode(), 0)
        return fd
