"""The eval run: one `maps eval` invocation over one eval folder, from the request to the
summary. It sets the folder up (a new manifest, or a --resume checked against the recorded
settings), hands the pending problems to the worker pool (eval/_workers.py), each solved by
eval/_problem_run.py, stops early when eval/_stopping.py says so, and writes the summary and
Table 1. Selection is eval/_selection.py, the environment record eval/_environment.py.

Every finished problem is appended to results.jsonl at once, so a killed run loses at most the
problems in flight; `--resume` skips finished problems and retries failed ones. A SIGTERM stops
the run as the first Ctrl-C does (_util/_interrupts.py); the manifest, results and summary written at
the end are never cut by one (interrupts.signals_deferred).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from maps_autogen._util import (
    DataError,
    DiskFullError,
    FatalServiceError,
    RunInterrupted,
    RunLock,
    ServiceError,
    Terminated,
    UsageError,
    disk_full,
    exit_on_second_interrupt,
    signals_deferred,
)
from maps_autogen.benchmarks import get_benchmark
from maps_autogen.eval._baselines import BaselinePrompt, load_baseline_prompts
from maps_autogen.eval._batching import EvalBatches, batch_tally, check_batch, open_batches, problems_in_flight
from maps_autogen.eval._context_fit import fit_team
from maps_autogen.eval._environment import git_commit, versions
from maps_autogen.eval._estimate import announcement, measured
from maps_autogen.eval._options import EvalOptions, check_request, compared_options
from maps_autogen.eval._problem_run import ProblemRunner
from maps_autogen.eval._processes import (
    InProcess,
    ProcessWorkers,
    Solved,
    WorkerDied,
    WorkerSetup,
    WorkersGone,
    added_counts,
    available_cores,
    check_workers,
    shares,
    worker_count,
)
from maps_autogen.eval._results import RESULTS_FILE, ResultsLog, missing_ids, summarize, write_summary
from maps_autogen.eval._selection import Selection, Shard, load_items, load_rows, select_items
from maps_autogen.eval._stopping import Stop, check_prices, costs, same_failure, unknown_cost_stop
from maps_autogen.eval._table1 import Run, table1
from maps_autogen.eval._validate import validate_rows
from maps_autogen.eval._verdict_settings import (
    mixed_settings,
    record_pids,
    resume_under,
    scoring_hash,
    shown_hash,
    verdict_settings,
)
from maps_autogen.eval._workers import Progress
from maps_autogen.model import ResponseCache
from maps_autogen.orchestration import Team, assemble_team, new_run_id, utc_now
from maps_autogen.problem import (
    EvalItem,
    Row,
    Subset,
    available_subsets,
    find_subsets,
    load_answer_formats,
    private_urls_allowed,
)
from maps_autogen.records import (
    PROBLEMS_DIR,
    Manifest,
    ResultRow,
    SelectionRecord,
    Summary,
    TeamRecord,
    VerdictSettings,
    outside_paths_allowed,
    read_manifest,
    write_manifest,
)
from maps_autogen.scoring import Tally
from maps_autogen.settings import LoadedConfig, plan_chat, resolve_models

logger = logging.getLogger(__name__)

#: The problems whose prompts the reply budgets are fitted to (evenly spread; eval/_context_fit.py).
FITTED = 200


@dataclass
class EvalOutcome:
    """What one invocation did: its folder, summary, Table 1 and why it stopped early (if it did)."""

    eval_dir: Path
    summary: Summary
    table: str
    stopped_for_cost: bool
    ran: int
    fatal: FatalServiceError | None = None  # the service error that stopped the run early
    interrupted: bool = False  # Ctrl-C or SIGTERM: the problems in flight were dropped, the rest is pending
    terminated: bool = False  # the interruption was a SIGTERM (exit code 143)
    notes: list[str] = field(default_factory=list)  # printed after the table (a mixed run, batches picked up)
    dry_run: bool = False  # --dry-run: said what it would do, called nothing, wrote nothing


class EvalRun:
    """One `maps eval` invocation over one eval folder."""

    def __init__(
        self,
        request: EvalOptions,
        loaded: LoadedConfig,
        *,
        progress: bool = True,
        env: dict[str, str] | None = None,
        on_ready: Callable[[Path], None] | None = None,
        announce: Callable[[str], None] | None = None,
    ):
        check_request(request)
        self.request = request
        self.loaded = loaded
        self.task = get_benchmark(request.benchmark).task
        self.progress = progress
        self.env = env
        self.on_ready = on_ready  # called with the eval folder once its manifest is written (maps eval --view)
        self.announce = announce  # given what the run will call and bill, before its first call (_estimate.py)
        self._lock = threading.Lock()
        self.notes: list[str] = []  # lines the CLI prints after the table (e.g. what a resume could not compare)
        self._settings_index = 0  # what each results row records: the settings it ran under (_verdict_settings.py)

    # ----- setting up -------------------------------------------------------------------
    def _eval_dir_and_manifest(self) -> tuple[Path, Manifest | None]:
        if self.request.resume is None:
            eval_id = new_run_id(f"eval-{self.task.name}")
            return self.request.runs_dir / eval_id, None
        eval_dir = self.request.resume
        manifest = read_manifest(eval_dir, fix="pass the folder maps eval printed")
        if manifest.benchmark != self.task.name:
            raise UsageError(
                f"{eval_dir} is a {manifest.benchmark} run, not {self.task.name}",
                fix=f"run maps eval {manifest.benchmark} --resume {eval_dir}",
            )
        return eval_dir, manifest

    def _resumed_request(self, manifest: Manifest) -> EvalOptions:
        """The request a --resume runs: the manifest fixes which problems run (subsets, rules,
        data) and, unless the command line names others, the method and --without; whether the
        settings differ from the run's is decided later, against all of them (run_settings.resume_under)."""
        request = self.request
        return replace(request, subsets=tuple(manifest.subsets), method=request.method or manifest.method,
                       without=request.without or frozenset(manifest.without), rules=manifest.rules,
                       data=request.data or (Path(manifest.data) if manifest.data else None))

    def _settings(self, team: Team, items: Sequence[EvalItem]) -> VerdictSettings:
        """This invocation's verdict settings (_verdict_settings.py), read from what it will use."""
        request = self.request
        formats = load_answer_formats(self.loaded.resolve(self.loaded.config.answer_formats))
        baseline = None
        if request.method != "maps":
            baseline = load_baseline_prompts(self.loaded.resolve(self.loaded.config.baseline_prompts))[
                request.method or ""
            ]
        return verdict_settings(team, method=request.method or "maps", without=request.without, items=items,
                                answer_formats=formats.templates.get(self.task.name, {}), baseline_prompt=baseline,
                                options=compared_options(request))

    def _described(self, team: Team) -> dict[str, Any]:
        """The manifest's fields that describe the settings in force (updated by an allowed change)."""
        return {"method": self.request.method, "without": sorted(self.request.without), "models": team.models_record(),
                "images_dropped": self._images_dropped(team),
                "team": TeamRecord.of(self.loaded.team.config, self.loaded.team.source),
                "config_path": str(self.loaded.path), "config": self.loaded.config}

    def _images_dropped(self, team: Team) -> list[str]:
        """The left-out steps whose images reach no step on a problem with images (the paper's
        ablation; empty with images.to_next_step or when nothing that sees images is left out)."""
        if (self.request.method or "maps") != "maps":
            return []
        plan = plan_chat(team.loaded.team.config, has_images=True, without=self.request.without,
                         images_to_next=self.loaded.config.images.to_next_step)
        return list(plan.images_dropped)

    def run(self) -> EvalOutcome:
        request = self.request
        eval_dir, manifest = self._eval_dir_and_manifest()
        if manifest is not None:
            request = self.request = self._resumed_request(manifest)
        else:
            request = self.request = replace(request, method=request.method or "maps")
        # Resolved once, before anything is written: a missing key or price fails the run cleanly.
        resolution = resolve_models(self.loaded, self.env if self.env is not None else os.environ)
        check_batch(request, resolution)
        if request.max_cost is not None:
            check_prices(resolution, batch=request.batch)
        check_workers(request.workers, local=resolution.uses_local)
        subsets = find_subsets(self.task, request.subsets, available_subsets(self.task, request.data))
        validate_rows(self.task, subsets, request.data)
        with outside_paths_allowed(request.allow_outside_paths), private_urls_allowed(request.allow_private_urls):
            loaded_rows = load_rows(self.task, subsets, request.data, self.loaded)
        items = [item for _, item in loaded_rows]
        rows_by_pid = {str(item.pid): row for row, item in loaded_rows}  # handed to worker processes
        cache = (ResponseCache(request.runs_dir / ".cache" / "responses.sqlite")
                 if request.cache and not request.dry_run else None)
        team = assemble_team(
            self.loaded, resolution=resolution, cache=cache, max_connections=max(64, problems_in_flight(request))
        )
        _say_text_only(team, request.method)
        # --batch: the backends turned to a broker, the batch API checked before anything is written
        batches = open_batches(team, eval_dir, batch=request.batch, resumed=manifest is not None, notes=self.notes)
        if manifest is None:
            selection = select_items(items, subsets, sample=request.sample, seed=request.sample_seed,
                                     limit=request.limit, shard=request.shard)
        else:
            wanted = set(manifest.ids)
            selection = Selection([item for item in items if item.pid in wanted], dict(manifest.sampled))
            missing = wanted - {item.pid for item in selection.items}
            if missing:
                raise DataError(
                    f"the data no longer has {len(missing)} problem(s) of this run, e.g. {sorted(missing, key=str)[0]}",
                    fix="resume with the same --data",
                )
        # Reply budgets every request fits in, on a server that says its context (before the manifest records them).
        max_side = self.loaded.config.images.max_side
        team = fit_team(team, self.loaded, lambda: measured(selection.items, max_side, FITTED),
                        method=request.method or "maps", without=request.without, baseline=self._baseline(),
                        cache=cache, max_connections=max(64, problems_in_flight(request, len(selection.items))))
        if request.dry_run:  # what the run would call, cost and take; nothing called, nothing written
            done = ResultsLog(eval_dir / RESULTS_FILE).finished_ids() if manifest is not None else set()
            todo = [item for item in selection.items if item.pid not in done]
            if self.announce is not None:
                self.announce(self._announcement(team, todo))
            return EvalOutcome(eval_dir, Summary(benchmark=self.task.name), "", False, len(todo), dry_run=True)
        if manifest is None:
            manifest = self._new_manifest(eval_dir, subsets, selection, team)
        else:
            # a refused change is refused here: before any model call
            manifest = resume_under(
                manifest,
                self._settings(team, selection.items),
                self._described(team),
                run=str(eval_dir),
                allow_change=request.allow_change,
                now=utc_now(),
            )
            manifest = manifest.model_copy(update={"resumed_at": [*manifest.resumed_at, utc_now()]})
        self._settings_index = len(manifest.changes)
        # One writer per run folder: a second --resume of a live run stops here, before it
        # reads what is pending (it would solve, and pay for, the same problems again).
        lock = RunLock(eval_dir)
        try:
            lock.acquire()
            log = ResultsLog(eval_dir / RESULTS_FILE)
            done = log.finished_ids()  # read first: a damaged line stops a resume before it writes
            write_manifest(eval_dir, manifest)
            if self.on_ready is not None:
                self.on_ready(eval_dir)
            todo = [item for item in selection.items if item.pid not in done]
            if self.announce is not None:
                self.announce(self._announcement(team, todo))
            if batches is not None:
                self.notes += batches.start(self.announce)  # the batches an earlier invocation left, picked up
            by_workers: dict[str, dict[str, int]] = {}  # requests per replica in worker processes (eval/_processes.py)
            try:
                stop = self._run_items(todo, team, eval_dir, log, rows_by_pid, by_workers, batches)
            finally:
                if batches is not None:
                    batches.broker.close()  # the batches still running run on at the service
                    self.notes += batches.broker.notes()
                with signals_deferred():  # a Ctrl-C or SIGTERM now is handled once these are written
                    manifest = _record_replicas(eval_dir, manifest, added_counts(team.replicas_served(), by_workers))
            with _uncut(stop):
                manifest, summary, rows = self._finish(eval_dir, manifest, log, subsets, stop)
        except DiskFullError:
            # The problems in flight are cancelled; what finished is whole (results.jsonl has no
            # torn line): a resume once there is room carries on and writes the summary.
            raise disk_full(eval_dir, _space_needed(eval_dir, manifest.ids),
                            then=f"continue with: maps eval {self.task.name} --resume {eval_dir}") from None
        finally:
            lock.release()
            if cache is not None:
                cache.close()
        # The one Table 1 writer, as `maps report` prints it for this folder (intervals included).
        table = table1([Run(path=eval_dir, manifest=manifest, records=rows)])[0]
        if summary.mixed_settings:
            self.notes.append(
                "the scored problems ran under different settings (manifest.json: changes, with the pids run "
                "under each); the accuracy mixes them"
            )
        return EvalOutcome(eval_dir, summary, table, stop.for_cost, len(todo),
                           fatal=stop.fatal, interrupted=stop.interrupted, terminated=stop.terminated,
                           notes=self.notes)

    def _finish(self, eval_dir: Path, manifest: Manifest, log: ResultsLog, subsets: Sequence[Subset],
                stop: Stop) -> tuple[Manifest, Summary, list[ResultRow]]:
        """The run's files once its problems are done or it stopped: results.jsonl compacted,
        the manifest's served models, changes and replaced workers, and the summary."""
        log.compact([str(pid) for pid in manifest.ids])
        rows = list(log.records())  # after compact: the latest row per pid, read once for all below
        served = _served_models(rows)
        changes = record_pids(manifest.changes, rows)
        replaced = manifest.workers_replaced + stop.workers_replaced
        if served != manifest.served_models or changes != manifest.changes or replaced != manifest.workers_replaced:
            manifest = manifest.model_copy(update={"served_models": served, "changes": changes,
                                                   "workers_replaced": replaced})
            write_manifest(eval_dir, manifest)
        summary = summarize(rows, self.task, [s.name for s in subsets], manifest.team)
        summary = summary.model_copy(
            update={
                "eval_id": manifest.eval_id,
                "method": manifest.method,
                "without": manifest.without,
                "complete": summary.average.scored == len(manifest.ids),
                "stopped_for_cost": stop.for_cost,
                "interrupted": stop.interrupted,
                "stopped_by": str(stop.fatal) if stop.fatal else "SIGTERM" if stop.terminated else None,
                "mixed_settings": mixed_settings(rows),
                "missing": missing_ids(manifest.ids, rows),
                "workers_replaced": manifest.workers_replaced,
            }
        )
        batched = batch_tally(eval_dir)
        if batched is not None:
            summary = summary.model_copy(update={"batches": batched})
        write_summary(eval_dir, summary, rows)
        return manifest, summary, rows

    def _new_manifest(self, eval_dir: Path, subsets: Sequence[Subset], selection: Selection, team: Team) -> Manifest:
        request = self.request
        return Manifest(
            kind="eval",
            eval_id=eval_dir.name,
            created_at=utc_now(),
            benchmark=self.task.name,
            hub_id=self.task.hub_id,
            data=str(request.data.resolve()) if request.data else None,
            subsets=[s.name for s in subsets],
            ids=[item.pid for item in selection.items],
            subset_of_id={item.pid: item.subset for item in selection.items},
            sampled=selection.sampled,
            seed=request.sample_seed,
            sample=request.sample,
            limit=request.limit,
            shard=str(request.shard) if request.shard else None,
            selection=selection_record(selection.whole),
            rules=request.rules,
            allow_outside_paths=request.allow_outside_paths,
            settings=self._settings(team, selection.items),  # what a --resume must match (_verdict_settings.py)
            versions=versions(),
            git_commit=git_commit(),
        ).model_copy(update=self._described(team))

    def _baseline(self) -> BaselinePrompt | None:
        """The baseline method's prompt (None for maps)."""
        method = self.request.method or "maps"
        if method == "maps":
            return None
        return load_baseline_prompts(self.loaded.resolve(self.loaded.config.baseline_prompts))[method]

    def _announcement(self, team: Team, todo: Sequence[EvalItem]) -> str:
        request = self.request
        return announcement(team, todo, method=request.method or "maps", without=request.without,
                            baseline=self._baseline(), concurrency=problems_in_flight(request, len(todo)),
                            batch=problems_in_flight(request, len(todo)) if request.batch else None)

    # ----- running ----------------------------------------------------------------------
    def _pool(self, todo: list[EvalItem], team: Team, eval_dir: Path, rows: Mapping[str, Row],
              runner: ProblemRunner, concurrency: int) -> InProcess | ProcessWorkers:
        """Where the problems are solved: this process's threads, or worker processes when one
        core cannot keep up (eval/_processes.py; never with --batch, whose calls wait on rounds)."""
        request = self.request
        count = 1 if request.batch else worker_count(
            request.workers, concurrency=concurrency, problems=len(todo), cores=available_cores(),
            local=team.resolution.uses_local)
        if count == 1:
            return InProcess(runner, min(concurrency, len(todo)))
        if self.announce is not None:
            each = ", ".join(map(str, shares(concurrency, count)))
            self.announce(f"running in {count} worker processes ({each} problems in flight each)")
        cache = request.runs_dir / ".cache" / "responses.sqlite" if request.cache else None
        setup = WorkerSetup(
            benchmark=request.benchmark, allow_outside_paths=request.allow_outside_paths,
            allow_private_urls=request.allow_private_urls, loaded=self.loaded, resolution=team.resolution,
            method=request.method or "maps", without=request.without, rules=request.rules, eval_dir=eval_dir,
            cache_path=cache, max_connections=max(64, concurrency))
        return ProcessWorkers(setup, count, concurrency, rows)

    def _run_items(self, todo: list[EvalItem], team: Team, eval_dir: Path, log: ResultsLog,
                   rows: Mapping[str, Row], served: dict[str, dict[str, int]], batches: EvalBatches | None) -> Stop:
        request = self.request
        concurrency = problems_in_flight(request, len(todo))  # with --batch: every problem, one call each per round
        progress = Progress(len(todo), self.progress)
        running = batches.broker.set_running if batches is not None else (lambda count: None)
        if batches is not None:
            batches.show_on(progress.status)
        spent = _Spent()
        tally = Tally()  # the problems run now, for the progress bar
        stop = Stop()
        suspect: ServiceError | None = None  # the service error the last problem to finish failed with
        pending = iter(todo)
        in_flight: dict[Future[Solved], EvalItem] = {}
        runner = ProblemRunner.of(self.task, self.loaded, team, eval_dir, method=request.method or "maps",
                                  without=request.without, rules=request.rules)
        pool = self._pool(todo, team, eval_dir, rows, runner, concurrency)

        def submit_next() -> bool:
            item = next(pending, None) if pool.room() else None
            if item is None:
                return False
            in_flight[pool.submit(item)] = item
            return True

        try:
            pool.start()
            running(min(concurrency, len(todo)))  # before the first problem can ask: no round of one
            for _ in range(concurrency):
                if not submit_next():
                    break
            running(len(in_flight))
            while in_flight:
                watched: list[Future[Any]] = [*in_flight, pool.signalled]
                finished, _ = wait(watched, return_when=FIRST_COMPLETED)
                if pool.signalled.done():  # a worker process was sent SIGTERM: as one to this process
                    raise Terminated()
                for future in finished:
                    item = in_flight.pop(future)
                    row, failure = _solved(future, item, runner)
                    if isinstance(failure, RunInterrupted):
                        continue  # cancelled by a fatal error elsewhere: still pending, not failed
                    log.append(row.model_copy(update={"settings": self._settings_index}))
                    self._charge(row, team, spent, stop, pool)
                    tally.add_row(row)
                    progress.advance(tally.accuracy, None if spent.unknown else spent.known, row.usage)
                    fatal = failure if isinstance(failure, FatalServiceError) else same_failure(suspect, failure)
                    if fatal is not None and stop.fatal is None:
                        # Every other problem would meet it too: stop sending; the problems not
                        # started stay pending for --resume.
                        stop.fatal = fatal
                        pool.cancel()
                    suspect = failure if isinstance(failure, ServiceError) and failure.cause else None
                    if not (stop.for_cost or stop.fatal):
                        # After a service failure, wait for the problems in flight to tell whether
                        # it is the service's (the same again) before starting more.
                        while (
                            (suspect is None or not in_flight)
                            and len(in_flight) < concurrency
                            and submit_next()
                        ):
                            pass
                running(len(in_flight))  # a round goes once every problem in flight waits on a call
            stop.fatal = stop.fatal or _workers_gone(stop, pending, pool)
        except DiskFullError:
            pool.cancel()  # the problems in flight stop at their next model call
            raise
        except KeyboardInterrupt as signal_stop:
            # Ctrl-C or SIGTERM: the problems in flight stop at their next model call and are
            # not counted; what finished is summarised by the caller. A second Ctrl-C exits now.
            exit_on_second_interrupt()
            pool.cancel()
            stop.interrupted = True
            stop.terminated = isinstance(signal_stop, Terminated)
        finally:
            with _uncut(stop):  # the workers are told to end and reaped
                pool.close()
            served.update(pool.replicas_served())
            stop.workers_replaced = pool.replaced
        progress.close()
        return stop


    def _charge(self, row: ResultRow, team: Team, spent: _Spent, stop: Stop, pool: InProcess | ProcessWorkers) -> None:
        """Add a finished problem's cost; stop for --max-cost once it is reached, or at once when a
        call's cost cannot be known (the cap could not be kept)."""
        known, unknown, unpriced = costs(row, team)
        spent.known += known
        spent.unknown = spent.unknown or unknown
        if self.request.max_cost is None:
            return
        if unpriced and stop.fatal is None:
            stop.fatal = unknown_cost_stop(row, unpriced)
            pool.cancel()
        if spent.known >= self.request.max_cost:
            stop.for_cost = True


