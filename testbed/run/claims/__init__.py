"""The paper's quantitative claims, one check each (`testbed paper claims`).

A claim has the paper's section, its statement (in our words) and number, every experiment whose runs it
reads (a sweep matrix per scale, shared by every claim that needs it), a rule that measures the quantities it
compares from those experiments' valid runs, each quantity's decision (a comparison with a margin) and its seed
cap (the paper's runs per scenario), all written before any run. A quantity is judged on its interval (a mean
+- 2 SEM, a growth exponent's 95 % interval, or an exact number): agrees or disagrees only when the whole
interval lies on one side of its margin, "not decided" otherwise; a claim not decided gets more seeds, up to its
cap. Besides: not comparable here (with why), pending (the experiment needs what a later change builds: said,
never dropped), no data. The rules are not tuned to results.

    catalogue.py   the experiments and the claims, as data; which experiments a choice of claims reads
    execution.py   the check: the experiments' sweeps (testbed.run.runner), the rules, seeds until decided
    document.py    claims.json, claims.md, and claims.md spliced into a page (docs/reproduction.md)
    store.py       the check's data as the repository keeps it (docs/reproduction/, one directory a scale): every run's row, the
                   ideal fabric's rows and the parts that made them; `--from` resumes from it and judges on it
    link_models.py the link-model column: each claim the ideal fabric computes, judged again on it

The rules and the decision itself are pure functions of the rows, beside the sweep statistics:
testbed.measure.claim_rules.

    DIR/experiments/NAME/   each experiment's sweep (resumable: testbed.run.sweep; its seeds grown in place)
    DIR/claims.json         every claim: section, statement, paper, seeds, interval, margin, verdict, rule, notes
    DIR/claims.md           the same as a page (docs/reproduction.md is generated from it)
    DATA/SCALE/             with --from DATA: the rows, the ideal fabric's rows and the parts (store.py)

A check may run in parts (`--minutes`: no run starts that would end after them); with --from every part adds its
rows and its wall time to the data, and the next part, on any machine, runs only what is missing.
"""

from __future__ import annotations

from .catalogue import (
    DESIGNS,
    RATE_FACTOR,
    SCALE_SEEDS,
    SCALES,
    Claim,
    Experiment,
    claims,
    experiments,
    matrices,
    needed,
    select,
)
from .document import (
    DOC_BEGIN,
    DOC_END,
    check_doc,
    format_interval,
    format_margin,
    format_seeds,
    format_value,
    markdown,
    splice_doc,
    write,
)
from .execution import Checked, check, evaluate, grow, grown, load_rows, more_seeds, open_dir, run, sweep_dirs
from .store import Store

__all__ = [
    "DESIGNS",
    "DOC_BEGIN",
    "DOC_END",
    "RATE_FACTOR",
    "SCALES",
    "SCALE_SEEDS",
    "Checked",
    "Claim",
    "Experiment",
    "Store",
    "check",
    "check_doc",
    "claims",
    "evaluate",
    "experiments",
    "format_interval",
    "format_margin",
    "format_seeds",
    "format_value",
    "grow",
    "grown",
    "load_rows",
    "markdown",
    "matrices",
    "more_seeds",
    "needed",
    "open_dir",
    "run",
    "select",
    "splice_doc",
    "sweep_dirs",
    "write",
]
