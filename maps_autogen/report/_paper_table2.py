"""`maps report --paper`'s Table 2: the paper's ablation rows (OlympiadBench) with every cell as
printed, the cells its own numbers contradict flagged and explained (report/paper's
`table2_checks`), then this report's full MAPS and ablation runs on OlympiadBench, each with its
difference from the paper's row that leaves out the same agent."""

from __future__ import annotations

from collections.abc import Sequence

from maps_autogen._util import csv_text, markdown_table
from maps_autogen.benchmarks import get_benchmark
from maps_autogen.eval import group_runs
from maps_autogen.eval._table1 import Run, _cell
from maps_autogen.problem import Task
from maps_autogen.report.paper import TABLE2_BENCHMARK, AblationRow, Flag, paper_row_for, table2_checks, table2_rows

FLAG = "⚠"  # beside a printed cell that does not follow from the paper's own numbers


def _paper_match(run: Run) -> AblationRow | None:
    """The paper's Table 2 row a run of ours reproduces: a MAPS run on the paper's model (its
    Table 1 MAPS row's) that leaves out the step named as the paper's agent (none: the full team)."""
    served = run.served
    if run.method != "maps" or served.several or paper_row_for("maps", set(served.served)) is None:
        return None
    left_out = "+".join(run.without)
    return next((row for row in table2_rows() if row.without == left_out), None)


def paper_table2(runs: Sequence[Run]) -> tuple[str, str]:
    """Table 2 beside the paper, as Markdown (with the notes under it) and CSV."""
    task = get_benchmark(TABLE2_BENCHMARK).task
    columns = [*(f"{TABLE2_BENCHMARK}/{subset.name}" for subset in task.subsets), f"{TABLE2_BENCHMARK}/Avg."]
    flags = {(flag.row, flag.column): flag for flag in table2_checks({s.name: s.paper_size for s in task.subsets})}
    header = ["Source", "Variation", *(subset.column for subset in task.subsets), "Avg.", "Δ vs paper"]
    body = [[f"paper ({row.source})", row.row,
             *(row.cells.get(column, "-") + (f" {FLAG}" if (row.row, column) in flags else "") for column in columns),
             ""] for row in table2_rows()]
    group_runs(runs)  # the rows' labels
    ours = sorted((run for run in runs if run.benchmark == TABLE2_BENCHMARK and run.method == "maps"),
                  key=lambda run: bool(run.without))
    for run in ours:
        cells = [_cell([r for r in run.records if r.subset == subset.name]) for subset in task.subsets]
        average = _cell(run.records)
        match = _paper_match(run)
        printed = match.value(f"{TABLE2_BENCHMARK}/Avg.") if match is not None else None
        delta = "-"
        if match is not None and printed is not None and average.accuracy is not None:
            flagged = flags.get((match.row, f"{TABLE2_BENCHMARK}/Avg."))
            follows = flagged.follows if flagged is not None else None
            delta = f"{average.accuracy - printed:+.2f} ({match.row}" + (
                "" if follows is None else f"; {average.accuracy - follows:+.2f} against the {follows:.2f} its cells "
                                           "give") + ")"
        body.append(["this report", run.label, *(cell.text(False) for cell in cells), average.text(False), delta])
    notes = [f"{FLAG} {flag.row}, {task.title} {_column_name(flag.column, task)} {flag.printed:.2f}: {flag.why}"
             + _delta_note(flag) + "." for flag in flags.values()]
    notes.append("Δ vs paper: a row's Avg. minus the printed Avg. of the paper's row that leaves out the same agent "
                 "(a run matches it when it leaves out the step of that agent's name and its model is the paper's, "
                 "GPT-4o), in points; the paper's Avg. is its cells' mean weighted by the subsets' sizes, as ours "
                 "pools the problems.")
    if not ours:
        notes.append(f"This report has no MAPS run on {task.title}: only the paper's rows are shown.")
    markdown = markdown_table(header, body) + "\n\n" + "\n".join(f"- {note}" for note in notes)
    return markdown, csv_text([header, *body])


def _column_name(column: str, task: Task) -> str:
    subset = column.split("/", 1)[1]
    return next((s.column for s in task.subsets if s.name == subset), subset)


def _delta_note(flag: Flag) -> str:
    """For a flagged average: what the paper's Δ against MAPS would be from the average its cells give."""
    full = next((row for row in table2_rows() if not row.without), None)
    reference = full.value(f"{TABLE2_BENCHMARK}/Avg.") if full is not None else None
    if flag.follows is None or reference is None:
        return ""
    return (f"; the paper's Δ against MAPS ({flag.printed - reference:+.2f}, its text's drop of "
            f"{reference - flag.printed:.2f}%) follows the printed figure, from {flag.follows:.2f} it is "
            f"{flag.follows - reference:+.2f}")


__all__ = ["FLAG", "paper_table2"]
