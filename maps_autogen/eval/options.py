"""`maps eval`'s options, declared once (options.py says what is made from them): what the
command line and `maps_autogen.evaluate` take, and the request the eval runner runs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from maps_autogen._util import UsageError
from maps_autogen.eval.selection import Shard
from maps_autogen.scoring import RULES
from maps_autogen.scoring.benchmarks import NAMES
from maps_autogen.settings import SettingsOptions, argument, option

BASELINES = ("direct", "cot")  # the paper's single-call baselines (eval/baselines.py)
METHODS = ("maps", *BASELINES)
MAX_CONCURRENCY = 512  # problems in flight at once (--concurrency)
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
    concurrency: int = option(
        8, "--concurrency", "Problems in flight at once.", kind="whole", low=1, high=MAX_CONCURRENCY)
    workers: int | None = option(
        None, "--workers", "Worker processes sharing the problems in flight (default: chosen from the cores and "
        "--concurrency; docs/benchmarks.md: Worker processes).", kind="whole", low=1, high=MAX_WORKERS)
    rules: str = option(
        "current", "--rules", "Official scoring rule version.", kind="choice", choices=RULES, fixed_on_resume=True)
    cache: bool = option(True, "--no-cache", "Do not reuse cached model replies.", kind="flag", negate=True,
                         dest="no_cache")
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
        "only).", kind="flag")
    allow_private_urls: bool = option(
        False, "--allow-private-urls", "Let data set rows' image URLs point at private addresses (trusted data "
        "only).", kind="flag")


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

__all__ = ["FIXED_ON_RESUME", "MAX_CONCURRENCY", "MAX_WORKERS", "METHODS", "EvalOptions", "check_request",
           "refuse_fixed_on_resume"]
