"""The control daemon of a fabric that is up (`testbed controld`, started by `testbed up`): it attaches to the
fabric and runs its link watcher (testbed.fabric.watcher) until SIGTERM. Above the builder, so that the
watcher below it never imports it."""

from __future__ import annotations

import os
import signal

from . import state
from .build import Fabric
from .capacity import raise_open_file_limit
from .watcher import Watcher


def serve(prefix: str) -> None:
    """The daemon's body: watch the fabric that is up under `prefix` until
    SIGTERM, after marking it ready (the file `testbed up` waits for)."""
    raise_open_file_limit()  # a socket per namespace
    with Fabric.attach(prefix) as fab:
        assert fab.maps is not None
        w = Watcher(fab.tree, fab.maps).open()
        signal.signal(signal.SIGTERM, lambda *_: w.request_stop())
        with open(state.side_files(prefix)[2], "w") as f:
            f.write(f"{os.getpid()}\n")
        try:
            w.loop()
        finally:
            w.close()
