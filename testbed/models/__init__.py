"""Layer 2, pure models of the data plane, no kernel and no bcc: the scheme registry (schemes), each switch scheme's
decision (decisions) and each host scheme's (host), the sampled schemes' timers (sampled), the control plane's
routing and rho_max (control), and the ideal fabric (ideal). The kernel's side is testbed.dataplane."""
