"""The eval runner: selection, bounded concurrency, resume, cost control, shards and merges.

Every finished problem is appended to results.jsonl at once, so a killed run loses at most the
problems in flight; `--resume` skips finished problems and retries failed ones.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import platform
import random
import re
import shutil
import subprocess
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from maps_autogen.cache import ResponseCache
from maps_autogen.config import LoadedConfig
from maps_autogen.endpoints import Resolution, resolve_models
from maps_autogen.errors import DataError, UsageError
from maps_autogen.eval.baselines import METHODS as BASELINE_METHODS
from maps_autogen.eval.baselines import load_baseline_prompts, run_baseline
from maps_autogen.eval.paths import outside_paths_allowed
from maps_autogen.eval.results import MANIFEST_FILE, RESULTS_FILE, ResultsLog, summarize, table1, write_summary
from maps_autogen.eval.tasks import EvalItem, Subset, Task, find_subsets, get_task, load_answer_formats, spread_limit
from maps_autogen.images import ImageLimits, image_limits
from maps_autogen.scoring import score_record
from maps_autogen.solve import Team, assemble_team, solve_problem
from maps_autogen.transcript import SCHEMA_VERSION, new_run_id, utc_now, write_json_atomic

logger = logging.getLogger(__name__)

METHODS = ("maps", *BASELINE_METHODS)
PROBLEMS_DIR = "problems"


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
    method: str = "maps"
    without: frozenset[str] = frozenset()  # step names of the team
    concurrency: int = 8
    rules: str = "current"
    cache: bool = True
    max_cost: float | None = None
    shard: Shard | None = None
    runs_dir: Path = Path("runs")
    resume: Path | None = None
    allow_outside_paths: bool = False  # data set rows may refer to files outside the data folder


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


def safe_name(pid: str) -> str:
    """A folder name for a pid; a short hash keeps sanitised names unique."""
    clean = re.sub(r"[^A-Za-z0-9._-]", "_", pid)[:80]
    return clean if clean == pid else f"{clean}-{hashlib.sha1(pid.encode()).hexdigest()[:8]}"


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
    """Every problem of the chosen subsets, in data set order."""
    formats = load_answer_formats(loaded.resolve(loaded.config.answer_formats))
    max_side = loaded.config.images.max_side
    with image_limits(ImageLimits.of(loaded.config.limits)):
        return [task.to_item(row, prompts=formats, max_side=max_side) for row in task.rows(tuple(subsets), data)]


@dataclass
class EvalOutcome:
    eval_dir: Path
    summary: dict[str, Any]
    table: str
    stopped_for_cost: bool
    ran: int


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
        if self.enabled:
            acc = "-" if accuracy is None else f"{accuracy:.1f}%"
            spent = "?" if cost is None else f"${cost:.4f}"
            self._progress.update(self._task, advance=1, description=f"acc {acc} · cost {spent}")

    def close(self) -> None:
        if self.enabled:
            self._progress.stop()


def _check_prices(resolution: Resolution) -> None:
    """--max-cost can only be enforced when every paid model's price is known."""
    unpriced = sorted({m.model for m in resolution.models.values() if m.price is None and m.kind != "local"})
    if unpriced:
        raise UsageError(f"--max-cost needs the price of {', '.join(unpriced)}", fix="add it under prices: in agents.yaml")