@dataclass
class _Spent:
    """What the problems run now cost: the known costs, and whether some problem's cost is
    unknown (the bar then says so, as the summary does)."""

    known: float = 0.0
    unknown: bool = False


def _uncut(stop: Stop) -> AbstractContextManager[None]:
    """What a Ctrl-C or SIGTERM may not cut short: until the run stops, they are handled after
    the block; once it stops (after the first), a second Ctrl-C still exits at once."""
    return nullcontext() if stop.interrupted else signals_deferred()


def _workers_gone(stop: Stop, pending: Iterator[EvalItem], pool: InProcess | ProcessWorkers) -> WorkersGone | None:
    """Once no problem is in flight: the stop when problems are left that no worker process can
    take (every one has ended; threads always can)."""
    if stop.for_cost or next(pending, None) is None:
        return None
    return WorkersGone(f"every worker process has ended, {pool.replaced} of them replaced already",
                       fix="see the lines above for why they ended")


def _solved(future: Future[Solved], item: EvalItem, runner: ProblemRunner) -> Solved:
    """A finished problem's row and the service failure that ended it; a problem that raised
    (a bug in one problem must not stop the run) or whose worker process ended is a failed row."""
    try:
        return future.result()
    except DiskFullError:
        raise  # every later write would meet it too: the run stops
    except RunInterrupted as dropped:  # its worker process stopped (SIGTERM): still pending, not failed
        return runner.failed_row(item, str(dropped), 0.0), dropped
    except WorkerDied as died:  # its process's end was reported in one line
        return runner.failed_row(item, str(died), 0.0), None
    except Exception as error:
        logger.exception("problem %s failed", item.pid)
        return runner.failed_row(item, f"{error.__class__.__name__}: {error}", 0.0), None


