"""Tokens per correct answer: what one report row (eval/_table_rows.py) spent, per problem and per
correct answer, beside its accuracy: the figure a user weighs MAPS against CoT with.

Counted over every problem the row's runs ran, failed ones included (their calls were paid
for); accuracy is correct / scored (scoring/_tally.py: a failure has no verdict and is never counted
wrong). Per problem divides by the problems run, per correct answer by the correct ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from maps_autogen._util import markdown_table
from maps_autogen.eval._table_rows import group_runs
from maps_autogen.records import Usage
from maps_autogen.scoring import Tally

if TYPE_CHECKING:
    from maps_autogen.eval._table1 import Run

#: What is counted, in the order the table shows it.
COUNTED = ("prompt_tokens", "cached_tokens", "completion_tokens", "calls")


@dataclass(frozen=True)
class AnswerCost:
    """One report row's totals: problems run, scored, correct, failed; tokens, calls and cost
    (None when some call's price is unknown) over all of them."""

    label: str
    problems: int
    scored: int
    correct: int
    failed: int
    accuracy: float | None
    totals: dict[str, int]
    cost: float | None
    tokens_estimated: bool  # some of the tokens are our own count (a server reported none)
    batch_calls: int = 0  # of the calls, answered through a batch API (maps eval --batch), at its prices

    def per(self, count: int) -> dict[str, float | None]:
        """Every total (and the cost) divided by `count`; None for all when `count` is 0."""
        shares: dict[str, float | None] = {
            name: round(value / count, 2) if count else None for name, value in self.totals.items()}
        shares["cost"] = round(self.cost / count, 6) if count and self.cost is not None else None
        return shares


def answer_costs(runs: Sequence[Run]) -> list[AnswerCost]:
    """Per report row (runs under the same verdict settings, never pooled across rows): the
    tokens (prompt, of them cached, completion), calls and cost of all its problems."""
    table = []
    for group in group_runs(runs):
        tally = Tally()
        totals = dict.fromkeys(COUNTED, 0)
        cost: float | None = 0.0
        estimated = False
        batched = 0
        for run in group.runs:
            for record in run.records:
                tally.add_row(record)
                used = record.usage or Usage()
                for name in COUNTED:
                    totals[name] += getattr(used, name)
                spent = used.spent()
                cost = None if cost is None or spent is None else cost + spent
                estimated = estimated or used.tokens_estimated
                batched += used.batch_calls
        table.append(AnswerCost(group.label, tally.n, tally.scored, tally.correct, tally.failed, tally.accuracy,
                                totals, cost, estimated, batched))
    return table


def _shown(value: float | None, cost: bool = False) -> str:
    if value is None:
        return "–"
    return f"${value:.5f}" if cost else f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


def by_batch(batch_calls: float, calls: float) -> str:
    """What a report row says of its calls that went through a batch API (nothing when none
    did): all of them, how many of how many, or (means per problem) what share."""
    if not batch_calls:
        return ""
    if batch_calls >= calls:
        share = "all"
    elif float(batch_calls).is_integer() and float(calls).is_integer():
        share = f"{int(batch_calls):,} of {int(calls):,}"
    else:
        share = f"{100 * batch_calls / calls:.0f}% of the"
    return f" ({share} calls by batch, at batch prices)"


def answer_cost_table(costs: Sequence[AnswerCost]) -> str:
    """The table `maps report` shows: per row, accuracy, then prompt tokens (of them cached),
    completion tokens, calls and cost per problem and per correct answer."""
    header = ["Row", "Accuracy (correct / scored)", "Failed"]
    for unit in ("problem", "correct answer"):
        header += [f"Prompt tokens / {unit}", "of them cached", f"Completion tokens / {unit}", f"Calls / {unit}",
                   f"Cost / {unit}"]
    body = []
    for row in costs:
        accuracy = "–" if row.accuracy is None else f"{row.accuracy:.2f}% ({row.correct} / {row.scored})"
        cells = [row.label + (" (tokens partly estimated)" if row.tokens_estimated else "") + by_batch(
            row.batch_calls, row.totals["calls"]), accuracy, str(row.failed)]
        for shares in (row.per(row.problems), row.per(row.correct)):
            cells += [_shown(shares[name]) for name in COUNTED] + [_shown(shares["cost"], cost=True)]
        body.append(cells)
    return markdown_table(header, body)


__all__ = ["COUNTED", "AnswerCost", "answer_cost_table", "answer_costs", "by_batch"]
