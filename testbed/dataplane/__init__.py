"""Layer 3, the data plane: the eBPF program (compile), its pinned maps
(maps: their typed mirrors), the C-Python contract's numbers checked against
the C headers (contract), and the switches' state written into them
(switches). The scheme registry, the models of every decision and the control
plane are testbed.models'. May import testbed.models, testbed.topology and
traffic; no namespaces, no netlink.
"""
