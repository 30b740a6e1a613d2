"""The one accuracy tally, used by `maps score`, the eval summary, `maps report` and the viewer.

Accuracy is correct / scored, in percent to two decimals: a problem whose run failed (or a
line that could not be scored) has no verdict, so it is counted apart as failed, never as
wrong. Every place that prints an accuracy prints the same figure for the same rows.

Figure 4's one rule is here too (`first_decision`): the summary, `maps report` and the viewer
count each problem by its reviewer's first decision.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from maps_autogen.records import NO_REGENERATION, NO_REVIEWER, NO_ROLLBACK_ALLOWED, NO_USABLE_REVIEW

if TYPE_CHECKING:
    from maps_autogen.records import ResultRow


def accuracy_percent(correct: int, scored: int) -> float | None:
    """Percent correct of the scored problems, to two decimals (None when nothing was scored)."""
    return round(100.0 * correct / scored, 2) if scored else None


@dataclass
class Tally:
    """Problems seen (`n`), scored (a verdict was reached) and correct."""

    n: int = 0
    scored: int = 0
    correct: int = 0

    def add(self, *, scored: bool, correct: bool) -> None:
        """Count one problem; `correct` counts only when it was scored."""
        self.n += 1
        self.scored += int(scored)
        self.correct += int(scored and correct)

    def add_row(self, row: ResultRow) -> None:
        """Count one eval result row: scored when its status is "ok"."""
        ok = row.status == "ok"
        self.add(scored=ok, correct=ok and bool(row.correct))

    @property
    def failed(self) -> int:
        """Problems without a verdict."""
        return self.n - self.scored

    @property
    def accuracy(self) -> float | None:
        """Percent correct of the scored, two decimals; None when nothing was scored."""
        return accuracy_percent(self.correct, self.scored)

    def text(self) -> str:
        """"54.17% (13/24)": the accuracy with correct and scored; "–" when nothing was scored."""
        return "–" if self.accuracy is None else f"{self.accuracy:.2f}% ({self.correct}/{self.scored})"


def first_decision(row: ResultRow) -> str:
    """Where a problem's first review sent the work (Figure 4), as its row records it: the step
    its first rollback re-ran; "none" when the first review passed it (no regeneration);
    NO_ROLLBACK_ALLOWED when it failed and no rollback was allowed (the chat stopped at it,
    `rollback_limit` before any rollback); NO_USABLE_REVIEW when that review was unreadable or
    the problem failed before a review decided, never a pass; NO_REVIEWER when none ran."""
    first_review = row.critic_scores[0] if row.critic_scores else None
    if row.stop_reason == "no_reviewer":
        return NO_REVIEWER
    if row.critic_scores and first_review is None:
        return NO_USABLE_REVIEW
    if row.feedback_step or row.rollbacks:
        return row.feedback_step or row.rollbacks[0]
    if row.status != "ok":
        return NO_USABLE_REVIEW if first_review is None else NO_REGENERATION
    if first_review is not None and row.stop_reason == "rollback_limit":
        return NO_ROLLBACK_ALLOWED
    return NO_REGENERATION


def tally_rows(rows: Iterable[ResultRow]) -> Tally:
    """The tally of eval result rows (a stream of any length)."""
    tally = Tally()
    for row in rows:
        tally.add_row(row)
    return tally


__all__ = ["Tally", "accuracy_percent", "first_decision", "tally_rows"]
