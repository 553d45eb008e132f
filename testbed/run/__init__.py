"""Layer 6, experiments: how a run option is declared (options), what one run
is asked and reports (params), one run end to end (experiment), fault
timelines (faults), a matrix of runs (compare), sweeps (sweep) and where
they run (runner, cluster), the paper's figures (paper) and claims (claims).
May import testbed.measure and every layer below it, and traffic.
"""
