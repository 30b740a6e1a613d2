"""The benchmarks as Inspect tasks: `inspect eval maps_autogen/mathvista` (and `/olympiadbench`,
`/emma`, `/custom`). Inspect finds them through the `inspect_ai` entry point in pyproject.toml,
which names this module: importing it registers the tasks under the package's name.

Task arguments (`-T name=value`): `data` (a local copy, read as `maps eval --data` reads it;
default: the hub), `method` (maps, direct, cot), `config` (an agents.yaml; default: the one
`maps` finds), `team` (a team file or built-in team name), `without` (step names, comma
separated), `subsets` (comma separated), `rules` (the scoring rules). The number of samples is
Inspect's own `--limit`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from inspect_ai import Task, task

from maps_autogen._util import UsageError, register_well_known_keys
from maps_autogen.benchmarks import NAMES, get_benchmark
from maps_autogen.eval import METHODS, load_baseline_prompts
from maps_autogen.inspect_tasks import _log_secrets as log_secrets  # noqa: F401 - registers the hook that masks our tasks' logs
from maps_autogen.inspect_tasks._local_model import check_model_given  # also registers --model maps/local
from maps_autogen.inspect_tasks._samples import benchmark_dataset, benchmark_items
from maps_autogen.inspect_tasks._solver import maps_metrics, maps_solver, official_scorer
from maps_autogen.problem import load_answer_formats
from maps_autogen.settings import check_without, load_config, load_prompts


def _names(value: str | list[str] | None) -> tuple[str, ...]:
    """A task argument listing names: `a,b` or a YAML list."""
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    return tuple(item.strip() for item in items if item.strip())


def maps_task(benchmark: str, *, data: str | None = None, method: str = "maps", config: str | None = None,
              team: str | None = None, without: str | list[str] | None = None,
              subsets: str | list[str] | None = None, rules: str = "current") -> Task:
    """One benchmark as an Inspect task: its rows as samples, the MAPS team (or a baseline) as
    the solver, its official-conformant scorer."""
    check_model_given(f"maps_autogen/{benchmark}")
    if method not in METHODS:
        raise UsageError(f"unknown method '{method}'", fix=f"use one of: {', '.join(METHODS)}")
    register_well_known_keys()  # the provider's key (and base URL) variables: masked in the log (_log_secrets.py)
    loaded = load_config(Path(config) if config else None, team=Path(team) if team else None)
    left_out = frozenset(_names(without))
    if method == "maps":
        check_without(loaded.team.config, left_out, loaded.team.source)
    elif left_out:
        raise UsageError(f"without applies to the maps method, not {method}", fix="drop -T without")
    bench = get_benchmark(benchmark).task
    prompts = load_prompts(loaded)
    items = benchmark_items(bench, loaded, Path(data) if data else None, _names(subsets))
    baseline, ending = None, ""
    if method != "maps":
        baseline = load_baseline_prompts(loaded.resolve(loaded.config.baseline_prompts))[method]
        ending = load_answer_formats(loaded.resolve(loaded.config.answer_formats)).render(bench.name,
                                                                                          "baseline_ending")
    by_id = {item.pid: item for item in items}
    return Task(
        dataset=benchmark_dataset(bench.name, items),
        solver=maps_solver(bench, by_id, loaded, prompts, method=method, without=left_out, baseline=baseline,
                           ending=ending),
        scorer=official_scorer(bench, by_id, rules),
        metrics=maps_metrics() if method == "maps" else None,  # beside accuracy, the rollback rate
        metadata={"benchmark": bench.name, "method": method, "without": sorted(left_out),
                  "team": loaded.team.config.names, "config": str(loaded.path), "data": data},
    )


def _registered(benchmark: str) -> Callable[..., Task]:
    """The Inspect task `maps_autogen/<benchmark>` (its arguments are the `-T` names)."""

    def benchmark_task(data: str | None = None, method: str = "maps", config: str | None = None,
                       team: str | None = None, without: str | list[str] | None = None,
                       subsets: str | list[str] | None = None, rules: str = "current") -> Task:
        return maps_task(benchmark, data=data, method=method, config=config, team=team, without=without,
                         subsets=subsets, rules=rules)

    benchmark_task.__doc__ = f"{benchmark} with MAPS or a baseline (see maps_task)."
    registered: Callable[..., Task] = task(name=benchmark)(benchmark_task)
    return registered


#: One task per benchmark of the registry (`benchmarks.NAMES`), registered on import.
TASKS = {name: _registered(name) for name in NAMES}
