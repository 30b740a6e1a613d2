"""`maps report`: compare eval runs as the paper does: Table 1 (with Wilson intervals), with
`--paper` the paper's own rows beside ours with the difference and a random-choice row computed
from the data, Table 2 (ablation deltas), Figure 4 (where the Critic's feedback went), Figure 5
(accuracy per base model and benchmark), Figure 6 (solving time by question type, answer type,
category and difficulty; also on the paper's scale), and cost and tokens per role."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maps_autogen.artifacts import FILE_MODE, write_text_atomic
from maps_autogen.benchmarks import NAMES as BENCHMARK_ORDER  # NAMES is in the paper's column order
from maps_autogen.benchmarks import get_benchmark
from maps_autogen.errors import missing_extra
from maps_autogen.eval.table1 import Cell, Row, Run, _cell, _markdown, _subsets, load_run, table1, table1_rows
from maps_autogen.paper import OVERALL, PaperRow, paper_row_for
from maps_autogen.paper import table1_rows as paper_table1_rows
from maps_autogen.records import ResultRow, feedback_targets

PAPER_TIME_SCALE_S = 100.0  # the paper's Figure 6 shows every time relative to 100 s
# One colour per series (Figures 5 and 6), so a figure can be checked by colour.
SERIES_COLOURS = ("#3a86ff", "#e76f51", "#2a9d8f", "#b5179e", "#e9c46a", "#6a4c93", "#8ac926", "#ff595e")
# Figure 4: the n-th feedback target of the team (in team order) and "none" (no regeneration).
FEEDBACK_COLOURS = ("#b5179e", "#3a86ff", "#2a9d8f", "#e9c46a", "#6a4c93", "#e76f51", "#8ac926", "#ff595e")
NO_FEEDBACK_COLOUR = "#adb5bd"
# Figure 6 panels: which metadata field holds each property, per benchmark.
TIME_FIELDS = {
    "question type": ("question_type", "type"),
    "answer type": ("answer_type",),
    "category": ("category", "subfield"),
    "difficulty": ("difficulty",),
}


def _accuracies(run: Run, subsets: Sequence[Any]) -> list[float | None]:
    """A run's accuracy per subset, then pooled."""
    values = [_cell([r for r in run.records if r.subset == s.name]).accuracy for s in subsets]
    return values + [_cell(run.records).accuracy]


def table2(runs: Sequence[Run]) -> str | None:
    """Ablations against the full MAPS run of the same benchmark and models: accuracy and delta."""
    sections = []
    for benchmark in BENCHMARK_ORDER:
        mine = [run for run in runs if run.benchmark == benchmark and run.method == "maps"]
        full = [run for run in mine if not run.without]
        ablated = [run for run in mine if run.without]
        if not full or not ablated:
            continue
        task = get_benchmark(benchmark).task
        bases: dict[str, Run] = {}
        for run in full:
            bases.setdefault(run.models, run)  # per model set, its first full run
        for models, base in bases.items():
            # An ablation is compared with the full run of the same models only.
            same = [run for run in ablated if run.models == models]
            if not same:
                continue
            subsets = [s for s in _subsets(benchmark, [base]) if any(r.subset == s.name for r in base.records)]
            header = ["Variation", *(s.column for s in subsets), "Avg."]
            reference = _accuracies(base, subsets)
            body = [[f"MAPS ({base.models})", *(f"{v:.2f}" if v is not None else "-" for v in reference)]]
            for run in same:
                values = _accuracies(run, subsets)
                body.append([f"w/o {'+'.join(run.without)}", *(
                    "-" if v is None or r is None else f"{v:.2f} ({v - r:+.2f})" for v, r in zip(values, reference)
                )])
            title = task.title if len(bases) == 1 else f"{task.title} ({models})"
            sections.append(f"{title}\n\n" + _markdown(header, body))
    return "\n\n".join(sections) if sections else None


