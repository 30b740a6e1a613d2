"""`maps report`: compare eval runs as the paper does: Table 1 (with Wilson intervals), MAPS
against each baseline and ablation on the same problems (paired: the difference with its 95%
interval and an exact McNemar p-value), with
`--paper` the paper's own rows beside ours with the difference and a random-choice row computed
from the data, Table 2 (ablation deltas), Figure 4 (where the Critic's first decision went),
Figure 5 (accuracy per base model and benchmark), Figure 6 (solving time by question type,
answer type, category and difficulty, from the field each benchmark has; also on the paper's
scale), cost and tokens per role, and tokens and cost per problem and per correct answer.

Every table and figure has one row (or bar, or line) per group of runs under the same verdict
settings (eval/_table_rows.py), labelled by the models that answered and by what sets it apart;
the report lists which runs went into which row. Nothing is averaged across rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maps_autogen._util import csv_text, folder_built_beside, markdown_table, markdown_text, write_text_atomic
from maps_autogen.benchmarks import NAMES as BENCHMARK_ORDER  # NAMES is in the paper's column order
from maps_autogen.benchmarks import get_benchmark
from maps_autogen.eval import ablation_settings, answer_cost_table, answer_costs, by_batch, group_runs
from maps_autogen.eval._table1 import (
    Cell,
    Row,
    Run,
    _cell,
    _subsets,
    failed_note,
    load_run,
    table1,
    table1_rows,
)
from maps_autogen.records import ResultRow, feedback_targets
from maps_autogen.report._figures import (
    PAPER_TIME_SCALE_S,
    all_targets,
    bar_names,
    plot_feedback,
    plot_models,
    plot_times,
    target_label,
)
from maps_autogen.report._paired import paired_comparisons, paired_table
from maps_autogen.report._paper_table2 import FLAG, paper_table2
from maps_autogen.report.paper import OVERALL, PaperRow, human_margin, paper_row_for, reference_notes
from maps_autogen.report.paper import table1_rows as paper_table1_rows
from maps_autogen.scoring import first_decision

# Figure 6 panels: which row field holds each property, per benchmark (a benchmark without
# such a field has no values in that panel). MathVista has no difficulty: its `grade` (elementary
# school ... college) stands for it; OlympiadBench's categories are its `subfield`s.
TIME_FIELDS: dict[str, dict[str, str]] = {
    "question type": {"mathvista": "question_type", "emma": "type", "olympiadbench": "question_type",
                      "custom": "question_type"},
    "answer type": {"mathvista": "answer_type", "olympiadbench": "answer_type", "custom": "answer_type"},
    "category": {"mathvista": "category", "emma": "category", "olympiadbench": "subfield", "custom": "category"},
    "difficulty": {"mathvista": "grade", "olympiadbench": "difficulty", "custom": "difficulty"},
}


def _accuracies(run: Run, subsets: Sequence[Any]) -> list[float | None]:
    """A run's accuracy per subset, then pooled."""
    values = [_cell([r for r in run.records if r.subset == s.name]).accuracy for s in subsets]
    return values + [_cell(run.records).accuracy]


def table2(runs: Sequence[Run]) -> str | None:
    """Ablations against the full MAPS run of the same benchmark under the same settings apart
    from the steps left out (eval/table_rows.ablation_settings): accuracy and delta. An ablation
    no full run matches is named below the table, never compared with another team's run."""
    sections, alone = [], []
    for benchmark in BENCHMARK_ORDER:
        mine = [run for run in runs if run.benchmark == benchmark and run.method == "maps"]
        full = [run for run in mine if not run.without]
        ablated = [run for run in mine if run.without]
        if not ablated:
            continue
        task = get_benchmark(benchmark).task
        bases: list[tuple[Run, list[Run]]] = []
        for run in ablated:
            key = ablation_settings(run)
            base = next((candidate for candidate in full if ablation_settings(candidate) == key), None)
            if base is None:
                alone.append(f"{markdown_text(run.label)} on {task.title} ({markdown_text(run.path)})")
                continue
            group = next((same for known, same in bases if known is base), None)
            if group is None:
                bases.append((base, [run]))
            else:
                group.append(run)
        for base, same in bases:
            subsets = [s for s in _subsets(benchmark, [base]) if any(r.subset == s.name for r in base.records)]
            header = ["Variation", *(s.column for s in subsets), "Avg."]
            reference = _accuracies(base, subsets)
            body = [[base.label, *(f"{v:.2f}" if v is not None else "-" for v in reference)]]
            for run in same:
                values = _accuracies(run, subsets)
                body.append([f"w/o {'+'.join(run.without)}", *(
                    "-" if v is None or r is None else f"{v:.2f} ({v - r:+.2f})" for v, r in zip(values, reference)
                )])
            title = task.title if len(bases) == 1 else f"{task.title}: {markdown_text(base.label)}"
            sections.append(f"{title}\n\n" + markdown_table(header, body))
    if alone:
        sections.append("Ablations without a full MAPS run under the same settings (not compared): "
                        + "; ".join(alone) + ".")
    return "\n\n".join(sections) if sections else None


