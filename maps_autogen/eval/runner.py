"""The eval runner: selection, bounded concurrency, resume, cost control, shards and merges.

Every finished problem is appended to results.jsonl at once, so a killed run loses at most the
problems in flight; `--resume` skips finished problems and retries failed ones.
"""

from __future__ import annotations

import contextvars
import importlib.metadata
import logging
import os
import platform
import queue
import random
import re
import shutil
import subprocess
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from maps_autogen.cache import ResponseCache
from maps_autogen.config import LoadedConfig
from maps_autogen.endpoints import Resolution, resolve_models
from maps_autogen.errors import DataError, FatalServiceError, MapsError, RunInterrupted, ServiceError, UsageError
from maps_autogen.eval.baselines import METHODS as BASELINE_METHODS
from maps_autogen.eval.baselines import load_baseline_prompts, run_baseline
from maps_autogen.eval.paths import outside_paths_allowed
from maps_autogen.eval.results import RESULTS_FILE, ResultsLog, summarize, write_summary
from maps_autogen.eval.run_settings import ROW_FIELD, mixed_settings, record_pids, resume_under, verdict_settings
from maps_autogen.benchmarks.tasks import EvalItem, Subset, Task, find_subsets, load_answer_formats, spread_limit
from maps_autogen.benchmarks import get_benchmark
from maps_autogen.eval.validate import validate_rows
from maps_autogen.fetch import private_urls_allowed
from maps_autogen.images import ImageLimits, image_limits
from maps_autogen.interrupts import exit_on_second_interrupt
from maps_autogen.client import Completion
from maps_autogen.runlock import RunLock
from maps_autogen.scoring import score_record
from maps_autogen.solve import Team, assemble_team, solve_problem
from maps_autogen.artifacts import read_json_or_empty, read_manifest, write_manifest, write_record
from maps_autogen.records import PROBLEMS_DIR, SCHEMA_VERSION, Manifest, RunRecord, TeamRecord, checked
from maps_autogen.safe_paths import belongs_to, child_folder, safe_component
from maps_autogen.report import Run, table1
from maps_autogen.tally import Tally
from maps_autogen.transcript import new_run_id, utc_now

logger = logging.getLogger(__name__)

METHODS = ("maps", *BASELINE_METHODS)


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
        if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
            raise UsageError(f"--shard '{text}' is not of the form i/n with 1 <= i <= n", fix="e.g. --shard 1/4")
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class EvalRequest:
    """What `maps eval` was asked to do."""

    benchmark: str
    subsets: tuple[str, ...] = ()
    data: Path | None = None
    limit: int | None = None
    sample: int | None = None
    seed: int = 0
    method: str | None = None  # None: "maps" for a new run, the manifest's on --resume
    without: frozenset[str] = frozenset()  # step names of the team
    concurrency: int = 8
    rules: str = "current"
    cache: bool = True
    max_cost: float | None = None
    shard: Shard | None = None
    runs_dir: Path = Path("runs")
    resume: Path | None = None
    allow_outside_paths: bool = False  # data set rows may refer to files outside the data folder
    allow_private_urls: bool = False  # data set rows' image URLs may point at private addresses
    allow_change: bool = False  # --resume may run under other verdict settings (the manifest records each change)


@dataclass
class Selection:
    items: list[EvalItem]
    sampled: dict[str, dict[str, Any]] = field(default_factory=dict)


