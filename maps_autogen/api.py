"""The Python API: solve a problem and evaluate a benchmark from a notebook, a script or a UI.

    import maps_autogen
    problem = maps_autogen.Problem("Which mass balances the lever?", options=["2 kg", "4 kg"],
                                   images=["examples/lever/lever.png"])
    result = maps_autogen.solve(problem, on_turn=lambda turn: print(turn.agent, turn.content))
    print(result.final_answer_text, result.run_dir)

`solve` and `evaluate` are what `maps solve` and `maps eval` run (the command line only reads its
options and prints): they write the same run folders, and raise the same errors (`errors.py`,
each a one-line message naming the fix). Settings come as `maps` takes them: `config` is an
agents.yaml (None: ./agents.yaml when there is one, else the built-in one), `model` overrides
every step's model as `--model` does, and keys are read from the environment (a `.env` file is
the command line's; load it yourself with python-dotenv if you keep keys there).

This module imports the heavy machinery (AG2, the HTTP client) only when a function runs, so
`import maps_autogen` and `maps_autogen.Problem` stay quick.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from maps_autogen.chat_records import ChatRecord, MessageRecord
from maps_autogen.config import LoadedConfig
from maps_autogen.errors import MapsError, ProblemError, UsageError
from maps_autogen.human import HumanDecision, HumanState, OnHumanError
from maps_autogen.images import ImageLimits, image_limits
from maps_autogen.problem import Problem

if TYPE_CHECKING:
    from maps_autogen.chat import ChatOutcome, Observer
    from maps_autogen.eval.runner import EvalOutcome
    from maps_autogen.records import Evaluation
    from maps_autogen.solving import SolveResult

# MapsError: the base of every error these functions raise (`except maps_autogen.MapsError`).
__all__ = ["ChatRecord", "EvalOutcome", "HumanDecision", "HumanState", "MapsError", "Problem", "SolveResult",
           "evaluate", "load_problem", "load_settings", "solve"]

# ChatRecord: what a chat hands its observers as it goes, typed (chat_records.py): each finished
# turn (`MessageRecord`, the opening task message included), each event between turns (an
# `EventRecord` of its kind: `RollbackEvent`, `StopEvent`, ...), and the live-only
# `TurnStartRecord` (a turn begins) and `TokenRecord` (streamed text).
PathLike: TypeAlias = str | os.PathLike[str]
#: File endings that name an image, not a problem file (`solve` then says how to pass it).
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")


def _path(name: str, value: Any) -> Path | None:
    """An argument naming a file or folder as a Path (None stays None); UsageError otherwise."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)) or (isinstance(value, str) and not value):
        raise UsageError(f"{name}= must be a path (a str or os.PathLike), not {type(value).__name__} {value!r:.40}",
                         fix=f"e.g. {name}='runs'" if name == "runs_dir" else f"pass {name}= a file or folder path")
    return Path(value)


