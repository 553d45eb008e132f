"""The public API's surface, recorded: its names and every signature. A change to it is a change users see, so
it must be made here on purpose (and in docs/api.md), never by accident."""

from __future__ import annotations

import dataclasses
import inspect

import testbed
from testbed import api
from testbed.run.params import RunParams

SURFACE = {
    "build": "(k: 'int' = 4, *, topology: 'str' = 'fattree', rate: 'int | str | None' = 'auto', scheme: 'str | Scheme' = 'ecmp', pipe_size: 'int | str' = 4, seed: 'int' = 1, acks: 'bool' = False, ack_priority: 'bool | None' = None, wire_overhead: 'int' = 24, prefix: 'str' = 'tbapi', wait: 'bool' = False) -> 'Iterator[Fabric]'",
    "attach": "(prefix: 'str' = 'tb') -> 'Iterator[Fabric]'",
    "sweep": "(scheme: 'str | Sequence[str]', *, out: 'str | Path', k: 'int | Sequence[int]' = 4, failures: 'Sequence[float]' = (0.0,), topology: 'str' = 'fattree', rate: 'int | str | None' = 'auto', rate_factor: 'float' = 1.0, wire_overhead: 'int' = 24, ack_priority: 'bool | None' = None, retries: 'int' = 2, cluster: 'str | None' = None, prefix: 'str' = 'tbs', wait: 'bool' = False, progress: 'Callable[[int, int, dict[str, Any] | None], None] | None' = None, **options: 'Any') -> 'pd.DataFrame'",
    "ideal": "(schemes: 'str | Sequence[str]' = 'ecmp,rps,ofan,pofan:4', *, seeds: 'int | str | Sequence[int]' = '1-3', workload: 'str' = 'permutation', size: 'int | str' = '1MB', k: 'int' = 4, topology: 'str' = 'fattree', inter_pod: 'bool' = False, start_jitter: 'float' = 1.0, order: 'str' = 'random', propagation: 'str | float | Propagation' = Propagation(kind='paper', value=0.0), on_row: 'Callable[[dict[str, Any]], None] | None' = None, link: 'str' = 'emulator', spray: 'str' = 'switch', entropies: 'int' = 8192, flows: 'str | None' = None, cm_rate: 'int | str' = '100gbit') -> 'list[dict[str, Any]]'",
    "Fabric.run": "(self, workload: 'str', size: 'int | str | None' = None, *, scheme: 'str | Scheme | None' = None, retries: 'int' = 0, out: 'str | Path | None' = None, wait: 'bool' = False, OPTIONS) -> 'Result'",
    "Fabric.fail": "(self, link: 'str | None' = None, *, random: 'float | None' = None, seed: 'int' = 1, force: 'bool' = False) -> 'dict[str, Any]'",
    "Fabric.heal": "(self, link: 'str | None' = None, *, all: 'bool' = False) -> 'dict[str, Any]'",
    "Fabric.set_scheme": "(self, scheme: 'str | Scheme', *, switches: 'str' = 'all', pipe_size: 'int | str' = 4, seed: 'int' = 1, reset_pointers: 'bool' = True) -> 'dict[str, Any]'",
    "Fabric.status": "(self) -> 'dict[str, Any]'",
    "Result.json": "(self) -> 'dict[str, Any]'",
}
PROPERTIES = {
    "Fabric": {"tree", "k", "prefix", "rate_bps", "hosts"},
    "Result": {"valid", "verdict", "ports", "flows", "stages", "timeseries", "windows"},
}


def _without_options(sig: inspect.Signature) -> str:
    """A signature with the run options (testbed.run.options: they are RunParams's, checked below) as OPTIONS."""
    names = {f.name for f in dataclasses.fields(RunParams)}
    own = [p for p in sig.parameters.values() if p.name not in names or p.name in ("workload", "size", "scheme")]
    if len(own) == len(sig.parameters):
        return str(sig)
    return str(sig.replace(parameters=own)).replace(") ->", ", OPTIONS) ->")


def test_the_api_is_what_it_was() -> None:
    assert set(testbed.__all__) == {*api.__all__, "results"}
    for name in api.__all__:
        assert getattr(testbed, name) is getattr(api, name)
    got = {}
    for dotted in SURFACE:
        owner, _, attr = dotted.rpartition(".")
        obj = getattr(getattr(api, owner), attr) if owner else getattr(api, attr)
        sig = inspect.signature(obj)
        got[dotted] = _without_options(sig) if dotted == "Fabric.run" else str(sig)
    assert got == SURFACE
    for cls, props in PROPERTIES.items():
        c = getattr(api, cls)
        assert {n for n, v in vars(c).items() if isinstance(v, property)} == props, cls


def test_fabric_run_shows_every_run_option() -> None:
    """Fabric.run's and run_params's signatures list every run option, with its type and default (help())."""
    want = {f.name: f.default for f in dataclasses.fields(RunParams)}
    for fn in (api.Fabric.run, api.run_params):
        got = {p.name: p.default for p in inspect.signature(fn).parameters.values() if p.name in want}
        assert set(got) == set(want), set(want) ^ set(got)
        assert all(got[n] == want[n] for n in got if n not in ("scheme", "size", "workload")), fn


def test_run_takes_every_flag_of_testbed_run() -> None:
    """Fabric.run's keyword flags are api.run_params's, which are `testbed run`'s (dashes as underscores)."""
    from testbed.cli import build_parser, docs

    run_parser = dict((n, p) for n, _, p in docs._subcommands(build_parser()))["run"]
    cli_flags = {a.dest for a in run_parser._actions if a.option_strings and a.dest != "help"}
    api_flags = set(inspect.signature(api.run_params).parameters) | {"scheme", "retries", "out", "wait"}
    only_cli = {"k", "rate", "json", "prefix", "wire_overhead", "ack_priority", "topology"}  # the fabric's, or printing
    assert cli_flags - only_cli <= api_flags, cli_flags - only_cli - api_flags