def feedback_shares(runs: Sequence[Run]) -> dict[str, dict[str, float]]:
    """Figure 4 data: per benchmark, the share of problems whose (first) feedback went to each
    step the recorded team's reviewer scores (in team order), or to no regeneration ("none",
    last). Full MAPS runs only."""
    shares: dict[str, dict[str, float]] = {}
    for benchmark in BENCHMARK_ORDER:
        full = [run for run in runs if run.benchmark == benchmark and run.method == "maps" and not run.without]
        scored = [r for run in full for r in run.scored]
        if not scored:
            continue
        targets = feedback_targets((run.manifest.team for run in full), (r.feedback_step for r in scored))
        counts = {target: 0 for target in targets}
        for record in scored:
            counts[record.feedback_step or "none"] += 1
        shares[benchmark] = {target: round(count / len(scored), 4) for target, count in counts.items()}
    return shares


def solving_times(runs: Sequence[Run]) -> dict[str, dict[str, Any]]:
    """Figure 6 data: per property (question type, answer type, category, difficulty), the
    values on the x axis and one series per Table 1 row (method and models; runs of the same
    row on different benchmarks pooled, as Table 1 pools them), holding the mean solving seconds
    per value (None where the row has no scored problem of that value). Every series of a
    panel shares its values; with several benchmarks a value is named "<benchmark>: <value>"
    and the values go in the paper's benchmark order, so panels line up across benchmarks.
    `{panel: {"values": [...], "series": {label: [seconds or None, ...]}}}`, panels without
    data left out."""
    several = len({run.benchmark for run in runs}) > 1
    order = {name: n for n, name in enumerate(BENCHMARK_ORDER)}
    panels: dict[str, dict[str, dict[tuple[int, str, str], list[float]]]] = {panel: {} for panel in TIME_FIELDS}
    for run in runs:
        for record in run.scored:
            metadata = record.metadata  # the data set's own fields, as the row carries them
            for panel, fields in TIME_FIELDS.items():
                value = next((metadata[f] for f in fields if metadata.get(f) not in (None, "")), None)
                if value is not None:
                    key = (order.get(run.benchmark, len(order)), run.benchmark, str(value))
                    panels[panel].setdefault(run.label, {}).setdefault(key, []).append(float(record.seconds))
    data: dict[str, dict[str, Any]] = {}
    for panel, series in panels.items():
        keys = sorted({key for times in series.values() for key in times})
        if not keys:
            continue
        names = [
            f"{get_benchmark(benchmark).task.title}: {value}" if several else value for _, benchmark, value in keys
        ]
        data[panel] = {"values": names, "series": {
            label: [round(sum(times[key]) / len(times[key]), 3) if key in times else None for key in keys]
            for label, times in series.items()}}
    return data


UsageRow = dict[str, float | None]
USAGE_KEYS = ("calls", "cached_calls", "prompt_tokens", "completion_tokens")


def usage_by_role(runs: Sequence[Run]) -> dict[str, dict[str, UsageRow]]:
    """By Table 1 row (method, ablation and models: `Run.label`), then by role: mean calls
    (and of them, answered from the cache), tokens and cost per problem over the row's scored
    problems. Runs of different methods or models are never averaged together."""
    by_label: dict[str, list[Run]] = {}
    for run in runs:
        by_label.setdefault(run.label, []).append(run)
    table: dict[str, dict[str, UsageRow]] = {}
    for label, group in by_label.items():
        totals: dict[str, UsageRow] = {}
        problems = sum(len(run.scored) for run in group)
        for run in group:
            for record in run.scored:
                for role, usage in record.usage_by_role.items():
                    row = totals.setdefault(role, {**dict.fromkeys(USAGE_KEYS, 0.0), "cost": 0.0})
                    for key in USAGE_KEYS:
                        row[key] = (row[key] or 0.0) + (getattr(usage, key) or 0)
                    row["cost"] = None if row["cost"] is None or usage.cost is None else row["cost"] + usage.cost
        if problems:
            table[label] = {role: {key: (round(value / problems, 6) if value is not None else None)
                                   for key, value in row.items()} for role, row in totals.items()}
    return table


