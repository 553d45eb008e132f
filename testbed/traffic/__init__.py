"""Traffic: what to send (workloads) and the paced senders that send it."""
