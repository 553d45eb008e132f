"""What `testbed status` reports about the fabric that is up: its nodes,
links and their kernel link state, rate, per-switch schemes, and whether its
link watcher is running. Data only; the CLI prints it."""

from __future__ import annotations

from typing import Any

from ..dataplane.switches import current_schemes
from ..models.schemes import Scheme
from ..topology.units import format_rate
from . import netns, state
from .build import Fabric
from .clean import ours
from .observe import link_states


def watcher_status(prefix: str) -> dict[str, Any]:
    """The link watcher daemon: without it, failures are not handled."""
    st = state.load(prefix)
    pids = [p for p in (st.pids if st else []) if ours(p)]
    return {"alive": bool(pids), "pids": pids}


def status(prefix: str) -> dict[str, Any]:
    with Fabric.attach(prefix) as fab:
        tree = fab.tree
        assert fab.maps is not None
        states = link_states(tree)
        switches = {
            name: {
                "scheme": c.label,
                "scheme_base": c.scheme.label,
                **({"pipe_size": c.pipe_size or "cpu"} if c.scheme is Scheme.POFAN else {}),
            }
            for name, c in current_schemes(fab.maps, tree).items()
        }
        links = []
        for ln in tree.links:
            a, b = tree.ports[ln.a_gid], tree.ports[ln.b_gid]
            sa, sb = states.get(a.ifindex, "absent"), states.get(b.ifindex, "absent")
            links.append(
                {
                    "link": ln.name,
                    "a": ln.a,
                    "b": ln.b,
                    "state_a": sa,
                    "state_b": sb,
                    "state": "up" if sa == sb == "UP" else "down",
                }
            )
        return {
            "prefix": prefix,
            "topology": tree.kind,
            "k": tree.k,
            "rate_bps": fab.spec.rate_bps,
            "rate": format_rate(fab.spec.rate_bps),
            "mtu": fab.spec.mtu,
            "burst_bytes": fab.spec.burst,
            "hosts": tree.n_hosts,
            "switches_total": tree.n_switches,
            "namespaces": len(netns.listed(prefix)),
            "nodes": [
                {
                    "name": n.name,
                    "tier": n.level.name.lower(),
                    "namespace": tree.ns(n.name),
                    **({"ip": str(tree.host_ip(n))} if n.is_host else {}),
                }
                for n in tree.nodes
            ],
            "links": links,
            "switches": switches,
            "watcher": watcher_status(prefix),
        }
