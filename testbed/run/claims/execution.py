"""The claims check run: every experiment the chosen claims read (resumable sweeps, here or on a cluster:
testbed.run.runner), then each claim's rule and decision on the valid runs; while a claim is not decided, more
seeds for the experiments it reads, up to its cap; then claims.json and claims.md (`check` is `testbed paper
claims`).

Seeds until decided: an experiment's sweep directory holds one matrix, and a matrix with more seeds is the same
experiment grown. A cell's name carries its seed, so every row of the smaller matrix is a row of the grown one:
`grow` rewrites the directory's sweep.json to the grown matrix (only ever to one that differs by added seeds)
and the sweep runs only the new cells. Each round doubles the seeds of every experiment a not-decided claim reads
(up to the largest cap among those claims): an interval's half-width falls as 1/sqrt(n), so a claim near its
margin needs a factor in n, not a few more runs; doubling reaches any n in log2 rounds (each round builds its
fabrics again) and runs at most twice the seeds a claim needed. A check started again on the directory resumes
with the seeds it had reached (`sweep_dirs`)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ...measure.claim_rules import AGREES, NO_DATA, NOT_DECIDED, PENDING, Data, Judgement, Outcome, judge, no_data
from ...measure.results import write_json
from ..params import RunError
from ..runner import check_can_run, run_sweep
from ..sweep import SPEC, Cell, Matrix, SweepDir
from . import link_models
from .catalogue import RATE_FACTOR, Claim, matrices, select
from .document import check_doc, splice_doc, write
from .store import Part, Store, open_matrix, total_wall_s

# an experiment's progress: (its name, runs done, runs in all, the last run's row)
Progress = Callable[[str, int, int, dict[str, Any] | None], None]
JUDGING_MARGIN_S = 300.0  # a part's time kept for its last fabric's teardown, the judging and the link models
WALL = "wall.json"  # the wall time so far, rewritten after every run: an interrupted invocation keeps its time


def evaluate(selected: list[Claim], data: Data, incomplete: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Each claim's rule and decision on `data`; a claim reading an experiment named in `incomplete` (its runs not
    all done, and none run: `--no-run`) is not judged on part of its runs: it reads "no data" and says what is
    missing."""
    out = []
    for c in selected:
        o = _outcome(c, data, incomplete or {})
        out.append(_result(c, o, judge(c.decisions, o), data))
    return out


def _outcome(c: Claim, data: Data, incomplete: dict[str, str]) -> Outcome:
    missing = [f"{n} ({incomplete[n]})" for n in c.experiments if n in incomplete]
    if c.check is None:
        return Outcome({}, "", f"needs {c.needs}", verdict=PENDING)
    if missing:
        return Outcome({}, "", "not run to the end: " + ", ".join(missing), verdict=NO_DATA)
    try:
        return c.check(data)
    except KeyError as e:  # a column the experiment's rows do not have (a partial sweep)
        return no_data(f"{c.experiment} ({e})")


def seeds_of(rows: pd.DataFrame) -> list[int]:
    """The seeds an experiment's rows have (valid or not)."""
    col = "seed" if "seed" in rows else "cell_seed" if "cell_seed" in rows else None
    return sorted({int(s) for s in rows[col]}) if col is not None and not rows.empty else []


def _num(v: float | None) -> float | None:
    """A number for JSON: None for no number or an unbounded end."""
    return None if v is None or not math.isfinite(v) else float(v)


def _result(c: Claim, o: Outcome, j: Judgement, data: Data) -> dict[str, Any]:
    """A claim's entry of claims.json: what it is, its seeds, its deciding part (the interval, the comparison and
    the margin one line shows: testbed.measure.claim_rules.Judgement.deciding), every part, the verdict."""
    seeds = {n: seeds_of(data.of(n)) for n in c.experiments}
    cap = c.cap(data.scale) if c.experiments else None
    notes = [o.notes] + ([o.caveat] if j.verdict != AGREES and o.caveat else [])
    if j.verdict == NOT_DECIDED and cap is not None:
        n = min(len(v) for v in seeds.values())
        notes.append(f"not decided with {n} seeds" + (" (its cap at this scale)" if n >= cap else f" (cap {cap})"))
    p = j.deciding
    return {
        "id": c.cid,
        "section": c.section,
        "statement": c.statement,
        "paper": c.paper,
        "experiment": c.experiment,
        "experiments": list(c.experiments),
        "rule": c.rule,
        "decisions": [
            {"name": d.name, "quantity": d.quantity, "comparison": d.comparison, "margin": d.margin, "unit": d.unit}
            for d in c.decisions
        ],
        "verdict": j.verdict,
        "quantity": f"{p.decision.quantity} ({p.member})" if p else None,
        "value": _num(p.interval.value) if p else None,
        "sem": _num(p.interval.sem) if p else None,
        "interval": [_num(p.interval.lo), _num(p.interval.hi)] if p else None,
        "comparison": p.decision.comparison if p else None,
        "margin": p.decision.margin if p else None,
        "unit": p.decision.unit if p else "",
        "seeds": seeds,
        "seed_cap": cap,
        "parts": [
            {
                "decision": q.decision.name,
                "member": q.member,
                "value": _num(q.interval.value),
                "interval": [_num(q.interval.lo), _num(q.interval.hi)],
                "verdict": q.verdict,
            }
            for q in j.parts
        ],
        "detail": o.detail,
        "notes": "; ".join(n for n in notes if n),
    }