class EvalRun:
    """One `maps eval` invocation over one eval folder."""

    def __init__(self, request: EvalRequest, loaded: LoadedConfig, *, progress: bool = True, env: dict[str, str] | None = None,
                 on_ready: Callable[[Path], None] | None = None):
        if request.method not in METHODS:
            raise UsageError(f"unknown method '{request.method}'", fix=f"use one of: {', '.join(METHODS)}")
        if request.concurrency < 1:
            raise UsageError("--concurrency must be at least 1", fix="e.g. --concurrency 8")
        self.request = request
        self.loaded = loaded
        self.task = get_task(request.benchmark)
        self.progress = progress
        self.env = env
        self.on_ready = on_ready  # called with the eval folder once its manifest is written (maps eval --view)
        self._lock = threading.Lock()

    # ----- setting up -------------------------------------------------------------------
    def _eval_dir_and_manifest(self) -> tuple[Path, dict[str, Any] | None]:
        if self.request.resume is None:
            eval_id = new_run_id(f"eval-{self.task.name}")
            return self.request.runs_dir / eval_id, None
        eval_dir = self.request.resume
        manifest_path = eval_dir / MANIFEST_FILE
        if not manifest_path.is_file():
            raise DataError(f"{eval_dir} is not an eval run (no {MANIFEST_FILE})", fix="pass the folder maps eval printed")
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if manifest.get("benchmark") != self.task.name:
            raise UsageError(f"{eval_dir} is a {manifest.get('benchmark')} run, not {self.task.name}", fix=f"run maps eval {manifest.get('benchmark')} --resume {eval_dir}")
        return eval_dir, manifest

    def run(self) -> EvalOutcome:
        request = self.request
        eval_dir, manifest = self._eval_dir_and_manifest()
        if manifest is not None:
            # The manifest fixes what the run is; the command line only sets how it runs.
            request = replace(request, subsets=tuple(manifest["subsets"]), method=manifest["method"],
                              without=frozenset(manifest["without"]), rules=manifest["rules"],
                              data=request.data or (Path(manifest["data"]) if manifest.get("data") else None))
            self.request = request
        # Resolved once, before anything is written: a missing key or price fails the run cleanly.
        resolution = resolve_models(self.loaded, self.env if self.env is not None else os.environ)
        if request.max_cost is not None:
            _check_prices(resolution)
        subsets = find_subsets(self.task, request.subsets)
        with outside_paths_allowed(request.allow_outside_paths):
            items = load_items(self.task, subsets, request.data, self.loaded)
        if manifest is None:
            selection = select_items(items, subsets, sample=request.sample, seed=request.seed, limit=request.limit, shard=request.shard)
            manifest = self._new_manifest(eval_dir, subsets, selection, resolution)
        else:
            wanted = set(manifest["ids"])
            selection = Selection([item for item in items if item.pid in wanted], manifest.get("sampled", {}))
            missing = wanted - {item.pid for item in selection.items}
            if missing:
                raise DataError(f"the data no longer has {len(missing)} problem(s) of this run, e.g. {sorted(missing)[0]}", fix="resume with the same --data")
            manifest.setdefault("resumed_at", []).append(utc_now())
        eval_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(eval_dir / MANIFEST_FILE, manifest)
        if self.on_ready is not None:
            self.on_ready(eval_dir)
        log = ResultsLog(eval_dir / RESULTS_FILE)
        done = log.finished_ids()
        todo = [item for item in selection.items if item.pid not in done]
        cache = ResponseCache(request.runs_dir / ".cache" / "responses.sqlite") if request.cache else None
        team = assemble_team(self.loaded, resolution=resolution, cache=cache, max_connections=max(64, request.concurrency))
        try:
            stopped_for_cost = self._run_items(todo, team, eval_dir, log)
        finally:
            if cache is not None:
                cache.close()
            _record_replicas(eval_dir, manifest, team.replicas_served())
        records = log.compact(manifest["ids"])
        summary = summarize(records, self.task, [s.name for s in subsets])
        summary.update({"eval_id": manifest["eval_id"], "method": manifest["method"], "without": manifest["without"],
                        "complete": len([r for r in records if r.get("status") == "ok"]) == len(manifest["ids"]),
                        "stopped_for_cost": stopped_for_cost})
        write_summary(eval_dir, summary)
        return EvalOutcome(eval_dir, summary, table1(summary, self.task, self.label(manifest)), stopped_for_cost, len(todo))

    @staticmethod
    def label(manifest: dict[str, Any]) -> str:
        models = sorted({m["model"] for m in manifest["models"].values()})
        method = manifest["method"] if not manifest["without"] else f"maps w/o {'+'.join(manifest['without'])}"
        return f"{method} ({', '.join(models)})"

    def _new_manifest(self, eval_dir: Path, subsets: Sequence[Subset], selection: Selection, resolution: Resolution) -> dict[str, Any]:
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
            "method": request.method,
            "without": sorted(request.without),
            "team": {"source": str(self.loaded.team.source), "steps": list(self.loaded.team.config.names)},
            "rules": request.rules,
            "allow_outside_paths": request.allow_outside_paths,
            "config_path": str(self.loaded.path),
            "config": self.loaded.config.model_dump(mode="json"),
            "models": {role: model.describe() for role, model in resolution.models.items()},
            "versions": _versions(),
            "git_commit": _git_commit(),
        }

    # ----- running ----------------------------------------------------------------------
    def _run_items(self, todo: list[EvalItem], team: Team, eval_dir: Path, log: ResultsLog) -> bool:
        request = self.request
        progress = _Progress(len(todo), self.progress)
        spent = 0.0
        scored = correct = 0
        stopped_for_cost = False
        pending = iter(todo)
        in_flight: dict[Future[dict[str, Any]], EvalItem] = {}
        baseline_prompts = load_baseline_prompts(self.loaded.resolve(self.loaded.config.baseline_prompts)) if request.method != "maps" else None
        formats = load_answer_formats(self.loaded.resolve(self.loaded.config.answer_formats)) if request.method != "maps" else None
        executor = ThreadPoolExecutor(max_workers=request.concurrency, thread_name_prefix="maps-eval")
        try:
            def submit_next() -> bool:
                item = next(pending, None)
                if item is None:
                    return False
                in_flight[executor.submit(self._solve_one, item, team, eval_dir, baseline_prompts, formats)] = item
                return True

            for _ in range(request.concurrency):
                if not submit_next():
                    break
            while in_flight:
                finished, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
                for future in finished:
                    item = in_flight.pop(future)
                    try:
                        record = future.result()
                    except Exception as error:  # a bug in one problem must not stop the run
                        logger.exception("problem %s failed", item.pid)
                        record = self._failed_record(item, f"{error.__class__.__name__}: {error}", 0.0)
                    log.append(record)
                    spent += (record.get("usage") or {}).get("cost") or 0.0
                    if record["status"] == "ok":
                        scored += 1
                        correct += bool(record["correct"])
                    progress.advance(100.0 * correct / scored if scored else None, spent)
                    if request.max_cost is not None and spent >= request.max_cost:
                        stopped_for_cost = True
                    if not stopped_for_cost:
                        submit_next()
        except KeyboardInterrupt:
            executor.shutdown(wait=False, cancel_futures=True)
            progress.close()
            raise
        executor.shutdown(wait=True)
        progress.close()
        return stopped_for_cost

    def _failed_record(self, item: EvalItem, error: str, seconds: float) -> dict[str, Any]:
        return {"pid": item.pid, "subset": item.subset, "status": "failed", "gold": item.gold, "response": None,
                "extraction": None, "prediction": None, "correct": None, "stop_reason": "error", "rollbacks": [],
                "critic_scores": [], "feedback_step": None, "usage": {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0},
                "seconds": round(seconds, 3), "error": error, "metadata": item.metadata, "method": self.request.method,
                "run_dir": f"{PROBLEMS_DIR}/{safe_name(item.pid)}"}

    def _solve_one(self, item: EvalItem, team: Team, eval_dir: Path, baseline_prompts: Any, formats: Any) -> dict[str, Any]:
        request = self.request
        name = safe_name(item.pid)
        problem_dir = eval_dir / PROBLEMS_DIR / name
        if problem_dir.exists():
            shutil.rmtree(problem_dir)  # a problem that was in flight when the run was killed
        started = time.monotonic()
        extra = {"pid": item.pid, "subset": item.subset, "gold": item.gold, "benchmark": self.task.name, "method": request.method}
        base = {"pid": item.pid, "subset": item.subset, "gold": item.gold, "metadata": item.metadata,
                "method": request.method, "run_dir": f"{PROBLEMS_DIR}/{name}"}
        scored: dict[str, Any] = {}
        if request.method == "maps":

            def evaluate(outcome: Any) -> dict[str, Any]:
                # Scored before run.json's final write, so the verdict goes in with it.
                if outcome.stop_reason == "error":
                    return {}
                response = self.task.render_response(outcome.final_answer, item) if outcome.solver_answer else ""
                scored["verdict"] = score_record(self.task.name, {**item.record, "response": response}, request.rules)
                return _evaluation_fields(response, scored["verdict"], item.gold)

            result = solve_problem(item.problem, team, runs_dir=eval_dir / PROBLEMS_DIR, run_id=name,
                                   without=request.without, extra=extra, evaluate=evaluate)
            outcome = result.outcome
            error = outcome.error if outcome.stop_reason == "error" else None
            response = self.task.render_response(outcome.final_answer, item) if outcome.solver_answer else ""
            chat = {
                "stop_reason": outcome.stop_reason,
                "rollbacks": [r.step for r in outcome.rollbacks],
                "critic_scores": [v.scores if v else None for v in outcome.verdicts],
                "feedback_step": outcome.rollbacks[0].step if outcome.rollbacks else None,
                "final_answer": outcome.final_answer,
                "usage": outcome.usage(),
                "usage_by_role": outcome.usage_by_role(),
            }
            run_json = None  # already holds the verdict
        else:
            ending = formats.render(self.task.name, "baseline_ending")
            baseline = run_baseline(item.problem, team, request.method, prompt=baseline_prompts[request.method],
                                    ending=ending, run_dir=problem_dir, extra=extra)
            error = baseline.error
            response = baseline.response
            chat = {"stop_reason": "error" if error else None, "rollbacks": [], "critic_scores": [], "feedback_step": None,
                    "final_answer": response, "usage": baseline.usage(), "usage_by_role": {request.method: baseline.usage()}}
            run_json = problem_dir / "run.json"
        seconds = time.monotonic() - started
        if error:
            return {**self._failed_record(item, error, seconds), **chat, **base, "status": "failed", "error": error}
        verdict = scored.get("verdict") or score_record(self.task.name, {**item.record, "response": response}, request.rules)
        record = {**base, "status": "ok", "response": response, "extraction": verdict.extraction,
                  "prediction": verdict.prediction, "correct": bool(verdict.correct), **chat,
                  "seconds": round(seconds, 3), "error": None}
        if run_json is not None:
            self._annotate_run(run_json, _evaluation_fields(response, verdict, item.gold))
        return record

    @staticmethod
    def _annotate_run(run_json: Path, fields: dict[str, Any]) -> None:
        """Put the verdict into a baseline's run.json, for the viewer."""
        try:
            run = json.loads(run_json.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return
        write_json_atomic(run_json, {**run, **fields})


def _record_replicas(eval_dir: Path, manifest: dict[str, Any], served: dict[str, dict[str, int]]) -> None:
    """Add this invocation's requests per replica to the manifest (endpoints with replicas only)."""
    if not served:
        return
    totals = manifest.setdefault("replicas_served", {})
    for endpoint, counts in served.items():
        for url, count in counts.items():
            totals.setdefault(endpoint, {})[url] = totals.get(endpoint, {}).get(url, 0) + count
    write_json_atomic(eval_dir / MANIFEST_FILE, manifest)


def _evaluation_fields(response: str, verdict: Any, gold: Any) -> dict[str, Any]:
    """What a problem's run.json records of its scoring, for the viewer."""
    evaluation = {"response": response, "extraction": verdict.extraction, "prediction": verdict.prediction,
                  "correct": bool(verdict.correct), "gold": gold}
    return {"evaluation": evaluation, "correct": evaluation["correct"]}


def merge_runs(run_dirs: Sequence[Path], out: Path) -> Path:
    """Combine shard runs (same benchmark, method and models) into one eval folder."""
    manifests = []
    for run_dir in run_dirs:
        path = run_dir / MANIFEST_FILE
        if not path.is_file():
            raise DataError(f"{run_dir} is not an eval run (no {MANIFEST_FILE})", fix="pass folders written by maps eval")
        manifests.append(json.loads(path.read_text(encoding="utf-8")))
    first = manifests[0]
    for run_dir, manifest in zip(run_dirs[1:], manifests[1:]):
        for key in ("benchmark", "method", "without", "rules", "subsets", "models"):
            if manifest.get(key) != first.get(key):
                raise UsageError(f"{run_dir} differs from {run_dirs[0]} in '{key}'", fix="merge only shards of one evaluation")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} already exists and is not empty", fix="choose another --out")
    task = get_task(first["benchmark"])
    ids = sorted({pid for manifest in manifests for pid in manifest["ids"]}, key=lambda pid: _original_position(manifests, pid))
    (out / PROBLEMS_DIR).mkdir(parents=True, exist_ok=True)
    log = ResultsLog(out / RESULTS_FILE)
    for run_dir in run_dirs:
        for record in ResultsLog(run_dir / RESULTS_FILE).read().values():
            log.append(record)
            source = run_dir / record["run_dir"]
            if source.is_dir():
                shutil.copytree(source, out / record["run_dir"], dirs_exist_ok=True)
    merged = {**first, "eval_id": out.name, "ids": ids, "shard": None, "created_at": utc_now(),
              "merged_from": [str(d) for d in run_dirs],
              "subset_of_id": {k: v for m in manifests for k, v in m.get("subset_of_id", {}).items()}}
    write_json_atomic(out / MANIFEST_FILE, merged)
    records = log.compact(ids)
    summary = summarize(records, task, first["subsets"])
    summary.update({"eval_id": out.name, "method": first["method"], "without": first["without"],
                    "complete": len([r for r in records if r.get("status") == "ok"]) == len(ids)})
    write_summary(out, summary)
    return out


def _original_position(manifests: Sequence[dict[str, Any]], pid: str) -> int:
    """Shards take every n-th problem of one ordered list; restore that order."""
    for manifest in manifests:
        if pid in manifest["ids"]:
            shard = manifest.get("shard")
            position = manifest["ids"].index(pid)
            if shard:
                index, count = (int(x) for x in shard.split("/"))
                return position * count + index - 1
            return position
    return 10**9


__all__ = ["EvalOutcome", "EvalRequest", "EvalRun", "Shard", "merge_runs", "select_items"]
