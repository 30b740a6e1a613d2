"""The Python API: every `maps` command from a notebook, a script or a UI.

    import maps_autogen
    problem = maps_autogen.Problem("Which mass balances the lever?", options=["2 kg", "4 kg"],
                                   images=["examples/lever/lever.png"])
    result = maps_autogen.solve(problem, on_turn=lambda turn: print(turn.agent, turn.content))
    print(result.final_answer_text, result.run_dir)

Each function is what a command runs (the command line only reads its options and prints):
`solve` (maps solve), `evaluate` (maps eval), `score` (maps score), `merge` (maps merge),
`write_report` (maps report), `write_view` and `serve_view` (maps view, and --serve),
`effective_config` (maps config). They write the same files and raise the same errors
(`_util/_errors.py`, each a one-line message naming the fix). Each takes its command's options as
keywords, or as one options object (`SolveOptions`, `EvalOptions`, ...: settings/_options.py, where each
option is declared once, with the bounds and help text `maps` shows); each function's `Args:`
are made from that declaration, and so is the signature mypy checks its calls against
(`@typed`: api/_signatures.py, written by scripts/api_signatures.py). The typed readers
(`read_run`, `read_manifest`, `read_summary`, `read_transcript`, `read_results`) read back what
runs wrote. Settings come as `maps` takes them: `config` is an agents.yaml (None:
./agents.yaml when there is one, else the built-in one), `model` overrides every step's model
as `--model` does, and keys are read from the environment (a `.env` file is the command
line's; load it yourself with python-dotenv if you keep keys there).

This module imports the heavy machinery (AG2, the HTTP client) only when a function runs, so
`import maps_autogen` and `maps_autogen.Problem` stay quick.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, cast

from maps_autogen._util import MapsError, ProblemError, UsageError
from maps_autogen.api._signatures import (
    EffectiveConfigFunction,
    EvaluateFunction,
    LoadSettingsFunction,
    MergeFunction,
    ScoreFunction,
    ServeModelFunction,
    ServeViewFunction,
    SolveFunction,
    WriteReportFunction,
    WriteViewFunction,
)
from maps_autogen.eval import EvalOptions, MergeOptions
from maps_autogen.model.local import ModelServerOptions
from maps_autogen.orchestration import HumanDecision, HumanState, OnHumanError, SolveOptions
from maps_autogen.problem import ImageLimits, Problem, image_limits
from maps_autogen.records import (
    ChatRecord,
    MessageRecord,
    ResultRow,
    read_manifest,
    read_run,
    read_summary,
    read_transcript,
)
from maps_autogen.report import ReportOptions
from maps_autogen.report.view import ServeOptions, ViewOptions
from maps_autogen.scoring import ScoreOptions, ScoreReport
from maps_autogen.settings import LoadedConfig, SettingsOptions, Spec, takes

if TYPE_CHECKING:
    from maps_autogen.eval import EvalOutcome, MergeOutcome
    from maps_autogen.model.local import LocalServer
    from maps_autogen.orchestration import ChatOutcome, Observer, SolveResult
    from maps_autogen.records import Evaluation
    from maps_autogen.report import Report
    from maps_autogen.report.view import ViewServer
    from maps_autogen.settings import Resolution

# MapsError: the base of every error these functions raise (`except maps_autogen.MapsError`).
__all__ = ["ChatRecord", "EffectiveConfig", "EvalOptions", "EvalOutcome", "HumanDecision", "HumanState", "MapsError",
           "MergeOptions", "MergeOutcome", "ModelServerOptions", "Problem", "Report", "ReportOptions", "ScoreOptions",
           "ScoreReport", "ServeOptions", "SettingsOptions", "SolveOptions", "SolveResult", "ViewOptions", "ViewServer",
           "effective_config", "evaluate", "load_problem", "load_settings", "merge", "read_manifest", "read_results",
           "read_run", "read_summary", "read_transcript", "score", "serve_model", "serve_view", "solve",
           "write_report", "write_view"]

# ChatRecord: what a chat hands its observers as it goes, typed (records/_chat_records.py): each finished
# turn (`MessageRecord`, the opening task message included), each event between turns (an
# `EventRecord` of its kind: `RollbackEvent`, `StopEvent`, ...), and the live-only
# `TurnStartRecord` (a turn begins) and `TokenRecord` (streamed text).
PathLike: TypeAlias = str | os.PathLike[str]
#: File endings that name an image, not a problem file (`solve` then says how to pass it).
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")

#: `load_settings`' `without`: the steps left out, checked as an option's names are.
_STEPS = Spec("--without", "The steps left out.", "names", distinct=True)
#: The result types, each imported with the machinery that makes it (PEP 562).
_LAZY_TYPES = {"SolveResult": "maps_autogen.orchestration._solving", "EvalOutcome": "maps_autogen.eval._runner",
               "MergeOutcome": "maps_autogen.eval._merge", "Report": "maps_autogen.report._report",
               "ViewServer": "maps_autogen.report.view._server"}


F = TypeVar("F")


def typed(signature: Callable[..., F]) -> Callable[[Callable[..., Any]], F]:
    """The API function `takes` made, as mypy sees it: `signature`, its Protocol in
    api/_signatures.py (generated from the declaration `takes` reads), which checks each call's
    keywords and their types. The function itself is unchanged."""

    def apply(function: Callable[..., Any]) -> F:
        return cast(F, function)

    return apply


def __getattr__(name: str) -> Any:
    """The result types, imported with the machinery that makes them (PEP 562)."""
    if name in _LAZY_TYPES:
        import importlib

        return getattr(importlib.import_module(_LAZY_TYPES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ----- settings and problems --------------------------------------------------------------------


@typed(LoadSettingsFunction)
@takes(SettingsOptions, positional=("config",))
def load_settings(*, options: SettingsOptions, without: Iterable[str] = ()) -> LoadedConfig:
    """The settings a run uses, as `maps solve` and `maps eval` read them: `config` (an
    agents.yaml, merged onto the built-in one; None: ./agents.yaml, else the built-in one; or
    settings loaded before), then the overrides of the options of the same names. Checks that
    each `without` step is one of the team's. Every configured API key is registered, so no
    output shows it. Raises ConfigError or UsageError."""
    from maps_autogen._util import register_well_known_keys
    from maps_autogen.settings import check_without, load_config, with_overrides

    register_well_known_keys()
    steps = _STEPS.checked("without", without, frozenset())  # checked as every list of names is
    config = options.config
    if isinstance(config, LoadedConfig):
        if options.team is not None or options.config_list is not None:
            raise UsageError("team= and config_list= are read with the config file",
                             fix="pass them to load_settings() with the config's path")
        loaded = config
    else:
        loaded = load_config(config, team=options.team, config_list=options.config_list)
    every_step = options.every_step()
    given = (options.model, options.threshold, options.max_rollbacks, *every_step.values())
    if any(value is not None for value in given):
        loaded = with_overrides(loaded, model=options.model, threshold=options.threshold,
                                max_rollbacks=options.max_rollbacks, every_step=every_step)
    check_without(loaded.team.config, steps, loaded.team.source)
    return loaded


def load_problem(path: PathLike, *, config: PathLike | LoadedConfig | None = None,
                 allow_private_urls: bool = False, allow_outside_paths: bool = False) -> Problem:
    """A problem file (problem.yaml: question, context, options, images relative to the file,
    answer_format, id, answer) read and checked as `maps solve --problem` reads it, under the
    image size and limits of `config`. The file is untrusted: its image files must be inside its
    folder unless `allow_outside_paths`, its image URLs are fetched only from public addresses
    unless `allow_private_urls`. A gold `answer` that fits none of the scoring rules is refused
    here, before any model call. Raises ProblemError."""
    from maps_autogen.problem import load_problem_file

    loaded = config if isinstance(config, LoadedConfig) else load_settings(config)
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise ProblemError(f"a problem must be a Problem or a problem file's path, not {type(path).__name__}",
                           fix="solve(Problem(question, options=[...], images=[...])) or solve('problem.yaml')")
    path = Path(path)
    if path.suffix.lower() in _IMAGE_SUFFIXES:
        raise ProblemError(f"{path} is an image, not a problem file",
                           fix=f"solve(Problem(question, images=[{str(path)!r}]))")
    limits = loaded.config.limits
    with image_limits(ImageLimits.of(limits)):
        problem = load_problem_file(path, max_side=loaded.config.images.max_side, max_bytes=limits.problem_file_bytes,
                                    allow_private_urls=allow_private_urls, allow_outside_paths=allow_outside_paths)
    gold_scorer(problem, where=str(path))
    return problem


def gold_scorer(problem: Problem, *, where: str) -> Callable[[ChatOutcome], Evaluation] | None:
    """How a solve scores its answer when the problem gives a gold `answer`: by the custom
    benchmark's rules (`gold`, `correct` and `evaluation` in run.json). A gold that fits none of
    them is a ProblemError naming `where` (the problem file), before any call."""
    if problem.answer is None:
        return None
    from maps_autogen.benchmarks.custom import gold_evaluation, gold_problem

    gold, options = problem.answer, problem.options
    trouble = gold_problem({"answer": gold, "options": list(options)})
    if trouble:
        raise ProblemError(f"{where}: {trouble.replace('field ', '')}",
                           fix="give an option letter for a problem with options, else a number or a short text")
    # A run that failed has no verdict, whatever answer it had reached: never "wrong".
    return lambda outcome: gold_evaluation(gold, options,
                                           None if outcome.stop_reason == "error" else outcome.final_answer)


# ----- maps solve -------------------------------------------------------------------------------


class _Callbacks:
    """The chat observer behind `on_turn` and `on_event`: each record typed, in the order the chat
    emits it (after the run folder's writer has it). A callback that raises stops the run at its
    next model call; `solve` re-raises the error once the run folder is complete."""

    def __init__(self, on_turn: Callable[[MessageRecord], None] | None,
                 on_event: Callable[[ChatRecord], None] | None, cancel: Callable[[], None]):
        self.on_turn = on_turn
        self.on_event = on_event
        self.cancel = cancel
        self.failure: Exception | None = None

    def emit(self, record: ChatRecord) -> None:
        if self.failure is not None:
            return
        try:
            if self.on_event is not None:
                self.on_event(record)
            if self.on_turn is not None and isinstance(record, MessageRecord):
                self.on_turn(record)
        except Exception as error:  # noqa: BLE001 - the caller's code: kept and re-raised by solve()
            self.failure = error
            self.cancel()


@typed(SolveFunction)
@takes(SolveOptions)
def solve(
    problem: Problem | PathLike,
    *,
    options: SolveOptions,
    on_turn: Callable[[MessageRecord], None] | None = None,
    on_event: Callable[[ChatRecord], None] | None = None,
    on_human: Callable[[HumanState], str | HumanDecision] | None = None,
) -> SolveResult:
    """Solve one problem with the team, as `maps solve` does: write `runs_dir/<run-id>/`
    (run.json, transcript.jsonl, images/) and return its `SolveResult` (`final_answer`,
    `final_answer_text`, `stop_reason`, `rollbacks`, `verdicts`, `usage`, `run_dir`, and `run`,
    the run.json record).

    `problem` is a `Problem`, or the path of a problem file (`load_problem`, with
    `allow_private_urls` and `allow_outside_paths`; an image is passed as
    `Problem(question, images=[path])`). The options are `maps solve`'s (below; or a
    `SolveOptions`): the settings as `load_settings` reads them, `without` the steps left out.

    Streaming: `on_turn` receives each finished turn (a `MessageRecord`, as transcript.jsonl
    keeps it) and `on_event` every record (`ChatRecord`) as it happens, before `solve` returns;
    an exception in either stops the run at its next model call and is raised once the run
    folder is complete.

    A person in the chat (`maps solve --human`): with `on_human`, the UserProxy pauses after
    each review (or every turn: the config's `human.when`). `on_human` receives the pause (a
    `HumanState`: the answer so far, the scores, what continuing does, the steps that may be
    sent back) and returns the person's decision: a line as `maps solve --human` reads it (""
    continue, "back STEP QUESTION", "stop", other text a note for every later step) or a
    `HumanDecision`; an answer the pause cannot take is asked again with `state.problem` saying
    why (three times). An exception in `on_human` ends the chat and is raised once the run
    folder is complete.

    A model service that fails after its retries ends the run with stop reason `error` (the
    result's `error` says why; the finished turns are saved); bad input raises ProblemError,
    ConfigError or UsageError before any call; Ctrl-C raises RunInterrupted."""
    loaded = load_settings(options, without=options.without)
    if not isinstance(problem, Problem):
        problem = load_problem(problem, config=loaded, allow_private_urls=options.allow_private_urls,
                               allow_outside_paths=options.allow_outside_paths)
    return _solve(problem, loaded, options, on_turn=on_turn, on_event=on_event, on_human=on_human)


def _solve(problem: Problem, loaded: LoadedConfig, options: SolveOptions, *,
           on_turn: Callable[[MessageRecord], None] | None = None,
           on_event: Callable[[ChatRecord], None] | None = None,
           on_human: Callable[[HumanState], str | HumanDecision] | None = None,
           announce: Callable[[str], None] | None = None, on_ready: Callable[[Path], None] | None = None,
           observer: Observer | None = None) -> SolveResult:
    """`solve` under settings loaded before (`load_settings` of the same options), with what
    only the command line needs: `announce` receives the lines `maps solve` prints before the
    first call (each step's model; the expected time on the embedded model), `on_ready` the run
    folder before the chat starts, `observer` the raw records (the terminal's live view)."""
    from maps_autogen.orchestration import Observers, assemble_team, expected_time, new_run_id, solve_problem

    with image_limits(ImageLimits.of(loaded.config.limits)):
        problem = problem.fitted(loaded.config.images.max_side)
    evaluate_answer = gold_scorer(problem, where="the problem")
    from maps_autogen.eval import fit_team, shown_of

    # Reply budgets every request fits in, on a server that says its context: before the first call.
    assembled = fit_team(assemble_team(loaded), loaded, [shown_of(problem)], method="maps", without=options.without)
    if announce is not None:
        announce(assembled.announcement)
        announce(expected_time(assembled, has_images=bool(problem.images), without=options.without))
    run_id = new_run_id("solve")
    if on_ready is not None:
        on_ready(options.runs_dir / run_id)
    callbacks = _Callbacks(on_turn, on_event, assembled.cancel) if on_turn or on_event else None
    result = solve_problem(problem, assembled, runs_dir=options.runs_dir, observer=Observers(observer, callbacks),
                           run_id=run_id, without=options.without, on_human=on_human, evaluate=evaluate_answer)
    if callbacks is not None and callbacks.failure is not None:
        raise callbacks.failure
    failure = result.outcome.failure
    if isinstance(failure, OnHumanError):
        raise failure.original or failure
    return result


# ----- maps eval --------------------------------------------------------------------------------


@typed(EvaluateFunction)
@takes(EvalOptions)
def evaluate(
    *,
    options: EvalOptions,
    progress: bool = False,
    announce: Callable[[str], None] | None = None,
    on_ready: Callable[[Path], None] | None = None,
) -> EvalOutcome:
    """Run a benchmark (mathvista, emma, olympiadbench or custom), or part of it, and score it
    with the official rules, as `maps eval` does: write `runs_dir/<eval-id>/` (manifest.json,
    results.jsonl, problems/, summary.json) and return its `EvalOutcome`: `summary` (the typed
    summary.json), `eval_dir`, `table` (Table 1 for what ran), `notes`, and why it stopped early
    (`fatal`: a service error every call would meet; `interrupted`: Ctrl-C; `stopped_for_cost`).
    A problem that failed is counted in `summary.failed` (never as wrong); `resume=` the folder
    retries it.

    The options are `maps eval`'s (below; or an `EvalOptions`): `data` is a local copy of the
    data set (else the Hugging Face hub; `custom` needs it), `method` None runs maps (or a
    resumed run's own method), and the settings are read as `load_settings` reads them (`seed`
    is the models' sampling seed, `sample_seed` that of the problems drawn). With more than one
    of `workers`, the problems are solved in worker processes started with `spawn`, which
    imports the calling script again, so a script's own code must sit under
    `if __name__ == "__main__":`. `progress` shows the progress bar on standard error; `announce`
    receives the line `maps eval` prints before the first call (models, problems, estimated
    cost), `on_ready` the run folder once its manifest is written. Bad input raises UsageError,
    DataError or ConfigError before any model call."""
    from maps_autogen.scoring import resolve_scorer

    if options.data is None and options.resume is None:  # no network and no cached copy: fail before the slow imports
        from maps_autogen.benchmarks import get_benchmark
        from maps_autogen.problem import available_subsets, check_hub

        task = get_benchmark(options.benchmark).task
        if task.hub_id:
            check_hub(task.hub_id)
        else:  # no hub copy (your own benchmark): data is required
            available_subsets(task, None)
    from maps_autogen.eval import EvalRun, check_request

    resolve_scorer(options.benchmark, options.rules)  # a benchmark without its scorer: one line before anything runs
    check_request(options)  # nothing a resumed run fixes: before the settings load
    if options.track is not None:  # a tracker's client missing: one line before anything runs
        from maps_autogen.report import require_tracker

        require_tracker(options.track)
    loaded = load_settings(options, without=options.without)
    outcome = EvalRun(options, loaded, progress=progress, on_ready=on_ready, announce=announce).run()
    if options.track is not None:
        from maps_autogen.report import track_eval

        outcome.notes.append(track_eval(options.track, outcome.eval_dir))
    return outcome


# ----- maps score, merge, report, view, config ---------------------------------------------------


@typed(ScoreFunction)
@takes(ScoreOptions)
def score(*, options: ScoreOptions) -> ScoreReport:
    """Score every line of a JSONL file of recorded model outputs with a benchmark's official
    rules, as `maps score` does: write the scored copy (`out`, default FILE with .scored.jsonl)
    and return the `ScoreReport` (accuracy per subset and overall, the lines skipped and why).
    With `llm_extract` (MathVista), the lines the rules cannot read are sent to the final
    step's model of the settings (`config`, `model`) for extraction. Raises DataError or
    UsageError."""
    from maps_autogen.scoring import score_file

    extractor = None
    if options.llm_extract:
        extractor = _llm_extractor(options)
    return score_file(options.benchmark, options.file, rules=options.rules, out_path=options.out,
                      llm_extract=extractor)


def _llm_extractor(options: ScoreOptions) -> Callable[[Any], Any]:
    """MathVista's optional step: the final step's model alone (no team assembled) asked to
    extract the answers its rules cannot read."""
    if options.benchmark != "mathvista":
        raise UsageError("--llm-extract is MathVista's optional step; the other benchmarks score by rules only",
                         fix="drop --llm-extract")
    from maps_autogen.benchmarks.mathvista import with_llm_extraction
    from maps_autogen.model import step_backend

    loaded = load_settings(options.config, model=options.model)
    backend = step_backend(loaded, loaded.team.config.final_step.name)

    def complete(prompt: str) -> str:
        return backend.complete([{"role": "user", "content": prompt}], role="extractor").text

    return lambda record: with_llm_extraction(record, complete)


@typed(MergeFunction)
@takes(MergeOptions)
def merge(*, options: MergeOptions) -> MergeOutcome:
    """Combine the shard runs of one evaluation into one eval folder, as `maps merge` does
    (refused when a shard or a problem is missing, unless `allow_incomplete`); returns the
    `MergeOutcome` (`out`, and `notes`: what was scored again differently, what is missing)."""
    from maps_autogen.eval import merge_runs
    from maps_autogen.orchestration import new_run_id

    out = options.out or Path("runs") / new_run_id("merged")
    return merge_runs(list(options.runs), out, allow_incomplete=options.allow_incomplete)


@typed(WriteReportFunction)
@takes(ReportOptions)
def write_report(*, options: ReportOptions) -> Report:
    """The tables and figures comparing eval runs, as `maps report` writes them (Table 1 and 2,
    Figures 4, 5 and 6, cost per role); returns the `Report` (`markdown`, `files`)."""
    from maps_autogen.orchestration import new_run_id
    from maps_autogen.report import write_report as write

    return write(list(options.runs), options.out or Path("runs") / new_run_id("report"), paper=options.paper)


@typed(WriteViewFunction)
@takes(ViewOptions)
def write_view(*, options: ViewOptions) -> Path:
    """A solve run's or an eval run's pages, as `maps view` writes them; returns the page to
    open (the .html file, or the folder's index.html)."""
    from maps_autogen.report.view import write_pages

    return write_pages(options.run, options.out)


@typed(ServeViewFunction)
@takes(ServeOptions)
def serve_view(*, options: ServeOptions) -> ViewServer:
    """The viewer's web server over a run, as `maps view --serve` runs it (bound, not yet
    serving): its `url` holds the token that guards it; `start()` serves on a background
    thread, `serve_forever()` in this one, `close()` stops it. A folder that is not a run is a
    DataError before anything starts."""
    from maps_autogen.report.view import ViewServer, kind_of

    kind_of(options.run)
    return ViewServer(options.run, host=options.host, port=options.port)


@typed(ServeModelFunction)
@takes(ModelServerOptions)
def serve_model(*, options: ModelServerOptions) -> LocalServer:
    """llama.cpp's OpenAI-compatible server on a GGUF model file, as `maps serve` starts it, from
    the xllamacpp wheel maps installs (nothing to build): on 127.0.0.1 at `port`, with `ctx_size`
    tokens of context shared by `parallel` slots. Returns the running server (its `base_url`,
    `model_name`, `log_path`; `stop()` ends it), in a child process that never outlives this one.
    A missing or broken model file is a UsageError; a server that cannot start, a LocalModelError
    naming its log."""
    from maps_autogen.model.local import GGUFFormatError, LocalModelSettings, LocalServer, read_gguf_info

    for path, what in ((options.model, "model"), (options.mmproj, "--mmproj")):
        if path is None:
            continue
        if not path.is_file():
            raise UsageError(f"{what} file {path} does not exist", fix="give the path of a GGUF file")
        try:
            read_gguf_info(path)
        except (GGUFFormatError, OSError) as error:
            raise UsageError(f"{what} file {path} is not a readable GGUF model: {error}",
                             fix="give the path of a GGUF file, llama.cpp's format") from None
    return LocalServer(LocalModelSettings(
        model_path=options.model, mmproj_path=options.mmproj, n_ctx=options.ctx_size, n_threads=options.threads,
        port=options.port or None, model_name=options.alias, n_parallel=options.parallel))


@dataclass(frozen=True)
class EffectiveConfig:
    """What `maps config` prints: the settings, and each step's model when they can run."""

    settings: LoadedConfig
    text: str  # the merged configuration as YAML, each part under where it came from; keys named by their variables
    resolution: Resolution | None  # each step's model, endpoint and sampling settings; None when not runnable
    not_runnable: str | None  # why the settings cannot run as they are (a missing key, an unknown endpoint)


@typed(EffectiveConfigFunction)
@takes(SettingsOptions, positional=("config",))
def effective_config(*, options: SettingsOptions) -> EffectiveConfig:
    """The effective configuration, as `maps config` prints it: the config file merged onto the
    built-in defaults (and the options given), with where each part came from, the team that
    runs, and each step's model (`resolution`), or why they cannot run as they are."""
    from maps_autogen.settings import render_effective, resolve_models

    loaded = load_settings(options)
    try:
        resolution = resolve_models(loaded)
    except MapsError as error:  # the configuration is shown either way; what is missing to run it, too
        return EffectiveConfig(loaded, render_effective(loaded), None, str(error))
    return EffectiveConfig(loaded, render_effective(loaded), resolution, None)


def read_results(eval_dir: PathLike) -> list[ResultRow]:
    """An eval run's results.jsonl, typed: the latest row of each problem (a problem retried
    appears once). A damaged line is a DataError naming it."""
    from maps_autogen.eval import RESULTS_FILE, ResultsLog

    return list(ResultsLog(Path(eval_dir) / RESULTS_FILE).read().values())