def _space_needed(eval_dir: Path, ids: Sequence[Any]) -> int:
    """About how many bytes the run still needs: what a problem has taken so far (its folder
    and its results line, on average) times the problems not finished, and a megabyte for the
    summary and the manifest."""
    sizes = [sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
             for folder in (eval_dir / PROBLEMS_DIR).iterdir() if folder.is_dir()] \
        if (eval_dir / PROBLEMS_DIR).is_dir() else []
    results = eval_dir / RESULTS_FILE
    per_problem = (sum(sizes) + (results.stat().st_size if results.exists() else 0)) // max(1, len(sizes))
    finished = ResultsLog(results).finished_ids()
    return per_problem * sum(str(pid) not in finished for pid in ids) + 2**20


def _say_text_only(team: Team, method: str | None) -> None:
    """One line on the terminal when steps that see images talk to a text-only model; each
    problem with images records it (an `images_withheld` event, run.json's flow.images_withheld)."""
    steps = team.loaded.team.config.steps
    seeing = (
        [step.name for step in steps if step.sees_images or step.describes_images]
        if method == "maps"
        else [team.loaded.team.config.final_step.name]
    )
    blind = [role for role in seeing if role in team.backends and not team.backends[role].supports_images]
    if blind:
        how = "a note stands in for each image" if method == "maps" else "the request carries the text alone"
        logger.warning(
            "images will be withheld from %s: the model is text-only (vision: false); "
            "%s, and each problem's run records it",
            ", ".join(blind) if method == "maps" else f"the {method} requests",
            how,
        )