def random_choice_row(runs: Sequence[Run]) -> Row:
    """The expected accuracy of guessing, from the problems the runs cover: 1/k for a problem
    with k choices, 0 for an open answer; per subset, and pooled per benchmark."""
    row = Row("random choice (expected, from the data)")
    for benchmark in BENCHMARK_ORDER:
        problems: dict[str, ResultRow] = {}
        for run in runs:
            if run.benchmark == benchmark:
                for record in run.records:
                    problems.setdefault(str(record.pid), record)
        known = [r for r in problems.values() if isinstance(r.metadata.get("choices"), int)]
        if not known:
            continue
        for subset in [*(s.name for s in _subsets(benchmark, runs)), "Avg."]:
            mine = [r for r in known if subset == "Avg." or r.subset == subset]
            if mine:
                chance = sum(1 / r.metadata["choices"] for r in mine if r.metadata["choices"] > 0) / len(mine)
                row.cells[(benchmark, subset)] = Cell(round(100 * chance, 2), None, len(mine))
        row.benchmark_avgs[benchmark] = row.cells[(benchmark, "Avg.")].accuracy or 0.0
    return row


def _overall(values: dict[str, float]) -> float | None:
    """The mean of the benchmark averages (the paper's last column)."""
    return round(sum(values.values()) / len(values), 2) if values else None


def _paper_average(paper: PaperRow, benchmarks: Sequence[str]) -> float | None:
    """The paper's mean of these benchmarks' averages."""
    return _overall({b: value for b in benchmarks if (value := paper.value(f"{b}/Avg.")) is not None})


def _difference(cell: Cell | None, paper_value: float | None) -> str:
    if cell is None or cell.accuracy is None or paper_value is None:
        return "-"
    return f"{cell.accuracy - paper_value:+.2f}"


def paper_table(runs: Sequence[Run]) -> tuple[str, str]:
    """Table 1 beside the paper: the paper's rows with every cell as printed, a random-choice
    row computed from the data, then ours; for each of our rows that reproduces a paper row
    (same method and model), "Δ vs paper" is our average minus the paper's over the same
    benchmarks, and a difference row gives it cell by cell. Markdown and CSV."""
    benchmarks = [b for b in BENCHMARK_ORDER if any(run.benchmark == b for run in runs)]
    columns: list[tuple[str, str, str]] = []
    for benchmark in benchmarks:
        task = get_benchmark(benchmark).task
        columns += [(benchmark, s.name, f"{task.title} {s.column}") for s in _subsets(benchmark, runs)]
        columns.append((benchmark, "Avg.", f"{task.title} Avg."))
    header = ["Source", "Method", *(h for _, _, h in columns), "Avg.", "Δ vs paper"]
    body: list[list[str]] = []
    every_benchmark = len(benchmarks) == len(BENCHMARK_ORDER)
    for paper in paper_table1_rows():
        average = _paper_average(paper, benchmarks)
        overall = paper.cells[OVERALL] if every_benchmark else ("-" if average is None else f"{average:.2f}")
        body.append(["paper", paper.label, *(paper.cells.get(f"{b}/{s}", "-") for b, s, _ in columns), overall, ""])
    ours = [(random_choice_row(runs), None)] + [
        (row, next((r for r in runs if r.label == row.label), None)) for row in table1_rows(runs)
    ]
    differences: list[list[str]] = []
    for row, run in ours:
        our_overall = _overall(row.benchmark_avgs)
        match = paper_row_for(run.method, run.model_names) if run is not None and not run.without else None
        delta = "-"
        if match is not None and our_overall is not None:
            reference = _paper_average(match, list(row.benchmark_avgs))
            delta = "-" if reference is None else f"{our_overall - reference:+.2f} ({match.label})"
            differences.append([f"{row.label} − {match.label}",
                                *(_difference(row.cells.get((b, s)), match.value(f"{b}/{s}")) for b, s, _ in columns)])
        body.append(
            [
                "this report",
                row.label,
                *(row.cells.get((b, s), Cell(None, None, 0)).text(False) for b, s, _ in columns),
                "-" if our_overall is None else f"{our_overall:.2f}",
                delta,
            ]
        )
    markdown = _markdown(header, body)
    if differences:
        markdown += "\n\nDifference against the paper (points, ours − paper):\n\n" + _markdown(
            ["Run", *(h for _, _, h in columns)], differences
        )
    out = io.StringIO()
    csv.writer(out).writerows([header, *body])
    return markdown, out.getvalue()


