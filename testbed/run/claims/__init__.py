"""The paper's quantitative claims, one check each (`testbed paper claims`).

A claim has the paper's section, its statement (in our words) and number, every experiment whose runs it
reads (a sweep matrix per scale, shared by every claim that needs it), and a rule that decides the verdict
from those experiments' valid runs: agrees, disagrees, not comparable here (with why), or pending (the
experiment needs what a later change builds: said, never dropped). The rules are written before any run and
are not tuned to results.

    catalogue.py   the experiments and the claims, as data; which experiments a choice of claims reads
    execution.py   the check: the experiments' sweeps (testbed.run.runner), the rules, the documents
    document.py    claims.json, claims.md, and claims.md spliced into a page (docs/reproduction.md)

The rules themselves are pure functions of the rows, beside the sweep statistics: testbed.measure.claim_rules.

    DIR/experiments/NAME/   each experiment's sweep (resumable: testbed.run.sweep)
    DIR/claims.json         every claim: section, statement, paper, value, SEM, verdict, rule, notes
    DIR/claims.md           the same as a page (docs/reproduction.md is generated from it)
"""

from __future__ import annotations

from .catalogue import DESIGNS, RATE_FACTOR, SCALES, Claim, Experiment, claims, experiments, matrices, needed, select
from .document import DOC_BEGIN, DOC_END, check_doc, format_value, markdown, splice_doc, write
from .execution import Checked, check, evaluate, load_rows, run, sweep_dirs

__all__ = [
    "DESIGNS",
    "DOC_BEGIN",
    "DOC_END",
    "RATE_FACTOR",
    "SCALES",
    "Checked",
    "Claim",
    "Experiment",
    "check",
    "check_doc",
    "claims",
    "evaluate",
    "experiments",
    "format_value",
    "load_rows",
    "markdown",
    "matrices",
    "needed",
    "run",
    "select",
    "splice_doc",
    "sweep_dirs",
    "write",
]
