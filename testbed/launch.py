"""The `testbed` command's entry point. A command that sends traffic and was told to `--wait` for the run
going on takes the machine's run lock here, before it imports the command layer and checks its arguments:
waiting, it costs the running command nothing (a queued `testbed run --wait` that started up beside a k=4
run took 30 % of a CPU from it, and the verdict rejected that run). Then testbed.cli.main, which takes the
same lock again without waiting (the lock is re-entrant in a process)."""

from __future__ import annotations

import os
import sys

QUEUED = ("run", "compare", "sweep", "demo", "paper")  # the commands that take the run lock


def queued(argv: list[str]) -> bool:
    """Whether this command line waits for the machine's run lock before anything else: a command that
    sends traffic here, with --wait, not --help, not on a cluster, not `paper list` or `--no-run`."""
    words = [a for a in argv if not a.startswith("-")]
    if not words or words[0] not in QUEUED or "--wait" not in argv:
        return False
    if any(a in ("-h", "--help", "--no-run") or a.startswith("--cluster") for a in argv):
        return False
    return not (words[0] == "paper" and words[1:2] == ["list"])


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if queued(args) and os.geteuid() == 0:
        from .fabric.lock import machine_lock  # light: the lock and the state directory only

        with machine_lock(wait=True, command=" ".join(["testbed", *args])):
            from .cli import main as cli_main

            return cli_main(args)
    from .cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
