"""The custom benchmark's number reader (benchmarks/custom/_numbers.py) on what the
phrasing set does not cover: its work is linear in the reply (counted, never timed), every
exact value stays within the number bounds, values that are not exact are compared with the
stated tolerance, a gold answer written in LaTeX is a number, and an unreadable answer says so
where `maps score` writes it. The phrasings themselves: tests/scoring/test_custom_scorer_phrasings.py."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from maps_autogen.benchmarks import _bounds as bounds
from maps_autogen.benchmarks.custom import _numbers as numbers
from maps_autogen.benchmarks.custom._numbers import read_number
from maps_autogen.benchmarks.custom._scorer import SCORER, answer_type_of
from maps_autogen.scoring._score import score_file

# Hostile replies: each unit repeated to the size read; the parser's look-ups are counted.
HOSTILE = ["\\frac{", "\\frac{1}{2}", "(", "3(", "(1+", "-", "√", "2^", "2^{", "\\sqrt[", "1 1/2 ", "3 x 10^8 ",
           "2\\times", "1,000", "(1 ", "{1", "1-", "x^{x^", "\\frac{x}{", "2, "]


def _looked_up(monkeypatch: pytest.MonkeyPatch, text: str) -> int:
    calls = [0]
    real = numbers._Parser.peek

    def counting(parser: numbers._Parser, ahead: int = 0) -> numbers.Token | None:
        calls[0] += 1
        return real(parser, ahead)

    monkeypatch.setattr(numbers._Parser, "peek", counting)
    try:
        read_number(text)
    except bounds.Unjudgeable:
        pass
    return calls[0]


@pytest.mark.parametrize("unit", HOSTILE)
def test_the_work_grows_linearly_with_the_reply(monkeypatch: pytest.MonkeyPatch, unit: str) -> None:
    sizes = (2500, 5000)
    work = [_looked_up(monkeypatch, (unit * (size // len(unit) + 1))[:size] + "2") for size in sizes]
    assert work[1] <= 2.2 * max(work[0], 10), work  # twice the reply, at most about twice the work
    assert work[1] <= 8 * sizes[1], work  # a few look-ups per character


def test_nesting_is_bounded_and_says_so() -> None:
    def fraction(depth: int) -> str:
        return "\\frac{" + "(" * depth + "1" + ")" * depth + "}{2}"

    reading = read_number(fraction(numbers.MAX_NESTING))
    assert reading.value is None and f"nested more than {numbers.MAX_NESTING} deep" in str(reading.unreadable)
    assert read_number(fraction(numbers.MAX_NESTING - 1)).value == Fraction(1, 2)


@pytest.mark.parametrize("reply", ["7^{100000}", "10^{10000} \\times 10^{10000}", "2^{2^{2^{10}}}"])
def test_a_value_past_the_bounds_is_unjudged_before_it_is_computed(reply: str) -> None:
    with bounds.metered() as work:
        verdict = SCORER.score({"answer": "7", "response": f"The answer is {reply}"})
    assert verdict.correct is False and "more than the bound of" in str(verdict.unjudged)
    assert work["number size"] > bounds.MAX_NUMBER_SIZE


def test_values_within_the_bounds_stay_exact() -> None:
    assert read_number("10^{10000}").value == Fraction(10) ** 10000
    assert read_number("\\frac{1}{3} \\times 3").value == 1
    assert read_number("\\sqrt{\\frac{9}{16}}").value == Fraction(3, 4)


@pytest.mark.parametrize(("reply", "gold", "tolerance", "right"), [
    ("\\sqrt{2}", "1.414", None, False),  # not exact: equal only to 1e-9 of its size
    ("\\sqrt{2}", "1.414", 0.001, True),  # unless the record's tolerance is wider
    ("\\sqrt{2}", "1.4142135624", None, True),
    ("\\sqrt{2}", "\\sqrt{2}", None, True),
    ("0.333", "\\frac{1}{3}", None, False),  # exact values: exactly
    ("0.333", "\\frac{1}{3}", 0.001, True),
    ("\\pi", "3.14", None, False),
    ("\\pi", "3.14", 0.01, True),
])
def test_the_stated_tolerance(reply: str, gold: str, tolerance: float | None, right: bool) -> None:
    record = {"answer": gold, "answer_type": "number", "response": f"The answer is {reply}"}
    if tolerance is not None:
        record["tolerance"] = tolerance
    assert SCORER.score(record).correct is right


@pytest.mark.parametrize(("reply", "gold", "right"), [
    ("50%", "50", True), ("50%", "0.5", True), ("0.5", "50%", True), ("50", "50%", True), ("50%", "50%", True),
    ("0.5", "50", False), ("5%", "0.5", False),
])
def test_percent_reads_either_way_only_where_a_percent_sign_stands(reply: str, gold: str, right: bool) -> None:
    assert SCORER.score({"answer": gold, "answer_type": "number", "response": reply}).correct is right


@pytest.mark.parametrize(("gold", "kind"), [("\\frac{1}{4}", "number"), ("3 \\times 10^{8}", "number"),
                                            ("1,250", "number"), ("-\\frac{3}{2}", "number"), ("2\\sqrt{3}", "number"),
                                            ("12.5 m", "text"), ("\\frac{x}{2}", "text"), ("2, 3", "text")])
def test_a_gold_answer_in_latex_is_a_number(gold: str, kind: str) -> None:
    assert answer_type_of({"answer": gold}) == kind


def test_maps_score_marks_an_unreadable_number_and_counts_it(tmp_path: Path) -> None:
    path = tmp_path / "outputs.jsonl"
    rows = [{"id": "a", "answer": "4", "response": "The answer is \\frac{x}{4}"},
            {"id": "b", "answer": "0.25", "response": "The answer is \\boxed{\\frac{1}{4}}"},
            {"id": "c", "answer": "4", "response": "The answer is \\boxed{\\frac{1}{4}}"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    report = score_file("custom", path)
    scored = [json.loads(line) for line in report.out_path.read_text().splitlines()]
    assert [(line["extraction_method"], line.get("prediction"), line["correct"]) for line in scored] == [
        ("unreadable", None, False), ("rules", "0.25", True), ("rules", "0.25", False)]
    assert report.methods["unreadable"].n == 1 and report.overall.correct == 1