def accuracy_by_model(runs: Sequence[Run]) -> dict[str, dict[str, dict[str, float]]]:
    """Figure 5 data: per benchmark, per row (method and base model), accuracy per subset and
    pooled ("Avg."); full runs only (ablations are Table 2's)."""
    data: dict[str, dict[str, dict[str, float]]] = {}
    for row in table1_rows([run for run in runs if not run.without]):
        for (benchmark, subset), cell in row.cells.items():
            if cell.accuracy is not None:
                data.setdefault(benchmark, {}).setdefault(row.label, {})[subset] = cell.accuracy
    return {b: data[b] for b in BENCHMARK_ORDER if b in data}


def _usage_table(usage: dict[str, dict[str, UsageRow]]) -> str:
    body = [[label, role, f"{row['calls'] or 0:.2f}", f"{row['cached_calls'] or 0:.2f}",
             f"{row['prompt_tokens'] or 0:.0f}", f"{row['completion_tokens'] or 0:.0f}",
             "-" if row["cost"] is None else f"${row['cost']:.5f}"]
            for label, roles in usage.items() for role, row in roles.items()]
    return _markdown(
        ["Run", "Role", "Calls / problem", "From the cache ($0) / problem", "Prompt tokens / problem",
         "Completion tokens / problem", "Cost / problem"], body
    )


def _pyplot() -> Any:
    """matplotlib.pyplot, headless (the `report` extra)."""
    try:
        import matplotlib
    except ModuleNotFoundError as error:
        if error.name != "matplotlib":
            raise
        raise missing_extra("matplotlib", "report", "maps report's figures") from None

    matplotlib.use("Agg")  # headless: no display on servers and CI
    import matplotlib.pyplot as plt

    return plt


def _save_figure(fig: Any, path: Path) -> None:
    """Write a figure as PNG with the mode of every file we write, and free it."""
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=120)
    os.chmod(path, FILE_MODE)
    plt.close(fig)


def _all_targets(shares: dict[str, dict[str, float]]) -> list[str]:
    """The feedback targets of every benchmark, each once, in order, "none" last."""
    targets = list(dict.fromkeys(target for per_benchmark in shares.values() for target in per_benchmark))
    return sorted(targets, key=lambda target: target == "none")


