"""`maps report`: compare eval runs as the paper does: Table 1 (with bootstrap intervals),
Table 2 (ablation deltas), Figure 4 (where the Critic's feedback went), Figure 6 (solving time
by question type, answer type, category and difficulty), and cost and tokens per role."""

from __future__ import annotations

import csv
import io
import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from maps_autogen.errors import DataError
from maps_autogen.eval.results import FEEDBACK_TARGETS, MANIFEST_FILE, RESULTS_FILE, ResultsLog
from maps_autogen.eval.tasks import get_task
from maps_autogen.files import FILE_MODE, write_text_atomic

BENCHMARK_ORDER = ("mathvista", "emma", "olympiadbench")  # the paper's column order
BOOTSTRAP_SAMPLES = 1000
# Figure 6 panels: which metadata field holds each property, per benchmark.
TIME_FIELDS = {
    "question type": ("question_type", "type"),
    "answer type": ("answer_type",),
    "category": ("category", "subfield"),
    "difficulty": ("difficulty",),
}


@dataclass
class Run:
    """One eval run folder, read."""

    path: Path
    manifest: dict[str, Any]
    records: list[dict[str, Any]]

    @property
    def benchmark(self) -> str:
        return self.manifest["benchmark"]

    @property
    def models(self) -> str:
        return ", ".join(sorted({m["model"] for m in self.manifest["models"].values()}))

    @property
    def without(self) -> tuple[str, ...]:
        return tuple(self.manifest.get("without") or ())

    @property
    def label(self) -> str:
        method = self.manifest["method"]
        if self.without:
            method = f"maps w/o {'+'.join(self.without)}"
        return f"{method} ({self.models})"

    @property
    def scored(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("status") == "ok"]


def load_run(path: Path) -> Run:
    """Read an eval run folder."""
    manifest_path = path / MANIFEST_FILE
    if not manifest_path.is_file():
        raise DataError(f"{path} is not an eval run (no {MANIFEST_FILE})", fix="pass folders written by maps eval or maps merge")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise DataError(f"cannot read {manifest_path}: {error}", fix="the run folder may be damaged") from None
    records = list(ResultsLog(path / RESULTS_FILE).read().values())
    return Run(path=path, manifest=manifest, records=records)


def bootstrap_interval(outcomes: Sequence[bool], *, samples: int = BOOTSTRAP_SAMPLES, seed: int = 0) -> tuple[float, float] | None:
    """95% percentile bootstrap interval of an accuracy (in %), resampling problems."""
    n = len(outcomes)
    if n == 0:
        return None
    rng = random.Random(seed)
    values = [int(bool(x)) for x in outcomes]
    means = sorted(100.0 * sum(rng.choices(values, k=n)) / n for _ in range(samples))
    return round(means[int(0.025 * samples)], 2), round(means[min(samples - 1, int(0.975 * samples))], 2)


@dataclass
class Cell:
    accuracy: float | None
    interval: tuple[float, float] | None
    n: int

    def text(self, with_interval: bool = True) -> str:
        if self.accuracy is None:
            return "-"
        if with_interval and self.interval is not None:
            return f"{self.accuracy:.2f} [{self.interval[0]:.2f}, {self.interval[1]:.2f}]"
        return f"{self.accuracy:.2f}"


def _cell(records: Sequence[dict[str, Any]]) -> Cell:
    outcomes = [bool(r.get("correct")) for r in records if r.get("status") == "ok"]
    if not outcomes:
        return Cell(None, None, 0)
    return Cell(round(100.0 * sum(outcomes) / len(outcomes), 2), bootstrap_interval(outcomes), len(outcomes))


@dataclass
class Row:
    """One Table 1 row: a method and its models, over the benchmarks it was run on."""

    label: str
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)  # (benchmark, subset or "Avg.")
    benchmark_avgs: dict[str, float] = field(default_factory=dict)


