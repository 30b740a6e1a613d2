"""`maps eval --track wandb|mlflow` (the API's `track=`): a finished (or stopped) eval logged to an
experiment tracker, read from the files the eval wrote: the run's settings as its config, accuracy per
subset with its 95% Wilson interval, the rollbacks of each problem (a series, one step per problem),
the Critic's score distribution (how many times each dimension got each score, the dimensions as the
records name them), tokens, the cached share of the prompt tokens and the cost (when every call's price
is known) as metrics; results.json, lm-eval's files, summary.json, the manifest, results.jsonl and
`maps report`'s report as artifacts.

The trackers' own settings apply: W&B's `WANDB_PROJECT` (default maps-autogen), `WANDB_MODE=offline`,
`WANDB_DIR`; MLflow's `MLFLOW_TRACKING_URI` (a server, or a file store `file:/path/mlruns`) and
`MLFLOW_EXPERIMENT_NAME` (default maps-autogen). The clients are the `track` extra; a missing one is one
line naming it, before the eval starts. What is logged passes through the redactor (a key or masked
header never reaches the tracker), and W&B is told to capture no console, code or git state."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maps_autogen._util import UsageError, redact
from maps_autogen.eval import HARNESS_FILE, TRACKERS, harness_results, lm_eval_files
from maps_autogen.records import (
    MANIFEST_FILE,
    RESULTS_FILE,
    SUMMARY_FILE,
    ResultRow,
    iter_result_rows,
    read_manifest,
    read_summary,
)

#: Each tracker's client: the module imported and the package installed (by the `track` extra).
CLIENTS = {"wandb": ("wandb", "wandb"), "mlflow": ("mlflow", "mlflow-skinny")}
EXTRA = "maps-autogen[track]"
PROJECT = "maps-autogen"
_METRIC_UNSAFE = re.compile(r"[^\w./ -]+")  # what a tracker takes in a metric's name (MLflow's rule)


def require_tracker(kind: str | None) -> None:
    """Refuse (one line, before the eval starts) a tracker whose client is not installed."""
    if kind is None:
        return
    if kind not in CLIENTS:
        raise UsageError(f"--track {kind}: no such tracker", fix=f"use one of: {', '.join(TRACKERS)}")
    module, package = CLIENTS[kind]
    if importlib.util.find_spec(module) is None:
        raise UsageError(f"--track {kind} needs the {package} package, which is not installed",
                         fix=f"pip install '{EXTRA}' (the track extra: wandb and mlflow-skinny), or drop --track")


def _key(*parts: Any) -> str:
    """A metric's name from its parts (subset and dimension names as the records give them)."""
    return "/".join(_METRIC_UNSAFE.sub("_", str(part))[:120] for part in parts)


@dataclass
class Tracked:
    """What one eval logs: config, metrics, per-problem series and the files to attach."""

    name: str
    config: dict[str, Any]
    metrics: dict[str, float]
    rollbacks: list[float] = field(default_factory=list)  # per problem, in the run's order
    artifacts: list[Path] = field(default_factory=list)


def _masked(data: Any) -> Any:
    """`data` as JSON would hold it, every secret the redactor knows masked."""
    return json.loads(redact(json.dumps(data, default=str, ensure_ascii=False)))


def _score_counts(rows: Iterable[ResultRow]) -> dict[str, float]:
    """How many reviews gave each dimension each score, over every review of every problem."""
    counts: Counter[tuple[str, str]] = Counter()
    for row in rows:
        for review in row.critic_scores:
            for dimension, score in (review or {}).items():
                shown = int(score) if float(score).is_integer() else score
                counts[(dimension, str(shown))] += 1
    return {_key("critic_scores", dimension, score): float(n) for (dimension, score), n in sorted(counts.items())}


def tracked(eval_dir: Path) -> Tracked:
    """What an eval folder's files say, as a tracker logs it."""
    manifest, summary = read_manifest(eval_dir), read_summary(eval_dir)
    results = harness_results(manifest, summary)
    rows = [row for _, row in iter_result_rows(eval_dir / RESULTS_FILE)] if (eval_dir / RESULTS_FILE).exists() else []
    config = {"eval_id": manifest.eval_id, "benchmark": manifest.benchmark, **results.config,
              "task": results.configs.get(manifest.benchmark, {}), "versions": dict(manifest.versions),
              "complete": summary.complete, "stopped_by": summary.stopped_by,
              "tokens_estimated": summary.usage.tokens_estimated}
    metrics: dict[str, float] = {}
    for task, entry in results.results.items():
        name = "all" if task == manifest.benchmark else entry.alias
        for label, value in (("acc", entry.acc), ("acc_ci95_lower", entry.acc_ci95_lower),
                             ("acc_ci95_upper", entry.acc_ci95_upper)):
            if value is not None:
                metrics[_key(label, name)] = value
        counts = results.counts[task]
        metrics.update({_key("scored", name): counts.scored, _key("correct", name): counts.correct,
                        _key("failed", name): counts.failed})
    usage = summary.usage
    metrics.update({"tokens/prompt": usage.prompt_tokens, "tokens/completion": usage.completion_tokens,
                    "tokens/cached": usage.cached_tokens, "calls": usage.calls, "cached_calls": usage.cached_calls,
                    "seconds": summary.seconds})
    if usage.prompt_tokens:
        metrics["tokens/cached_share"] = round(usage.cached_tokens / usage.prompt_tokens, 6)
    if usage.spent() is not None:  # never a figure for a cost that is not known
        metrics["cost_usd"] = float(usage.spent() or 0.0)
    rollbacks = [float(len(row.rollbacks)) for row in rows]
    if rollbacks:
        metrics["rollbacks/mean"] = round(sum(rollbacks) / len(rollbacks), 6)
        metrics["rollbacks/max"] = max(rollbacks)
    metrics.update(_score_counts(rows))
    files = [eval_dir / name for name in (HARNESS_FILE, SUMMARY_FILE, MANIFEST_FILE, RESULTS_FILE)]
    ours = [path for path in files if path.is_file() and not path.is_symlink()]
    return Tracked(name=manifest.eval_id or eval_dir.name, config=_masked(config),
                   metrics={key: float(value) for key, value in metrics.items()}, rollbacks=rollbacks,
                   artifacts=[*ours, *lm_eval_files(eval_dir, results)])