def feedback_shares(runs: Sequence[Run]) -> dict[str, dict[str, dict[str, float]]]:
    """Figure 4 data: per benchmark and report row (full MAPS runs whose team has a reviewer),
    the share of the run's problems (failed ones included) by the reviewer's first decision
    (`tally.first_decision`): each step the recorded team's reviewer scores (in team order),
    "none" (no regeneration), a failed review with no rollback allowed, and "no usable review"
    (never counted as a pass)."""
    shares: dict[str, dict[str, dict[str, float]]] = {}
    group_runs(runs)
    for benchmark in BENCHMARK_ORDER:
        for run in runs:
            team = run.manifest.team
            if run.benchmark != benchmark or run.method != "maps" or run.without or not run.records or (
                    team is not None and team.reviewer is None):
                continue
            decisions = [first_decision(record) for record in run.records]
            counts = {target: 0 for target in feedback_targets([team], decisions)}
            for decision in decisions:
                counts[decision] += 1
            shares.setdefault(benchmark, {})[run.label] = {
                target: round(count / len(decisions), 4) for target, count in counts.items()}
    return shares


def solving_times(runs: Sequence[Run]) -> dict[str, dict[str, Any]]:
    """Figure 6 data: per property (question type, answer type, category, difficulty), the
    values on the x axis, the field each benchmark's values come from (TIME_FIELDS), and one
    series per report row (runs of the same row on different benchmarks on one line, as Table 1
    has them), holding the mean solving seconds per value (None where the row has no scored
    problem of that value). Every series of a panel shares its values; with several benchmarks a
    value is named "<benchmark>: <value>" and the values go in the paper's benchmark order, so
    panels line up across benchmarks. `{panel: {"values": [...], "fields": {benchmark: field},
    "series": {label: [seconds or None, ...]}}}`, panels without data left out."""
    group_runs(runs)
    several = len({run.benchmark for run in runs}) > 1
    order = {name: n for n, name in enumerate(BENCHMARK_ORDER)}
    panels: dict[str, dict[str, dict[tuple[int, str, str], list[float]]]] = {panel: {} for panel in TIME_FIELDS}
    used: dict[str, dict[str, str]] = {panel: {} for panel in TIME_FIELDS}
    for run in runs:
        for panel, fields in TIME_FIELDS.items():
            field = fields.get(run.benchmark)
            if field is None:
                continue
            for record in run.scored:
                value = record.metadata.get(field)  # the data set's own fields, as the row carries them
                if value in (None, "") or (record.usage is not None and record.usage.batch_calls):
                    continue  # (a problem answered by batch took the batch queue's time, not its own)
                key = (order.get(run.benchmark, len(order)), run.benchmark, str(value))
                panels[panel].setdefault(run.label, {}).setdefault(key, []).append(float(record.seconds))
                used[panel][run.benchmark] = field
    data: dict[str, dict[str, Any]] = {}
    for panel, series in panels.items():
        keys = sorted({key for times in series.values() for key in times})
        if not keys:
            continue
        names = [
            f"{get_benchmark(benchmark).task.title}: {value}" if several else value for _, benchmark, value in keys
        ]
        fields = {b: used[panel][b] for b in sorted(used[panel], key=lambda b: order.get(b, len(order)))}
        data[panel] = {"values": names, "fields": fields, "series": {
            label: [round(sum(times[key]) / len(times[key]), 3) if key in times else None for key in keys]
            for label, times in series.items()}}
    return data


UsageRow = dict[str, float | None]
USAGE_KEYS = ("calls", "cached_calls", "prompt_tokens", "cached_tokens", "completion_tokens", "batch_calls")


