"""The one accuracy tally: correct / scored, failed problems counted apart, never as wrong."""

from maps_autogen.records._schema import ResultRow
from maps_autogen.scoring._tally import Tally, tally_rows


def test_a_failed_row_is_counted_apart_not_as_wrong() -> None:
    rows = [ResultRow(pid=1, status="ok", correct=True), ResultRow(pid=2, status="ok", correct=False),
            ResultRow(pid=3, status="ok", correct=True), ResultRow(pid=4, status="failed", correct=True)]
    tally = tally_rows(rows)
    assert (tally.n, tally.scored, tally.correct, tally.failed) == (4, 3, 2, 1)
    assert tally.accuracy == 66.67
    assert tally.text() == "66.67% (2/3)"


def test_nothing_scored_has_no_accuracy() -> None:
    tally = tally_rows([ResultRow(pid=1, status="failed")])
    assert tally.accuracy is None and tally.failed == 1 and tally.text() == "–"
    assert Tally().accuracy is None
