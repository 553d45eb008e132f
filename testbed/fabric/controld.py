"""The control daemon of a fabric that is up, its whole life: `start` runs it (`python -m
testbed.fabric.controld --prefix P`, from `testbed up`) and waits until it watches; it attaches to the
fabric and runs its link watcher (testbed.fabric.watcher) until SIGTERM; `testbed down` and `testbed
clean` stop it by the PID `start` recorded. Above the builder, so that the watcher below it never imports
it."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

from . import state
from .build import Fabric
from .capacity import raise_open_file_limit
from .errors import FabricError
from .watcher import Watcher


def serve(prefix: str) -> None:
    """The daemon's body: watch the fabric that is up under `prefix` until
    SIGTERM, after marking it ready (the file `testbed up` waits for)."""
    raise_open_file_limit()  # a socket per namespace
    with Fabric.attach(prefix) as fab:
        assert fab.maps is not None
        w = Watcher(fab.tree, fab.maps).open()
        signal.signal(signal.SIGTERM, lambda *_: w.request_stop())
        with open(state.side_files(prefix).controld_ready, "w") as f:
            f.write(f"{os.getpid()}\n")
        try:
            w.loop()
        finally:
            w.close()


def start(prefix: str, timeout_s: float = 15.0) -> int:
    """Start the link watcher daemon of a fabric that is up; wait until it watches; its PID (recorded in the
    fabric's state, so that clean stops it)."""
    files = state.side_files(prefix)
    with open(files.controld_log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "testbed.fabric.controld", "--prefix", prefix],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    state.record_pid(prefix, proc.pid)
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(files.controld_ready):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise FabricError(f"the link watcher did not start (see {files.controld_log})")
        time.sleep(0.01)
    return proc.pid


def main() -> None:
    p = argparse.ArgumentParser(prog="testbed-controld", description="the link watcher of a fabric that is up")
    p.add_argument("--prefix", required=True)
    serve(p.parse_args().prefix)


if __name__ == "__main__":
    main()