def usage_by_role(runs: Sequence[Run]) -> dict[str, dict[str, UsageRow]]:
    """By report row (`Run.label`: runs under the same verdict settings), then by role: mean
    calls (and of them, answered from the cache), tokens and cost per problem over the row's
    scored problems. Runs of different rows are never averaged together."""
    group_runs(runs)
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
    # Only the paper's rows with a cell in these columns (the paper reports no custom benchmark).
    papers = [paper for paper in paper_table1_rows() if any(f"{b}/{s}" in paper.cells for b, s, _ in columns)]
    for paper in papers:
        average = _paper_average(paper, benchmarks)
        overall = paper.cells[OVERALL] if every_benchmark else ("-" if average is None else f"{average:.2f}")
        body.append([f"paper ({paper.source})", paper.label, *(paper.cells.get(f"{b}/{s}", "-") for b, s, _ in columns),
                     overall, ""])
    rows = table1_rows(runs)
    ours = [(random_choice_row(runs), None)] + [(row, row.runs[0]) for row in rows]
    differences: list[list[str]] = []
    for row, run in ours:
        our_overall = _overall(row.benchmark_avgs)
        # A paper row is reproduced by the model that answered, not the one asked for.
        served = run.served if run is not None else None
        match = (paper_row_for(run.method, set(served.served))
                 if run is not None and served is not None and not run.without and not served.several else None)
        delta = "-"
        if match is not None and our_overall is not None:
            reference = _paper_average(match, list(row.benchmark_avgs))
            delta = "-" if reference is None else f"{our_overall - reference:+.2f} ({match.label})"
            cells = [_difference(row.cells.get((b, s)), match.value(f"{b}/{s}")) for b, s, _ in columns]
            if any(cell != "-" for cell in cells):
                differences.append([f"{row.label} − {match.label}", *cells])
        body.append(
            [
                "this report",
                row.label,
                *(row.cells.get((b, s), Cell(None, None, 0)).text(False) for b, s, _ in columns),
                "-" if our_overall is None else f"{our_overall:.2f}",
                delta,
            ]
        )
    margin = human_margin()
    margin_note = [] if margin is None else [
        f"the paper's \"MAPS ... exceeds human experts by {margin.printed:.2f}%\" is MAPS's Avg. {margin.maps:.2f} "
        f"minus the Human Expert's printed {margin.human_printed:.2f}, itself the mean of the uncorrected EMMA "
        f"average; from the corrected one the Human Expert's Avg. is {margin.human_corrected:.2f}, and MAPS leads "
        f"by {margin.corrected:.2f} points"]
    titles = ", ".join(get_benchmark(b).task.title for b in benchmarks)
    sources = ([*reference_notes(), *margin_note] if papers
               else [f"the paper: none of its rows reports {titles}, so none is shown"])
    markdown = markdown_table(header, body) + failed_note(rows) + "\n\nWhere the rows come from:\n\n" + "\n".join(
        f"- {note}" for note in [*sources, "random choice (expected, from the data): computed here from "
                                 "the problems the runs cover: 1/k for a problem with k choices, 0 for an open answer",
                                 "this report: the runs listed under 'Rows and the runs in them'"])
    if differences:
        markdown += "\n\nDifference against the paper (points, ours − paper):\n\n" + markdown_table(
            ["Run", *(h for _, _, h in columns)], differences
        )
    return markdown, csv_text([header, *body])


def accuracy_by_model(runs: Sequence[Run]) -> dict[str, dict[str, dict[str, float]]]:
    """Figure 5 data: per benchmark, per report row (method and base model), accuracy per subset
    and pooled ("Avg."); full runs only (ablations are Table 2's)."""
    data: dict[str, dict[str, dict[str, float]]] = {}
    for row in table1_rows(runs):  # labelled among all the runs, as every other table and figure
        if any(run.without for run in row.runs):
            continue
        for (benchmark, subset), cell in row.cells.items():
            if cell.accuracy is not None:
                data.setdefault(benchmark, {}).setdefault(row.label, {})[subset] = cell.accuracy
    return {b: data[b] for b in BENCHMARK_ORDER if b in data}


def rows_and_runs(runs: Sequence[Run]) -> str:
    """Which runs went into which report row, and what sets a row apart."""
    body = [[group.label, str(run.path), get_benchmark(run.benchmark).task.title, str(len(run.scored)),
             str(run.failed), "; ".join(group.differs) or "-"]
            for group in group_runs(runs) for run in group.runs]
    return markdown_table(["Row", "Run folder", "Benchmark", "Scored", "Failed", "What sets the row apart"], body)


