"""Eval results: the append-only results.jsonl and the summary."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from maps_autogen._util import append_whole, atomic_text_writer, open_append, parse_read_back, redact
from maps_autogen.eval._harness import write_harness_results
from maps_autogen.eval._lm_eval_files import write_lm_eval_files
from maps_autogen.problem import Task
from maps_autogen.records import (
    RESULTS_FILE,
    SUMMARY_FILE,
    AverageSummary,
    ResultRow,
    SubsetSummary,
    Summary,
    TeamRecord,
    Usage,
    dumped,
    feedback_targets,
    iter_result_rows,
    read_manifest,
    write_record,
)
from maps_autogen.scoring import Tally, first_decision

__all__ = ["RESULTS_FILE", "SUMMARY_FILE", "ResultsLog", "latest_by_pid", "missing_ids", "summarize", "write_summary"]


def latest_by_pid(rows: Iterable[ResultRow]) -> dict[str, ResultRow]:
    """The one de-dup rule for result rows: the latest row per pid, in the place of its first
    row (a problem retried after a failure, or run again by a resume, appears more than once)."""
    latest: dict[str, ResultRow] = {}
    for row in rows:
        latest[str(row.pid)] = row
    return latest


class ResultsLog:
    """results.jsonl: one complete line per finished problem, appended with a single write and
    fsync'd, so a kill at any moment leaves at worst a torn last line. A writer cuts the torn
    line off once (at its first `finished_ids` or `append`) and keeps the finished ids in
    memory; after that an append is one write, whatever the file's size. Readers (`read`)
    never change the file."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._status: dict[str, str] | None = None  # pid -> latest status, once prepared

    def _prepared(self) -> dict[str, str]:
        """The statuses by pid, after the one-time torn-tail repair (call with the lock held)."""
        if self._status is None:
            self._cut_torn_tail()
            self._status = {str(row.pid): row.status for row in self.records()}
        return self._status

    def read(self) -> dict[str, ResultRow]:
        """The latest record per pid (a pid retried after a failure appears more than once)."""
        return latest_by_pid(self.records())

    def finished_ids(self) -> set[str]:
        """The pids whose latest record is a success (from memory, not from the file)."""
        with self._lock:
            return {pid for pid, status in self._prepared().items() if status == "ok"}

    def records(self) -> Iterator[ResultRow]:
        """The file's rows in file order, read one line at a time; a damaged line or one that is
        not a result row is one line naming the file and the line (never skipped)."""
        for _, row in iter_result_rows(self.path):
            yield row

    def _cut_torn_tail(self) -> None:
        """Drop a torn last line (a killed process), reading only the file's end."""
        if not self.path.exists():
            return
        with open(self.path, "rb+") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return
            block = 65536
            end = size
            while end > 0:
                start = max(0, end - block)
                handle.seek(start)
                newline = handle.read(end - start).rfind(b"\n")
                if newline != -1:
                    handle.truncate(start + newline + 1)
                    return
                end = start
            handle.truncate(0)

    def append(self, row: ResultRow) -> None:
        """Append one row as a complete line, fsync'd."""
        line = (redact(json.dumps(dumped(row), ensure_ascii=False, default=str)) + "\n").encode()
        with self._lock:
            status = self._prepared()
            fd = open_append(self.path)
            try:
                append_whole(fd, self.path, line, fsync=True)  # whole or not at all (a full disk)
            finally:
                os.close(fd)
            status[str(row.pid)] = row.status

    def write_all(self, rows: Iterable[ResultRow]) -> None:
        """Replace the file with `rows`, one line each, in one atomic write (fsync'd): a whole
        file made at once (a merge), not a log grown row by row."""
        with self._lock:
            with atomic_text_writer(self.path, fsync=True) as handle:
                for row in rows:
                    handle.write(json.dumps(dumped(row), ensure_ascii=False, default=str) + "\n")
            self._status = None  # read again from the new file when next needed

    def compact(self, order: Sequence[str]) -> None:
        """Rewrite the file atomically with one line per pid (its latest), in `order` (others
        after). Streamed: only each pid's offset is kept, the records are copied one at a time.
        No file (the run stopped before its first problem finished): nothing to do."""
        with self._lock:
            if not self.path.exists():
                return
            latest = {str(row.pid): offset for offset, row in iter_result_rows(self.path)}
            rank = {pid: n for n, pid in enumerate(order)}
            pids = sorted(latest, key=lambda pid: (rank.get(pid, len(rank)), pid))
            with open(self.path, "rb") as source, atomic_text_writer(self.path, fsync=True) as handle:
                for pid in pids:
                    source.seek(latest[pid])
                    handle.write(json.dumps(parse_read_back(source.readline()), ensure_ascii=False, default=str) + "\n")