def _columns(runs: Sequence[Run]) -> list[tuple[str, str, str]]:
    """(benchmark, subset, header) in the paper's order, for what the runs cover."""
    columns = []
    present = {run.benchmark for run in runs}
    for benchmark in BENCHMARK_ORDER:
        if benchmark not in present:
            continue
        task = get_task(benchmark)
        ran = {r.get("subset") for run in runs if run.benchmark == benchmark for r in run.records}
        for subset in task.subsets:
            if subset.name in ran:
                columns.append((benchmark, subset.name, f"{task.title} {subset.column}"))
        columns.append((benchmark, "Avg.", f"{task.title} Avg."))
    return columns


def table1_rows(runs: Sequence[Run]) -> list[Row]:
    """Rows by label (runs of the same method and models on different benchmarks share a row)."""
    rows: dict[str, Row] = {}
    for run in runs:
        row = rows.setdefault(run.label, Row(run.label))
        task = get_task(run.benchmark)
        for subset in task.subsets:
            mine = [r for r in run.records if r.get("subset") == subset.name]
            if mine:
                row.cells[(run.benchmark, subset.name)] = _cell(mine)
        average = _cell(run.records)  # pooled over the subsets, as the paper's averages are
        row.cells[(run.benchmark, "Avg.")] = average
        if average.accuracy is not None:
            row.benchmark_avgs[run.benchmark] = average.accuracy
    return list(rows.values())


def _markdown(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def table1(runs: Sequence[Run]) -> tuple[str, str]:
    """Table 1 as Markdown (accuracy with its 95% interval) and CSV (separate columns)."""
    columns = _columns(runs)
    rows = table1_rows(runs)
    multi = len({b for b, _, _ in columns}) > 1
    header = ["Method", *(h for _, _, h in columns)] + (["Avg."] if multi else [])
    body = []
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["method", *(f"{h} {part}" for _, _, h in columns for part in ("acc", "lo", "hi", "n")), *(["avg"] if multi else [])])
    for row in rows:
        cells = [row.cells.get((b, s), Cell(None, None, 0)) for b, s, _ in columns]
        overall = round(sum(row.benchmark_avgs.values()) / len(row.benchmark_avgs), 2) if row.benchmark_avgs else None
        body.append([row.label, *(c.text() for c in cells)] + ([f"{overall:.2f}" if overall is not None else "-"] if multi else []))
        writer.writerow([row.label, *(v for c in cells for v in (c.accuracy, *(c.interval or (None, None)), c.n)),
                         *([overall] if multi else [])])
    return _markdown(header, body), out.getvalue()


def _accuracies(run: Run, subsets: Sequence[Any]) -> list[float | None]:
    """A run's accuracy per subset, then pooled."""
    values = [_cell([r for r in run.records if r.get("subset") == s.name]).accuracy for s in subsets]
    return values + [_cell(run.records).accuracy]


def table2(runs: Sequence[Run]) -> str | None:
    """Ablations against the full MAPS run of the same benchmark and models: accuracy and delta."""
    sections = []
    for benchmark in BENCHMARK_ORDER:
        mine = [run for run in runs if run.benchmark == benchmark and run.manifest["method"] == "maps"]
        full = [run for run in mine if not run.without]
        ablated = [run for run in mine if run.without]
        if not full or not ablated:
            continue
        base = full[0]
        task = get_task(benchmark)
        subsets = [s for s in task.subsets if any(r.get("subset") == s.name for r in base.records)]
        header = ["Variation", *(s.column for s in subsets), "Avg."]

        reference = _accuracies(base, subsets)
        body = [[f"MAPS ({base.models})", *(f"{v:.2f}" if v is not None else "-" for v in reference)]]
        for run in ablated:
            values = _accuracies(run, subsets)
            body.append([f"w/o {'+'.join(run.without)}", *(
                "-" if v is None or r is None else f"{v:.2f} ({v - r:+.2f})" for v, r in zip(values, reference)
            )])
        sections.append(f"{task.title}\n\n" + _markdown(header, body))
    return "\n\n".join(sections) if sections else None