def load_rows(out_dir: Path, names: list[str]) -> dict[str, pd.DataFrame]:
    rows = {}
    for n in names:
        table = out_dir / "experiments" / n / "results.parquet"
        if table.exists():
            rows[n] = pd.read_parquet(table)
    return rows


# -- seeds until decided -----------------------------------------------------------------------
def grown(m: Matrix, count: int) -> Matrix:
    """m with `count` seeds: its own, then the next ones."""
    seeds = m.values("seed")
    first = max(seeds) + 1
    return m.replace(seed=seeds + tuple(range(first, first + count - len(seeds))))


def _same_but_seeds(a: Matrix, b: Matrix) -> bool:
    return a.replace(seed=b.values("seed")).fingerprint() == b.fingerprint()


def _rewrite(path: Path, m: Matrix) -> None:
    """The directory's sweep.json for the grown matrix m (its other fields kept)."""
    spec = path / SPEC
    write_json(spec, {**json.loads(spec.read_text()), "matrix": m.to_json(), "fingerprint": m.fingerprint()})


def open_dir(path: Path, m: Matrix) -> SweepDir:
    """The experiment's sweep directory for matrix m. A directory holding m with more seeds (grown by an earlier
    check) keeps them; one holding m with fewer seeds is grown to m; any other matrix is refused (SweepDir)."""
    try:
        held = Matrix.from_json(json.loads((path / SPEC).read_text())["matrix"])
    except (FileNotFoundError, KeyError, ValueError):
        return SweepDir(path, m)
    if held.fingerprint() != m.fingerprint() and _same_but_seeds(held, m):
        mine, theirs = set(m.values("seed")), set(held.values("seed"))
        if mine <= theirs:
            return SweepDir(path, held)
        if theirs <= mine:
            _rewrite(path, m)
    return SweepDir(path, m)


def grow(d: SweepDir, count: int) -> SweepDir:
    """d grown to `count` seeds: its rows kept, its new cells pending."""
    m = grown(d.matrix, count)
    _rewrite(d.path, m)
    return SweepDir(d.path, m)


def more_seeds(
    selected: list[Claim], results: list[dict[str, Any]], have: dict[str, int], scale: str
) -> dict[str, int]:
    """The experiments to grow, and to how many seeds: every experiment a not-decided claim reads and whose seeds
    are below that claim's cap, to twice its seeds (at most the largest such cap)."""
    want: dict[str, int] = {}
    for c, r in zip(selected, results, strict=True):
        if r["verdict"] != NOT_DECIDED:
            continue
        cap = c.cap(scale)
        for n in c.experiments:
            if have[n] < cap:
                want[n] = max(want.get(n, 0), min(cap, 2 * have[n]))
    return {n: k for n, k in want.items() if k > have[n]}


def sweep_dirs(out_dir: Path, mats: dict[str, Matrix]) -> dict[str, SweepDir]:
    """Each experiment's sweep directory (with the seeds an earlier check reached: open_dir; a directory holding
    another matrix is refused: testbed.run.sweep)."""
    return {n: open_dir(out_dir / "experiments" / n, m) for n, m in mats.items()}


