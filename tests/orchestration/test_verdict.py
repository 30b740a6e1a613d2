"""The tolerant JSON parser for the Solver's and the Critic's replies."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from maps_autogen.orchestration._verdict import extract_json_object, parse_solver_reply
from maps_autogen.orchestration._verdict import parse_critic_reply as parse_any_critic_reply

SCORED = (("interpreter", "caption"), ("aligner", "alignment"), ("scholar", "knowledge"), ("solver", "solution"))


def parse_critic_reply(text, scored=SCORED, **scale):
    """The default team's review: four dimensions on 1-5."""
    return parse_any_critic_reply(text, scored, **scale)


CRITIC = {
    "scores": {"caption": 4, "alignment": 5, "knowledge": 3, "solution": 4},
    "need_feedback": True,
    "worst_step": "knowledge",
    "feedback": {"caption": "a?", "alignment": "b?", "knowledge": "c?", "solution": "d?"},
}


def test_plain_json_is_not_a_repair() -> None:
    found, repaired = extract_json_object(json.dumps(CRITIC))
    assert found == CRITIC and repaired is False


def test_code_fence_prose_and_trailing_commas_are_tolerated() -> None:
    text = 'Here is my review:\n```json\n{"scores": {"caption": 4, "alignment": 5, "knowledge": 3, "solution": 4,},\n "need_feedback": true, "worst_step": "knowledge", "feedback": {"knowledge": "c?",},}\n```\nThanks.'
    verdict = parse_critic_reply(text)
    assert verdict is not None and verdict.repaired
    assert verdict.scores == {"caption": 4, "alignment": 5, "knowledge": 3, "solution": 4}
    assert verdict.worst_step == "knowledge" and verdict.feedback == {"knowledge": "c?"}


def test_object_inside_prose_without_fence() -> None:
    text = "Scores follow. " + json.dumps(CRITIC) + " That is all."
    assert parse_critic_reply(text).scores["knowledge"] == 3


def test_python_literals_and_smart_quotes_are_repaired() -> None:
    text = "{\u201cfinal_answer\u201d: \u201c42\u201d, \u201cprocess\u201d: None}"
    answer = parse_solver_reply(text)
    assert answer.parsed and answer.final_answer == "42"


def test_critic_scores_may_be_numeric_strings_and_step_names() -> None:
    data = {"scores": {"caption": "4", "alignment": 5.0, "scholar": 2, "solver": 5}, "need_feedback": "true", "worst_step": "scholar"}
    verdict = parse_critic_reply(json.dumps(data))
    assert verdict.scores == {"caption": 4, "alignment": 5, "knowledge": 2, "solution": 5}
    assert verdict.worst_step == "knowledge" and verdict.need_feedback is True


def test_critic_missing_or_out_of_range_scores_are_unparseable() -> None:
    assert parse_critic_reply(json.dumps({**CRITIC, "scores": {"caption": 4}})) is None
    assert parse_critic_reply(json.dumps({**CRITIC, "scores": {**CRITIC["scores"], "solution": 9}})) is None
    assert parse_critic_reply(json.dumps({**CRITIC, "scores": {**CRITIC["scores"], "solution": True}})) is None
    assert parse_critic_reply("I think everything is fine, 5/5.") is None
    assert parse_critic_reply("") is None and parse_critic_reply(None) is None


def test_critic_three_dimensions_ignore_caption() -> None:
    data = {"scores": {"alignment": 5, "knowledge": 4, "solution": 5}, "worst_step": "caption"}
    verdict = parse_critic_reply(json.dumps(data), SCORED[1:])
    assert verdict.scores == {"alignment": 5, "knowledge": 4, "solution": 5}
    assert verdict.worst_step is None  # caption is not under review


def test_solver_fallbacks() -> None:
    assert parse_solver_reply('{"process": {"Phase 1": "x"}, "final_answer": 12.5}').final_answer == "12.5"
    assert parse_solver_reply('{"final_answer": ["1", "2"]}').final_answer == "1, 2"
    prose = parse_solver_reply("We balance torques.\nFinal answer: 4 kg")
    assert not prose.parsed and prose.final_answer == "4 kg"
    plain = parse_solver_reply("The mass is 4 kg.")
    assert not plain.parsed and plain.final_answer == "The mass is 4 kg."
    no_key = parse_solver_reply('{"answer_is": "B"}')
    assert not no_key.parsed


def test_truncated_json_falls_back() -> None:
    answer = parse_solver_reply('{"process": {"Phase 1": "long text that was cut')
    assert not answer.parsed


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_no_text_makes_the_parsers_raise(text: str) -> None:
    parse_solver_reply(text)
    parse_critic_reply(text)
    extract_json_object(text)


def test_a_unit_scale_reads_fractions_and_refuses_scores_above_one() -> None:
    data = {**CRITIC, "scores": {"caption": 0.9, "alignment": 0.4, "knowledge": 1, "solution": 0.75}}
    verdict = parse_critic_reply(json.dumps(data), low=0, high=1)
    assert verdict is not None and verdict.scores == {"caption": 0.9, "alignment": 0.4, "knowledge": 1, "solution": 0.75}
    assert parse_critic_reply(json.dumps(CRITIC), low=0, high=1) is None  # 3, 4 and 5 are off a [0, 1] scale
