"""Layer 5, experiments: what one run is asked and reports (params), one run
end to end (experiment), fault timelines (faults), and a matrix of runs
(compare). May import testbed.measure and every layer below it, and traffic.
"""
