"""MathVista scoring rules, one behaviour per test: normalisation, extraction, verdict."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maps_autogen.benchmarks import RecordError, get_benchmark
from maps_autogen.benchmarks.mathvista._scorer import (
    SCORER,
    extract_answer,
    extract_with_llm,
    levenshtein,
    load_prompt,
    nearest_choice,
    normalize,
    normalize_float,
    normalize_integer,
    normalize_multi_choice,
    parse_record,
    subset_of,
    with_llm_extraction,
)


def record(**fields: Any) -> dict[str, Any]:
    """A valid free-form integer record, overridden by `fields`."""
    base: dict[str, Any] = {
        "pid": "7",
        "question_type": "free_form",
        "answer_type": "integer",
        "precision": None,
        "choices": None,
        "answer": "12",
    }
    base.update(fields)
    return base


def choice_record(**fields: Any) -> dict[str, Any]:
    base = record(
        question_type="multi_choice",
        answer_type="text",
        choices=["30°", "45°", "60°", "90°"],
        answer="60°",
    )
    base.update(fields)
    return base


# --- registry and protocol ----------------------------------------------------------------


def test_registry_returns_the_mathvista_scorer() -> None:
    scorer = get_benchmark("mathvista").scorer
    assert scorer is SCORER
    assert scorer.name == "mathvista"
    assert scorer.rule_versions == ("current", "legacy")


def test_unknown_rules_value_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown rules"):
        SCORER.score(record(extraction="12"), "newest")


# --- Levenshtein and nearest choice --------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [
        ("", "", 0),
        ("", "abc", 3),
        ("abc", "", 3),
        ("kitten", "sitting", 3),
        ("flaw", "lawn", 2),
        ("same", "same", 0),
        ("45°", "145°", 1),
        ("gumbo", "gambol", 2),
    ],
)
def test_levenshtein_distance(a: str, b: str, distance: int) -> None:
    assert levenshtein(a, b) == distance
    assert levenshtein(b, a) == distance


def test_nearest_choice_picks_smallest_distance() -> None:
    assert nearest_choice("squre", ["circle", "square", "triangle"]) == "square"


def test_nearest_choice_tie_goes_to_first_choice() -> None:
    # "ab" is one edit from both "a" and "b": the official code keeps the first minimum.
    assert nearest_choice("ab", ["a", "b"]) == "a"
    assert nearest_choice("ab", ["b", "a"]) == "b"


# --- multiple choice normalisation ---------------------------------------------------------

CHOICES = ["30°", "45°", "60°", "90°"]


@pytest.mark.parametrize(
    ("extraction", "expected"),
    [
        ("C", "60°"),
        ("  C \n", "60°"),  # stripped first
        ("(C)", "60°"),
        ("(c)", "60°"),  # the parenthesised form is upper-cased
        ("The answer is (B) 45°", "45°"),  # a parenthesised letter anywhere wins
        ("(A) or maybe (D)", "30°"),  # the first parenthesised letter is taken
        ("60°", "60°"),  # option text itself
        ("90", "90°"),  # nearest by edit distance
        ("A", "30°"),
        ("D", "90°"),
    ],
)
def test_multi_choice_normalisation(extraction: str, expected: str) -> None:
    assert normalize_multi_choice(extraction, CHOICES) == expected


def test_lone_lowercase_letter_is_not_a_letter() -> None:
    # Only "(c)" is upper-cased officially; a bare "c" goes to edit distance (2 from "no").
    assert normalize_multi_choice("c", ["yes", "no", "maybe"]) == "no"


def test_letter_beyond_the_choices_falls_back_to_edit_distance() -> None:
    # "(E)" becomes "E", which is not a letter of four choices: the nearest text to "E" wins
    # (the raw "(E)" would have been nearer to "(E").
    assert normalize_multi_choice("(E)", ["(E", "E", "x", "y"]) == "E"
    assert normalize_multi_choice("E", ["apple", "Eel", "cat", "dog"]) == "Eel"


def test_empty_multi_choice_extraction_goes_to_shortest_choice_like_official() -> None:
    assert normalize_multi_choice("", ["long one", "ab", "xyz"]) == "ab"


# --- integer: both rules -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extraction", "current", "legacy"),
    [
        ("5", "5", "5"),
        (" 5 ", "5", "5"),
        ("5.0", "5", None),  # the rule difference that matters
        ("5.7", "5", None),  # current truncates
        ("-3.9", "-3", None),
        ("1e3", "1000", None),
        ("1,000", None, None),
        ("five", None, None),
        ("", None, None),
        ("inf", None, None),
        ("nan", None, None),
        ("007", "7", "7"),
    ],
)
def test_integer_rules(extraction: str, current: str | None, legacy: str | None) -> None:
    assert normalize_integer(extraction, "current") == current
    assert normalize_integer(extraction, "legacy") == legacy


def test_integer_rule_changes_the_verdict() -> None:
    line = record(extraction="12.0", answer="12")
    assert SCORER.score(line, "current").correct is True
    legacy = SCORER.score(line, "legacy")
    assert legacy.correct is False
    assert legacy.prediction is None


# --- float precision, list, text -----------------------------------------------------------


@pytest.mark.parametrize(
    ("extraction", "precision", "expected"),
    [
        ("1.25", 1, "1.2"),  # round half to even on the binary value, as Python does
        ("1.35", 1, "1.4"),
        ("0.6", 1, "0.6"),
        ("2", 2, "2.0"),  # str(round(2.0, 2)) is "2.0", not "2.00"
        ("3.14159", 2, "3.14"),
        ("3.14159", 0, "3.0"),
        (" 7.5 ", 1, "7.5"),
        ("7.5 cm", 1, None),
        ("", 1, None),
    ],
)
def test_float_precision(extraction: str, precision: int, expected: str | None) -> None:
    assert normalize_float(extraction, precision) == expected


def test_float_without_precision_fails_to_none() -> None:
    assert normalize_float("1.5", None) is None


def test_float_precision_accepts_float_and_text_forms_in_records() -> None:
    line = record(answer_type="float", precision=1.0, answer="0.3", extraction="0.29")
    assert SCORER.score(line).correct is True
    line = record(answer_type="float", precision="2", answer="0.29", extraction="0.29")
    assert SCORER.score(line).correct is True


def test_list_is_compared_as_text() -> None:
    assert normalize("[1, 2]", question_type="free_form", answer_type="list") == "[1, 2]"
    line = record(answer_type="list", answer="[2014, 2016]", extraction="[2014, 2016]")
    assert SCORER.score(line).correct is True
    # No reformatting: a differently spaced list is a different string.
    line = record(answer_type="list", answer="[2014, 2016]", extraction="[2014,2016]")
    assert SCORER.score(line).correct is False


def test_list_extraction_stored_as_json_array_is_read_like_str() -> None:
    line = record(answer_type="list", answer="[2014, 2016]", extraction=[2014, 2016])
    verdict = SCORER.score(line)
    assert verdict.extraction == "[2014, 2016]" and verdict.correct is True


def test_missing_extraction_normalises_to_none() -> None:
    for question_type, answer_type in [
        ("multi_choice", "text"),
        ("free_form", "integer"),
        ("free_form", "float"),
        ("free_form", "list"),
    ]:
        assert (
            normalize(None, question_type=question_type, answer_type=answer_type,
                      choices=CHOICES, precision=1)
            is None
        )


# --- verdict: exact string equality --------------------------------------------------------


def test_verdict_is_exact_string_equality() -> None:
    assert SCORER.score(record(extraction="12")).correct is True
    assert SCORER.score(record(extraction="13")).correct is False
    # The answer is compared as given: "12.0" as ground truth never equals a normalised integer.
    assert SCORER.score(record(extraction="12", answer="12.0")).correct is False


def test_multi_choice_verdict_compares_option_text() -> None:
    verdict = SCORER.score(choice_record(extraction="C"))
    assert verdict.extraction == "C"
    assert verdict.prediction == "60°"
    assert verdict.correct is True


def test_failed_normalisation_is_incorrect() -> None:
    verdict = SCORER.score(record(extraction="twelve"))
    assert verdict.prediction is None
    assert verdict.correct is False


# --- extraction vs response ----------------------------------------------------------------


def test_extraction_takes_precedence_over_response() -> None:
    verdict = SCORER.score(record(extraction="12", response="The answer is 99."))
    assert verdict.extraction == "12"
    assert verdict.correct is True


def test_response_is_used_when_extraction_is_absent_or_null() -> None:
    for line in (record(response="So the answer is 12."),
                 record(response="So the answer is 12.", extraction=None)):
        verdict = SCORER.score(line)
        assert verdict.extraction == "12"
        assert verdict.correct is True


@pytest.mark.parametrize("response", [None, "", "   \n"])
def test_null_or_empty_response_is_incorrect_not_skipped(response: str | None) -> None:
    for line in (record(response=response), choice_record(response=response)):
        verdict = SCORER.score(line)
        assert verdict.correct is False
        assert verdict.prediction is None


def test_given_empty_extraction_follows_official_rule() -> None:
    # An extraction that is present but empty is normalised like the official code does.
    verdict = SCORER.score(choice_record(extraction="", choices=["no", "yes"], answer="no"))
    assert verdict.prediction == "no"
    assert SCORER.score(record(extraction="")).prediction is None


# --- rule-based extraction -----------------------------------------------------------------


def extract_int(response: str) -> str | None:
    return extract_answer(response, question_type="free_form", answer_type="integer")


def extract_float(response: str) -> str | None:
    return extract_answer(response, question_type="free_form", answer_type="float")


def extract_choice(response: str, choices: list[str] = CHOICES) -> str | None:
    return extract_answer(response, question_type="multi_choice", answer_type="text",
                          choices=choices)


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("42", "42"),
        ("The answer is 5.", "5"),
        ("There are 3 red and 4 blue balls, so the answer is 7", "7"),
        ("Answer: 12 apples", "12"),
        ("We get \\boxed{36} in the end; 36 was checked with 2 methods.", "36"),
        ("First 2, then 9 and finally 14", "14"),  # last number
        ("The total is 1,250 people.", "1250"),
        ("The final answer is −4.", "-4"),
        ("答案是 8", "8"),
        # A refusal: its statement is the extraction, as officially; it normalises to None.
        ("I cannot tell from the picture.", "I cannot tell from the picture"),
        ("**Answer:** 6", "6"),
        ("two", "2"),
        ("The answer is three apples.", "3"),
        ("Answer: 4 of the 7 cars", "4"),  # the number after the cue, not the last one
    ],
)
def test_extract_integer(response: str, expected: str | None) -> None:
    assert extract_int(response) == expected


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("0.11", "0.11"),
        ("The slope is 7/4 so the answer is 1.75", "1.75"),
        ("The answer is 3/4.", "0.75"),
        ("$x = \\boxed{2.5}$", "2.5"),
        ("Roughly .5 of them", ".5"),
    ],
)
def test_extract_float(response: str, expected: str) -> None:
    assert extract_float(response) == expected


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("C", "C"),
        ("(B)", "B"),
        ("**D**", "D"),
        ("60°", "60°"),
        ("The correct answer is (C) 60°.", "C"),
        ("Thus the answer is B.", "B"),
        ("The answer: D", "D"),
        ("Reasoning...\nTherefore the angle is 45°.", "45°"),
        ("Reasoning...\nSo the correct option is \\boxed{A}", "A"),
        ("所以答案为（B）", "B"),
        ("Reasoning...\nSo I pick (D) in the end.", "D"),
        ("I am not sure.", None),
        ("The answer is E.", None),  # out of range: no letter
        ("The correct answer is (B), not option A.", "B"),
        ("Let me check each option.\nThe answer is D.\n\n(A) is wrong because it is small.", "D"),
        ("The answer choices are listed above.\nI choose C.", "C"),  # "answer choices" is no cue
        ("The answer choices are listed above.\nThe last one, C, fits.", None),
        ("The answer is B because the angle is acute.", "B"),
        ("Counting edges.\nA cube has 12 edges.", None),  # an article is not a letter
    ],
)
def test_extract_multi_choice(response: str, expected: str | None) -> None:
    assert extract_choice(response) == expected


def test_extract_list() -> None:
    def extract(text: str) -> str | None:
        return extract_answer(text, question_type="free_form", answer_type="list")

    assert extract("The peaks are in [2014, 2016].") == "[2014, 2016]"
    assert extract("Candidates [1, 2] and finally [3, 4]") == "[3, 4]"
    assert extract("no list here") is None


def test_extract_then_score_end_to_end() -> None:
    verdict = SCORER.score(choice_record(response="The angle is 60°, so the answer is (C)."))
    assert (verdict.extraction, verdict.prediction, verdict.correct) == ("C", "60°", True)


# --- record validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"question_type": "essay"}, "question_type"),
        ({"answer_type": "fraction"}, "answer_type"),
        ({"answer": None}, "answer"),
        ({"question_type": "multi_choice", "answer_type": "text", "choices": []}, "choices"),
        ({"question_type": "multi_choice", "answer_type": "text", "choices": None}, "choices"),
        ({"answer_type": "float", "precision": None}, "precision"),
        ({"answer_type": "float", "precision": "two"}, "precision"),
        ({"answer_type": "float", "precision": 1.5}, "precision"),
        ({"answer_type": "float", "precision": True}, "precision"),
    ],
)
def test_invalid_records_raise_record_error_naming_the_field(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(RecordError, match=message):
        SCORER.score(record(extraction="1", **fields))


def test_missing_required_field_is_named() -> None:
    line = record(extraction="1")
    del line["pid"]
    with pytest.raises(RecordError, match="'pid'.*missing"):
        SCORER.score(line)


def test_numbers_in_text_fields_are_accepted() -> None:
    parsed = parse_record(record(pid=3, answer=12, extraction=12))
    assert (parsed.pid, parsed.answer, parsed.extraction) == ("3", "12", "12")
    assert SCORER.score(record(pid=3, answer=12, extraction=12)).correct is True


def test_unknown_fields_are_kept_on_the_record() -> None:
    parsed = parse_record(record(extraction="1", model="m1", metadata={"k": 1}))
    assert parsed.model_extra == {"model": "m1", "metadata": {"k": 1}}


# --- subsets ---------------------------------------------------------------------------------


def test_subset_prefers_subset_field_then_category() -> None:
    assert subset_of({"subset": "geometry", "category": "general-vqa"}) == "geometry"
    assert subset_of({"category": "general-vqa"}) == "general"
    assert subset_of({"category": "math-targeted-vqa"}) == "math"
    assert subset_of({"metadata": {"category": "math-targeted-vqa"}}) == "math"
    assert subset_of({"category": "other"}) == "other"
    assert subset_of({}) == "all"
    assert SCORER.subset({"category": "general-vqa"}) == "general"


# --- optional LLM extraction -----------------------------------------------------------------


def test_prompt_template_has_the_variables_and_fills_them() -> None:
    variables = {"question": "Q?", "question_type": "free_form", "answer_type": "integer",
                 "precision": "", "options": "-", "response": "R!"}
    text = load_prompt("extract_mathvista.md", variables)
    assert "Q?" in text and "R!" in text and "{{" not in text


def test_prompt_missing_variable_is_an_error() -> None:
    from maps_autogen._util._errors import ConfigError

    variables = {"question": "Q", "question_type": "free_form", "answer_type": "integer",
                 "precision": "", "options": "-"}
    with pytest.raises(ConfigError, match="response"):
        load_prompt("extract_mathvista.md", variables)


def test_llm_extraction_calls_the_supplied_model_and_is_marked() -> None:
    prompts: list[str] = []

    def complete(prompt: str) -> str:
        prompts.append(prompt)
        return "Extracted answer: C\n"

    line = choice_record(response="It is clearly the sixty degree one.",
                         query="What is the angle?")
    scored_input = with_llm_extraction(line, complete)
    assert scored_input["extraction"] == "C"
    assert scored_input["extraction_method"] == "llm"
    assert SCORER.score(scored_input).correct is True
    assert len(prompts) == 1
    assert "What is the angle?" in prompts[0]
    assert "It is clearly the sixty degree one." in prompts[0]
    assert "(C) 60°" in prompts[0]


def test_llm_extraction_skips_the_call_for_an_empty_response() -> None:
    def complete(prompt: str) -> str:  # pragma: no cover - must not be called
        raise AssertionError("the model must not be asked")

    assert extract_with_llm("  ", record(), complete) is None


# --- properties: no input string makes the scorer raise --------------------------------------

TEXT = st.text(max_size=200)


@settings(max_examples=300, deadline=None)
@given(response=TEXT, choices=st.lists(TEXT, min_size=1, max_size=6), answer=TEXT,
       rules=st.sampled_from(["current", "legacy"]))
def test_multi_choice_scoring_never_raises(
    response: str, choices: list[str], answer: str, rules: str
) -> None:
    line = choice_record(response=response, choices=choices, answer=answer)
    verdict = SCORER.score(line, rules)
    assert isinstance(verdict.correct, bool)
    if verdict.prediction is not None:
        assert verdict.prediction in choices
    verdict = SCORER.score({**line, "extraction": response}, rules)
    assert verdict.prediction in choices


@settings(max_examples=300, deadline=None)
@given(text=TEXT, answer_type=st.sampled_from(["integer", "float", "list", "text"]),
       precision=st.integers(min_value=0, max_value=6), answer=TEXT,
       rules=st.sampled_from(["current", "legacy"]), from_extraction=st.booleans())
def test_free_form_scoring_never_raises(
    text: str, answer_type: str, precision: int, answer: str, rules: str, from_extraction: bool
) -> None:
    field = "extraction" if from_extraction else "response"
    line = record(answer_type=answer_type, precision=precision, answer=answer, **{field: text})
    verdict = SCORER.score(line, rules)
    assert isinstance(verdict.correct, bool)
    assert verdict.correct == (verdict.prediction == answer)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("0123456789.,-+/()[]{}\\boxed ABCanswer is:")),
                    max_size=300))
def test_extraction_is_total_on_answer_like_text(text: str) -> None:
    for question_type, answer_type in [("multi_choice", "text"), ("free_form", "integer"),
                                       ("free_form", "float"), ("free_form", "list"),
                                       ("free_form", "text")]:
        result = extract_answer(text, question_type=question_type, answer_type=answer_type,
                                choices=CHOICES)
        assert result is None or isinstance(result, str)
