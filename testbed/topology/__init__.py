"""Layer 1, the description: a fabric's nodes, ports, links, names and
addresses (fattree), and the units its parameters are given in (units).
Pure data; imports nothing of the testbed and touches no kernel object.
"""

from .fattree import (
    IFINDEX_BASE,
    IFNAMSIZ,
    KINDS,
    FatTree,
    Level,
    Link,
    Node,
    Port,
    Stage,
    TopologyError,
    validate_k,
    validate_prefix,
)

__all__ = [
    "IFINDEX_BASE",
    "IFNAMSIZ",
    "KINDS",
    "FatTree",
    "Level",
    "Link",
    "Node",
    "Port",
    "Stage",
    "TopologyError",
    "validate_k",
    "validate_prefix",
]
