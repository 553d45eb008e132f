"""Layer 4, the fabric on the kernel: namespaces (netns), batched netlink
(netlink), build and teardown (build), reading it (observe), link state and
events (links), the link watcher (watcher), reachability (reach), the record
of a fabric that is up (state), status, and removal by prefix (clean).
May import testbed.dataplane, testbed.topology and traffic.
"""