def summarize(
    records: Iterable[ResultRow], task: Task, subset_names: Sequence[str], team: TeamRecord | None
) -> Summary:
    """Accuracy per subset and on average (pooled over the subsets run, as the paper does),
    failures, feedback shares (Figure 4: every MAPS problem, failed ones included, counted once
    by its reviewer's first decision (`tally.first_decision`), over the feedback targets of the
    recorded `team`), stop reasons, usage and cost (`usage.tokens_estimated`: some tokens are our
    own count). One pass of running tallies: `records` may be a stream of any length."""
    subsets = {name: Tally() for name in subset_names}
    overall = Tally()
    feedback = {target: 0 for target in feedback_targets([team])}
    decided = 0  # the MAPS problems Figure 4 counts: every one, each by its reviewer's first decision
    stop_reasons: dict[str, int] = {}
    usage = Usage(calls=0, cached_calls=0, prompt_tokens=0, completion_tokens=0, cost=0.0, tokens_estimated=False)
    seconds: float = 0
    for row in records:
        overall.add_row(row)
        tally = subsets.get(row.subset)
        if tally is not None:
            tally.add_row(row)
        if row.method in (None, "maps"):  # a baseline has no reviewer
            target = first_decision(row)
            feedback[target] = feedback.get(target, 0) + 1
            decided += 1
        if row.status == "ok":
            reason = row.stop_reason or "none"
            stop_reasons[reason] = stop_reasons.get(reason, 0) + 1
        # tokens_estimated: some call's tokens are our own count (its server reported no usage)
        usage = usage.added(row.usage or Usage())
        seconds += row.seconds
    return Summary(
        benchmark=task.name,
        subsets={
            name: SubsetSummary(
                n=tally.n, scored=tally.scored, correct=tally.correct, failed=tally.failed, accuracy=tally.accuracy
            )
            for name, tally in subsets.items()
        },
        average=AverageSummary(n=overall.n, scored=overall.scored, correct=overall.correct, accuracy=overall.accuracy),
        failed=overall.failed,
        feedback_shares={
            k: round(feedback[k] / decided, 4) if decided else None
            for k in feedback_targets([team], (k for k, count in feedback.items() if count))
        },
        stop_reasons=stop_reasons,
        usage=usage.model_copy(update={"cost": None if usage.cost is None else round(usage.cost, 6)}),
        seconds=round(seconds, 3),
    )


def write_summary(eval_dir: Path, summary: Summary, rows: Sequence[ResultRow]) -> Path:
    """Write an eval folder's summary.json from its record, and beside it results.json, the same
    figures in lm-evaluation-harness's and lmms-eval's layout (eval/_harness.py), from the
    folder's manifest, and lm-eval's own files from its result rows (eval/_lm_eval_files.py)."""
    path = eval_dir / SUMMARY_FILE
    write_record(path, summary)
    manifest = read_manifest(eval_dir)
    write_lm_eval_files(eval_dir, manifest, write_harness_results(eval_dir, manifest, summary), rows)
    return path


def missing_ids(ids: Iterable[str | int], rows: Iterable[ResultRow]) -> list[str]:
    """The ids (in the run's order) that have no result row: never run, or still pending."""
    done = {str(row.pid) for row in rows}
    return [str(pid) for pid in ids if str(pid) not in done]
