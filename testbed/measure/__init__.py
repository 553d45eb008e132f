"""Layer 5, measurement: what a run reads from the kernel (collector), the
arithmetic that turns it into results (metrics), the fidelity verdict
(fidelity), result directories (results) and where a result came from
(provenance). May import testbed.fabric and the layers below it, and traffic.
"""
