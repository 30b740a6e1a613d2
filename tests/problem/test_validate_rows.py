"""The row check behind `maps eval`'s data validation, per benchmark (the end-to-end case with a
JSONL file is in eval/test_eval_reports_what_ran.py)."""

from __future__ import annotations

from maps_autogen.eval._validate import find_bad_rows


def test_olympiadbench_rows_need_an_id_a_question_and_a_final_answer() -> None:
    rows = [
        ("data row 1", {"id": 7, "question": "Find x.", "final_answer": ["$3$"]}),
        ("data row 2", {"id": "7", "question": "Find y.", "final_answer": ["$4$"]}),  # ids compare as text
        ("data row 3", {"id": 8, "question": "", "final_answer": []}),
        ("data row 4", ["not", "an", "object"]),
    ]
    assert find_bad_rows("olympiadbench", rows) == [
        "data row 2: row repeats id '7' of data row 1",
        "data row 3: row has no 'question'; has no 'final_answer'",
        "data row 4: row is a list, not an object",
    ]


def test_emma_rows_need_their_type_and_text_that_was_utf8() -> None:
    rows = [
        ("emma row 1", {"pid": "Math_1", "question": "Which?", "answer": "A", "type": "Multiple Choice"}),
        ("emma row 2", {"pid": "Math_2", "question": "Which?", "answer": "B"}),
        ("emma row 3", {"pid": "Math_3", "question": "Which?", "answer": "C", "type": "Open-ended",
                        "options": ["bad \udcff byte"]}),
    ]
    assert find_bad_rows("emma", rows) == [
        "emma row 2: row has no 'type'",
        "emma row 3: row has text that is not valid UTF-8",
    ]


def test_mathvista_accepts_a_top_level_category() -> None:
    row = {"pid": "1", "question": "q", "answer": "2", "question_type": "free_form", "answer_type": "integer", "category": "math-targeted-vqa"}
    assert find_bad_rows("mathvista", [("line 1", row)]) == []
