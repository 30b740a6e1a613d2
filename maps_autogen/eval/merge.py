"""`maps merge`: shard runs of one evaluation combined into one eval folder.

Shards are untrusted folders: everything is checked before anything is written (the manifests
agree, every result row is whole, names a problem of its shard's manifest and a problem folder
inside that shard, and no problem has different rows in two shards), then the merged folder is
built beside `--out` and renamed into place, so a failure leaves no `--out` behind. A row's
problem folder in the merged run is named from its id (`safe_component`), never taken from
the row.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maps_autogen.artifacts import folder_built_beside
from maps_autogen.benchmarks import get_benchmark
from maps_autogen.errors import DataError, UsageError
from maps_autogen.eval.results import RESULTS_FILE, ResultsLog, summarize, write_summary
from maps_autogen.eval.run_settings import fingerprint_of
from maps_autogen.records import PROBLEMS_DIR, Manifest, ResultRow, dumped
from maps_autogen.run_files import read_manifest, write_manifest
from maps_autogen.safe_paths import belongs_to, problem_folder, safe_component
from maps_autogen.transcript import utc_now

__all__ = ["merge_runs"]

_SAME_EVALUATION = ("benchmark", "method", "without", "rules", "subsets", "models")


@dataclass(frozen=True)
class _Row:
    """One problem's latest result row in one shard, and its checked problem folder (None when
    the problem failed before it had one)."""

    shard: Path
    record: ResultRow
    folder: Path | None


def merge_runs(run_dirs: Sequence[Path], out: Path) -> Path:
    """Combine shard runs (same benchmark, method and models) into one eval folder at `out`.

    A problem present in two shards is refused unless both rows are identical (a shard copied
    twice); the first shard's folder is kept then."""
    run_dirs = [Path(run_dir) for run_dir in run_dirs]
    _check_distinct(run_dirs)
    manifests = [read_manifest(run_dir, fix="pass folders written by maps eval") for run_dir in run_dirs]
    first = manifests[0]
    for run_dir, manifest in zip(run_dirs[1:], manifests[1:]):
        for key in _SAME_EVALUATION:
            if getattr(manifest, key) != getattr(first, key):
                raise UsageError(
                    f"{run_dir} differs from {run_dirs[0]} in '{key}'", fix="merge only shards of one evaluation"
                )
        if _settings_but_data(manifest) != _settings_but_data(first):
            raise UsageError(f"{run_dir} ran under other settings than {run_dirs[0]} (team, prompts, review or models)",
                             fix="merge only shards of one evaluation")
    for run_dir, manifest in zip(run_dirs, manifests):
        # Each shard numbers its own changes and its rows refer to them: merged, the numbers would
        # mean different settings in different rows. Refused rather than relabelled.
        if manifest.changes:
            raise UsageError(f"{run_dir} was resumed under changed settings (--allow-change): its problems ran under "
                             f"{len(manifest.changes) + 1} sets of settings",
                             fix="merge shards that each ran under one set of settings "
                                 "(re-run that shard into a new folder)")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} already exists and is not empty", fix="choose another --out")
    task = get_benchmark(first.benchmark).task
    rows = _checked_rows(run_dirs, manifests)
    ids = _original_order(manifests)
    merged = first.model_copy(
        update={
            "ids": ids,
            "shard": None,
            "created_at": utc_now(),
            "merged_from": [str(d) for d in run_dirs],
            "subset_of_id": {k: v for m in manifests for k, v in m.subset_of_id.items()},
            **_merged_settings(run_dirs, manifests),
        }
    )
    with folder_built_beside(out, fix="choose another --out") as building:
        _write_merged(building, out.name, rows, ids, merged, task)
    return out


def _settings_but_data(manifest: Manifest) -> dict[str, Any]:
    settings = manifest.settings
    return {key: value for key, value in settings.items() if key != "data"} if settings is not None else {}


def _merged_settings(run_dirs: Sequence[Path], manifests: Sequence[Manifest]) -> dict[str, Any]:
    """The merged manifest's settings (the shards' common ones, with the data fingerprint of
    every shard's problems together, so a `--resume` of the merged folder compares against the
    whole). Empty for shards written before settings were recorded."""
    first = manifests[0].settings
    if first is None:
        return {}
    gold: dict[str, str] = {}
    shown: dict[str, str] | None = {}
    for manifest in manifests:
        # The settings are an open mapping (run_settings.verdict_settings), compared as recorded.
        data = manifest.settings.get("data") if manifest.settings is not None else None
        if isinstance(data, dict) and isinstance(data.get("gold"), dict):
            gold.update({str(pid): str(value) for pid, value in data["gold"].items()})
        if shown is not None and isinstance(data, dict) and isinstance(data.get("shown"), dict):
            shown.update({str(pid): str(value) for pid, value in data["shown"].items()})
        else:
            shown = None  # a shard written before what the steps are shown was recorded
    return {"settings": {**first, "data": fingerprint_of(gold, shown)}}


