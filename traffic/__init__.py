"""Traffic: what to send (workloads), how it looks on the wire (packet), and
the paced senders that send it (sender.c and its driver, sender).

Imports nothing from testbed: a sender is told namespaces and addresses, not
fat trees, so the traffic layer knows no kernel objects and no data plane.
"""