def _report(eval_dir: Path, out: Path) -> list[Path]:
    """`maps report`'s report of this eval (tables, figures, report.md), written into `out`."""
    from maps_autogen.report._report import write_report

    write_report([eval_dir], out)
    return sorted(path for path in out.iterdir() if path.is_file())


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested settings as dotted names and text values (MLflow's params)."""
    flat: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(_flat(value, f"{name}."))
        else:
            flat[_key(name).replace("/", ".")] = json.dumps(value, default=str) if not isinstance(value, str) else value
    return flat


def _log_wandb(run: Tracked, report: list[Path]) -> str:
    import wandb

    started_here = wandb.run is None
    settings = wandb.Settings(console="off", save_code=False, disable_git=True, silent=True)
    live = wandb.init(project=os.environ.get("WANDB_PROJECT") or PROJECT, name=run.name, job_type="eval",
                      config=run.config, settings=settings, reinit="create_new")
    try:
        for step, count in enumerate(run.rollbacks):
            live.log({"problem/rollbacks": count}, step=step)
        live.summary.update(run.metrics)
        results = wandb.Artifact(_key(f"{run.name}-results").replace("/", "-"), type="eval_results")
        for path in run.artifacts:
            lm_eval = path.name.startswith(("results_", "samples_"))
            results.add_file(str(path), name=f"{path.parent.name}/{path.name}" if lm_eval else path.name)
        live.log_artifact(results)
        if report:
            pages = wandb.Artifact(_key(f"{run.name}-report").replace("/", "-"), type="report")
            for path in report:
                pages.add_file(str(path), name=path.name)
            live.log_artifact(pages)
        offline = live.settings.mode == "offline"
        note = f"logged to W&B run {live.id} " + (f"(offline, in {Path(live.dir).parent}: wandb sync uploads it)"
                                                   if offline else f"({live.url})")
    finally:
        live.finish()
        if started_here:
            wandb.teardown()
    return note


def _log_mlflow(run: Tracked, report: list[Path]) -> str:
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    name = os.environ.get("MLFLOW_EXPERIMENT_NAME") or PROJECT
    experiment = client.get_experiment_by_name(name)
    experiment_id = experiment.experiment_id if experiment is not None else client.create_experiment(name)
    created = client.create_run(experiment_id, run_name=run.name, tags={"maps.eval_id": run.name})
    run_id = created.info.run_id
    status = "FAILED"
    try:
        params = [Param(key, value[:6000]) for key, value in _flat(run.config).items()]
        stamp = created.info.start_time
        metrics = [Metric(key, value, stamp, 0) for key, value in run.metrics.items()]
        metrics += [Metric("problem/rollbacks", count, stamp, step) for step, count in enumerate(run.rollbacks)]
        for start in range(0, max(len(params), len(metrics)), 100):  # MLflow's batch limits
            client.log_batch(run_id, metrics=metrics[start:start + 100], params=params[start:start + 100])
        with tempfile.TemporaryDirectory() as folder:
            config = Path(folder) / "config.json"
            config.write_text(json.dumps(run.config, indent=2, ensure_ascii=False))
            client.log_artifact(run_id, str(config))
        for path in run.artifacts:
            lm_eval = path.name.startswith(("results_", "samples_"))
            folder = f"results/{path.parent.name}" if lm_eval else "results"
            client.log_artifact(run_id, str(path), artifact_path=folder)
        for path in report:
            client.log_artifact(run_id, str(path), artifact_path="report")
        status = "FINISHED"
    finally:
        client.set_terminated(run_id, status=status)
    return f"logged to MLflow run {run_id} (experiment {name}, {client.tracking_uri})"


def _client_errors(kind: str) -> tuple[type[Exception], ...]:
    """What the tracker's client raises when it cannot log (a bad URI, a refused store, no network)."""
    if kind == "wandb":
        import wandb.errors

        return (wandb.errors.Error, OSError)
    from mlflow.exceptions import MlflowException

    return (MlflowException, OSError)


FIXES = {"wandb": "check WANDB_PROJECT, WANDB_MODE (offline logs without a server) and your W&B login",
         "mlflow": "check MLFLOW_TRACKING_URI (a file store needs MLFLOW_ALLOW_FILE_STORE=true with current MLflow) "
                   "and MLFLOW_EXPERIMENT_NAME"}


def track_eval(kind: str, eval_dir: Path) -> str:
    """Log an eval folder to the tracker `kind`; the line that says where it went. A client that
    cannot log is one line naming what it said (the eval itself stays saved)."""
    require_tracker(kind)
    run = tracked(eval_dir)
    try:
        with tempfile.TemporaryDirectory(prefix="maps-report-") as folder:
            report = _report(eval_dir, Path(folder))
            return _log_wandb(run, report) if kind == "wandb" else _log_mlflow(run, report)
    except _client_errors(kind) as error:
        said = redact(" ".join(str(error).split()))[:300]
        raise UsageError(f"--track {kind}: the tracker did not take the run: {said}",
                         fix=f"{FIXES[kind]}; the eval itself is saved in {eval_dir}") from None


__all__ = ["CLIENTS", "TRACKERS", "Tracked", "require_tracker", "track_eval", "tracked"]
