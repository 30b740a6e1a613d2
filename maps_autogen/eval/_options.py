"""`maps eval`'s options, declared once (settings/_options.py says what is made from them): what the
command line and `maps_autogen.evaluate` take, and the request the eval runner runs; and `maps
merge`'s."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maps_autogen._util import UsageError
from maps_autogen.benchmarks import NAMES
from maps_autogen.eval._selection import Shard
from maps_autogen.scoring import RULES
from maps_autogen.settings import Options, SettingsOptions, argument, option

BASELINES = ("direct", "cot")  # the paper's single-call baselines (eval/_baselines.py)
METHODS = ("maps", *BASELINES)
TRACKERS = ("wandb", "mlflow")  # --track (report/_tracking.py)
MAX_CONCURRENCY = 512  # problems in flight at once (--concurrency)
CONCURRENCY = 8  # problems in flight when --concurrency is not given (and not --batch)
MAX_WORKERS = 256  # worker processes (--workers)


@dataclass(frozen=True, kw_only=True)
class EvalOptions(SettingsOptions):
    """What `maps eval` (and `maps_autogen.evaluate`) is asked to run: the benchmark, which of its
    problems, how, and where; with the settings (`SettingsOptions`) it runs under."""

    benchmark: str = argument(f"The benchmark: {', '.join(NAMES)}.", kind="choice", choices=NAMES)
    subsets: tuple[str, ...] = option(
        (), "--subset", "A subset to run (repeatable; default: all). Paper column names work too.", kind="names",
        fixed_on_resume=True)
    data: Path | None = option(
        None, "--data", "A local copy: a hub download as it comes, a save_to_disk folder, parquet or JSONL "
        "(docs/benchmarks.md: Data layouts).", kind="path")
    limit: int | None = option(
        None, "--limit", "Run N problems spread evenly over the subsets (deterministic).", kind="whole", low=1,
        fixed_on_resume=True)
    sample: int | None = option(
        None, "--sample", "Sample N problems per subset (seeded).", kind="whole", low=1, fixed_on_resume=True)
    sample_seed: int = option(
        0, "--sample-seed", "Seed for --sample and the paper's sampled subsets (--seed is the models' sampling "
        "seed).", kind="whole", fixed_on_resume=True)
    method: str | None = option(  # None: maps for a new run, the manifest's on --resume
        None, "--method", "maps (default), or a single-call baseline.", kind="choice", choices=METHODS)
    without: frozenset[str] = option(
        frozenset(), "--without", "Ablate a step of the team (repeatable), e.g. scholar; docs/team.md.",
        kind="names", metavar="STEP", distinct=True)
    concurrency: int | None = option(  # None: CONCURRENCY, or with --batch every problem (eval/_batching.py)
        None, "--concurrency", f"Problems in flight at once (default {CONCURRENCY}; with --batch, every problem of "
        "the run).", kind="whole", low=1, high=MAX_CONCURRENCY)
    workers: int | None = option(
        None, "--workers", "Worker processes sharing the problems in flight (default: chosen from the cores and "
        "--concurrency; docs/benchmarks.md: Worker processes).", kind="whole", low=1, high=MAX_WORKERS)
    rules: str = option(
        "current", "--rules", "Official scoring rule version.", kind="choice", choices=RULES, fixed_on_resume=True)
    cache: bool = option(True, "--no-cache", "Do not reuse cached model replies.", kind="flag", negate=True,
                         dest="no_cache")
    batch: bool = option(
        False, "--batch", "Send every model call through the service's batch API at its batch prices (about half): "
        "the problems advance one call per round, each round minutes to hours; resumable (docs/batch.md).",
        kind="flag")
    max_cost: float | None = option(
        None, "--max-cost", "Stop cleanly once this many USD are spent (resume carries on).", kind="number", low=0,
        unit="USD", example="5")
    shard: Shard | None = option(
        None, "--shard", "Run shard i of n (1-based, e.g. 2/4); combine shards with maps merge.", kind="text",
        parse=Shard.parse, parsed=Shard, form="i/n", example="1/4", fixed_on_resume=True)
    dry_run: bool = option(
        False, "--dry-run", "Say what the run would call, cost and take (models, problems, calls and tokens per "
        "problem, cost, time), then stop before the first call; nothing is written.", kind="flag")
    resume: Path | None = option(
        None, "--resume", "Continue an eval run folder: skip finished problems, retry failed ones.", kind="path")
    allow_change: bool = option(  # the manifest records each change
        False, "--allow-change", "Let --resume run under other settings (team, prompts, review, models, method, "
        "data); the manifest records each change.", kind="flag", aliases=("--allow-model-change",))
    runs_dir: Path = option(Path("runs"), "--runs-dir", "Where run folders go.", kind="path", example="runs")
    allow_outside_paths: bool = option(
        False, "--allow-outside-paths", "Let data set rows refer to files outside the data folder (trusted data "
        "only).", kind="flag", safety=True)
    allow_private_urls: bool = option(
        False, "--allow-private-urls", "Let data set rows' image URLs point at private addresses (trusted data "
        "only).", kind="flag", safety=True)
    track: str | None = option(
        None, "--track", "Log the run to an experiment tracker when it ends: settings, accuracy per subset, "
        "rollbacks, review scores, tokens, cost, results and report (the track extra; docs/tracking.md).",
        kind="choice", choices=TRACKERS)


def check_request(request: EvalOptions) -> None:
    """What the options cannot say one by one: nothing a resumed run's manifest fixes set to
    another value than its default, --without only with --method maps."""
    if request.resume is not None:
        refuse_fixed_on_resume(FIXED_ON_RESUME[one.name] for one in EvalOptions.declared()
                               if one.name in FIXED_ON_RESUME and getattr(request, one.name) != one.default)
    if request.method not in (None, "maps") and request.without:
        raise UsageError("--without applies to --method maps only", fix="drop --without or --method")


def refuse_fixed_on_resume(given: Iterable[str]) -> None:
    """A resumed run takes its problems and scoring rules from its manifest: an option that
    chooses others (`given`, as the command line names them) would be ignored, so it is refused."""
    named = ", ".join(given)
    if named:
        raise UsageError(f"{named} cannot change a resumed run: its manifest fixes the problems and the scoring rules",
                         fix=f"drop {named}, or start a new run (without --resume) for another selection or rules")


#: What a run is, fixed by its manifest (`--resume` runs the same problems under the same rules):
#: each option's name and flag.
FIXED_ON_RESUME = {one.name: one.spec.label(one.name) for one in EvalOptions.declared() if one.spec.fixed_on_resume}

#: maps eval's options compared elsewhere, or that change nothing sent nor any verdict: a
#: --resume may give them anew. Every other option (but the settings of agents.yaml, compared as
#: the config they set, and those FIXED_ON_RESUME) is compared with the manifest as given
#: (`compared_options`): an option added to EvalOptions joins the comparison by itself.
NOT_COMPARED_OPTIONS: dict[str, str] = {
    "benchmark": "a --resume checks its manifest's benchmark",
    "data": "the problems read are compared by the data's fingerprint",
    "method": "compared as the method",
    "without": "compared as the steps left out",
    "concurrency": "how many problems are in flight at once",
    "workers": "how many processes share them",
    "cache": "a cached reply is the reply the same request got",
    "max_cost": "when the run stops, never what a problem is sent",
    "resume": "the folder resumed",
    "allow_change": "whether a change of settings is let through (and recorded)",
    "runs_dir": "where new run folders go",
    "allow_outside_paths": "which files may be read (what was read is compared by the data's fingerprint)",
    "allow_private_urls": "which addresses images may come from (what was read is compared by the data's fingerprint)",
    "batch": "how the requests travel (the Batch API or one by one), never what they carry",
    "track": "where the finished run is logged, never what a problem is sent",
}


def compared_options(request: EvalOptions) -> dict[str, Any]:
    """The options of `request` compared with a resumed run's manifest, those not at their
    default, as JSON (see NOT_COMPARED_OPTIONS)."""
    settings = {one.name for one in SettingsOptions.declared()}
    compared: dict[str, Any] = {}
    for one in type(request).declared():
        if one.name in FIXED_ON_RESUME or one.name in NOT_COMPARED_OPTIONS or one.name in settings:
            continue
        value = getattr(request, one.name)
        if value != one.default:
            compared[one.name] = _jsonable(value)
    return compared


def _jsonable(value: Any) -> Any:
    """An option's value as the manifest records it: a path or another object as text, a set sorted."""
    if isinstance(value, (frozenset, set)):
        return sorted(_jsonable(item) for item in value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


@dataclass(frozen=True, kw_only=True)
class MergeOptions(Options):
    """What `maps merge` combines, and where."""

    runs: tuple[Path, ...] = argument("The shard runs of one evaluation (folders maps eval wrote).", kind="paths")
    out: Path | None = option(None, "--out", "The merged run folder (default: runs/<new id>).", kind="path")
    allow_incomplete: bool = option(
        False, "--allow-incomplete", "Write the merge even when shards or problems are missing (summary.json: "
        "complete false and the missing ids).", kind="flag")


__all__ = ["CONCURRENCY", "FIXED_ON_RESUME", "MAX_CONCURRENCY", "MAX_WORKERS", "METHODS", "NOT_COMPARED_OPTIONS",
           "EvalOptions", "MergeOptions", "check_request", "compared_options", "refuse_fixed_on_resume"]
