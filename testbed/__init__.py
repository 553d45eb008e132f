"""Fat-tree load-balancing testbed on the real kernel.

The public API is this package's: `testbed.build()`, `testbed.attach()`,
`testbed.sweep()`, `testbed.ideal()`, `testbed.Result`, `testbed.Fabric` and
`testbed.TestbedError` (testbed.api; docs/api.md). Everything else is private.

One subpackage per layer; each imports only the layers below it (checked by
import-linter, see pyproject.toml):

    cli        the `testbed` command: the only printer, built on api
    api        the public API: build, run, fail, hot-swap, sweep, the ideal fabric
    run        one experiment end to end, fault timelines, comparisons
    measure    collector, metrics, fidelity verdict, result files, provenance
    fabric     namespaces, netlink, build and teardown, links and their watcher
    dataplane  the eBPF program and maps (their typed mirrors), the switches' state
    models     pure models: the scheme registry, decisions, control plane, ideal fabric
    topology   the description: nodes, ports, links, names, addresses, units

Traffic (workloads, packet format, senders) is the top-level package
`traffic`, which imports nothing from here. `from testbed import results`
still gives testbed.measure.results, the reader of result directories.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the API's types for type checkers; at run time it is imported on first use
    from .api import Fabric, Result, TestbedError, attach, build, ideal, sweep

__version__ = "0.1.0"


__all__ = ["Fabric", "Result", "TestbedError", "attach", "build", "ideal", "results", "sweep"]
API = frozenset(__all__) - {"results"}


def __getattr__(name: str) -> Any:
    """The API, imported on first use (so that `import testbed` stays light)."""
    if name == "results":  # the public reader of result directories, by its old name
        return importlib.import_module("testbed.measure.results")
    if name in API:
        return getattr(importlib.import_module("testbed.api"), name)
    raise AttributeError(f"module 'testbed' has no attribute {name!r}")