def feedback_shares(runs: Sequence[Run]) -> dict[str, dict[str, float]]:
    """Figure 4 data: per benchmark, the share of problems whose (first) feedback went to each
    step, or to no regeneration. Full MAPS runs only."""
    shares: dict[str, dict[str, float]] = {}
    for benchmark in BENCHMARK_ORDER:
        scored = [r for run in runs if run.benchmark == benchmark and run.manifest["method"] == "maps" and not run.without for r in run.scored]
        if not scored:
            continue
        counts = {target: 0 for target in FEEDBACK_TARGETS}
        for record in scored:
            counts[record.get("feedback_step") or "none"] += 1
        shares[benchmark] = {target: round(count / len(scored), 4) for target, count in counts.items()}
    return shares


def solving_times(runs: Sequence[Run]) -> dict[str, dict[str, float]]:
    """Figure 6 data: mean solving seconds per value of question type, answer type, category
    and difficulty, where the benchmarks have those fields."""
    panels: dict[str, dict[str, list[float]]] = {panel: {} for panel in TIME_FIELDS}
    for run in runs:
        for record in run.scored:
            metadata = record.get("metadata") or {}
            for panel, fields in TIME_FIELDS.items():
                value = next((metadata[f] for f in fields if metadata.get(f) not in (None, "")), None)
                if value is not None:
                    panels[panel].setdefault(str(value), []).append(float(record.get("seconds") or 0))
    return {panel: {value: round(sum(times) / len(times), 3) for value, times in sorted(values.items())}
            for panel, values in panels.items() if values}


def usage_by_role(runs: Sequence[Run]) -> dict[str, dict[str, float | None]]:
    """Mean calls, tokens and cost per problem, by role, over every scored problem."""
    totals: dict[str, dict[str, float | None]] = {}
    problems = sum(len(run.scored) for run in runs)
    for run in runs:
        for record in run.scored:
            for role, usage in (record.get("usage_by_role") or {}).items():
                row = totals.setdefault(role, {"calls": 0.0, "prompt_tokens": 0.0, "completion_tokens": 0.0, "cost": 0.0})
                for key in ("calls", "prompt_tokens", "completion_tokens"):
                    row[key] += usage.get(key) or 0
                row["cost"] = None if row["cost"] is None or usage.get("cost") is None else row["cost"] + usage["cost"]
    return {role: {key: (round(value / problems, 6) if value is not None else None) for key, value in row.items()}
            for role, row in totals.items()} if problems else {}


def _usage_table(usage: dict[str, dict[str, float | None]]) -> str:
    body = [[role, f"{row['calls']:.2f}", f"{row['prompt_tokens']:.0f}", f"{row['completion_tokens']:.0f}",
             "-" if row["cost"] is None else f"${row['cost']:.5f}"] for role, row in usage.items()]
    return _markdown(["Role", "Calls / problem", "Prompt tokens / problem", "Completion tokens / problem", "Cost / problem"], body)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # headless: no display on servers and CI
    import matplotlib.pyplot as plt

    return plt


