"""The one accuracy tally: correct / scored, failed problems counted apart, never as wrong."""

from maps_autogen.records._schema import ResultRow
from maps_autogen.scoring._tally import Tally, first_decision, tally_rows


def test_a_failed_row_is_counted_apart_not_as_wrong() -> None:
    rows = [ResultRow(pid=1, status="ok", correct=True, scoring={}), ResultRow(pid=2, status="ok", correct=False, scoring={}),
            ResultRow(pid=3, status="ok", correct=True, scoring={}), ResultRow(pid=4, status="failed", correct=True, scoring={})]
    tally = tally_rows(rows)
    assert (tally.n, tally.scored, tally.correct, tally.failed) == (4, 3, 2, 1)
    assert tally.accuracy == 66.67
    assert tally.text() == "66.67% (2/3)"


def test_nothing_scored_has_no_accuracy() -> None:
    tally = tally_rows([ResultRow(pid=1, status="failed", scoring={})])
    assert tally.accuracy is None and tally.failed == 1 and tally.text() == "–"
    assert Tally().accuracy is None


def test_figure_4_reads_each_problems_first_decision_from_its_row() -> None:
    failing, passing = {"knowledge": 2, "solution": 5}, {"knowledge": 5, "solution": 5}

    def row(**fields: object) -> ResultRow:
        return ResultRow.model_validate({"pid": 1, "status": "ok", "scoring": {}, **fields})

    assert first_decision(row(critic_scores=[failing, passing], rollbacks=["scholar"], feedback_step="scholar",
                              stop_reason="critic_passed")) == "scholar"
    assert first_decision(row(critic_scores=[passing], stop_reason="critic_passed")) == "none"
    # the review failed and no rollback was allowed: the chat stopped there, nothing regenerated, nothing passed
    assert first_decision(row(critic_scores=[failing], stop_reason="rollback_limit")) == "no rollback allowed"
    assert first_decision(row(critic_scores=[None], stop_reason="critic_unparseable")) == "no usable review"
    assert first_decision(row(stop_reason="no_reviewer")) == "no reviewer"
