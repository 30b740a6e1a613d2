"""results.json: an eval's figures in the layout lm-evaluation-harness and lmms-eval write, beside
summary.json, so the tools and habits of their users read a MAPS run as they read theirs.

Which fields follow which tool (docs/benchmarks.md: results.json has the table):

- `results`, `groups`, `group_subtasks`, `configs`, `versions`, `n-shot`, `higher_is_better`,
  `n-samples`, `config`, `git_hash`, `date`: lm-evaluation-harness's `EvalResults` keys, which
  lmms-eval writes too. A task's entry carries `name`, `alias`, `sample_len` and the metrics as
  `"<metric>,<filter>"`: `acc,none` (a fraction, as their `acc`) and `acc_stderr,none` (their
  standard error: "N/A" below two problems). The benchmark is a group whose subtasks are its
  subsets (`<benchmark>_<subset>`); the group's accuracy pools the subsets, as the paper's.
- `maps_autogen_version`: as lmms-eval's `lmms_eval_version` (and lm-eval's `lm_eval_version`).
- Ours: `acc_ci95_lower,none` and `acc_ci95_upper,none` (the 95% Wilson interval, a fraction),
  `counts` (problems run, scored, correct and failed: the accuracy is correct / scored, a failed
  problem has no verdict and is counted apart), `interval` (how the interval and the standard
  error are computed), `environment` (the Python and package versions the manifest recorded) and
  `sample_logs` (where the per-sample logs are: results.jsonl's rows and each problem's folder).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from maps_autogen.eval._intervals import standard_error, wilson_interval
from maps_autogen.records import MANIFEST_FILE, RESULTS_FILE, SUMMARY_FILE, Manifest, ModelRecord, Summary, write_record

HARNESS_FILE = "results.json"
METRIC = "acc"
FILTER = "none"  # lm-evaluation-harness's name for "no filter applied to the responses"


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class TaskMetrics(_Part):
    """One task's (or subset's) entry under `results` and `groups`."""

    name: str
    alias: str
    sample_len: int  # the problems the accuracy counts (scored)
    acc: float | None = Field(alias=f"{METRIC},{FILTER}")
    acc_stderr: float | Literal["N/A"] = Field(alias=f"{METRIC}_stderr,{FILTER}")
    acc_ci95_lower: float | None = Field(alias=f"{METRIC}_ci95_lower,{FILTER}")
    acc_ci95_upper: float | None = Field(alias=f"{METRIC}_ci95_upper,{FILTER}")


class SampleCount(_Part):
    """lm-evaluation-harness's `n-samples`: the problems in the data set (None when the run did
    not see them all) and those the run took."""

    original: int | None
    effective: int


class TaskCounts(_Part):
    """Problems run, scored (a verdict was reached), correct, and failed (no verdict)."""

    n: int
    scored: int
    correct: int
    failed: int


class SampleLogs(_Part):
    """Where a task's per-sample logs are, relative to the eval folder."""

    rows: str  # one JSON line per problem: response, extraction, prediction, correct, models sent...
    transcripts: str  # each problem's folder: run.json and the whole chat
    summary: str
    manifest: str


class IntervalNote(_Part):
    """How `acc_stderr` and the interval are computed."""

    method: str
    confidence: float
    stderr: str


#: What results.json says of its interval and standard error (eval/_intervals.py).
INTERVAL = IntervalNote(method="wilson", confidence=0.95,
                        stderr="sample standard deviation of the 0/1 outcomes / sqrt(n), as lm-evaluation-harness "
                               "and Inspect compute it")


class HarnessResults(_Part):
    """results.json."""

    results: dict[str, TaskMetrics]
    groups: dict[str, TaskMetrics]
    group_subtasks: dict[str, list[str]]
    configs: dict[str, dict[str, Any]]
    versions: dict[str, str]
    n_shot: dict[str, int] = Field(alias="n-shot")
    higher_is_better: dict[str, dict[str, bool]]
    n_samples: dict[str, SampleCount] = Field(alias="n-samples")
    config: dict[str, Any]
    git_hash: str | None
    date: float | None
    maps_autogen_version: str | None
    environment: dict[str, str]
    counts: dict[str, TaskCounts]
    interval: IntervalNote
    sample_logs: dict[str, SampleLogs]
    # results_<date>.json's (eval/_lm_eval_files.py): the model's identity and per-task hashes, as lm-eval writes them
    model_source: str | None = None
    model_name: str | None = None
    model_name_sanitized: str | None = None
    task_hashes: dict[str, str] = Field(default_factory=dict)


def task_metrics(name: str, alias: str, correct: int, scored: int) -> TaskMetrics:
    """A task's metrics from its counts: accuracy, standard error and Wilson interval, as fractions."""
    error = standard_error(correct, scored)
    interval = wilson_interval(correct, scored)
    return TaskMetrics(
        name=name, alias=alias, sample_len=scored, acc=round(correct / scored, 6) if scored else None,
        acc_stderr="N/A" if error is None else round(error, 6),
        acc_ci95_lower=None if interval is None else round(interval[0], 6),
        acc_ci95_upper=None if interval is None else round(interval[1], 6),
    )