def feedback_table(shares: dict[str, dict[str, dict[str, float]]]) -> str:
    """Figure 4's numbers: one line per bar."""
    targets = all_targets(shares)
    return markdown_table(["Bar", *(target_label(t) for t in targets)],
                     [[name, *(f"{100 * shares[b][label].get(t, 0.0):.1f}%" for t in targets)]
                      for b, label, name in bar_names(shares)])


def _usage_table(usage: dict[str, dict[str, UsageRow]]) -> str:
    body = [[label + by_batch(row["batch_calls"] or 0, row["calls"] or 0), role,
             f"{row['calls'] or 0:.2f}", f"{row['cached_calls'] or 0:.2f}",
             f"{row['prompt_tokens'] or 0:.0f}", f"{row['cached_tokens'] or 0:.0f}",
             f"{row['completion_tokens'] or 0:.0f}",
             "-" if row["cost"] is None else f"${row['cost']:.5f}"]
            for label, roles in usage.items() for role, row in roles.items()]
    return markdown_table(
        ["Run", "Role", "Calls / problem", "From the cache ($0) / problem", "Prompt tokens / problem",
         "Of them cached by the service / problem", "Completion tokens / problem", "Cost / problem"], body
    )


#: What each file `write_report` may write holds (`maps report` lists every file it wrote with it).
WHAT_EACH_FILE = {
    "table1.md": "Table 1, accuracy with 95% intervals", "table1.csv": "Table 1 with each cell's standard error",
    "table1_paper.md": "the paper's Table 1 beside ours (--paper)", "table1_paper.csv": "the same, as CSV",
    "table2_paper.md": "the paper's Table 2 beside ours, its contradicted cells flagged (--paper)",
    "table2_paper.csv": "the same, as CSV",
    "table2.md": "Table 2, ablations against full MAPS", "figure4.png": "Figure 4, where the first review went",
    "figure5.png": "Figure 5, accuracy per subset and base model", "figure6.png": "Figure 6, solving time",
    "figure6_paper_scale.png": "Figure 6 relative to 100 s, as the paper shows it",
    "figure6.json": "Figure 6's data", "usage.md": "cost and tokens per problem, by row and role",
    "tokens.md": "tokens and cost per problem and per correct answer", "report.md": "all of the above, with the rows",
    "report.json": "the figures as data",
}


@dataclass
class Report:
    """What `write_report` wrote: the report's Markdown and every file, in the order written."""

    markdown: str
    files: list[Path]


#: Marks a folder as written by `maps report` and lists its files (_util/_folders.py).
REPORT_MARKER = ".maps-report"


def write_report(run_dirs: Sequence[Path], out: Path, *, paper: bool = False) -> Report:
    """Read the runs and write table1.md/.csv, table2.md (with an ablation), figure4.png, figure5.png,
    figure6.png (its data as figure6.json), figure6_paper_scale.png, usage.md, tokens.md, report.md
    and report.json into `out` (each only when the runs hold what it shows: WHAT_EACH_FILE); with
    `paper`, also table1_paper.md/.csv and table2_paper.md/.csv (the paper's rows beside ours, its
    cells that do not follow from its own numbers flagged). `files` lists every one. The folder is
    built beside `out` and moved in whole; an `out` holding files of anyone else is refused, never
    emptied (an earlier report's is replaced)."""
    runs = [load_run(path) for path in run_dirs]
    with folder_built_beside(out, fix="choose a new or empty --out folder", marker=REPORT_MARKER,
                             written_by="maps report (a later report may replace this folder)") as building:
        markdown, files = _write_files(runs, building, paper=paper)
    return Report(markdown, [out / path.relative_to(building) for path in files])