def _names(name: str, value: Any) -> tuple[str, ...]:
    """An argument listing names (subsets, steps): one name given bare counts as one, never as
    its letters; UsageError for anything else than names."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (bytes, bytearray)) or not isinstance(value, Iterable):
        raise UsageError(f"{name}= must be a list of names, not {type(value).__name__}", fix=f"e.g. {name}=['...']")
    names = tuple(value)
    if not all(isinstance(item, str) for item in names):
        raise UsageError(f"{name}= must be a list of names (str)", fix=f"e.g. {name}=['...']")
    return names


def __getattr__(name: str) -> Any:
    """The result types, imported with the machinery that makes them (PEP 562)."""
    if name == "SolveResult":
        from maps_autogen.solving import SolveResult

        return SolveResult
    if name == "EvalOutcome":
        from maps_autogen.eval.runner import EvalOutcome

        return EvalOutcome
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_settings(
    config: PathLike | LoadedConfig | None = None,
    *,
    model: str | None = None,
    team: PathLike | None = None,
    config_list: str | None = None,
    threshold: float | None = None,
    max_rollbacks: int | None = None,
    without: Iterable[str] = (),
    temperature: float | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    max_tokens: int | None = None,
) -> LoadedConfig:
    """The settings a run uses, as `maps solve` and `maps eval` read them: `config` (an
    agents.yaml, merged onto the built-in one; None: ./agents.yaml, else the built-in one; or
    settings loaded before), then the overrides of the options of the same names (`model`: NAME,
    ENDPOINT:NAME or an endpoint name, for every step; `team`: a team file or a built-in team's
    name; `config_list`: an AG2 OAI_CONFIG_LIST; `temperature`, `top_p`, `seed`, `max_tokens`:
    the sampling settings sent with every step's request, over each step's own, as
    `every_step:` in agents.yaml sets them). Checks that each `without` step is one of the
    team's. Every configured API key is registered, so no output shows it. Raises ConfigError or
    UsageError."""
    from maps_autogen.config import load_config, with_overrides
    from maps_autogen.redact import register_well_known_keys
    from maps_autogen.team import check_without

    register_well_known_keys()
    without = _names("without", without)
    if not isinstance(config, LoadedConfig):
        config = _path("config", config)
    team = _path("team", team)
    if isinstance(config, LoadedConfig):
        if team is not None or config_list is not None:
            raise UsageError("team= and config_list= are read with the config file",
                             fix="pass them to load_settings() with the config's path")
        loaded = config
    else:
        loaded = load_config(config, team=team, config_list=config_list)
    every_step = {"temperature": temperature, "top_p": top_p, "seed": seed, "max_tokens": max_tokens}
    if (model, threshold, max_rollbacks) != (None, None, None) or any(v is not None for v in every_step.values()):
        loaded = with_overrides(loaded, model=model, threshold=threshold, max_rollbacks=max_rollbacks,
                                every_step=every_step)
    check_without(loaded.team.config, frozenset(without), loaded.team.source)
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
    from maps_autogen.benchmarks.custom.scorer import gold_evaluation, gold_problem

    gold, options = problem.answer, problem.options
    trouble = gold_problem({"answer": gold, "options": list(options)})
    if trouble:
        raise ProblemError(f"{where}: {trouble.replace('field ', '')}",
                           fix="give an option letter for a problem with options, else a number or a short text")
    # A run that failed has no verdict, whatever answer it had reached: never "wrong".
    return lambda outcome: gold_evaluation(gold, options,
                                           None if outcome.stop_reason == "error" else outcome.final_answer)


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


def solve(
    problem: Problem | PathLike,
    *,
    config: PathLike | LoadedConfig | None = None,
    model: str | None = None,
    team: PathLike | None = None,
    config_list: str | None = None,
    threshold: float | None = None,
    max_rollbacks: int | None = None,
    without: Iterable[str] = (),
    runs_dir: PathLike = "runs",
    on_turn: Callable[[MessageRecord], None] | None = None,
    on_event: Callable[[ChatRecord], None] | None = None,
    allow_private_urls: bool = False,
    announce: Callable[[str], None] | None = None,
    on_ready: Callable[[Path], None] | None = None,
    observer: Observer | None = None,
    human: bool = False,
    on_human: Callable[[HumanState], str | HumanDecision] | None = None,
    allow_outside_paths: bool = False,
    temperature: float | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    max_tokens: int | None = None,
) -> SolveResult:
    """Solve one problem with the team, as `maps solve` does: write `runs_dir/<run-id>/`
    (run.json, transcript.jsonl, images/) and return its `SolveResult` (`final_answer`,
    `final_answer_text`, `stop_reason`, `rollbacks`, `verdicts`, `usage`, `run_dir`, and `run`,
    the run.json record).

    `problem` is a `Problem`, or the path of a problem file (`load_problem`, with
    `allow_private_urls` and `allow_outside_paths`; an image is passed as
    `Problem(question, images=[path])`). The settings are `load_settings`'s (`config`,
    `model`, `team`, `config_list`, `threshold`, `max_rollbacks`, and the sampling settings for
    every step: `temperature`, `top_p`, `seed`, `max_tokens`); `without` leaves steps out.

    Streaming: `on_turn` receives each finished turn (a `MessageRecord`, as transcript.jsonl
    keeps it) and `on_event` every record (`ChatRecord`) as it happens, before `solve` returns;
    an exception in either stops the run at its next model call and is raised once the run
    folder is complete. `announce` receives the lines `maps solve` prints before the first call
    (each step's model; the expected time on the embedded model), `on_ready` the run folder
    before the chat starts, and `observer` the raw records (the command line's live view).

    A person in the chat (`maps solve --human`): with `on_human`, or `human=True`, the UserProxy
    pauses after each review (or every turn: the config's `human.when`). `on_human` receives the
    pause (a `HumanState`: the answer so far, the scores, what continuing does, the steps that
    may be sent back) and returns the person's decision: a line as `maps solve --human` reads it
    ("" continue, "back STEP QUESTION", "stop", other text a note for every later step) or a
    `HumanDecision`; an answer the pause cannot take is asked again with `state.problem` saying
    why (three times). With `human=True` and no `on_human`, the terminal asks (standard input,
    one line per pause, the pause shown on standard error). An exception in `on_human` ends the
    chat and is raised once the run folder is complete.

    A model service that fails after its retries ends the run with stop reason `error` (the
    result's `error` says why; the finished turns are saved); bad input raises ProblemError,
    ConfigError or UsageError before any call; Ctrl-C raises RunInterrupted."""
    from maps_autogen.chat import Observers
    from maps_autogen.solving import assemble_team, expected_time, solve_problem
    from maps_autogen.transcript import new_run_id

    without = frozenset(_names("without", without))  # read once: a generator is checked and used alike
    loaded = load_settings(config, model=model, team=team, config_list=config_list, threshold=threshold,
                           max_rollbacks=max_rollbacks, without=without, temperature=temperature, top_p=top_p,
                           seed=seed, max_tokens=max_tokens)
    if not isinstance(problem, Problem):
        problem = load_problem(problem, config=loaded, allow_private_urls=allow_private_urls,
                               allow_outside_paths=allow_outside_paths)
    with image_limits(ImageLimits.of(loaded.config.limits)):
        problem = problem.fitted(loaded.config.images.max_side)
    evaluate_answer = gold_scorer(problem, where="the problem")
    assembled = assemble_team(loaded)
    if announce is not None:
        announce(assembled.announcement)
        estimate = expected_time(assembled)
        if estimate:
            announce(estimate)
    runs = _path("runs_dir", runs_dir) or Path("runs")
    run_id = new_run_id("solve")
    if on_ready is not None:
        on_ready(runs / run_id)
    callbacks = _Callbacks(on_turn, on_event, assembled.cancel) if on_turn or on_event else None
    if on_human is None and human:
        import sys

        from maps_autogen.human_desk import HumanDesk

        on_human = HumanDesk(terminal=sys.stdin).ask
    result = solve_problem(problem, assembled, runs_dir=runs, observer=Observers(observer, callbacks),
                           run_id=run_id, without=without, on_human=on_human, evaluate=evaluate_answer)
    if callbacks is not None and callbacks.failure is not None:
        raise callbacks.failure
    failure = result.outcome.failure
    if isinstance(failure, OnHumanError):
        raise failure.original or failure
    return result


def evaluate(
    benchmark: str,
    *,
    data: PathLike | None = None,
    method: str | None = None,
    subsets: Iterable[str] = (),
    limit: int | None = None,
    sample: int | None = None,
    sample_seed: int = 0,
    without: Iterable[str] = (),
    concurrency: int = 8,
    workers: int | None = None,
    rules: str = "current",
    cache: bool = True,
    max_cost: float | None = None,
    shard: str | None = None,
    resume: PathLike | None = None,
    allow_change: bool = False,
    runs_dir: PathLike = "runs",
    config: PathLike | LoadedConfig | None = None,
    model: str | None = None,
    team: PathLike | None = None,
    config_list: str | None = None,
    threshold: float | None = None,
    max_rollbacks: int | None = None,
    allow_outside_paths: bool = False,
    allow_private_urls: bool = False,
    progress: bool = False,
    announce: Callable[[str], None] | None = None,
    on_ready: Callable[[Path], None] | None = None,
    temperature: float | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    max_tokens: int | None = None,
) -> EvalOutcome:
    """Run a benchmark (mathvista, emma, olympiadbench or custom), or part of it, and score it
    with the official rules, as `maps eval` does: write `runs_dir/<eval-id>/` (manifest.json,
    results.jsonl, problems/, summary.json) and return its `EvalOutcome`: `summary` (the typed
    summary.json), `eval_dir`, `table` (Table 1 for what ran), `notes`, and why it stopped early
    (`fatal`: a service error every call would meet; `interrupted`: Ctrl-C; `stopped_for_cost`).
    A problem that failed is counted in `summary.failed` (never as wrong); `resume=` the folder
    retries it.

    `data` is a local copy of the data set (else the Hugging Face hub; `custom` needs it);
    `method` is maps (None: maps, or a resumed run's own), direct or cot; the other arguments
    are those of `maps eval` (`subsets` for --subset, `shard` as "i/n", `sample_seed` for
    --sample-seed: the seed of `sample`'s draw and of the paper's sampled subsets) and
    `load_settings`'s (`seed` is the models' sampling seed, sent with every step's request).
    `workers` is `--workers` (None: chosen from the cores and `concurrency`; docs/benchmarks.md):
    with more than one, the problems are solved in worker processes started with `spawn`, which
    imports the calling script again, so a script's own code must sit under
    `if __name__ == "__main__":`. `progress` shows the progress bar on standard error; `announce`
    receives the line `maps eval` prints before the first call (models, problems, estimated
    cost), `on_ready` the run folder once its manifest is written. Bad input raises UsageError,
    DataError or ConfigError before any
    model call."""
    from maps_autogen.benchmarks import NAMES, get_benchmark
    from maps_autogen.scoring import resolve_scorer

    if benchmark not in NAMES:
        raise UsageError(f"unknown benchmark '{benchmark}'", fix=f"use one of: {', '.join(NAMES)}")
    data, resume, runs = _path("data", data), _path("resume", resume), _path("runs_dir", runs_dir) or Path("runs")
    if shard is not None and not isinstance(shard, str):
        raise UsageError(f"shard= must be text of the form i/n, not {type(shard).__name__}", fix="e.g. shard='1/4'")
    if data is None and resume is None:  # no network and no cached copy: fail before the slow imports
        from maps_autogen.benchmarks.hub import check_hub
        from maps_autogen.benchmarks.tasks import available_subsets

        task = get_benchmark(benchmark).task
        if task.hub_id:
            check_hub(task.hub_id)
        else:  # no hub copy (your own benchmark): data is required
            available_subsets(task, None)
    from maps_autogen.eval.runner import EvalRequest, EvalRun, Shard, check_request

    resolve_scorer(benchmark, rules)  # unknown rules: one line before anything runs
    without = frozenset(_names("without", without))  # read once: a generator is checked and used alike
    request = EvalRequest(
        benchmark=benchmark, subsets=_names("subsets", subsets), data=data, limit=limit,
        sample=sample, seed=sample_seed, method=method, without=without, concurrency=concurrency,
        workers=workers, rules=rules, cache=cache, max_cost=max_cost, shard=Shard.parse(shard) if shard else None,
        runs_dir=runs, resume=resume,
        allow_outside_paths=allow_outside_paths, allow_private_urls=allow_private_urls, allow_change=allow_change,
    )
    check_request(request)  # every number in its bounds, nothing a resumed run fixes: before the settings load
    loaded = load_settings(config, model=model, team=team, config_list=config_list, threshold=threshold,
                           max_rollbacks=max_rollbacks, without=without, temperature=temperature, top_p=top_p,
                           seed=seed, max_tokens=max_tokens)
    return EvalRun(request, loaded, progress=progress, on_ready=on_ready, announce=announce).run()
