"""`maps merge`: shard runs of one evaluation combined into one eval folder.

A merge knows the data set: every shard's manifest records the whole selection it was drawn
from (`Manifest.selection`: every id in order, and a hash of each problem's gold answer and
scoring fields), so the shards must all be drawn from the same selection of the same data,
each a distinct `i/n` of it, each holding exactly its share. A shard that was not passed
(preempted, failed, still queued) and a problem a shard has no result for (stopped before it)
are named: the merge is refused, or written with `--allow-incomplete` as `complete: false`
with the missing ids in its summary; never averaged over what happened to finish.

Shards are untrusted folders: everything is checked before anything is written (the manifests
agree, every result row is whole, names a problem of its shard, has the gold answer and scoring
fields its shard's selection recorded for it, and a problem folder inside that shard), and
every verdict is scored again from the row's recorded answer with the run's recorded rules (a
row edited to `correct: true` counts for what its answer is). A shard another process is still
writing is refused (its run lock), and no shard can start being written while the merge reads
it. The merged folder is built beside `--out` and renamed into place, so a failure leaves no
`--out` behind. A row's problem folder in the merged run is named from its id
(`safe_component`), never taken from the row.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maps_autogen._util import DataError, RunLock, UsageError, check_replaceable, copy_file, folder_built_beside
from maps_autogen.benchmarks import RecordError, get_benchmark
from maps_autogen.eval._results import RESULTS_FILE, ResultsLog, missing_ids, summarize, write_summary
from maps_autogen.eval._verdict_settings import fingerprint_of, recorded_json, scoring_hash
from maps_autogen.orchestration import utc_now
from maps_autogen.records import (
    PROBLEMS_DIR,
    Manifest,
    ResultRow,
    SelectionRecord,
    VerdictSettings,
    belongs_to,
    problem_folder,
    read_manifest,
    safe_component,
    write_manifest,
)
from maps_autogen.scoring import score_record

__all__ = ["MergeOutcome", "merge_runs"]

_SAME_EVALUATION = ("benchmark", "method", "without", "rules", "subsets", "models")
_SHOWN = 3  # ids named in a message before "..."


@dataclass(frozen=True)
class _Row:
    """One problem's latest result row in one shard, and its checked problem folder (None when
    the problem failed before it had one)."""

    shard: Path
    record: ResultRow
    folder: Path | None


@dataclass(frozen=True)
class _Shard:
    """A shard folder, its manifest and its place (`index` of `count`) in the selection."""

    folder: Path
    manifest: Manifest
    index: int
    count: int

    @property
    def name(self) -> str:
        return f"shard {self.index}/{self.count} ({self.folder})"


@dataclass
class MergeOutcome:
    """What `maps merge` wrote, and what the CLI says after it (verdicts scored again that
    differed from the shards', what is missing when `--allow-incomplete` let it through)."""

    out: Path
    notes: list[str] = field(default_factory=list)


def merge_runs(run_dirs: Sequence[Path], out: Path, *, allow_incomplete: bool = False) -> MergeOutcome:
    """Combine the shard runs of one evaluation into one eval folder at `out` (see the module
    doc). Missing shards or problems are a UsageError naming them, unless `allow_incomplete`."""
    run_dirs = [Path(run_dir) for run_dir in run_dirs]
    _check_distinct(run_dirs)
    check_replaceable(out, fix="choose another --out")  # before anything is read
    with _read_locks(run_dirs):  # no shard is written while the merge reads it
        manifests = [read_manifest(run_dir, fix="pass folders written by maps eval") for run_dir in run_dirs]
        _check_one_evaluation(run_dirs, manifests)
        shards = _placed(run_dirs, manifests)
        selection = shards[0].manifest.selection
        rows = _checked_rows(shards)
        notes = _rescored(rows, shards[0].manifest)
        missing = missing_ids(selection.ids, [row.record for row in rows.values()])
        if missing:
            notes.append(_incomplete(shards, selection, missing, allowed=allow_incomplete))
        first = shards[0].manifest
        merged = first.model_copy(
            update={
                "ids": list(selection.ids),
                "shard": None,
                "created_at": utc_now(),
                "merged_from": [str(d) for d in run_dirs],
                "subset_of_id": {k: v for shard in shards for k, v in shard.manifest.subset_of_id.items()},
                "resumed_at": [],
                "workers_replaced": sum(shard.manifest.workers_replaced for shard in shards),
                **_merged_settings(shards, selection),
            }
        )
        task = get_benchmark(first.benchmark).task
        with folder_built_beside(out, fix="choose another --out") as building:
            _write_merged(building, out.name, rows, merged, task)
    return MergeOutcome(out, notes)


@contextlib.contextmanager
def _read_locks(run_dirs: Sequence[Path]) -> Iterator[None]:
    """Every shard's run lock, shared: refused (naming the writer) while another process writes
    a shard, and no writer can start until the merge is done."""
    with contextlib.ExitStack() as held:
        for run_dir in run_dirs:
            if not run_dir.is_dir():
                raise UsageError(f"{run_dir} is not a folder", fix="pass folders written by maps eval")
            held.enter_context(RunLock(run_dir, shared=True))
        yield


def _check_one_evaluation(run_dirs: Sequence[Path], manifests: Sequence[Manifest]) -> None:
    """The shards ran the same benchmark, method, rules, subsets and models under one set of
    settings each."""
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


def _placed(run_dirs: Sequence[Path], manifests: Sequence[Manifest]) -> list[_Shard]:
    """Each shard with its place in the selection, checked: every shard records the same
    selection of the same data, each is another `i/n` of one `n`, holding exactly its share."""
    shards: list[_Shard] = []
    for run_dir, manifest in zip(run_dirs, manifests):
        match = re.fullmatch(r"(\d+)/(\d+)", manifest.shard or "1/1")
        if match is None or not 1 <= int(match.group(1)) <= int(match.group(2)):
            raise DataError(f"{run_dir}/manifest.json names the shard {manifest.shard!r}, not i/n",
                            fix="merge only folders written by maps eval")
        shards.append(_Shard(run_dir, manifest, int(match.group(1)), int(match.group(2))))
    first = shards[0]
    for shard in shards:
        selection = shard.manifest.selection
        if shard.count != first.count:
            raise UsageError(f"{shard.name} and {first.name} split the evaluation differently",
                             fix="merge the shards of one split (the same n in --shard i/n)")
        if selection.ids != first.manifest.selection.ids:
            raise UsageError(f"{shard.folder} and {first.folder} were drawn from different selections of problems "
                             "(the data set's rows, --subset, --limit, --sample or --sample-seed differ)",
                             fix="merge only shards of one evaluation")
        changed = [pid for pid in selection.ids
                   if selection.scoring_of(pid) != first.manifest.selection.scoring_of(pid)]
        if changed:
            raise UsageError(f"{shard.folder} and {first.folder} ran on different data: the gold answer or scoring "
                             f"fields of {len(changed)} problem(s) differ ({_some(changed)})",
                             fix="merge only shards run on the same data")
        share = [pid for number, pid in enumerate(selection.ids) if number % shard.count == shard.index - 1]
        if [str(pid) for pid in shard.manifest.ids] != share:
            raise DataError(f"{shard.folder}/manifest.json: its problems are not shard {shard.index}/{shard.count} "
                            "of the selection it records", fix="merge only folders written by maps eval")
    by_index: dict[int, _Shard] = {}
    for shard in shards:
        earlier = by_index.setdefault(shard.index, shard)
        if earlier is not shard:
            raise UsageError(f"{earlier.folder} and {shard.folder} are both shard {shard.index}/{shard.count}",
                             fix="pass one folder of each shard (the one whose run finished)")
    return sorted(shards, key=lambda shard: shard.index)


def _some(ids: Sequence[str]) -> str:
    """A few ids, quoted, for a message."""
    shown = ", ".join(repr(pid) for pid in ids[:_SHOWN])
    return f"e.g. {shown}" + (", ..." if len(ids) > _SHOWN else "")


def _incomplete(shards: Sequence[_Shard], selection: SelectionRecord, missing: Sequence[str], *,
                allowed: bool) -> str:
    """What is missing, in one line: the shards not passed and, per shard passed, the problems it
    has no result for. Raised as a UsageError unless `allowed` (then the note to print)."""
    count = shards[0].count
    present = {shard.index for shard in shards}
    parts = []
    for index in range(1, count + 1):
        if index not in present:
            size = len(range(index - 1, len(selection.ids), count))
            parts.append(f"shard {index}/{count} was not passed ({size} problems)")
    lacking = set(missing)
    for shard in shards:
        gone = [str(pid) for pid in shard.manifest.ids if str(pid) in lacking]
        if gone:
            parts.append(f"{shard.name} has no result for {len(gone)} of its {len(shard.manifest.ids)} problems "
                         f"({_some(gone)})")
    what = f"{len(missing)} of the evaluation's {len(selection.ids)} problems have no result: {'; '.join(parts)}"
    if not allowed:
        raise UsageError(f"the merge would be incomplete: {what}",
                         fix="finish them first (maps eval --resume on a shard's folder, or run a missing shard), "
                             "or pass --allow-incomplete to write it marked complete: false with the missing ids")
    return f"incomplete (complete: false, the missing ids in summary.json): {what}"


def _settings_but_data(manifest: Manifest) -> dict[str, Any]:
    return recorded_json(manifest.settings, exclude={"data"})


def _merged_settings(shards: Sequence[_Shard], selection: SelectionRecord) -> dict[str, VerdictSettings]:
    """The merged manifest's settings (the shards' common ones, with the data fingerprint of
    every problem of the selection: each shard's own, and the selection's hashes (gold and
    scoring, what the steps are shown) for a shard not passed, so a `--resume` of the merged
    folder compares against the whole, what the missing problems show included, and runs what
    is missing)."""
    gold: dict[str, str] = {}
    shown: dict[str, str] = {}
    passed: set[str] = set()
    for shard in shards:
        passed.update(str(pid) for pid in shard.manifest.ids)
        data = shard.manifest.settings.data
        if data is not None:
            gold.update(data.gold)
            shown.update(data.shown)
    gold.update({pid: value for pid, value in selection.scoring.items() if pid not in passed})
    shown.update({pid: value for pid, value in selection.shown.items() if pid not in passed})
    ordered = {pid: gold[pid] for pid in selection.ids if pid in gold}
    ordered_shown = {pid: shown[pid] for pid in ordered if pid in shown}
    first = shards[0].manifest.settings
    return {"settings": first.model_copy(update={"data": fingerprint_of(ordered, ordered_shown)})}


def _check_distinct(run_dirs: Sequence[Path]) -> None:
    seen: dict[Path, Path] = {}
    for run_dir in run_dirs:
        resolved = run_dir.resolve()
        if resolved in seen:
            raise UsageError(f"{run_dir} is passed twice (also as {seen[resolved]})", fix="pass each shard once")
        seen[resolved] = run_dir


def _checked_rows(shards: Sequence[_Shard]) -> dict[str, _Row]:
    """Every shard's latest row per problem, checked: it names a problem of its shard, holds
    the gold answer and scoring fields the shard's selection recorded, and its folder."""
    rows: dict[str, _Row] = {}
    for shard in shards:
        source = shard.folder / RESULTS_FILE
        ids = {str(pid) for pid in shard.manifest.ids}
        selection = shard.manifest.selection
        for pid, record in ResultsLog(source).read().items():  # each row read into ResultRow
            if pid not in ids:
                raise DataError(f"{source} has a row for problem {pid!r}, which is not in {shard.folder}'s manifest",
                                fix="merge only folders written by maps eval, or remove that row")
            if scoring_hash(record.gold, record.scoring) != selection.scoring_of(pid):
                raise DataError(f"{source}: the gold answer or scoring fields of the row of problem {pid!r} differ "
                                "from those of the data the shard ran on", fix="the shard may have been tampered "
                                "with; re-run that problem (maps eval --resume on the shard's folder)")
            rows[pid] = _Row(shard.folder, record, _problem_folder(shard.folder, pid, record))
    return rows


def _rescored(rows: dict[str, _Row], manifest: Manifest) -> list[str]:
    """Every scored row's verdict scored again from its recorded answer with the run's rules
    (`rows` updated in place); a note when some differ from what the shard recorded."""
    differed: list[str] = []
    for pid, row in rows.items():
        record = row.record
        if record.status != "ok":
            continue  # a failed problem has no answer to score (it counts as a failure)
        try:
            verdict = score_record(manifest.benchmark, {**record.scoring, "response": record.response or ""},
                                   manifest.rules)
        except RecordError as error:
            raise DataError(f"{row.shard / RESULTS_FILE}: the row of problem {pid!r} cannot be scored: {error}",
                            fix="the shard may have been tampered with; re-run that problem") from None
        scored = {"extraction": verdict.extraction, "prediction": verdict.prediction, "correct": bool(verdict.correct),
                  "extractor_version": verdict.extractor_version}
        if any(_as_written(getattr(record, key)) != _as_written(value) for key, value in scored.items()):
            differed.append(pid)
            rows[pid] = _Row(row.shard, record.model_copy(update=scored), row.folder)
    if not differed:
        return []
    return [f"{len(differed)} row(s) recorded another verdict than their answer scores under the run's rules "
            f"({_some(differed)}): the merge counts the verdicts scored again"]


def _as_written(value: Any) -> Any:
    """`value` as results.jsonl holds it once written and read back (a tuple is a list...)."""
    return json.loads(json.dumps(value, default=str))


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


def _write_merged(building: Path, eval_id: str, rows: dict[str, _Row], manifest: Manifest, task: Any) -> None:
    """The merged run folder's files, written into `building`."""
    problems = building / PROBLEMS_DIR
    problems.mkdir()
    for pid, row in rows.items():
        if row.folder is not None:
            shutil.copytree(row.folder, problems / safe_component(pid), copy_function=copy_file)
    write_manifest(building, manifest.model_copy(update={"eval_id": eval_id}))
    log = ResultsLog(building / RESULTS_FILE)
    ids = [str(pid) for pid in manifest.ids]
    # One line per problem in the selection's order (every row's problem is one of `ids`), written once.
    written = [rows[pid].record.model_copy(update={"run_dir": f"{PROBLEMS_DIR}/{safe_component(pid)}"})
               for pid in ids if pid in rows]
    log.write_all(written)
    records = [rows[pid].record for pid in ids if pid in rows]
    summary = summarize(records, task, manifest.subsets, manifest.team)
    missing = missing_ids(ids, records)
    summary = summary.model_copy(update={"eval_id": eval_id, "method": manifest.method, "without": manifest.without,
                                         "complete": not missing and summary.average.scored == len(ids),
                                         "missing": missing, "workers_replaced": manifest.workers_replaced})
    write_summary(building, summary, written)