@dataclass
class _Runner:
    """How the sweeps run: here or on a cluster, with the command's progress and the wall time recorded; with a
    `deadline` (time.monotonic()), no run starts that its estimate says would end after it (a part of a check);
    with a `store`, each finished run's row is added to it as it goes."""

    out_dir: Path
    prefix: str
    cluster: str | None
    wait: bool
    progress: Progress | None
    previous: float
    t0: float
    deadline: float | None = None
    store: Store | None = None
    runs: int = 0  # finished in this invocation

    def pending(self, dirs: dict[str, SweepDir]) -> bool:
        """Run what is pending, experiment by experiment; whether every run is done (a part stops at the first
        experiment its time left unfinished)."""
        complete = True
        for name, d in dirs.items():

            def each(done: int, total: int, row: dict[str, Any] | None, name: str = name, d: SweepDir = d) -> None:
                _record_wall_s(self.out_dir, self.previous + time.monotonic() - self.t0)
                if row is not None:
                    self.runs += 1
                    if self.store is not None:
                        self.store.export(name, d)
                if self.progress is not None:
                    self.progress(name, done, total, row)

            if d.pending():
                run_sweep(d, prefix=self.prefix, cluster=self.cluster, wait=self.wait, progress=each, fits=self.fits(d))
            if d.pending():
                complete = False
                if self.deadline is not None:
                    break
        return complete

    def fits(self, d: SweepDir) -> Callable[[Cell], bool] | None:
        if self.deadline is None:
            return None
        deadline = self.deadline

        def fits(cell: Cell) -> bool:
            return time.monotonic() + estimate_run_s(d, cell) <= deadline

        return fits


def estimate_run_s(d: SweepDir, cell: Cell) -> float:
    """A cell's wall time before it runs: 1.5 x the longest finished run of its experiment on its fabric (the
    same k), or twice testbed.run.paper's estimate where none has finished; its fabric's build is not counted
    (the part's margin holds it)."""
    from ..paper import estimate_s

    walls = [float(r["wall_s"]) for r in d.rows() if int(r.get("k", -1)) == cell.k and r.get("wall_s") is not None]
    if walls:
        return 1.5 * max(walls)
    one = d.matrix.replace(k=(cell.k,), **{n: (v,) for n, v in cell.values if n in d.matrix.options})
    return 2.0 * estimate_s(one) / max(1, len(one.cells()))


def unfinished(dirs: dict[str, SweepDir], store: Store | None) -> dict[str, str]:
    """Each experiment whose runs are not all done (in the store when there is one), and how many are."""
    out = {}
    for n, d in dirs.items():
        cells = {c.name for c in d.matrix.cells()}
        done = cells & ({r["cell"] for r in store.rows(n)} if store is not None else d.done())
        if len(done) < len(cells):
            out[n] = f"{len(done)} of {len(cells)} runs"
    return out


def run(
    out_dir: Path,
    dirs: dict[str, SweepDir],
    selected: list[Claim],
    *,
    scale: str,
    propagation: str,
    rate_factor: float,
    meta: dict[str, Any],
    prefix: str = "tbs",
    cluster: str | None = None,
    wait: bool = False,
    progress: Progress | None = None,
    run_missing: bool = True,
    store: Store | None = None,
    deadline: float | None = None,
    announce: Callable[[str], None] = lambda line: None,
) -> list[dict[str, Any]]:
    """Every experiment's sweep in `dirs` (what is done already is kept: resumable), then every rule; while a claim
    is not decided and below its cap, its experiments grow (more_seeds) and only their new cells run. With
    `run_missing` False none is run and none grows; an experiment whose runs are not all done (none run, or a
    `deadline` stopped the part) is not judged: its claims read "no data". Each claim the ideal fabric computes is
    judged again on it under both link models (testbed.run.claims.link_models). With a `store` (--from), every
    finished run's row is added to it, the claims are judged on its rows alone, and the page's provenance is its
    parts'. Writes claims.json and claims.md (`meta`, the check's scale, propagation and rate factor, the wall time
    and the experiments' matrices) and returns the claims' results. The wall time adds up over invocations, an
    interrupted one's included up to its last finished run; one that only judges (`run_missing` False) adds
    nothing."""
    dirs = dict(dirs)
    runner = _Runner(
        out_dir=out_dir,
        prefix=prefix,
        cluster=cluster,
        wait=wait,
        progress=progress,
        previous=_previous_wall_s(out_dir),
        t0=time.monotonic(),
        deadline=deadline,
        store=store,
    )
    ran = any(d.pending() for d in dirs.values())
    while True:
        complete = runner.pending(dirs) if run_missing else True
        waiting = unfinished(dirs, store)
        rows = store.frames(list(dirs)) if store is not None else load_rows(out_dir, list(dirs))
        results = evaluate(selected, Data(scale, rows), waiting)
        have = {n: len(d.matrix.values("seed")) for n, d in dirs.items()}
        more = more_seeds(selected, results, have, scale) if run_missing and complete else {}
        if not more:
            break
        if not ran:  # nothing was pending: check() did not ask whether this machine can run
            check_can_run(cluster)
            ran = True
        undecided = [r["id"] for r in results if r["verdict"] == NOT_DECIDED]
        for n, count in more.items():
            dirs[n] = grow(dirs[n], count)
        announce(
            f"not decided: {', '.join(undecided)}; more seeds: "
            + ", ".join(f"{n} {have[n]} -> {k} ({len(dirs[n].pending())} runs)" for n, k in more.items())
        )
    mats = {n: d.matrix for n, d in dirs.items()}
    links = link_models.verdicts(selected, mats, scale, announce, store=store, save=run_missing)
    results = [{**r, "link_model": links.get(r["id"])} for r in results]
    this_s = time.monotonic() - runner.t0 if run_missing else 0.0  # judging alone adds none
    _record_wall_s(out_dir, runner.previous + this_s)
    info = {**meta, "scale": scale, "propagation": propagation, "rate_factor": rate_factor}
    info |= {"wall_s": runner.previous + this_s, "experiments": {n: m.to_json() for n, m in mats.items()}}
    if store is not None:  # the data's part, and the page's provenance the data's
        info = _account(store, info, runner.runs, this_s, mats)
    write(out_dir, results, info)
    return results