def _timestamp(stamp: str | None) -> float | None:
    try:
        return datetime.fromisoformat(stamp).timestamp() if stamp else None
    except ValueError:
        return None


def _original(manifest: Manifest, subset: str, effective: int) -> int | None:
    """How many problems the subset has in the data set, when the run knows: its sample's
    population, or every problem when nothing narrowed the selection."""
    sample = manifest.sample_of(subset)
    if sample is not None:
        return sample.of
    return effective if manifest.limit is None and manifest.shard is None else None


def _model_config(manifest: Manifest) -> dict[str, Any]:
    """lm-evaluation-harness's `config`, filled with what applies to a team of model calls."""
    models = manifest.models
    names = sorted({record.model for record in models.values()})
    return {
        "model": ", ".join(names),
        "model_args": {step: {"endpoint": record.endpoint, "kind": record.kind, "model": record.model,
                              "base_url": record.base_url, "served_models": manifest.served_by(step)}
                       for step, record in models.items()},
        # what each step's requests carry (the manifest is written before the first call)
        "gen_kwargs": {step: _carried(record) for step, record in models.items()},
        "method": manifest.method,
        "without": list(manifest.without),
        "limit": manifest.limit,
        "sample": manifest.sample,
        "random_seed": manifest.seed,  # the seed of the problems' draw (--sample-seed)
        "shard": manifest.shard,
        "bootstrap_iters": 0,  # the interval is Wilson's closed form, no resampling
    }


def _carried(model: ModelRecord) -> dict[str, Any]:
    """What a step's requests carried (sent, or for a step that sent nothing its request's settings)."""
    settings = model.sent or model.request_settings
    return settings.model_dump(mode="json", exclude_unset=True) if settings is not None else {}


def harness_results(manifest: Manifest, summary: Summary) -> HarnessResults:
    """results.json of an eval folder from its manifest and summary."""
    benchmark = manifest.benchmark
    subsets = {f"{benchmark}_{name}": (name, counts) for name, counts in summary.subsets.items()}
    average = summary.average
    group = task_metrics(benchmark, benchmark, average.correct, average.scored)
    results = {benchmark: group, **{task: task_metrics(task, name, counts.correct, counts.scored)
                                    for task, (name, counts) in subsets.items()}}
    selected = {name: sum(1 for pid in manifest.ids if manifest.subset_of(pid) == name)
                for name in summary.subsets}
    n_samples = {task: SampleCount(original=_original(manifest, name, selected[name]), effective=selected[name])
                 for task, (name, _) in subsets.items()}
    originals = [count.original for count in n_samples.values()]
    n_samples[benchmark] = SampleCount(original=None if None in originals else sum(c or 0 for c in originals),
                                       effective=len(manifest.ids))
    counts = {benchmark: TaskCounts(n=average.n, scored=average.scored, correct=average.correct, failed=summary.failed),
              **{task: TaskCounts(n=c.n, scored=c.scored, correct=c.correct, failed=c.failed)
                 for task, (_, c) in subsets.items()}}
    team = manifest.team
    config = {"task": benchmark, "dataset_path": manifest.hub_id, "data": manifest.data, "subsets": manifest.subsets,
              "output_type": "generate_until", "scoring_rules": manifest.rules, "method": manifest.method,
              "without": list(manifest.without), "team": team.steps if team is not None else [],
              "metric_list": [{"metric": METRIC, "aggregation": "mean", "higher_is_better": True}]}
    # lm-eval's W&B logger reads each subtask's config (its group, output type and metrics)
    subtask_configs = {task: {"task": task, "group": benchmark, "task_alias": name, "dataset_path": manifest.hub_id,
                              "dataset_name": name, "output_type": "generate_until", "scoring_rules": manifest.rules,
                              "metric_list": config["metric_list"]}
                       for task, (name, _) in subsets.items()}
    logs = SampleLogs(rows=RESULTS_FILE, transcripts="problems/<pid>/", summary=SUMMARY_FILE, manifest=MANIFEST_FILE)
    return HarnessResults(
        results=results, groups={benchmark: group}, group_subtasks={benchmark: list(subsets)},
        configs={benchmark: config, **subtask_configs}, versions={task: manifest.rules for task in results},
        n_shot=dict.fromkeys(results, 0), higher_is_better={task: {METRIC: True} for task in results},
        n_samples=n_samples, config=_model_config(manifest), git_hash=manifest.git_commit,
        date=_timestamp(manifest.created_at), maps_autogen_version=manifest.version_of("maps-autogen"),
        environment=dict(manifest.versions), counts=counts, interval=INTERVAL,
        sample_logs={benchmark: logs},
    )


def write_harness_results(eval_dir: Path, manifest: Manifest, summary: Summary) -> HarnessResults:
    """Write an eval folder's results.json (the one atomic writer, secrets masked); what it holds."""
    results = harness_results(manifest, summary)
    write_record(eval_dir / HARNESS_FILE, results)
    return results


__all__ = ["HARNESS_FILE", "HarnessResults", "harness_results", "task_metrics", "write_harness_results"]
