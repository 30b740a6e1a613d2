"""Eval results: the append-only results.jsonl, the summary, and the paper's Table 1 layout."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Iterable, Sequence

from maps_autogen.benchmarks.tasks import Task
from maps_autogen.artifacts import atomic_text_writer, open_append, read_jsonl, write_json_atomic
from maps_autogen.records import MANIFEST_FILE, RESULTS_FILE, SCHEMA_VERSION, SUMMARY_FILE, ResultRow, Summary, checked
from maps_autogen.redact import redact

__all__ = ["FEEDBACK_TARGETS", "MANIFEST_FILE", "RESULTS_FILE", "SUMMARY_FILE", "ResultsLog", "accuracy_percent", "latest_by_pid"]
FEEDBACK_TARGETS = ("interpreter", "aligner", "scholar", "solver", "none")


def latest_by_pid(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The one de-dup rule for result rows: the latest row per pid, in the place of its first
    row (a problem retried after a failure, or run again by a resume, appears more than once)."""
    latest: dict[str, dict[str, Any]] = {}
    for row in rows:
        if "pid" in row:
            latest[str(row["pid"])] = row
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
            self._status = {pid: str(record.get("status")) for pid, record in self.read().items()}
        return self._status

    def read(self) -> dict[str, dict[str, Any]]:
        """The latest record per pid (a pid retried after a failure appears more than once)."""
        return latest_by_pid(read_jsonl(self.path))

    def finished_ids(self) -> set[str]:
        """The pids whose latest record is a success (from memory, not from the file)."""
        with self._lock:
            return {pid for pid, status in self._prepared().items() if status == "ok"}

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

    def append(self, record: dict[str, Any]) -> None:
        checked(ResultRow, record, source=str(self.path))
        line = (redact(json.dumps({"schema_version": SCHEMA_VERSION, **record}, ensure_ascii=False, default=str)) + "\n").encode()
        with self._lock:
            status = self._prepared()
            fd = open_append(self.path)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
            status[str(record["pid"])] = str(record.get("status"))

    def compact(self, order: Sequence[str]) -> list[dict[str, Any]]:
        """Rewrite the file atomically with one line per pid, in `order` (others after)."""
        with self._lock:
            latest = self.read()
            rank = {pid: n for n, pid in enumerate(order)}
            records = sorted(latest.values(), key=lambda r: (rank.get(str(r["pid"]), len(rank)), str(r["pid"])))
            with atomic_text_writer(self.path, fsync=True) as handle:
                for record in records:
                    handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            return records


def accuracy_percent(correct: int, scored: int) -> float | None:
    """The one accuracy figure of runs and reports: percent correct of the scored problems, to
    two decimals (None when nothing was scored)."""
    return round(100.0 * correct / scored, 2) if scored else None


def summarize(records: Sequence[dict[str, Any]], task: Task, subset_names: Sequence[str]) -> dict[str, Any]:
    """Accuracy per subset and on average (pooled over the subsets run, as the paper does),
    failures, feedback shares (Figure 4), stop reasons, usage and cost."""
    subsets: dict[str, dict[str, Any]] = {}
    for name in subset_names:
        mine = [r for r in records if r.get("subset") == name]
        scored = [r for r in mine if r.get("status") == "ok"]
        correct = sum(1 for r in scored if r.get("correct"))
        subsets[name] = {"n": len(mine), "scored": len(scored), "correct": correct, "failed": len(mine) - len(scored),
                         "accuracy": accuracy_percent(correct, len(scored))}
    scored = [r for r in records if r.get("status") == "ok"]
    correct = sum(1 for r in scored if r.get("correct"))
    feedback = {target: 0 for target in FEEDBACK_TARGETS}
    stop_reasons: dict[str, int] = {}
    for record in scored:
        target = record.get("feedback_step") or "none"
        feedback[target] = feedback.get(target, 0) + 1
        reason = record.get("stop_reason") or "none"
        stop_reasons[reason] = stop_reasons.get(reason, 0) + 1
    costs = [(r.get("usage") or {}).get("cost") for r in records]
    return {
        "schema_version": SCHEMA_VERSION,
        "benchmark": task.name,
        "subsets": subsets,
        "average": {"n": len(records), "scored": len(scored), "correct": correct, "accuracy": accuracy_percent(correct, len(scored))},
        "failed": len(records) - len(scored),
        "feedback_shares": {k: round(v / len(scored), 4) if scored else None for k, v in feedback.items()},
        "stop_reasons": stop_reasons,
        "usage": {
            "calls": sum((r.get("usage") or {}).get("calls") or 0 for r in records),
            "prompt_tokens": sum((r.get("usage") or {}).get("prompt_tokens") or 0 for r in records),
            "completion_tokens": sum((r.get("usage") or {}).get("completion_tokens") or 0 for r in records),
            "cost": round(sum(c for c in costs if c), 6) if all(c is not None for c in costs) else None,
        },
        "seconds": round(sum(r.get("seconds") or 0 for r in records), 3),
    }


def table1(summary: dict[str, Any], task: Task, label: str) -> str:
    """The paper's Table 1 layout (subtask columns, then the benchmark average) as Markdown."""
    columns = [s for s in task.subsets if s.name in summary["subsets"]]
    header = ["Method", *(s.column for s in columns), "Avg."]

    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    row = [label, *(cell(summary["subsets"][s.name]["accuracy"]) for s in columns), cell(summary["average"]["accuracy"])]
    lines = [
        f"{task.title}",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        "| " + " | ".join(row) + " |",
    ]
    return "\n".join(lines)


def write_summary(eval_dir: Path, summary: dict[str, Any]) -> Path:
    path = eval_dir / SUMMARY_FILE
    write_json_atomic(path, checked(Summary, summary, source=str(path)))
    return path
