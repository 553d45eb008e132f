"""Fat-tree load-balancing testbed on the real kernel.

One subpackage per layer; each imports only the layers below it (checked by
import-linter, see pyproject.toml):

    cli        the `testbed` command: the only printer
    run        one experiment end to end, fault timelines, comparisons
    measure    collector, metrics, fidelity verdict, result files, provenance
    fabric     namespaces, netlink, build and teardown, links and their watcher
    dataplane  the eBPF program and maps, LB schemes and their models, control plane
    topology   the description: nodes, ports, links, names, addresses, units

Traffic (workloads, packet format, senders) is the top-level package
`traffic`, which imports nothing from here. `from testbed import results`
still gives testbed.measure.results, the reader of result directories.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__version__ = "0.1.0"


def __getattr__(name: str) -> ModuleType:
    if name == "results":  # the public reader of result directories, by its old name
        return importlib.import_module("testbed.measure.results")
    raise AttributeError(f"module 'testbed' has no attribute {name!r}")
