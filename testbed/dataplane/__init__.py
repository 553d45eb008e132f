"""Layer 2, the data plane: the eBPF program (compile), its pinned maps
(maps), the switches' state written into them (switches), the scheme registry
(schemes) with a pure model of every decision (models), and the control plane
(control). May import testbed.topology and traffic; no namespaces, no netlink.
"""
