"""Network namespaces created in-process, named like `ip netns` does.

`ip netns add` costs a fork per namespace; here the calling thread unshares a
new network namespace, bind-mounts it at /run/netns/NAME, runs a setup
callback inside it, and returns to where it was. Names are compatible with
`ip netns` (ip -n NAME ... works on them).

`entered(name)` runs a block inside a namespace (sockets created there stay
bound to it). `remove(name)` unmounts and unlinks; the kernel then destroys the
namespace and its devices once nothing else holds it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TypeVar

NETNS_RUN_DIR = "/run/netns"
CLONE_NEWNET = 0x40000000
MS_BIND, MS_REC, MS_SHARED = 0x1000, 0x4000, 1 << 20
MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]

T = TypeVar("T")


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def path_of(name: str) -> str:
    return os.path.join(NETNS_RUN_DIR, name)


def prepare_run_dir() -> None:
    """Make /run/netns a shared mount point, as `ip netns add` does."""
    os.makedirs(NETNS_RUN_DIR, exist_ok=True)
    if _libc.mount(b"", NETNS_RUN_DIR.encode(), b"none", MS_SHARED | MS_REC, None) == 0:
        return
    if ctypes.get_errno() != errno.EINVAL:
        _check(-1, "mount --make-shared /run/netns")
    _check(
        _libc.mount(NETNS_RUN_DIR.encode(), NETNS_RUN_DIR.encode(), b"none", MS_BIND | MS_REC, None), "bind /run/netns"
    )
    _check(
        _libc.mount(b"", NETNS_RUN_DIR.encode(), b"none", MS_SHARED | MS_REC, None), "mount --make-shared /run/netns"
    )


def exists(name: str) -> bool:
    return os.path.exists(path_of(name))


def create(name: str, inside: Callable[[], T]) -> T:
    """Create namespace `name` and call `inside()` while the thread is in it."""
    path = path_of(name)
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
        os.close(fd)
        try:
            _check(_libc.unshare(CLONE_NEWNET), f"unshare for {name}")
            try:
                _check(
                    _libc.mount(b"/proc/thread-self/ns/net", path.encode(), b"none", MS_BIND, None),
                    f"bind-mount {path}",
                )
                return inside()
            finally:
                _check(_libc.setns(home, CLONE_NEWNET), "setns back")
        except BaseException:
            _libc.umount2(path.encode(), MNT_DETACH)
            _unlink(path)
            raise
    finally:
        os.close(home)


def create_many(names: Sequence[str], inside: Callable[[], T], out: dict[str, T], threads: int = 2) -> None:
    """Create every namespace of `names` as `create` does, `threads` at a time
    (the kernel sets up namespaces in parallel). Each result lands in `out` as
    soon as it is made, so a caller can release them after a failure; the
    first error is raised once every thread has stopped."""
    errors: list[BaseException] = []

    def work(chunk: Sequence[str]) -> None:
        for name in chunk:
            if errors:
                return
            try:
                out[name] = create(name, inside)
            except BaseException as e:  # re-raised below, in the caller's thread
                errors.append(e)
                return

    workers = [threading.Thread(target=work, args=(names[i::threads],), name=f"netns-{i}") for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]


@contextmanager
def entered(name: str) -> Iterator[None]:
    """Run a block with the calling thread inside namespace `name`."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    target = os.open(path_of(name), os.O_RDONLY | os.O_CLOEXEC)
    try:
        _check(_libc.setns(target, CLONE_NEWNET), f"setns {name}")
        try:
            yield
        finally:
            _check(_libc.setns(home, CLONE_NEWNET), "setns back")
    finally:
        os.close(target)
        os.close(home)


def open_fd(name: str) -> int:
    return os.open(path_of(name), os.O_RDONLY | os.O_CLOEXEC)


def remove(name: str) -> bool:
    """Unmount and unlink /run/netns/NAME. Returns False if it did not exist."""
    path = path_of(name)
    if not os.path.lexists(path):
        return False
    _libc.umount2(path.encode(), MNT_DETACH)
    _unlink(path)
    return True


def listed(prefix: str) -> list[str]:
    """Names under /run/netns that start with `prefix`-."""
    try:
        names = os.listdir(NETNS_RUN_DIR)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if n.startswith(prefix + "-"))


def write_sysctl(key: str, value: str) -> None:
    """Write a net sysctl of the calling thread's current namespace."""
    with open("/proc/sys/" + key.replace(".", "/"), "w") as f:
        f.write(value)


def _unlink(path: str) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)