def select_items(items: Sequence[EvalItem], subsets: Sequence[Subset], *, sample: int | None, seed: int,
                 limit: int | None, shard: Shard | None) -> Selection:
    """Which problems run, deterministically: seeded samples per subset (the paper's 300 for the
    Zh_CEE subsets unless --sample says otherwise), then --limit, then the shard's share."""
    chosen: set[str] = set()
    sampled: dict[str, dict[str, Any]] = {}
    for subset in subsets:
        pids = [item.pid for item in items if item.subset == subset.name]
        size = sample if sample is not None else subset.default_sample
        if size is not None and size < len(pids):
            picked = sorted(random.Random(f"{seed}:{subset.name}").sample(range(len(pids)), size))
            pids = [pids[n] for n in picked]
            sampled[subset.name] = {"seed": seed, "n": size, "of": len([i for i in items if i.subset == subset.name]), "ids": pids}
        chosen.update(pids)
    selected = [item for item in items if item.pid in chosen]
    if limit is not None:
        selected = spread_limit(selected, subsets, limit)
    if shard is not None:
        selected = [item for n, item in enumerate(selected) if n % shard.count == shard.index - 1]
    return Selection(selected, sampled)


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in ("maps-autogen", "autogen", "openai", "datasets", "sympy", "pydantic"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def _git_commit() -> str | None:
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        result = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None


def load_items(task: Task, subsets: Sequence[Subset], data: Path | None, loaded: LoadedConfig) -> list[EvalItem]:
    """Every problem of the chosen subsets, in data set order. Their images are read when each
    problem starts (in its worker thread), under the image limits and path rules in force now."""
    formats = load_answer_formats(loaded.resolve(loaded.config.answer_formats))
    max_side = loaded.config.images.max_side
    with image_limits(ImageLimits.of(loaded.config.limits)):
        context = contextvars.copy_context()
        return [_loaded_in(context, task.to_item(row, prompts=formats, max_side=max_side)) for row in task.rows(tuple(subsets), data)]


def _loaded_in(context: contextvars.Context, item: EvalItem) -> EvalItem:
    """The item with its Problem built under `context`'s settings (a worker thread has its own)."""
    build = item.load_problem
    return replace(item, load_problem=lambda: context.copy().run(build))


@dataclass
class EvalOutcome:
    eval_dir: Path
    summary: dict[str, Any]
    table: str
    stopped_for_cost: bool
    ran: int
    fatal: FatalServiceError | None = None  # the service error that stopped the run early
    interrupted: bool = False  # Ctrl-C: the problems in flight were dropped, the rest is pending
    notes: list[str] = field(default_factory=list)  # printed after the table (a mixed run, an old manifest)


@dataclass
class _Stop:
    """Why `_run_items` stopped submitting problems."""

    for_cost: bool = False
    fatal: FatalServiceError | None = None
    interrupted: bool = False


class _DaemonWorkers:
    """A fixed set of daemon worker threads for the problems in flight.

    Daemon threads: on Ctrl-C the process exits without waiting for the problems in flight
    (their model calls are cancelled, their work is not counted). Long-lived workers: each
    keeps its AG2 agents (chat.agents_for) across the problems it solves."""

    def __init__(self, count: int):
        self._queue: queue.SimpleQueue[tuple[Future[Any], Any, tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._count = count
        for _ in range(count):
            threading.Thread(target=self._work, name="maps-eval", daemon=True).start()

    def _work(self) -> None:
        while (task := self._queue.get()) is not None:
            future, function, args = task
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(function(*args))
            except BaseException as error:  # handed to the main thread, which records it
                future.set_exception(error)

    def submit(self, function: Any, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._queue.put((future, function, args))
        return future

    def close(self) -> None:
        """Let every worker end once the queue is drained (never waits for them)."""
        for _ in range(self._count):
            self._queue.put(None)


class _Progress:
    """A progress bar on stderr with ETA, accuracy so far and cost so far."""

    def __init__(self, total: int, enabled: bool):
        self.enabled = enabled and total > 0
        if not self.enabled:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._progress = Progress(TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                  TextColumn("{task.description}"), console=Console(stderr=True), transient=False)
        self._task = self._progress.add_task("", total=total)
        self._progress.start()

    def advance(self, accuracy: float | None, cost: float | None) -> None:
        """One more problem done; `cost` None: some call's cost is unknown (as the summary says)."""
        if self.enabled:
            acc = "-" if accuracy is None else f"{accuracy:.1f}%"
            spent = "unknown" if cost is None else f"${cost:.4f}"
            self._progress.update(self._task, advance=1, description=f"acc {acc} · cost {spent}")

    def close(self) -> None:
        if self.enabled:
            self._progress.stop()


def _check_prices(resolution: Resolution) -> None:
    """--max-cost can only be enforced when every paid model's price is known. This checks the
    requested names before anything runs; a reply from a model served under a name without a
    price stops the run (`_unknown_cost_stop`)."""
    unpriced = sorted({m.model for m in resolution.models.values() if m.price is None and m.kind != "local"})
    if unpriced:
        raise UsageError(f"--max-cost needs the price of {', '.join(unpriced)}", fix="add it under prices: in agents.yaml")


def _say_text_only(team: Team, method: str | None) -> None:
    """One line on the terminal when steps that see images talk to a text-only model; each
    problem with images records it (an `images_withheld` event, run.json's flow.images_withheld)."""
    steps = team.loaded.team.config.steps
    seeing = [step.name for step in steps if step.sees_images or step.describes_images] if method == "maps" else [team.loaded.team.config.final_step.name]
    blind = [role for role in seeing if role in team.backends and not team.backends[role].supports_images]
    if blind:
        how = "a note stands in for each image" if method == "maps" else "the request carries the text alone"
        logger.warning("images will be withheld from %s: the model is text-only (vision: false); %s, and each problem's run records it",
                       ", ".join(blind) if method == "maps" else f"the {method} requests", how)


def _costs(record: dict[str, Any], team: Team) -> tuple[float, bool, list[str]]:
    """A problem's known USD, whether any of its cost is unknown, and the paid (not local)
    roles whose cost is unknown: their served model has no price."""
    usage = record.get("usage") or {}
    if not usage.get("calls"):
        return 0.0, False, []  # no call made: nothing spent
    if usage.get("cost") is not None:
        return usage["cost"], False, []
    by_role = record.get("usage_by_role") or {}
    models = team.resolution.models
    answering = models[team.loaded.team.config.final_step.name]  # a baseline's role is its method
    unpriced = sorted(role for role, row in by_role.items() if row.get("cost") is None and models.get(role, answering).kind != "local")
    return sum(row.get("cost") or 0.0 for row in by_role.values()), True, unpriced


def _unknown_cost_stop(record: dict[str, Any], roles: list[str]) -> FatalServiceError:
    """Why a --max-cost run stops at a problem whose cost is unknown: the served model has no
    price, so the bound could no longer be kept (the run never goes on unbounded)."""
    sent = record.get("models") or {}
    served = sorted({sent[role].get("served_model") or sent[role].get("model") for role in roles if role in sent} - {None})
    which = f" (served as {', '.join(served)})" if served else ""
    return FatalServiceError(f"--max-cost cannot be kept: the cost of problem {record.get('pid')} is unknown{which}",
                             fix="add the served model's name under prices: in agents.yaml")


class EvalRun:
    """One `maps eval` invocation over one eval folder."""

    def __init__(self, request: EvalRequest, loaded: LoadedConfig, *, progress: bool = True, env: dict[str, str] | None = None,
                 on_ready: Callable[[Path], None] | None = None):
        if request.method is not None and request.method not in METHODS:
            raise UsageError(f"unknown method '{request.method}'", fix=f"use one of: {', '.join(METHODS)}")
        if request.concurrency < 1:
            raise UsageError("--concurrency must be at least 1", fix="e.g. --concurrency 8")
        self.request = request
        self.loaded = loaded
        self.task = get_benchmark(request.benchmark).task
        self.progress = progress
        self.env = env
        self.on_ready = on_ready  # called with the eval folder once its manifest is written (maps eval --view)
        self._lock = threading.Lock()
        self.notes: list[str] = []  # lines the CLI prints after the table (e.g. what a resume could not compare)
        self._settings_index = 0  # what each results row records: the settings it ran under (run_settings.py)

    # ----- setting up -------------------------------------------------------------------
    def _eval_dir_and_manifest(self) -> tuple[Path, dict[str, Any] | None]:
        if self.request.resume is None:
            eval_id = new_run_id(f"eval-{self.task.name}")
            return self.request.runs_dir / eval_id, None
        eval_dir = self.request.resume
        manifest = read_manifest(eval_dir, fix="pass the folder maps eval printed")
        if manifest.get("benchmark") != self.task.name:
            raise UsageError(f"{eval_dir} is a {manifest.get('benchmark')} run, not {self.task.name}", fix=f"run maps eval {manifest.get('benchmark')} --resume {eval_dir}")
        return eval_dir, manifest

    def _resumed_request(self, manifest: dict[str, Any]) -> EvalRequest:
        """The request a --resume runs: the manifest fixes which problems run (subsets, rules,
        data) and, unless the command line names others, the method and --without; whether the
        settings differ from the run's is decided later, against all of them (run_settings.resume_under)."""
        request = self.request
        return replace(request, subsets=tuple(manifest["subsets"]), method=request.method or manifest["method"],
                       without=request.without or frozenset(manifest["without"]), rules=manifest["rules"],
                       data=request.data or (Path(manifest["data"]) if manifest.get("data") else None))

    def _settings(self, team: Team, items: Sequence[EvalItem]) -> dict[str, Any]:
        """This invocation's verdict settings (run_settings.py), read from what it will use."""
        request = self.request
        formats = load_answer_formats(self.loaded.resolve(self.loaded.config.answer_formats))
        baseline = None
        if request.method != "maps":
            baseline = load_baseline_prompts(self.loaded.resolve(self.loaded.config.baseline_prompts))[request.method or ""]
        return verdict_settings(team, method=request.method or "maps", without=request.without, items=items,
                                answer_formats=formats.templates.get(self.task.name, {}), baseline_prompt=baseline)

    def _described(self, team: Team) -> dict[str, Any]:
        """The manifest's description of the settings in force (updated by an allowed change)."""
        return {"method": self.request.method, "without": sorted(self.request.without), "models": team.models_record(),
                "team": TeamRecord.of(self.loaded.team.config, self.loaded.team.source).model_dump(mode="json"),
                "config_path": str(self.loaded.path), "config": self.loaded.config.model_dump(mode="json")}

    def run(self) -> EvalOutcome:
        request = self.request
        eval_dir, manifest = self._eval_dir_and_manifest()
        if manifest is not None:
            request = self.request = self._resumed_request(manifest)
        else:
            request = self.request = replace(request, method=request.method or "maps")
        # Resolved once, before anything is written: a missing key or price fails the run cleanly.
        resolution = resolve_models(self.loaded, self.env if self.env is not None else os.environ)
        if request.max_cost is not None:
            _check_prices(resolution)
        subsets = find_subsets(self.task, request.subsets)
        validate_rows(self.task, subsets, request.data)
        with outside_paths_allowed(request.allow_outside_paths), private_urls_allowed(request.allow_private_urls):
            items = load_items(self.task, subsets, request.data, self.loaded)
        cache = ResponseCache(request.runs_dir / ".cache" / "responses.sqlite") if request.cache else None
        team = assemble_team(self.loaded, resolution=resolution, cache=cache, max_connections=max(64, request.concurrency))
        _say_text_only(team, request.method)
        if manifest is None:
            selection = select_items(items, subsets, sample=request.sample, seed=request.seed, limit=request.limit, shard=request.shard)
            manifest = self._new_manifest(eval_dir, subsets, selection, team)
        else:
            wanted = set(manifest["ids"])
            selection = Selection([item for item in items if item.pid in wanted], manifest.get("sampled", {}))
            missing = wanted - {item.pid for item in selection.items}
            if missing:
                raise DataError(f"the data no longer has {len(missing)} problem(s) of this run, e.g. {sorted(missing)[0]}", fix="resume with the same --data")
            self.notes += resume_under(manifest, self._settings(team, selection.items), self._described(team), run=str(eval_dir),
                                       allow_change=request.allow_change, now=utc_now())  # refused here: before any model call
            manifest.setdefault("resumed_at", []).append(utc_now())
        self._settings_index = len(manifest.get("changes") or [])
        # One writer per run folder: a second --resume of a live run stops here, before it
        # reads what is pending (it would solve, and pay for, the same problems again).
        lock = RunLock(eval_dir)
        try:
            lock.acquire()
            write_manifest(eval_dir, manifest)
            if self.on_ready is not None:
                self.on_ready(eval_dir)
            log = ResultsLog(eval_dir / RESULTS_FILE)
            done = log.finished_ids()
            todo = [item for item in selection.items if item.pid not in done]
            try:
                stop = self._run_items(todo, team, eval_dir, log)
            finally:
                _record_replicas(eval_dir, manifest, team.replicas_served())
            log.compact(manifest["ids"])
            rows = list(log.records())  # after compact: the latest row per pid, read once for all below
            served = _served_models(rows)
            ran_under = record_pids(manifest.get("changes") or [], rows)
            if served != manifest.get("served_models", {}) or ran_under:
                manifest["served_models"] = served
                write_manifest(eval_dir, manifest)
            summary = summarize(rows, self.task, [s.name for s in subsets], Manifest.model_validate(manifest).team)
            summary.update({"eval_id": manifest["eval_id"], "method": manifest["method"], "without": manifest["without"],
                            "complete": summary["average"]["scored"] == len(manifest["ids"]),
                            "stopped_for_cost": stop.for_cost, "interrupted": stop.interrupted,
                            "stopped_by": str(stop.fatal) if stop.fatal else None, "mixed_settings": mixed_settings(rows)})
            write_summary(eval_dir, summary)
        finally:
            lock.release()
            if cache is not None:
                cache.close()
        # The one Table 1 writer, as `maps report` prints it for this folder (intervals included).
        table = table1([Run(path=eval_dir, manifest=Manifest.model_validate(manifest), records=rows)])[0]
        if summary["mixed_settings"]:
            self.notes.append("the scored problems ran under different settings (manifest.json: changes, with the pids run "
                              "under each); the accuracy mixes them")
        return EvalOutcome(eval_dir, summary, table, stop.for_cost, len(todo),
                           fatal=stop.fatal, interrupted=stop.interrupted, notes=self.notes)

    def _new_manifest(self, eval_dir: Path, subsets: Sequence[Subset], selection: Selection, team: Team) -> dict[str, Any]:
        request = self.request
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "eval",
            "eval_id": eval_dir.name,
            "created_at": utc_now(),
            "benchmark": self.task.name,
            "hub_id": self.task.hub_id,
            "data": str(request.data.resolve()) if request.data else None,
            "subsets": [s.name for s in subsets],
            "ids": [item.pid for item in selection.items],
            "subset_of_id": {item.pid: item.subset for item in selection.items},
            "sampled": selection.sampled,
            "seed": request.seed,
            "sample": request.sample,
            "limit": request.limit,
            "shard": str(request.shard) if request.shard else None,
            **self._described(team),
            "rules": request.rules,
            "allow_outside_paths": request.allow_outside_paths,
            "settings": self._settings(team, selection.items),  # what a --resume must match (run_settings.py)
            "versions": _versions(),
            "git_commit": _git_commit(),
        }

    # ----- running ----------------------------------------------------------------------
    def _run_items(self, todo: list[EvalItem], team: Team, eval_dir: Path, log: ResultsLog) -> _Stop:
        request = self.request
        progress = _Progress(len(todo), self.progress)
        spent = 0.0  # the known costs
        cost_unknown = False  # some problem's cost is unknown: the bar says so, as the summary does
        tally = Tally()  # the problems run now, for the progress bar
        stop = _Stop()
        suspect: ServiceError | None = None  # the service error the last problem to finish failed with
        pending = iter(todo)
        in_flight: dict[Future[tuple[dict[str, Any], MapsError | None]], EvalItem] = {}
        baseline_prompts = load_baseline_prompts(self.loaded.resolve(self.loaded.config.baseline_prompts)) if request.method != "maps" else None
        formats = load_answer_formats(self.loaded.resolve(self.loaded.config.answer_formats)) if request.method != "maps" else None

        workers = _DaemonWorkers(min(request.concurrency, len(todo)))

        def submit_next() -> bool:
            item = next(pending, None)
            if item is None:
                return False
            in_flight[workers.submit(self._solve_one, item, team, eval_dir, baseline_prompts, formats)] = item
            return True

        try:
            for _ in range(request.concurrency):
                if not submit_next():
                    break
            while in_flight:
                finished, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
                for future in finished:
                    item = in_flight.pop(future)
                    failure: MapsError | None = None
                    try:
                        record, failure = future.result()
                    except Exception as error:  # a bug in one problem must not stop the run
                        logger.exception("problem %s failed", item.pid)
                        record = self._failed_record(item, f"{error.__class__.__name__}: {error}", 0.0)
                    if isinstance(failure, RunInterrupted):
                        continue  # cancelled by a fatal error elsewhere: still pending, not failed
                    log.append({**record, ROW_FIELD: self._settings_index})
                    known, unknown, unpriced = _costs(record, team)
                    spent += known
                    cost_unknown = cost_unknown or unknown
                    tally.add_row(record)
                    progress.advance(tally.accuracy, None if cost_unknown else spent)
                    if request.max_cost is not None and unpriced and stop.fatal is None:
                        stop.fatal = _unknown_cost_stop(record, unpriced)
                        team.cancel()
                    if request.max_cost is not None and spent >= request.max_cost:
                        stop.for_cost = True
                    fatal = failure if isinstance(failure, FatalServiceError) else _same_failure(suspect, failure)
                    if fatal is not None and stop.fatal is None:
                        # Every other problem would meet it too: stop sending; the problems not
                        # started stay pending for --resume.
                        stop.fatal = fatal
                        team.cancel()
                    suspect = failure if isinstance(failure, ServiceError) and failure.cause else None
                    if not (stop.for_cost or stop.fatal):
                        # After a service failure, wait for the problems in flight to tell whether
                        # it is the service's (the same again) before starting more.
                        while (suspect is None or not in_flight) and len(in_flight) < request.concurrency and submit_next():
                            pass
        except KeyboardInterrupt:
            # Ctrl-C: the problems in flight stop at their next model call and are not
            # counted; what finished is summarised by the caller. A second Ctrl-C exits now.
            exit_on_second_interrupt()
            team.cancel()
            stop.interrupted = True
        finally:
            workers.close()
        progress.close()
        return stop

    def _failed_record(self, item: EvalItem, error: str, seconds: float) -> dict[str, Any]:
        return {"pid": item.pid, "subset": item.subset, "status": "failed", "gold": item.gold, "response": None,
                "extraction": None, "prediction": None, "correct": None, "stop_reason": "error", "rollbacks": [],
                "critic_scores": [], "feedback_step": None, "usage": {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0},
                "seconds": round(seconds, 3), "error": error, "metadata": item.metadata, "method": self.request.method,
                "run_dir": f"{PROBLEMS_DIR}/{safe_component(item.pid)}"}

    def _solve_one(self, item: EvalItem, team: Team, eval_dir: Path, baseline_prompts: Any, formats: Any) -> tuple[dict[str, Any], MapsError | None]:
        """Solve and score one problem: its results.jsonl record, and the service failure that
        ended it (if any) so the caller can stop the run on a fatal one."""
        request = self.request
        name = safe_component(item.pid)
        try:
            problem_dir = _fresh_problem_dir(eval_dir, name, item.pid)
        except DataError as error:  # a tampered folder fails its own problem only, and is left alone
            return self._failed_record(item, str(error), 0.0), None
        started = time.monotonic()
        extra = {"pid": item.pid, "subset": item.subset, "gold": item.gold, "benchmark": self.task.name, "method": request.method}
        base = {"pid": item.pid, "subset": item.subset, "gold": item.gold, "metadata": item.metadata,
                "method": request.method, "run_dir": f"{PROBLEMS_DIR}/{name}"}
        scored: dict[str, Any] = {}
        try:
            problem = item.load_problem()  # its images are read and decoded now, not before the run
        except MapsError as error:  # a broken image fails its own problem only
            return self._failed_record(item, str(error), time.monotonic() - started), None
        if request.method == "maps":

            def evaluate(outcome: Any) -> dict[str, Any]:
                # Scored before run.json's final write, so the verdict goes in with it.
                if outcome.stop_reason == "error":
                    return {}
                response = self.task.render_response(outcome.final_answer, item) if outcome.solver_answer else ""
                scored["verdict"] = score_record(self.task.name, {**item.record, "response": response}, request.rules)
                return _evaluation_fields(response, scored["verdict"], item.gold)

            result = solve_problem(problem, team, runs_dir=eval_dir / PROBLEMS_DIR, run_id=name,
                                   without=request.without, extra=extra, evaluate=evaluate)
            outcome = result.outcome
            error = outcome.error if outcome.stop_reason in ("error", "interrupted") else None
            failure = outcome.failure
            response = self.task.render_response(outcome.final_answer, item) if outcome.solver_answer else ""
            chat = {
                "stop_reason": outcome.stop_reason,
                "rollbacks": [r.step for r in outcome.rollbacks],
                "critic_scores": [v.scores if v else None for v in outcome.verdicts],
                "feedback_step": outcome.rollbacks[0].step if outcome.rollbacks else None,
                "final_answer": outcome.final_answer,
                # False: the Solver's last allowed reply never parsed and its text was scored.
                "solver_parsed": outcome.solver_answer.parsed if outcome.solver_answer else None,
                "usage": outcome.usage(),
                "usage_by_role": outcome.usage_by_role(),
                "models": _models_sent((call.role, call.completion) for call in outcome.calls),
                "max_tokens_reached": sorted({call.role for call in outcome.calls if call.completion.finish_reason == "length"}),
            }
            run_json = None  # already holds the verdict
        else:
            ending = formats.render(self.task.name, "baseline_ending")
            baseline = run_baseline(problem, team, request.method, prompt=baseline_prompts[request.method],
                                    ending=ending, run_dir=problem_dir, extra=extra)
            error = baseline.error
            failure = baseline.failure
            response = baseline.response
            chat = {"stop_reason": "error" if error else None, "rollbacks": [], "critic_scores": [], "feedback_step": None,
                    "final_answer": response, "usage": baseline.usage(), "usage_by_role": {request.method: baseline.usage()},
                    "models": _models_sent([(request.method, baseline.completion)] if baseline.completion else []),
                    "max_tokens_reached": [request.method] if baseline.completion and baseline.completion.finish_reason == "length" else []}
            run_json = problem_dir / "run.json"
        seconds = time.monotonic() - started
        if error:
            return {**self._failed_record(item, error, seconds), **chat, **base, "status": "failed", "error": error}, failure
        verdict = scored.get("verdict") or score_record(self.task.name, {**item.record, "response": response}, request.rules)
        record = {**base, "status": "ok", "response": response, "extraction": verdict.extraction,
                  "prediction": verdict.prediction, "correct": bool(verdict.correct),
                  "extractor_version": verdict.extractor_version, **chat,
                  "seconds": round(seconds, 3), "error": None}
        if run_json is not None:
            self._annotate_run(run_json, _evaluation_fields(response, verdict, item.gold))
        return record, None

    @staticmethod
    def _annotate_run(run_json: Path, fields: dict[str, Any]) -> None:
        """Put the verdict into a baseline's run.json, for the viewer."""
        run = read_json_or_empty(run_json)
        if run:
            write_record(run_json, checked(RunRecord, {**run, **fields}, source=str(run_json)))


def _fresh_problem_dir(eval_dir: Path, name: str, pid: str) -> Path:
    """`<eval>/problems/<name>`, empty: the folder of a problem that was in flight when the run
    was killed is removed first. Only a real folder (not a symlink) that is a direct child of
    the real problems folder and belongs to no other problem is ever removed."""
    problems = eval_dir / PROBLEMS_DIR
    problems.mkdir(parents=True, exist_ok=True)
    problem_dir = child_folder(problems, name, what=f"the folder of problem {pid!r}")
    if problem_dir.exists():
        if not problem_dir.is_dir():
            raise DataError(f"{problem_dir} is not a folder", fix="remove it, or resume into an untouched run folder")
        if not belongs_to(problem_dir, pid):
            raise DataError(f"{problem_dir} holds another problem than {pid!r}", fix="resume into an untouched run folder")
        shutil.rmtree(problem_dir)
    return problem_dir


def _same_failure(previous: ServiceError | None, failure: MapsError | None) -> FatalServiceError | None:
    """The error that stops an eval when two problems in a row (in the order they finish) failed
    with the same service answer: a gateway's unknown alias or refused key, a dead backend, a
    deadline no request can meet. Errors about one problem differ from problem to problem."""
    if previous is None or not isinstance(failure, ServiceError) or failure.cause is None or failure.cause != previous.cause:
        return None
    return FatalServiceError(f"two problems in a row failed with the same error: {failure.problem}", fix=failure.fix, cause=failure.cause)


def _record_replicas(eval_dir: Path, manifest: dict[str, Any], served: dict[str, dict[str, int]]) -> None:
    """Add this invocation's requests per replica to the manifest (endpoints with replicas only)."""
    if not served:
        return
    totals = manifest.setdefault("replicas_served", {})
    for endpoint, counts in served.items():
        for url, count in counts.items():
            totals.setdefault(endpoint, {})[url] = totals.get(endpoint, {}).get(url, 0) + count
    write_manifest(eval_dir, manifest)


def _evaluation_fields(response: str, verdict: Any, gold: Any) -> dict[str, Any]:
    """What a problem's run.json records of its scoring, for the viewer."""
    evaluation = {"response": response, "extraction": verdict.extraction, "prediction": verdict.prediction,
                  "correct": bool(verdict.correct), "gold": gold}
    return {"evaluation": evaluation, "correct": evaluation["correct"]}


def _models_sent(calls: Iterable[tuple[str, Completion]]) -> dict[str, dict[str, Any]]:
    """Per role that called a model, the settings read back from its last request body sent
    (and the model name the service reported, when it differs)."""
    models: dict[str, dict[str, Any]] = {}
    for role, completion in calls:
        entry = dict(completion.sent)
        if completion.served_model:
            entry["served_model"] = completion.served_model
        models[role] = entry
    return models


def _served_models(records: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """Per role, the model names the service reported where they differ from the one sent."""
    served: dict[str, set[str]] = {}
    for record in records:
        for role, sent in (record.get("models") or {}).items():
            if sent.get("served_model"):
                served.setdefault(role, set()).add(sent["served_model"])
    return {role: sorted(names) for role, names in sorted(served.items())}


__all__ = ["EvalOutcome", "EvalRequest", "EvalRun", "Shard", "select_items"]