def plot_feedback(shares: dict[str, dict[str, float]], path: Path) -> Path:
    """Figure 4: stacked bars of where the Critic's feedback went, per benchmark."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9.5, 1.6 + 0.7 * len(shares)))
    names = [get_benchmark(b).task.title for b in shares]
    left = [0.0] * len(shares)
    targets = _all_targets(shares)
    for number, target in enumerate(targets):
        values = [100 * shares[b].get(target, 0.0) for b in shares]
        label = "no regeneration" if target == "none" else target.capitalize()
        colour = NO_FEEDBACK_COLOUR if target == "none" else FEEDBACK_COLOURS[number % len(FEEDBACK_COLOURS)]
        bars = ax.barh(names, values, left=left, color=colour, label=label)
        for bar, value in zip(bars, values):
            if value >= 6:
                ax.text(
                    bar.get_x() + bar.get_width() / 2,
                    bar.get_y() + bar.get_height() / 2,
                    f"{value:.0f}%",
                    ha="center",
                    va="center",
                    fontsize=8,
                )
        left = [start + v for start, v in zip(left, values)]
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of problems (%)")
    ax.set_title("Where the reviewer's feedback went (first rollback per problem)")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    fig.tight_layout()
    _save_figure(fig, path)
    return path


def plot_times(times: dict[str, dict[str, Any]], path: Path, *, paper_scale: bool = False) -> Path:
    """Figure 6: one panel per property, one line per series (method and models) over the
    panel's values, every panel on the same time axis; on the paper's scale, each time relative
    to 100 s (1.0 = 100 s)."""
    plt = _pyplot()
    labels = list(dict.fromkeys(label for panel in times.values() for label in panel["series"]))
    colours = {label: SERIES_COLOURS[n % len(SERIES_COLOURS)] for n, label in enumerate(labels)}
    fig, axes = plt.subplots(1, len(times), figsize=(4.2 * len(times), 4.4), squeeze=False, sharey=True)
    scale = PAPER_TIME_SCALE_S if paper_scale else 1.0
    for ax, (panel, data) in zip(axes[0], times.items()):
        values = data["values"]
        for label, seconds in data["series"].items():
            ys = [float("nan") if t is None else t / scale for t in seconds]
            ax.plot(range(len(values)), ys, marker="o", color=colours[label], label=label)
        ax.set_xticks(range(len(values)))
        ax.set_xticklabels([v if len(v) <= 28 else v[:27] + "…" for v in values], rotation=35, ha="right", fontsize=8)
        ax.set_title(f"by {panel}")
    axes[0][0].set_ylim(bottom=0)
    axes[0][0].set_ylabel(
        f"solving time relative to {PAPER_TIME_SCALE_S:.0f} s" if paper_scale else "mean solving time (s)"
    )
    handles = [plt.Line2D([0], [0], color=colours[label], marker="o") for label in labels]
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(labels)), fontsize=8, frameon=False)
    fig.suptitle(
        f"Solving time relative to {PAPER_TIME_SCALE_S:.0f} s (the paper's scale)" if paper_scale else "Solving time"
    )
    fig.tight_layout(rect=(0, 0.08 + 0.05 * ((len(labels) - 1) // 3), 1, 1))
    _save_figure(fig, path)
    return path


def plot_models(data: dict[str, dict[str, dict[str, float]]], path: Path) -> Path:
    """Figure 5: accuracy per subset and pooled, one panel per benchmark, one bar colour per
    row (method and base model), as the paper compares base models with and without MAPS."""
    plt = _pyplot()
    labels = list(dict.fromkeys(label for rows in data.values() for label in rows))
    colours = {label: SERIES_COLOURS[n % len(SERIES_COLOURS)] for n, label in enumerate(labels)}
    fig, axes = plt.subplots(1, len(data), figsize=(max(5.0, 1.2 + 1.1 * len(labels)) * len(data), 4.2), squeeze=False)
    for ax, (benchmark, rows) in zip(axes[0], data.items()):
        task = get_benchmark(benchmark).task
        known = {s.name for s in task.subsets}
        ran = dict.fromkeys(name for values in rows.values() for name in values if name != "Avg.")
        groups = (
            [s.name for s in task.subsets if s.name in ran] + [name for name in ran if name not in known] + ["Avg."]
        )
        width = 0.8 / max(1, len(rows))
        for n, (label, values) in enumerate(rows.items()):
            xs = [g + (n - (len(rows) - 1) / 2) * width for g, name in enumerate(groups) if name in values]
            ax.bar(xs, [values[name] for name in groups if name in values], width=width * 0.92, color=colours[label])
        ax.set_xticks(range(len(groups)))
        columns = {s.name: s.column for s in task.subsets}
        ax.set_xticklabels([columns.get(name, name) for name in groups], fontsize=9)
        ax.set_ylim(0, 100)
        ax.set_ylabel("accuracy (%)")
        ax.set_title(task.title)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[label]) for label in labels]
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(labels)), fontsize=8, frameon=False)
    fig.suptitle("Accuracy per base model")
    fig.tight_layout(rect=(0, 0.06 + 0.05 * ((len(labels) - 1) // 3), 1, 1))
    _save_figure(fig, path)
    return path


@dataclass
class Report:
    markdown: str
    files: list[Path]


def write_report(run_dirs: Sequence[Path], out: Path, *, paper: bool = False) -> Report:
    """Read the runs and write table1.md/.csv, table2.md, figure4.png, figure5.png, figure6.png
    (its data as figure6.json), figure6_paper_scale.png, usage.md and report.md into `out`; with `paper`, also
    table1_paper.md/.csv (the paper's rows beside ours)."""
    runs = [load_run(path) for path in run_dirs]
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    parts = [
        "# MAPS report",
        "Runs: " + ", ".join(f"`{run.path}` ({run.label}, {run.benchmark}, {len(run.scored)} scored)" for run in runs),
    ]
    markdown1, csv1 = table1(runs)
    write_text_atomic(out / "table1.md", markdown1 + "\n")
    write_text_atomic(out / "table1.csv", csv1)
    files += [out / "table1.md", out / "table1.csv"]
    parts += ["## Table 1: accuracy (%) with 95% Wilson intervals", markdown1]
    if paper:
        markdown_paper, csv_paper = paper_table(runs)
        write_text_atomic(out / "table1_paper.md", markdown_paper + "\n")
        write_text_atomic(out / "table1_paper.csv", csv_paper)
        files += [out / "table1_paper.md", out / "table1_paper.csv"]
        parts += [
            "## Table 1 beside the paper (the paper's cells as printed; random choice expected from the data)",
            markdown_paper,
        ]
    ablation = table2(runs)
    if ablation:
        write_text_atomic(out / "table2.md", ablation + "\n")
        files.append(out / "table2.md")
        parts += ["## Table 2: ablations (delta against full MAPS)", ablation]
    shares = feedback_shares(runs)
    if shares:
        files.append(plot_feedback(shares, out / "figure4.png"))
        parts += [
            "## Figure 4: feedback shares",
            "![](figure4.png)",
            _markdown(
                ["Benchmark", *(t if t != "none" else "no regeneration" for t in _all_targets(shares))],
                [
                    [get_benchmark(b).task.title, *(f"{100 * s.get(t, 0.0):.1f}%" for t in _all_targets(shares))]
                    for b, s in shares.items()
                ],
            ),
        ]
    models = accuracy_by_model(runs)
    if models:
        files.append(plot_models(models, out / "figure5.png"))
        parts += ["## Figure 5: accuracy per base model", "![](figure5.png)"]
    times = solving_times(runs)
    if times:
        write_text_atomic(out / "figure6.json", json.dumps(times, indent=2) + "\n")
        files.append(out / "figure6.json")
        files.append(plot_times(times, out / "figure6.png"))
        files.append(plot_times(times, out / "figure6_paper_scale.png", paper_scale=True))
        parts += [
            "## Figure 6: solving time",
            "![](figure6.png)",
            f"On the paper's scale (relative to {PAPER_TIME_SCALE_S:.0f} s):",
            "![](figure6_paper_scale.png)",
        ]
    usage = usage_by_role(runs)
    if usage:
        write_text_atomic(out / "usage.md", _usage_table(usage) + "\n")
        files.append(out / "usage.md")
        parts += ["## Cost and tokens per problem, by Table 1 row and role (calls served from the cache cost $0)",
                  _usage_table(usage)]
    markdown = "\n\n".join(parts) + "\n"
    write_text_atomic(out / "report.md", markdown)
    files.append(out / "report.md")
    write_text_atomic(
        out / "report.json",
        json.dumps(
            {
                "feedback_shares": shares,
                "solving_times": times,
                "usage_by_role": usage,
                "accuracy_by_model": models,
                "table1": [
                    {"label": r.label, "cells": {f"{b}/{s}": vars(c) for (b, s), c in r.cells.items()}}
                    for r in table1_rows(runs)
                ],
            },
            indent=2,
            default=str,
        ),
    )
    files.append(out / "report.json")
    return Report(markdown, files)


__all__ = ["Report", "accuracy_by_model", "feedback_shares", "paper_table", "random_choice_row",
           "solving_times", "table2", "usage_by_role", "write_report"]
