"""Unit tests for the OlympiadBench scorer: one or more cases per rule of the official judge.

Cases are ours, written from the official rules; `judge(first, second)` is called the way the
official pipeline calls it: (model answer, ground truth, precision).
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maps_autogen.benchmarks import RecordError, _symbolic, get_benchmark
from maps_autogen.benchmarks.olympiadbench import _scorer as ob


def judge(answer: str, truth: str, precision: float | list[float] = 1e-8) -> bool:
    return ob.judge_bounded(answer, truth, precision)


# ---- extraction --------------------------------------------------------------------------


def test_extract_takes_text_after_last_marker_to_end_of_line() -> None:
    text = "So the final answer is 3.\nWait.\nSo the final answer is $7$ \nthanks"
    assert ob.extract_answer(text, "English") == "$7$"


def test_extract_whole_output_without_marker() -> None:
    assert ob.extract_answer("just \\boxed{2}", "English") == "just \\boxed{2}"


def test_extract_repeated_marker_on_one_line_keeps_the_second() -> None:
    line = "So the final answer is So the final answer is 4"
    assert ob.extract_answer(line, "English") == "So the final answer is 4"


def test_extract_chinese_marker_only_for_chinese() -> None:
    text = "推导……\n所以最终答案是$5$。"
    assert ob.extract_answer(text, "Chinese") == "$5$。"
    assert ob.extract_answer(text, "English") == text


def test_extract_without_language_uses_both_markers() -> None:
    text = "So the final answer is 1\n所以最终答案是2"
    assert ob.extract_answer(text, None) == "2"


# ---- precision ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "answer_type", "expected"),
    [
        (None, "Numerical", 1e-8),
        ("", "Numerical", 1e-8),
        ("0.5", "Numerical", 0.5),
        (0.25, "Numerical", 0.25),
        ("0.1,,0.3", "Numerical", [0.1, 1e-8, 0.3]),
        ("0.5", "Tuple", 1e-8),
    ],
)
def test_precision_of(error: object, answer_type: str, expected: object) -> None:
    assert ob.precision_of(error, answer_type) == expected


def test_precision_of_rejects_garbage() -> None:
    with pytest.raises(RecordError, match="error"):
        ob.precision_of("about one", "Numerical")


# judge.py tests `error` for truth before reading it: every false JSON value is the default
# tolerance (an `error` of 0 as a number included), "0" as a string is a tolerance of 0; true,
# non-empty lists and objects stop the official run (TypeError), so they cannot be scored.
@pytest.mark.parametrize("error", [None, "", 0, 0.0, False, [], {}])
def test_every_false_error_is_the_default_tolerance(error: object) -> None:
    assert ob.precision_of(error, "Numerical") == ob.DEFAULT_PRECISION


@pytest.mark.parametrize(("error", "right"), [(0, True), (0.0, True), ("0", False), (None, True), ("1e-10", False)])
def test_an_error_of_zero_as_a_number_judges_with_the_default_tolerance(error: object, right: bool) -> None:
    # the official judge: judge("1.000000001", "1") is True (1e-8), judge(..., 0.0) is False
    assert ob.SCORER.score(_record("1.000000001", final_answer=["1"], error=error)).correct is right


@pytest.mark.parametrize("error", [True, [0.1], ["0.1"], {"value": 0.1}])
def test_true_values_the_official_run_stops_on_cannot_be_scored(error: object) -> None:
    with pytest.raises(RecordError, match="error"):
        ob.precision_of(error, "Numerical")
    assert ob.precision_of(error, "Tuple") == ob.DEFAULT_PRECISION  # never read for tuples


# ---- pre-processing ----------------------------------------------------------------------


def test_boxed_contents_are_joined_with_commas() -> None:
    assert ob.preprocess("x \\boxed{1} and \\boxed{\\frac{1}{2}}") == "1,\\frac{1}{2}"


def test_dollar_pieces_of_last_line_only() -> None:
    assert ob.preprocess("$9$ first\nthen $3$ and $4$") == "3,4"


def test_clean_keeps_what_follows_in() -> None:
    assert ob.preprocess("$x \\in [1,2]$") == "[1,2]"


def test_clean_drops_left_right_degree_and_percent() -> None:
    assert ob.preprocess("\\left(30^\\circ\\right)") == "(30)"
    assert ob.preprocess("45\\%") == "45\\"  # only "%" goes; the edge strip keeps "\"
    assert ob.preprocess("30^{\\circ}") == "30^{\\circ}"  # the braced form survives (quirk)


def test_clean_maps_approx_to_equals_and_strips_punctuation() -> None:
    assert ob.preprocess("x \\approx 3.") == "x = 3"
    assert ob.preprocess("\\mathrm{~kg}") == "kg"


def test_unclosed_box_is_unequal() -> None:
    assert judge("\\boxed{1", "1") is False


# ---- judge: exact, lists, ± ---------------------------------------------------------------


def test_identical_after_preprocessing() -> None:
    assert judge("So: \\boxed{x^2}", "$x^2$") is True


def test_chinese_text_equal_before_cjk_removal() -> None:
    assert judge("能", "能") is True
    # After dropping CJK both sides are empty lists, which upstream counts as a match.
    assert judge("能", "不能") is True


def test_multiple_answers_in_any_order() -> None:
    assert judge("3, 1, 2", "1,2,3") is True
    assert judge("1, 2", "1,2,3") is False


def test_plus_minus_expands_into_two_answers() -> None:
    assert judge("\\pm 2", "2, -2") is True
    assert judge("\\pm 2", "2") is False


# ---- judge: numbers ----------------------------------------------------------------------


def test_numeric_tolerance_is_1_01_times_precision() -> None:
    assert judge("1.0", "1.05", 0.05) is True
    assert judge("1.0", "1.06", 0.05) is False


def test_numbers_also_match_times_or_divided_by_100() -> None:
    assert judge("50", "0.5") is True  # the model answer divided by 100
    assert judge("0.5", "50") is True  # the model answer times 100
    assert judge("5", "0.5") is False


def test_per_answer_precisions() -> None:
    assert judge("1.1, 2", "1, 2", [0.2, 1e-8]) is True
    assert judge("1, 2.1", "1, 2", [0.2, 1e-8]) is False


# ---- judge: intervals ---------------------------------------------------------------------


def test_intervals_need_the_same_brackets() -> None:
    assert judge("(1, \\frac{3}{2}]", "(1,1.5]") is True
    assert judge("[1,2]", "(1,2]") is False


def test_interval_unions_and_the_space_quirk() -> None:
    assert judge("(0,1)\\cup(2,3)", "(0,1)\\cup(2,3.0)") is True
    # Pieces are not trimmed: "(2,3)" vs " (2,3)" compare "(" with " " and fail.
    assert judge("(0,1)\\cup (2,3)", "(0,1)\\cup(2,3.0)") is False


def test_tuples_ignore_extra_or_missing_components() -> None:
    assert judge("(1,2,3)", "(1,2)") is True
    assert judge("(1,2)", "(1,2,3)") is True
    assert judge("(1,3)", "(1,2)") is False


# ---- judge: expressions and equations -------------------------------------------------------


def test_symbolic_expressions_by_simplification() -> None:
    assert judge("(x-1)(x+1)", "x^2-1") is True
    assert judge("x^2+1", "x^2-1") is False


def test_symbolic_tolerance_is_fixed_1e_3() -> None:
    assert judge("x + 0.0005", "x", 1e-8) is True
    assert judge("x + 0.01", "x", 1) is False


def test_numeric_expressions_use_the_precision() -> None:
    assert judge("\\frac{\\sqrt{2}}{2}", "0.70710678", 1e-6) is True
    assert judge("\\frac{\\sqrt{2}}{2}", "0.7071", 1e-6) is False


def test_only_right_side_of_equals_is_compared() -> None:
    assert judge("v = 3", "3") is True
    assert judge("y = 2x", "2x") is True


def test_e_is_a_plain_symbol() -> None:
    assert judge("e", "2.718281828") is False


def test_parser_quirks_subscript_after_power_and_differential() -> None:
    # sympy's LaTeX parser drops the subscript of `r^2_0`, so it equals `r^2`
    assert judge("r^2_0", "r^2") is True
    assert judge("r_0^2", "r^2") is False
    # `d g` is read as the differential dg (one symbol), so it does not commute like m g
    assert judge("m g", "g m") is True
    assert judge("d g", "g d") is False


def test_equations_equal_up_to_integer_factor() -> None:
    assert judge("2x+2y=2", "x+y=1") is True
    assert judge("x+y=1", "3x+3y=3") is True
    assert judge("x+2y=1", "x+y=1") is False


def test_no_numeric_tolerance_when_both_are_equations() -> None:
    assert judge("x=1.0000001", "x=1", 1e-3) is False


# ---- scorer -------------------------------------------------------------------------------


def _record(response: str | None, **extra: object) -> dict[str, object]:
    record: dict[str, object] = {
        "final_answer": ["$\\frac{1}{2}$"],
        "error": None,
        "answer_type": "Numerical",
        "response": response,
        "language": "English",
    }
    record.update(extra)
    return record


def test_scorer_is_registered() -> None:
    scorer = get_benchmark("olympiadbench").scorer
    assert scorer is ob.SCORER
    assert scorer.rule_versions == ("current",)


def test_scorer_verdict_and_fields() -> None:
    verdict = ob.SCORER.score(_record("Work...\nSo the final answer is $0.5$."))
    assert verdict.correct is True
    assert verdict.extraction == "$0.5$."
    assert verdict.prediction == "0.5"


def test_scorer_null_response_is_incorrect() -> None:
    verdict = ob.SCORER.score(_record(None))
    assert verdict == ob.Verdict(extraction=None, prediction=None, correct=False)


def test_scorer_uses_only_the_first_final_answer() -> None:
    record = _record("So the final answer is 3", final_answer=["2", "3"])
    assert ob.SCORER.score(record).correct is False


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"final_answer": "1/2"}, "final_answer"),
        ({"final_answer": []}, "final_answer"),
        ({"response": 3}, "response"),
        ({"language": "French"}, "language"),
        ({"error": "wide"}, "error"),
    ],
)
def test_scorer_rejects_bad_records(changes: dict[str, object], field: str) -> None:
    with pytest.raises(RecordError, match=field):
        ob.SCORER.score({**_record("1"), **changes})


def test_subset() -> None:
    assert ob.SCORER.subset({"subset": "OE_TO_maths_en_COMP"}) == "OE_TO_maths_en_COMP"
    assert ob.SCORER.subset({"subject": "Physics", "language": "English"}) == "Physics/English"
    assert ob.SCORER.subset({}) == "all"


# ---- time limit and threads ---------------------------------------------------------------


def test_timeout_counts_as_not_equal_and_is_recorded() -> None:
    _symbolic.clear_incidents()
    # Minutes of CPU time in one C-level call; the limit counts the helper's CPU time.
    result = _symbolic.run_bounded(math.factorial, 10**8, fallback=False, timeout=0.5)
    assert result is False
    kinds = [incident.kind for incident in _symbolic.incidents()]
    assert kinds == ["timeout"]
    assert judge("1", "1.0") is True  # the pool recovers with a fresh helper


def test_a_helper_that_cannot_start_is_an_error_not_a_verdict() -> None:
    # 24 MB of address space is too little to import sympy: a broken setup must be loud.
    broken = _symbolic.WorkerPool(max_workers=1, memory_limit=24 * 1024**2)
    with pytest.raises(_symbolic.HelperStartError):
        broken.run(("maps_autogen.benchmarks.olympiadbench._scorer", "judge"), ("1", "1"), 5.0)
    broken.shutdown()


def test_scoring_from_many_threads() -> None:
    cases = [("\\frac{2}{4}", "0.5", True), ("(x+1)^2", "x^2+2x+1", True), ("3", "4", False)] * 8
    with ThreadPoolExecutor(max_workers=6) as executor:
        results = list(executor.map(lambda c: judge(c[0], c[1]), cases))
    assert results == [c[2] for c in cases]


# Strings built from the pieces the judge reacts to reach its deeper branches far more often
# than random text does.
LATEXISH = st.lists(
    st.sampled_from(
        ["\\frac{", "}", "{", "x", "^", "\\boxed{", "\\pm", "\\cup", "=", "(", ")", "[", "]",
         ",", "1", "2.5", "100", "\\sqrt", "\\pi", "e", "\\in ", "$", "\n", "%", "^\\circ",
         "So the final answer is ", "所以最终答案是", "能", "\\left", " ", "-", "\\mathrm{"]
    ),
    max_size=25,
).map("".join)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    response=LATEXISH | st.text(max_size=80),
    truth=LATEXISH | st.text(max_size=30),
    error=st.sampled_from([None, "", "0.1", "0.1,0.2", ",,"]),
)
def test_no_input_raises_or_exceeds_the_limit(response: str, truth: str, error: str | None) -> None:
    limit = _symbolic.time_limit()
    started = time.thread_time()  # our own work: the helper's is bounded by its CPU-time limit
    verdict = ob.SCORER.score(_record(response, final_answer=[truth], error=error))
    assert isinstance(verdict.correct, bool)
    assert time.thread_time() - started < limit
