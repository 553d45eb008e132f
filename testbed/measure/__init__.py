"""Layer 5, measurement: what a run reads from the kernel (collector), the
arithmetic that turns it into results (metrics), the fidelity verdict
(fidelity), result directories (results), where a result came from
(provenance), a sweep's statistics (sweep_stats) and the paper's claims'
rules over its rows (claim_rules). May import testbed.fabric and the layers below it, and traffic.
"""
