"""Table 1 of eval runs: a run folder read back (`Run`), each cell's accuracy with its 95%
Wilson interval and standard error (eval/_intervals.py), and the table as Markdown and CSV. The
one Table 1 writer: `maps eval` prints it for its folder, `maps report` writes it for several runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maps_autogen._util import csv_text, markdown_table, markdown_text
from maps_autogen.benchmarks import NAMES as BENCHMARK_ORDER  # NAMES is in the paper's column order
from maps_autogen.benchmarks import get_benchmark
from maps_autogen.eval._intervals import percent_error, percent_interval
from maps_autogen.eval._results import RESULTS_FILE, ResultsLog
from maps_autogen.eval._table_rows import ServedModels, base_label, group_runs, served_models
from maps_autogen.problem import Subset
from maps_autogen.records import Manifest, ResultRow, read_manifest
from maps_autogen.scoring import tally_rows


@dataclass
class Run:
    """One eval run folder, read. `row_label` is the report row it is in (eval/_table_rows.py:
    `group_runs` sets it, from the runs reported together)."""

    path: Path
    manifest: Manifest
    records: list[ResultRow]
    row_label: str | None = None

    @property
    def benchmark(self) -> str:
        return self.manifest.benchmark

    @property
    def method(self) -> str:
        return self.manifest.method or ""  # maps eval always writes it

    @property
    def served(self) -> ServedModels:
        """The models it asked for and the models that answered."""
        return served_models(self)

    @property
    def without(self) -> tuple[str, ...]:
        return tuple(self.manifest.without)

    @property
    def label(self) -> str:
        """Its row's label: method and the models that answered, and what sets the row apart."""
        return self.row_label if self.row_label is not None else base_label(self)

    @property
    def scored(self) -> list[ResultRow]:
        return [r for r in self.records if r.status == "ok"]

    @property
    def failed(self) -> int:
        """Problems without a verdict (they are not in the accuracy, never counted wrong)."""
        return sum(r.status != "ok" for r in self.records)


def load_run(path: Path) -> Run:
    """Read an eval run folder."""
    manifest = read_manifest(path, fix="pass folders written by maps eval or maps merge")
    records = list(ResultsLog(path / RESULTS_FILE).read().values())
    return Run(path=path, manifest=manifest, records=records)


@dataclass
class Cell:
    accuracy: float | None
    interval: tuple[float, float] | None  # the 95% Wilson interval, in %
    n: int  # scored problems
    failed: int = 0  # problems without a verdict: not in the accuracy, never counted wrong
    stderr: float | None = None  # the standard error, in percentage points (None below two problems)

    def text(self, with_interval: bool = True) -> str:
        if self.accuracy is None:
            return "-"
        if with_interval and self.interval is not None:
            return f"{self.accuracy:.2f} [{self.interval[0]:.2f}, {self.interval[1]:.2f}]"
        return f"{self.accuracy:.2f}"


def _cell(records: Sequence[ResultRow]) -> Cell:
    """The tally's accuracy (correct / scored) with its Wilson interval and standard error over the scored rows."""
    tally = tally_rows(records)
    if not tally.scored:
        return Cell(None, None, 0, tally.failed)
    return Cell(tally.accuracy, percent_interval(tally.correct, tally.scored), tally.scored, tally.failed,
                percent_error(tally.correct, tally.scored))


@dataclass
class Row:
    """One Table 1 row: runs under the same verdict settings, one per benchmark (_table_rows.py)."""

    label: str
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)  # (benchmark, subset or "Avg.")
    benchmark_avgs: dict[str, float] = field(default_factory=dict)
    runs: list[Run] = field(default_factory=list)


def _subsets(benchmark: str, runs: Sequence[Run]) -> list[Any]:
    """The benchmark's subsets in the paper's order, then those the runs name that the task does
    not list (the custom benchmark's categories), in order of first appearance."""
    task = get_benchmark(benchmark).task
    known = {subset.name for subset in task.subsets}
    extra = dict.fromkeys(str(r.subset) for run in runs if run.benchmark == benchmark for r in run.records
                          if r.subset not in known and r.subset not in (None, ""))
    return [*task.subsets, *(Subset(name, name, 0, name) for name in extra)]