def plot_feedback(shares: dict[str, dict[str, float]], path: Path) -> Path:
    """Figure 4: stacked bars of where the Critic's feedback went, per benchmark."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9.5, 1.6 + 0.7 * len(shares)))
    colours = {"interpreter": "#b5179e", "aligner": "#3a86ff", "scholar": "#2a9d8f", "solver": "#e9c46a", "none": "#adb5bd"}
    names = [get_task(b).title for b in shares]
    left = [0.0] * len(shares)
    for target in FEEDBACK_TARGETS:
        values = [100 * shares[b][target] for b in shares]
        label = "no regeneration" if target == "none" else target.capitalize()
        bars = ax.barh(names, values, left=left, color=colours[target], label=label)
        for bar, value in zip(bars, values):
            if value >= 6:
                ax.text(bar.get_x() + bar.get_width() / 2, bar.get_y() + bar.get_height() / 2, f"{value:.0f}%", ha="center", va="center", fontsize=8)
        left = [l + v for l, v in zip(left, values)]
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of problems (%)")
    ax.set_title("Where the Critic's feedback went (first rollback per problem)")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    os.chmod(path, FILE_MODE)
    plt.close(fig)
    return path


def plot_times(times: dict[str, dict[str, float]], path: Path) -> Path:
    """Figure 6: mean solving time per value of each property, one panel per property."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(times), figsize=(4.2 * len(times), 4), squeeze=False)
    for ax, (panel, values) in zip(axes[0], times.items()):
        labels = list(values)
        ax.bar(range(len(labels)), list(values.values()), color="#3a86ff")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels([label if len(label) <= 18 else label[:17] + "…" for label in labels], rotation=35, ha="right", fontsize=8)
        ax.set_title(f"by {panel}")
        ax.set_ylabel("mean solving time (s)")
    fig.suptitle("Solving time")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    os.chmod(path, FILE_MODE)
    plt.close(fig)
    return path


@dataclass
class Report:
    markdown: str
    files: list[Path]


def write_report(run_dirs: Sequence[Path], out: Path) -> Report:
    """Read the runs and write table1.md/.csv, table2.md, figure4.png, figure6.png, usage.md and
    report.md into `out`."""
    runs = [load_run(path) for path in run_dirs]
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    parts = ["# MAPS report", "Runs: " + ", ".join(f"`{run.path}` ({run.label}, {run.benchmark}, {len(run.scored)} scored)" for run in runs)]
    markdown1, csv1 = table1(runs)
    write_text_atomic(out / "table1.md", markdown1 + "\n")
    write_text_atomic(out / "table1.csv", csv1)
    files += [out / "table1.md", out / "table1.csv"]
    parts += ["## Table 1: accuracy (%) with 95% bootstrap intervals", markdown1]
    ablation = table2(runs)
    if ablation:
        write_text_atomic(out / "table2.md", ablation + "\n")
        files.append(out / "table2.md")
        parts += ["## Table 2: ablations (delta against full MAPS)", ablation]
    shares = feedback_shares(runs)
    if shares:
        files.append(plot_feedback(shares, out / "figure4.png"))
        parts += ["## Figure 4: feedback shares", "![](figure4.png)",
                  _markdown(["Benchmark", *(t if t != "none" else "no regeneration" for t in FEEDBACK_TARGETS)],
                            [[get_task(b).title, *(f"{100 * s[t]:.1f}%" for t in FEEDBACK_TARGETS)] for b, s in shares.items()])]
    times = solving_times(runs)
    if times:
        files.append(plot_times(times, out / "figure6.png"))
        parts += ["## Figure 6: solving time", "![](figure6.png)"]
    usage = usage_by_role(runs)
    if usage:
        write_text_atomic(out / "usage.md", _usage_table(usage) + "\n")
        files.append(out / "usage.md")
        parts += ["## Cost and tokens per problem, by role", _usage_table(usage)]
    markdown = "\n\n".join(parts) + "\n"
    write_text_atomic(out / "report.md", markdown)
    files.append(out / "report.md")
    write_text_atomic(out / "report.json", json.dumps({"feedback_shares": shares, "solving_times": times, "usage_by_role": usage,
                                                 "table1": [{"label": r.label, "cells": {f"{b}/{s}": vars(c) for (b, s), c in r.cells.items()}}
                                                            for r in table1_rows(runs)]}, indent=2, default=str))
    files.append(out / "report.json")
    return Report(markdown, files)


__all__ = ["Report", "bootstrap_interval", "feedback_shares", "load_run", "solving_times", "table1", "table2",
           "usage_by_role", "write_report"]