@dataclass(frozen=True)
class Checked:
    """What `check` did: its directory, every chosen claim's result and this invocation's seconds."""

    out: Path
    results: list[dict[str, Any]]
    seconds: float


def default_out(scale: str) -> Path:
    return Path("results") / f"paper-claims-{scale}"


def check(
    names: str | None = None,
    *,
    scale: str = "quick",
    propagation: str = "paper",
    out: Path | None = None,
    rate_factor: float | None = None,
    prefix: str = "tbs",
    cluster: str | None = None,
    wait: bool = False,
    run_missing: bool = True,
    doc: Path | None = None,
    data: Path | None = None,
    minutes: float | None = None,
    command: str = "testbed paper claims",
    announce: Callable[[str], None] = lambda line: None,
    progress: Progress | None = None,
) -> Checked:
    """`testbed paper claims`: the claims `names` (comma-separated ids; every one by default) checked at
    `scale` into `out`: each experiment they read run here or on `cluster` (resumable; none with `run_missing`
    False), then each rule and decision, more seeds while a claim is not decided (up to its cap: run); claims.json
    and claims.md written, and claims.md put into the page `doc` (checked before any run). With `data` (--from,
    testbed.run.claims.store): its rows count as done, every run adds its row to it, the claims are judged on its
    rows alone. With `minutes`, no run starts that would end after them (a part; the next invocation resumes).
    Every matrix and directory is checked, and `announce` told what will run (and each growth of the seeds),
    before the first build; `rate_factor` None is the claims' RATE_FACTOR."""
    selected = select(names)
    if doc is not None:
        check_doc(doc)
    factor = RATE_FACTOR if rate_factor is None else rate_factor
    if minutes is not None and (minutes <= 0 or cluster is not None):
        raise RunError("--minutes takes a positive number of minutes, and a check run here (not with --cluster)")
    t0 = time.monotonic()
    out = out or default_out(scale)
    mats = matrices(scale, propagation, selected, factor)  # cells checked before any build
    store = None if data is None else Store(data, scale)
    if store is not None:
        store.check_matches(propagation, factor)
        mats = {n: open_matrix(store, n, m) for n, m in mats.items()}
    dirs = sweep_dirs(out, mats)  # a directory of another check is refused
    if store is not None:
        for n, d in dirs.items():
            store.seed(n, d)
    total = sum(len(m.cells()) for m in mats.values())
    pending = sum(len(d.pending()) for d in dirs.values())
    caps = sorted({c.cap(scale) for c in selected if c.experiments}) if run_missing else []
    announce(
        f"{len(selected)} claims, {len(mats)} experiments, {total} runs at --scale {scale} "
        f"({total - pending} done already) into {out}"
        + (f" and {store.path}" if store is not None and run_missing else "")
        + (f"; more seeds while a claim is not decided, up to {' or '.join(map(str, caps))}" if caps else "")
        + (f"; runs that fit {minutes:g} minutes" if minutes is not None else "")
    )
    if pending and run_missing:
        for d in dirs.values():  # every directory before the first run: none resumed at another rate
            if d.pending():
                d.check_rates()
        check_can_run(cluster)
    if store is not None and run_missing:
        _import(store, dirs, out, propagation, factor, command)
    results = run(
        out,
        dirs,
        selected,
        scale=scale,
        propagation=propagation,
        rate_factor=factor,
        meta=_provenance(command),
        prefix=prefix,
        cluster=cluster,
        wait=wait,
        progress=progress,
        run_missing=run_missing,
        store=store,
        deadline=None if minutes is None else t0 + 60 * minutes - JUDGING_MARGIN_S,
        announce=announce,
    )
    if doc is not None:
        splice_doc(doc, (out / "claims.md").read_text())
    return Checked(out, results, time.monotonic() - t0)


