"""Fat-tree load-balancing testbed on the real kernel.

Where things live: topology (testbed.topology), LB schemes and their
reference models (testbed.schemes), the kernel objects (testbed.fabric,
testbed.netns, testbed.netlink), the eBPF data plane (testbed.dataplane,
ebpf/), traffic (testbed.traffic), measurements (testbed.collector), one
run (testbed.experiment), output (testbed.report, testbed.cli).
"""

__version__ = "0.1.0"