def selection_record(whole: Sequence[EvalItem]) -> SelectionRecord:
    """The selection a run's problems (a shard's share) were taken from, as its manifest records it."""
    return SelectionRecord(ids=[str(item.pid) for item in whole],
                           scoring={str(item.pid): scoring_hash(item.gold, item.record) for item in whole},
                           shown={str(item.pid): shown_hash(item) for item in whole})


def _record_replicas(eval_dir: Path, manifest: Manifest, served: dict[str, dict[str, int]]) -> Manifest:
    """The manifest with this invocation's requests per replica added (endpoints with replicas
    only), written."""
    if not served:
        return manifest
    manifest = manifest.model_copy(update={"replicas_served": added_counts(manifest.replicas_served, served)})
    write_manifest(eval_dir, manifest)
    return manifest


def _served_models(rows: Iterable[ResultRow]) -> dict[str, list[str]]:
    """Per role, the model names the service reported where they differ from the one sent."""
    served: dict[str, set[str]] = {}
    for row in rows:
        for role, sent in row.models.items():
            if sent.served_model:
                served.setdefault(role, set()).add(sent.served_model)
    return {role: sorted(names) for role, names in sorted(served.items())}


__all__ = ["EvalOutcome", "EvalRun", "Shard", "load_items", "select_items"]
