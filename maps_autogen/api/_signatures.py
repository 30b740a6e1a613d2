"""The Python API's static types, made from the options' declarations: one Protocol per
function `takes` makes, which mypy checks every call of it against.

Each function in api/_api.py carries `@typed(<its name>Function)`. A Protocol's `__call__`
overloads are the ways the function is called: its options as keywords, or an options object (as
`options=`, or by position) with keywords over it; each option's name, type and default are those
its declaration gives (the same `inspect.signature` and `help()` show). At run time the function
takes what these say and checks every value (settings/_options.py).

Written by `python scripts/api_signatures.py`: do not edit it, run the script again
(tests/api/test_typed_api.py fails when this file and the declarations drift).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, overload

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Iterable

    from maps_autogen.api._api import EffectiveConfig, PathLike
    from maps_autogen.eval import EvalOptions, EvalOutcome, MergeOptions, MergeOutcome
    from maps_autogen.eval._selection import Shard
    from maps_autogen.model.local import LocalServer, ModelServerOptions
    from maps_autogen.orchestration import HumanDecision, HumanState, SolveOptions, SolveResult
    from maps_autogen.problem import Problem
    from maps_autogen.records import ChatRecord, MessageRecord
    from maps_autogen.report import Report, ReportOptions
    from maps_autogen.report.view import ServeOptions, ViewOptions, ViewServer
    from maps_autogen.scoring import ScoreOptions, ScoreReport
    from maps_autogen.settings import LoadedConfig, SettingsOptions


class EffectiveConfigFunction(Protocol):
    """`maps_autogen.effective_config`: the options of SettingsOptions as keywords, or an options
    object with keywords over it."""

    @overload
    def __call__(self, config: str | os.PathLike[str] | LoadedConfig | None = None, *, config_list: str | None = None,
                 model: str | None = None, threshold: float | None = None, max_rollbacks: int | None = None,
                 team: str | os.PathLike[str] | None = None, temperature: float | None = None,
                 top_p: float | None = None, seed: int | None = None,
                 max_tokens: int | None = None) -> EffectiveConfig: ...

    @overload
    def __call__(self, config: str | os.PathLike[str] | LoadedConfig | None = None, *, options: SettingsOptions,
                 config_list: str | None = None, model: str | None = None, threshold: float | None = None,
                 max_rollbacks: int | None = None, team: str | os.PathLike[str] | None = None,
                 temperature: float | None = None, top_p: float | None = None, seed: int | None = None,
                 max_tokens: int | None = None) -> EffectiveConfig: ...

    @overload
    def __call__(self, options: SettingsOptions, /, *, config: str | os.PathLike[str] | LoadedConfig | None = None,
                 config_list: str | None = None, model: str | None = None, threshold: float | None = None,
                 max_rollbacks: int | None = None, team: str | os.PathLike[str] | None = None,
                 temperature: float | None = None, top_p: float | None = None, seed: int | None = None,
                 max_tokens: int | None = None) -> EffectiveConfig: ...


class EvaluateFunction(Protocol):
    """`maps_autogen.evaluate`: the options of EvalOptions as keywords, or an options object with
    keywords over it."""

    @overload
    def __call__(self, benchmark: str, *, subsets: Iterable[str] = (), data: str | os.PathLike[str] | None = None,
                 limit: int | None = None, sample: int | None = None, sample_seed: int = 0, method: str | None = None,
                 without: Iterable[str] = frozenset(), concurrency: int | None = None, workers: int | None = None,
                 rules: str = "current", cache: bool = True, batch: bool = False, max_cost: float | None = None,
                 shard: str | Shard | None = None, dry_run: bool = False, resume: str | os.PathLike[str] | None = None,
                 allow_change: bool = False, runs_dir: str | os.PathLike[str] = Path("runs"),
                 allow_outside_paths: bool = False, allow_private_urls: bool = False, track: str | None = None,
                 config: str | os.PathLike[str] | LoadedConfig | None = None, config_list: str | None = None,
                 model: str | None = None, threshold: float | None = None, max_rollbacks: int | None = None,
                 team: str | os.PathLike[str] | None = None, temperature: float | None = None,
                 top_p: float | None = None, seed: int | None = None, max_tokens: int | None = None,
                 progress: bool = False, announce: Callable[[str], None] | None = None,
                 on_ready: Callable[[Path], None] | None = None) -> EvalOutcome: ...

    @overload
    def __call__(self, benchmark: str = ..., *, options: EvalOptions, subsets: Iterable[str] = (),
                 data: str | os.PathLike[str] | None = None, limit: int | None = None, sample: int | None = None,
                 sample_seed: int = 0, method: str | None = None, without: Iterable[str] = frozenset(),
                 concurrency: int | None = None, workers: int | None = None, rules: str = "current", cache: bool = True,
                 batch: bool = False, max_cost: float | None = None, shard: str | Shard | None = None,
                 dry_run: bool = False, resume: str | os.PathLike[str] | None = None, allow_change: bool = False,
                 runs_dir: str | os.PathLike[str] = Path("runs"), allow_outside_paths: bool = False,
                 allow_private_urls: bool = False, track: str | None = None,
                 config: str | os.PathLike[str] | LoadedConfig | None = None, config_list: str | None = None,
                 model: str | None = None, threshold: float | None = None, max_rollbacks: int | None = None,
                 team: str | os.PathLike[str] | None = None, temperature: float | None = None,
                 top_p: float | None = None, seed: int | None = None, max_tokens: int | None = None,
                 progress: bool = False, announce: Callable[[str], None] | None = None,
                 on_ready: Callable[[Path], None] | None = None) -> EvalOutcome: ...

    @overload
    def __call__(self, options: EvalOptions, /, *, benchmark: str = ..., subsets: Iterable[str] = (),
                 data: str | os.PathLike[str] | None = None, limit: int | None = None, sample: int | None = None,
                 sample_seed: int = 0, method: str | None = None, without: Iterable[str] = frozenset(),
                 concurrency: int | None = None, workers: int | None = None, rules: str = "current", cache: bool = True,
                 batch: bool = False, max_cost: float | None = None, shard: str | Shard | None = None,
                 dry_run: bool = False, resume: str | os.PathLike[str] | None = None, allow_change: bool = False,
                 runs_dir: str | os.PathLike[str] = Path("runs"), allow_outside_paths: bool = False,
                 allow_private_urls: bool = False, track: str | None = None,
                 config: str | os.PathLike[str] | LoadedConfig | None = None, config_list: str | None = None,
                 model: str | None = None, threshold: float | None = None, max_rollbacks: int | None = None,
                 team: str | os.PathLike[str] | None = None, temperature: float | None = None,
                 top_p: float | None = None, seed: int | None = None, max_tokens: int | None = None,
                 progress: bool = False, announce: Callable[[str], None] | None = None,
                 on_ready: Callable[[Path], None] | None = None) -> EvalOutcome: ...


class LoadSettingsFunction(Protocol):
    """`maps_autogen.load_settings`: the options of SettingsOptions as keywords, or an options
    object with keywords over it."""

    @overload
    def __call__(self, config: str | os.PathLike[str] | LoadedConfig | None = None, *, config_list: str | None = None,
                 model: str | None = None, threshold: float | None = None, max_rollbacks: int | None = None,
                 team: str | os.PathLike[str] | None = None, temperature: float | None = None,
                 top_p: float | None = None, seed: int | None = None, max_tokens: int | None = None,
                 without: Iterable[str] = ()) -> LoadedConfig: ...

    @overload
    def __call__(self, config: str | os.PathLike[str] | LoadedConfig | None = None, *, options: SettingsOptions,
                 config_list: str | None = None, model: str | None = None, threshold: float | None = None,
                 max_rollbacks: int | None = None, team: str | os.PathLike[str] | None = None,
                 temperature: float | None = None, top_p: float | None = None, seed: int | None = None,
                 max_tokens: int | None = None, without: Iterable[str] = ()) -> LoadedConfig: ...

    @overload
    def __call__(self, options: SettingsOptions, /, *, config: str | os.PathLike[str] | LoadedConfig | None = None,
                 config_list: str | None = None, model: str | None = None, threshold: float | None = None,
                 max_rollbacks: int | None = None, team: str | os.PathLike[str] | None = None,
                 temperature: float | None = None, top_p: float | None = None, seed: int | None = None,
                 max_tokens: int | None = None, without: Iterable[str] = ()) -> LoadedConfig: ...


class MergeFunction(Protocol):
    """`maps_autogen.merge`: the options of MergeOptions as keywords, or an options object with
    keywords over it."""

    @overload
    def __call__(self, runs: Iterable[str | os.PathLike[str]], *, out: str | os.PathLike[str] | None = None,
                 allow_incomplete: bool = False) -> MergeOutcome: ...

    @overload
    def __call__(self, runs: Iterable[str | os.PathLike[str]] = ..., *, options: MergeOptions,
                 out: str | os.PathLike[str] | None = None, allow_incomplete: bool = False) -> MergeOutcome: ...

    @overload
    def __call__(self, options: MergeOptions, /, *, runs: Iterable[str | os.PathLike[str]] = ...,
                 out: str | os.PathLike[str] | None = None, allow_incomplete: bool = False) -> MergeOutcome: ...


class ScoreFunction(Protocol):
    """`maps_autogen.score`: the options of ScoreOptions as keywords, or an options object with
    keywords over it."""

    @overload
    def __call__(self, benchmark: str, file: str | os.PathLike[str], *, rules: str = "current",
                 out: str | os.PathLike[str] | None = None, llm_extract: bool = False,
                 config: str | os.PathLike[str] | LoadedConfig | None = None,
                 model: str | None = None) -> ScoreReport: ...

    @overload
    def __call__(self, benchmark: str = ..., file: str | os.PathLike[str] = ..., *, options: ScoreOptions,
                 rules: str = "current", out: str | os.PathLike[str] | None = None, llm_extract: bool = False,
                 config: str | os.PathLike[str] | LoadedConfig | None = None,
                 model: str | None = None) -> ScoreReport: ...

    @overload
    def __call__(self, options: ScoreOptions, /, *, benchmark: str = ..., file: str | os.PathLike[str] = ...,
                 rules: str = "current", out: str | os.PathLike[str] | None = None, llm_extract: bool = False,
                 config: str | os.PathLike[str] | LoadedConfig | None = None,
                 model: str | None = None) -> ScoreReport: ...


class ServeModelFunction(Protocol):
    """`maps_autogen.serve_model`: the options of ModelServerOptions as keywords, or an options
    object with keywords over it."""

    @overload
    def __call__(self, model: str | os.PathLike[str], *, port: int = 8080, ctx_size: int = 8192, parallel: int = 1,
                 alias: str | None = None, mmproj: str | os.PathLike[str] | None = None,
                 threads: int | None = None) -> LocalServer: ...

    @overload
    def __call__(self, model: str | os.PathLike[str] = ..., *, options: ModelServerOptions, port: int = 8080,
                 ctx_size: int = 8192, parallel: int = 1, alias: str | None = None,
                 mmproj: str | os.PathLike[str] | None = None, threads: int | None = None) -> LocalServer: ...

    @overload
    def __call__(self, options: ModelServerOptions, /, *, model: str | os.PathLike[str] = ..., port: int = 8080,
                 ctx_size: int = 8192, parallel: int = 1, alias: str | None = None,
                 mmproj: str | os.PathLike[str] | None = None, threads: int | None = None) -> LocalServer: ...


class ServeViewFunction(Protocol):
    """`maps_autogen.serve_view`: the options of ServeOptions as keywords, or an options object with
    keywords over it."""

    @overload
    def __call__(self, run: str | os.PathLike[str], *, port: int = 0, host: str = "127.0.0.1") -> ViewServer: ...

    @overload
    def __call__(self, run: str | os.PathLike[str] = ..., *, options: ServeOptions, port: int = 0,
                 host: str = "127.0.0.1") -> ViewServer: ...

    @overload
    def __call__(self, options: ServeOptions, /, *, run: str | os.PathLike[str] = ..., port: int = 0,
                 host: str = "127.0.0.1") -> ViewServer: ...


class SolveFunction(Protocol):
    """`maps_autogen.solve`: the options of SolveOptions as keywords, or an options object with
    keywords over it."""

    @overload
    def __call__(self, problem: Problem | PathLike, *, without: Iterable[str] = frozenset(),
                 runs_dir: str | os.PathLike[str] = Path("runs"), allow_private_urls: bool = False,
                 allow_outside_paths: bool = False, config: str | os.PathLike[str] | LoadedConfig | None = None,
                 config_list: str | None = None, model: str | None = None, threshold: float | None = None,
                 max_rollbacks: int | None = None, team: str | os.PathLike[str] | None = None,
                 temperature: float | None = None, top_p: float | None = None, seed: int | None = None,
                 max_tokens: int | None = None, on_turn: Callable[[MessageRecord], None] | None = None,
                 on_event: Callable[[ChatRecord], None] | None = None,
                 on_human: Callable[[HumanState], str | HumanDecision] | None = None) -> SolveResult: ...

    @overload
    def __call__(self, problem: Problem | PathLike, *, options: SolveOptions, without: Iterable[str] = frozenset(),
                 runs_dir: str | os.PathLike[str] = Path("runs"), allow_private_urls: bool = False,
                 allow_outside_paths: bool = False, config: str | os.PathLike[str] | LoadedConfig | None = None,
                 config_list: str | None = None, model: str | None = None, threshold: float | None = None,
                 max_rollbacks: int | None = None, team: str | os.PathLike[str] | None = None,
                 temperature: float | None = None, top_p: float | None = None, seed: int | None = None,
                 max_tokens: int | None = None, on_turn: Callable[[MessageRecord], None] | None = None,
                 on_event: Callable[[ChatRecord], None] | None = None,
                 on_human: Callable[[HumanState], str | HumanDecision] | None = None) -> SolveResult: ...

    @overload
    def __call__(self, problem: Problem | PathLike, options: SolveOptions, /, *, without: Iterable[str] = frozenset(),
                 runs_dir: str | os.PathLike[str] = Path("runs"), allow_private_urls: bool = False,
                 allow_outside_paths: bool = False, config: str | os.PathLike[str] | LoadedConfig | None = None,
                 config_list: str | None = None, model: str | None = None, threshold: float | None = None,
                 max_rollbacks: int | None = None, team: str | os.PathLike[str] | None = None,
                 temperature: float | None = None, top_p: float | None = None, seed: int | None = None,
                 max_tokens: int | None = None, on_turn: Callable[[MessageRecord], None] | None = None,
                 on_event: Callable[[ChatRecord], None] | None = None,
                 on_human: Callable[[HumanState], str | HumanDecision] | None = None) -> SolveResult: ...


class WriteReportFunction(Protocol):
    """`maps_autogen.write_report`: the options of ReportOptions as keywords, or an options object
    with keywords over it."""

    @overload
    def __call__(self, runs: Iterable[str | os.PathLike[str]], *, out: str | os.PathLike[str] | None = None,
                 paper: bool = False) -> Report: ...

    @overload
    def __call__(self, runs: Iterable[str | os.PathLike[str]] = ..., *, options: ReportOptions,
                 out: str | os.PathLike[str] | None = None, paper: bool = False) -> Report: ...

    @overload
    def __call__(self, options: ReportOptions, /, *, runs: Iterable[str | os.PathLike[str]] = ...,
                 out: str | os.PathLike[str] | None = None, paper: bool = False) -> Report: ...


class WriteViewFunction(Protocol):
    """`maps_autogen.write_view`: the options of ViewOptions as keywords, or an options object with
    keywords over it."""

    @overload
    def __call__(self, run: str | os.PathLike[str], *, out: str | os.PathLike[str] | None = None) -> Path: ...

    @overload
    def __call__(self, run: str | os.PathLike[str] = ..., *, options: ViewOptions,
                 out: str | os.PathLike[str] | None = None) -> Path: ...

    @overload
    def __call__(self, options: ViewOptions, /, *, run: str | os.PathLike[str] = ...,
                 out: str | os.PathLike[str] | None = None) -> Path: ...


__all__ = ["EffectiveConfigFunction", "EvaluateFunction", "LoadSettingsFunction", "MergeFunction", "ScoreFunction",
           "ServeModelFunction", "ServeViewFunction", "SolveFunction", "WriteReportFunction", "WriteViewFunction"]
