"""An interpreter without the kernel's Python bindings (bcc comes from Debian's python3-bpfcc, for Debian's
python3 alone; a pyenv or conda Python that ran `pip install .` has none) gets one line from the `testbed`
command that names the interpreter and the way to the project's venv, and exit status 1: not an internal
error. Simulated in a fresh interpreter where the module cannot be imported (None in sys.modules) and a
command that imports it as the commands reaching the kernel do; nothing touches the kernel."""

from __future__ import annotations

import subprocess
import sys

import pytest

COMMAND = """
import sys
sys.modules[{module!r}] = None  # this interpreter cannot import it
import testbed.cli as cli
def reaches_the_kernel(args):
    import {module}.{submodule}
    return 0
cli.COMMANDS["status"] = (cli.COMMANDS["status"][0], reaches_the_kernel)
sys.exit(cli.main(["status"]))
"""


def command_without(module: str, submodule: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", COMMAND.format(module=module, submodule=submodule)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin"},  # no TESTBED_DEBUG from the caller
    )


@pytest.mark.parametrize(("module", "submodule"), [("bcc", "libbcc"), ("pyroute2", "netlink")])
def test_a_missing_binding_is_one_line_naming_the_interpreter(module: str, submodule: str) -> None:
    r = command_without(module, submodule)
    assert r.returncode == 1, r
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert line.startswith("testbed: error: ") and "internal error" not in line, line
    assert sys.executable in line and f"cannot import {module}" in line, line
    assert "sudo ./scripts/setup" in line and ".venv/bin/testbed" in line and "python3-bpfcc" in line, line
    assert r.stdout == ""


def test_any_other_missing_module_stays_an_internal_error() -> None:
    r = command_without("no_such_module_of_testbed", "anything")
    assert r.returncode == 1, r
    assert r.stderr.startswith("testbed: internal error: ModuleNotFoundError"), r.stderr