def _write_files(runs: Sequence[Run], out: Path, *, paper: bool) -> tuple[str, list[Path]]:
    """Write the report's files into `out` (the folder being built); its markdown and files."""
    files: list[Path] = []
    parts = [
        "# MAPS report",
        "## Rows and the runs in them",
        "Runs share a row only when every setting that can change a verdict is the same (team, personalities, "
        "prompts, review, models and what they were sent, method, steps left out), one run per benchmark; a row "
        "names the models that answered (and the ones asked for where they differ). Every table and figure "
        "below has these rows; nothing is averaged across them.",
        rows_and_runs(runs),
    ]
    markdown1, csv1 = table1(runs)
    write_text_atomic(out / "table1.md", markdown1 + "\n")
    write_text_atomic(out / "table1.csv", csv1)
    files += [out / "table1.md", out / "table1.csv"]
    parts += ["## Table 1: accuracy (%) with 95% Wilson intervals (correct / scored)", markdown1]
    if paper:
        markdown_paper, csv_paper = paper_table(runs)
        write_text_atomic(out / "table1_paper.md", markdown_paper + "\n")
        write_text_atomic(out / "table1_paper.csv", csv_paper)
        files += [out / "table1_paper.md", out / "table1_paper.csv"]
        markdown_table2, csv_table2 = paper_table2(runs)
        write_text_atomic(out / "table2_paper.md", markdown_table2 + "\n")
        write_text_atomic(out / "table2_paper.csv", csv_table2)
        files += [out / "table2_paper.md", out / "table2_paper.csv"]
        parts += [
            "## Table 1 beside the paper (the paper's cells as printed; random choice expected from the data)",
            markdown_paper,
            "## Table 2 beside the paper (OlympiadBench ablations; the paper's cells as printed, "
            f"{FLAG} where its own numbers contradict a cell)",
            markdown_table2,
        ]
    ablation = table2(runs)
    if ablation:
        write_text_atomic(out / "table2.md", ablation + "\n")
        files.append(out / "table2.md")
        parts += ["## Table 2: ablations (delta against full MAPS)", ablation]
    pairs, unpaired = paired_comparisons(runs)
    if pairs or unpaired:
        parts += ["## MAPS against each baseline and ablation on the same problems", paired_table(pairs, unpaired)]
    shares = feedback_shares(runs)
    if shares:
        files.append(plot_feedback(shares, out / "figure4.png"))
        parts += [
            "## Figure 4: where the reviewer's first decision went",
            "![](figure4.png)",
            "Every problem of a full MAPS run is counted once (failed ones included), by its reviewer's first "
            "decision: the step its first rollback re-ran, no regeneration (the first review passed the work), "
            "review failed, no rollback allowed (the first review did not pass and `critic.max_rollbacks` was 0, "
            "so the chat stopped there), or no usable review (the first review was unreadable, or the problem "
            "failed before a review decided), which is never counted as a pass.",
            feedback_table(shares),
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
            "Mean seconds per scored problem (problems answered by batch left out: their time is the batch "
            "queue's), by the field each benchmark has for each property: "
            + "; ".join(f"{panel}: " + ", ".join(f"{get_benchmark(b).task.title} `{field}`"
                                                  for b, field in data["fields"].items())
                        for panel, data in times.items()) + ".",
            "![](figure6.png)",
            f"On the paper's scale (relative to {PAPER_TIME_SCALE_S:.0f} s):",
            "![](figure6_paper_scale.png)",
        ]
    usage = usage_by_role(runs)
    if usage:
        write_text_atomic(out / "usage.md", _usage_table(usage) + "\n")
        files.append(out / "usage.md")
        parts += ["## Cost and tokens per problem, by report row and role (calls served from the cache cost $0)",
                  _usage_table(usage)]
    per_answer = answer_costs(runs)
    if per_answer:
        write_text_atomic(out / "tokens.md", answer_cost_table(per_answer) + "\n")
        files.append(out / "tokens.md")
        parts += ["## Tokens and cost per problem and per correct answer, by report row",
                  "Over every problem each row ran, failed ones included (their calls were paid for); accuracy "
                  "is correct / scored (a failure has no verdict, never counted wrong). Cached: the prompt tokens "
                  "the services said they read from their caches (priced at the cached-input price where known). "
                  "Calls served from our response cache cost $0.",
                  answer_cost_table(per_answer)]
    markdown = "\n\n".join(parts) + "\n"
    write_text_atomic(out / "report.md", markdown)
    files.append(out / "report.md")
    write_text_atomic(
        out / "report.json",
        json.dumps(
            {
                "feedback_shares": shares,
                "paired": [pair.as_json() for pair in pairs],
                "not_paired": [item.as_json() for item in unpaired],
                "solving_times": times,
                "usage_by_role": usage,
                "answer_costs": [vars(row) for row in per_answer],
                "accuracy_by_model": models,
                "table1": [
                    {"label": r.label, "runs": [str(run.path) for run in r.runs],
                     "cells": {f"{b}/{s}": vars(c) for (b, s), c in r.cells.items()}}
                    for r in table1_rows(runs)
                ],
            },
            indent=2,
            default=str,
        ),
    )
    files.append(out / "report.json")
    return markdown, files


__all__ = ["TIME_FIELDS", "WHAT_EACH_FILE", "Report", "accuracy_by_model", "feedback_shares", "feedback_table",
           "paper_table", "random_choice_row", "rows_and_runs", "solving_times", "table2", "usage_by_role",
           "write_report"]
