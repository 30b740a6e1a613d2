"""A person's one-line answer at a pause (maps_autogen/orchestration/_human.py): what each line means, and the
bounds on it as untrusted text (length, control characters, only a step of the team that ran)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from maps_autogen.orchestration._human import (
    MAX_ANSWER_CHARS,
    MAX_NOTES_CHARS,
    HumanAnswerError,
    HumanDecision,
    HumanState,
    accepted,
    parse_answer,
)

TITLES = {"look": "Look", "link": "Link", "recall": "Recall", "answer": "Answer", "judge": "Judge"}


def pause(**changes: object) -> HumanState:
    """A pause after the reviewer (`judge`) of a renamed team; `look` and `link` have run."""
    state = HumanState(pause=2, after="judge", titles=TITLES, review=True, round=1, answer="B. 4 kg",
                       scores={"seen": 5, "linked": 2.5}, questions={"linked": "Why?"}, next="rollback 2: ...",
                       ends=False, steps=("look", "link"), backs_left=3)
    return replace(state, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(("line", "kind", "step", "text"), [
    ("", "continue", None, ""),
    ("   ", "continue", None, ""),
    ("Continue", "continue", None, ""),
    ("stop", "stop", None, ""),
    (" STOP ", "stop", None, ""),
    ("exit", "stop", None, ""),  # AG2's own word for ending a chat
    ("back link Is the pivot in the middle?", "back", "link", "Is the pivot in the middle?"),
    ("Back LINK   why  so?", "back", "link", "why  so?"),
    ("Use SI units throughout", "note", None, "Use SI units throughout"),
    ("stop using degrees", "note", None, "stop using degrees"),
    ("note back up every claim", "note", None, "back up every claim"),
    ("continue with care", "note", None, "continue with care"),
])
def test_each_kind_of_line(line: str, kind: str, step: str | None, text: str) -> None:
    decision = parse_answer(line, pause(), source="terminal")
    assert (decision.kind, decision.step, decision.text, decision.source) == (kind, step, text, "terminal")
    assert decision.said == line.strip()


@pytest.mark.parametrize(("line", "reason"), [
    ("back", "say which step"),
    ("back link", "give the Link a question"),
    ("back recall Why?", "cannot be sent back here"),  # has not run yet
    ("back judge Why?", "cannot be sent back here"),  # the reviewer
    ("back up your claims", "'up' is not a step of this team; back STEP QUESTION (STEP: look, link)"),
    ("note", "an empty note"),
])
def test_lines_the_pause_cannot_take_say_why(line: str, reason: str) -> None:
    with pytest.raises(HumanAnswerError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        parse_answer(line, pause())


def test_where_no_step_follows_a_note_is_refused_but_continue_back_and_stop_are_not() -> None:
    final = pause(ends=True)
    with pytest.raises(HumanAnswerError, match="a note would reach none"):
        parse_answer("use SI units", final)
    assert parse_answer("", final).kind == "continue"
    assert parse_answer("stop", final).kind == "stop"
    assert parse_answer("back look Where is the pivot?", final).kind == "back"


def test_the_backs_and_the_notes_are_bounded() -> None:
    with pytest.raises(HumanAnswerError, match=r"human\.max_backs"):
        parse_answer("back look Where?", pause(backs_left=0))
    with pytest.raises(HumanAnswerError, match=f"at most {MAX_ANSWER_CHARS}"):
        parse_answer("x" * (MAX_ANSWER_CHARS + 1), pause())
    full = pause(notes=("n" * (MAX_NOTES_CHARS - 10),))
    with pytest.raises(HumanAnswerError, match=f"would pass {MAX_NOTES_CHARS}"):
        parse_answer("eleven char", full)
    assert parse_answer("ten chars!", full).kind == "note"


def test_control_characters_and_bidi_overrides_never_reach_the_chat() -> None:
    decision = parse_answer("back link \x1b[2J why\u202e?\nnext\x00line\ud800", pause())
    assert decision.text == "[2J why ? next line\ufffd"
    assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in decision.said or "")


def test_decisions_built_in_code_are_checked_like_lines() -> None:
    assert accepted(HumanDecision.back("LINK", " Why?\x07 "), pause()) == HumanDecision("back", "link", "Why?")
    assert accepted(HumanDecision.stop(), pause()).kind == "stop"
    assert accepted("", pause()) == HumanDecision(said="")
    with pytest.raises(HumanAnswerError, match="not a step of this team"):
        accepted(HumanDecision.back("../etc", "Why?"), pause())
    with pytest.raises(HumanAnswerError, match="return a line"):
        accepted(42, pause())  # type: ignore[arg-type]
    with pytest.raises(HumanAnswerError, match="at most"):
        accepted(HumanDecision.note("y" * (MAX_ANSWER_CHARS + 1)), pause())


def test_what_the_terminal_and_the_page_show() -> None:
    state = pause()
    lines = state.prompt_lines()
    assert lines[1] == "── UserProxy: your turn (pause 2, after the Judge's review, round 1)"
    assert "   answer so far: B. 4 kg" in lines and "   scores: seen 5, linked 2.5" in lines
    assert "back STEP QUESTION (STEP: look, link)" in lines[-1] and "a note for every later step" in lines[-1]
    final = pause(ends=True, backs_left=0).prompt_lines()[-1]
    assert final == "   Enter: end the chat with this answer"
    page = state.as_dict()
    assert page["steps"] == [{"name": "look", "title": "Look"}, {"name": "link", "title": "Link"}]
    assert page["limits"]["answer_chars"] == MAX_ANSWER_CHARS and page["pause"] == 2


def test_before_any_answer_a_pause_never_offers_to_end_with_this_answer() -> None:
    early = pause(answer=None, review=False, after="look")  # human.when: every_turn, after the first step
    choices = early.choices()
    assert "stop: end without an answer (none yet)" in choices and "this answer" not in choices
    assert pause(answer=None, ends=True, backs_left=0).choices() == "Enter: end the chat without an answer (none yet)"
    assert "stop: end with this answer" in pause().choices()  # once there is one
    assert early.as_dict()["choices"] == choices  # the live page offers the same