def _columns(runs: Sequence[Run]) -> list[tuple[str, str, str]]:
    """(benchmark, subset, header) in the paper's order, for what the runs cover."""
    columns = []
    present = {run.benchmark for run in runs}
    for benchmark in BENCHMARK_ORDER:
        if benchmark not in present:
            continue
        task = get_benchmark(benchmark).task
        ran = {r.subset for run in runs if run.benchmark == benchmark for r in run.records}
        for subset in _subsets(benchmark, runs):
            if subset.name in ran:
                columns.append((benchmark, subset.name, f"{task.title} {subset.column}"))
        columns.append((benchmark, "Avg.", f"{task.title} Avg."))
    return columns


def table1_rows(runs: Sequence[Run]) -> list[Row]:
    """One row per group of runs under the same verdict settings (eval/_table_rows.py: runs on
    different benchmarks share a row only then; two runs of one benchmark never share one)."""
    rows = []
    for group in group_runs(runs):
        row = Row(group.label, runs=list(group.runs))
        for run in group.runs:
            for subset in _subsets(run.benchmark, [run]):
                mine = [r for r in run.records if r.subset == subset.name]
                if mine:
                    row.cells[(run.benchmark, subset.name)] = _cell(mine)
            average = _cell(run.records)  # pooled over the subsets, as the paper's averages are
            row.cells[(run.benchmark, "Avg.")] = average
            if average.accuracy is not None:
                row.benchmark_avgs[run.benchmark] = average.accuracy
        rows.append(row)
    return rows


def table1(runs: Sequence[Run]) -> tuple[str, str]:
    """Table 1 as Markdown (accuracy with its 95% interval, and a line naming the problems that
    failed without a verdict) and CSV (separate columns, with each cell's standard error and
    failed count)."""
    columns = _columns(runs)
    rows = table1_rows(runs)
    multi = len({b for b, _, _ in columns}) > 1
    header = ["Method", *(h for _, _, h in columns)] + (["Avg."] if multi else [])
    body = []
    rows_csv: list[list[object]] = [
        [
            "method",
            *(f"{h} {part}" for _, _, h in columns for part in ("acc", "lo", "hi", "se", "n", "failed")),
            *(["avg"] if multi else []),
        ]
    ]
    for row in rows:
        cells = [row.cells.get((b, s), Cell(None, None, 0)) for b, s, _ in columns]
        overall = round(sum(row.benchmark_avgs.values()) / len(row.benchmark_avgs), 2) if row.benchmark_avgs else None
        body.append(
            [row.label, *(c.text() for c in cells)]
            + ([f"{overall:.2f}" if overall is not None else "-"] if multi else [])
        )
        rows_csv.append([row.label,
                         *(v for c in cells for v in (c.accuracy, *(c.interval or (None, None)), c.stderr, c.n,
                                                      c.failed)),
                         *([overall] if multi else [])])
    return markdown_table(header, body) + failed_note(rows), csv_text(rows_csv)


def failed_note(rows: Sequence[Row]) -> str:
    """A line under a table naming the problems that failed without a verdict, per row ("" when
    none did): they are left out of the accuracy (correct / scored), never counted wrong."""
    failed = [(row.label, sum(run.failed for run in row.runs)) for row in rows]
    named = [f"{markdown_text(label)}: {count}" for label, count in failed if count]
    if not named:
        return ""
    return ("\n\nFailed without a verdict (an error before an answer could be scored; left out of the accuracy, "
            "which is correct / scored, never counted wrong; `--resume` retries them): " + "; ".join(named) + ".")


__all__ = ["Cell", "Row", "Run", "failed_note", "load_run", "table1", "table1_rows"]