def _check_distinct(run_dirs: Sequence[Path]) -> None:
    seen: dict[Path, Path] = {}
    for run_dir in run_dirs:
        resolved = run_dir.resolve()
        if resolved in seen:
            raise UsageError(f"{run_dir} is passed twice (also as {seen[resolved]})", fix="pass each shard once")
        seen[resolved] = run_dir


def _checked_rows(run_dirs: Sequence[Path], manifests: Sequence[Manifest]) -> dict[str, _Row]:
    """Every shard's latest row per problem, checked; the first row of each problem."""
    rows: dict[str, _Row] = {}
    for run_dir, manifest in zip(run_dirs, manifests):
        source = run_dir / RESULTS_FILE
        ids = {str(pid) for pid in manifest.ids}
        for pid, record in ResultsLog(source).read().items():  # each row read into ResultRow
            if pid not in ids:
                raise DataError(f"{source} has a row for problem {pid!r}, which is not in {run_dir}'s manifest",
                                fix="merge only folders written by maps eval, or remove that row")
            row = _Row(run_dir, record, _problem_folder(run_dir, pid, record))
            earlier = rows.get(pid)
            if earlier is None:
                rows[pid] = row
            elif _comparable(earlier.record) != _comparable(record):
                raise DataError(
                    f"problem {pid!r} has different results in {earlier.shard} and {run_dir}",
                    fix="merge shards that ran different problems (maps eval --shard i/n), or remove one of the rows",
                )
    return rows


def _comparable(record: ResultRow) -> dict[str, Any]:
    return {key: value for key, value in dumped(record).items() if key != "schema_version"}


def _problem_folder(run_dir: Path, pid: str, record: ResultRow) -> Path | None:
    """The row's problem folder: a real folder directly inside the shard's problems folder
    (symlinks followed), holding no other problem's run; None when there is none."""
    named = record.run_dir
    if named is None:
        raise DataError(f"{run_dir / RESULTS_FILE}: the row of problem {pid!r} has no run_dir",
                        fix="merge only folders written by maps eval, or remove that row")
    folder = problem_folder(run_dir, named)
    if folder is None:
        raise DataError(f"{run_dir / RESULTS_FILE}: the row of problem {pid!r} names the folder {named!r}, "
                        f"which is not a problem folder inside {run_dir / PROBLEMS_DIR}",
                        fix="merge only folders written by maps eval, or remove that row")
    if not folder.exists():
        return None
    if not folder.is_dir() or not belongs_to(folder, pid):
        raise DataError(
            f"{folder} does not hold problem {pid!r}", fix="the shard may have been tampered with; re-run that problem"
        )
    links = [path for path in folder.rglob("*") if path.is_symlink()]
    if links:
        raise DataError(
            f"{links[0]} in the folder of problem {pid!r} is a symlink", fix="a run folder holds no links; remove it"
        )
    return folder


def _write_merged(
    building: Path, eval_id: str, rows: dict[str, _Row], ids: list[str], manifest: Manifest, task: Any
) -> None:
    """The merged run folder's files, written into `building`."""
    problems = building / PROBLEMS_DIR
    problems.mkdir()
    for pid, row in rows.items():
        if row.folder is not None:
            shutil.copytree(row.folder, problems / safe_component(pid))
    write_manifest(building, manifest.model_copy(update={"eval_id": eval_id}))
    log = ResultsLog(building / RESULTS_FILE)
    # One line per problem in the run's order (every row's problem is one of `ids`), written once.
    log.write_all(rows[pid].record.model_copy(update={"run_dir": f"{PROBLEMS_DIR}/{safe_component(pid)}"})
                  for pid in ids if pid in rows)
    summary = summarize(log.records(), task, manifest.subsets, manifest.team)
    summary = summary.model_copy(update={"eval_id": eval_id, "method": manifest.method, "without": manifest.without,
                                         "complete": summary.average.scored == len(ids)})
    write_summary(building, summary)


def _original_order(manifests: Sequence[Manifest]) -> list[str]:
    """Every id of the shards in the order of the one list they were taken from (shard i/n
    takes every n-th problem of it), each once."""
    position: dict[str, int] = {}
    for manifest in manifests:
        match = re.fullmatch(r"(\d+)/(\d+)", manifest.shard or "1/1")
        index, count = (int(match.group(1)), int(match.group(2))) if match else (1, 1)
        for number, pid in enumerate(manifest.ids):
            position.setdefault(str(pid), number * count + index - 1)
    return sorted(position, key=lambda pid: position[pid])