def _provenance(command: str) -> dict[str, Any]:
    """claims.json's first fields: the command, the commit, the day and the machine."""
    import platform
    from datetime import UTC, datetime

    from ...measure import provenance

    prov = provenance.describe()
    return {
        "command": command,
        "commit": prov.get("project_commit"),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.node()}, {prov.get('cpus')} CPUs, kernel {prov.get('kernel_release')}",
    }


def _import(store: Store, dirs: dict[str, SweepDir], out: Path, propagation: str, factor: float, command: str) -> None:
    """Rows the check's directory has and the data not (a check run before without --from) added to the data, as
    one part: their commits and days, this machine, the directory's recorded wall time."""
    before = {n: {r["cell"] for r in store.rows(n)} for n in dirs}
    added = sum(store.export(n, d) for n, d in dirs.items())
    if not added:
        return
    new = [r for n in dirs for r in store.rows(n) if r["cell"] not in before[n]]
    here = _provenance(command)
    part = Part(
        commit=", ".join(sorted({str(r["commit"])[:7] for r in new})),
        date=", ".join(sorted({str(r["date"]) for r in new})),
        machine=str(here["machine"]),
        runs=added,
        wall_s=_previous_wall_s(out),
        command=f"imported from {out} by: {command}",
    )
    store.save_meta(propagation, factor, {n: d.matrix for n, d in dirs.items()}, [*store.parts(), part])


def _account(store: Store, info: dict[str, Any], runs: int, this_s: float, mats: dict[str, Matrix]) -> dict[str, Any]:
    """This invocation's part added to the data if it ran anything; `info` (claims.json's fields) with the
    data's provenance and its parts' wall time in place of the invocation's."""
    parts = store.parts()
    if runs:
        parts.append(_part(info, runs, this_s))
    store.save_meta(info["propagation"], info["rate_factor"], mats, parts)
    return {**info, **_data_provenance(store), "wall_s": total_wall_s(parts)}


def _part(meta: dict[str, Any], runs: int, wall_s: float) -> Part:
    return Part(
        commit=str(meta.get("commit"))[:7],
        date=str(meta.get("date")),
        machine=str(meta.get("machine")),
        runs=runs,
        wall_s=wall_s,
        command=str(meta.get("command")),
    )


def _data_provenance(store: Store) -> dict[str, Any]:
    """The page's provenance when it is judged on a store: the command that regenerates it, the commits and days
    of its rows, its parts' machines and wall times (not this invocation's: regenerating changes nothing)."""
    rows = [r for n in sorted(store.matrices()) for r in store.rows(n)]
    commits = sorted({str(r.get("commit", "unknown"))[:7] for r in rows})
    days = sorted({str(r.get("date", "unknown")) for r in rows})
    parts = store.parts()
    return {
        "command": f"testbed paper claims --scale {store.scale} --no-run --from {store.root.as_posix()}",
        "commit": ", ".join(commits) or "none",
        "date": "no run yet" if not days else days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}",
        "machine": "; ".join(dict.fromkeys(p.machine for p in parts)) or "none",
        "parts": [p.to_json() for p in parts],
    }


def _previous_wall_s(out_dir: Path) -> float:
    """The wall time of earlier invocations on this directory (a resumed check adds to it)."""
    for name in (WALL, "claims.json"):
        try:
            return float(json.loads((out_dir / name).read_text()).get("wall_s", 0.0))
        except (FileNotFoundError, ValueError):
            continue
    return 0.0


def _record_wall_s(out_dir: Path, wall_s: float) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / WALL, {"wall_s": wall_s})
