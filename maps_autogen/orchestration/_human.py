"""A person in the chat: what they are shown at a pause and what their one-line answer means.

With `maps solve --human` (or `solve(on_human=...)`) the Manager selects the UserProxy after each
review (or each turn, `human.when: every_turn`), and the UserProxy asks the person through AG2's
human input. The answer is one line, so a person or a script piping into standard input can give it:

- an empty line (or `continue`): the chat goes on as planned;
- `back STEP QUESTION`: STEP (its name in the team) re-runs with its previous output and the
  question, then the steps after it, as after a rollback;
- `stop` (or AG2's `exit`): the chat ends with the answer it has;
- any other text (or `note TEXT`, for a note that starts with one of these words): a note the
  UserProxy adds to the material of every later step.

The line is untrusted text: bounded (`MAX_ANSWER_CHARS`, the notes together `MAX_NOTES_CHARS`),
made valid and stripped of control characters, and it can only name a step of the team that has
run. This module is pure: the waiting (terminal, live page) is `human_desk`, the chat's side
`human_chat`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from maps_autogen._util import UsageError, valid_text
from maps_autogen.records import AnswerSource, DecisionKind, DecisionParsed, Score

#: The longest answer a person may give at one pause (characters).
MAX_ANSWER_CHARS = 4000
#: The notes of one chat together (characters): every later request carries all of them.
MAX_NOTES_CHARS = 16000

# Control characters (C0 with tab and newline, DEL, C1) and the bidi overrides that reorder text.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_STOP_WORDS = ("stop", "exit")  # `exit` is AG2's own word for ending a chat from human input


class HumanAnswerError(ValueError):
    """An answer that cannot be taken at this pause; the message says why and what would do."""


class OnHumanError(UsageError):
    """`on_human` failed (raised, or gave no answer the pause takes): the chat ends and `solve`
    raises the callback's own exception (`original`), or this."""

    def __init__(self, message: str, *, fix: str | None = None, original: BaseException | None = None):
        super().__init__(message, fix=fix)
        self.original = original


@dataclass(frozen=True)
class HumanDecision:
    """A person's decision at a pause. `HumanDecision()` continues; `back`, `note` and `stop`
    build the others. `said` is the line as the person gave it (None: built in code), `source`
    where it came from."""

    kind: DecisionKind = "continue"
    step: str | None = None  # back: the step sent back (its name in the team)
    text: str = ""  # back: the question; note: the note
    said: str | None = None
    source: AnswerSource = "api"

    @classmethod
    def back(cls, step: str, question: str) -> HumanDecision:
        """Send `step` back with `question`; the steps after it re-run."""
        return cls("back", step=step, text=question)

    @classmethod
    def note(cls, text: str) -> HumanDecision:
        """Add `text` to the material of every later step."""
        return cls("note", text=text)

    @classmethod
    def stop(cls) -> HumanDecision:
        """End the chat with the answer it has."""
        return cls("stop")

    @property
    def line(self) -> str:
        """The decision as a line of the answer language (what the UserProxy says in the chat)."""
        if self.kind == "back":
            return f"back {self.step} {self.text}"
        if self.kind == "note":
            return f"note {self.text}"
        return self.kind

    def record(self) -> DecisionParsed:
        """The decision as the person's transcript turn keeps it (its `parsed`)."""
        return DecisionParsed(decision=self.kind, step=self.step, text=self.text, source=self.source)


@dataclass(frozen=True)
class HumanState:
    """What a person is shown at a pause, and what they may answer."""

    pause: int  # 1 for the chat's first pause
    after: str  # the step whose turn just ended (its name)
    titles: Mapping[str, str]  # each step's display name, by name
    review: bool  # `after` is the reviewer
    round: int
    answer: str | None  # the final-answer step's answer so far (an option with its text); None: none yet
    scores: Mapping[str, Score]  # the latest review's scores by dimension ({} before any review)
    questions: Mapping[str, str]  # the latest review's question per dimension
    next: str  # what continuing does, in words
    ends: bool  # continuing ends the chat
    steps: tuple[str, ...]  # the steps that may be sent back: working steps that have run
    backs_left: int  # how many more steps the person may send back in this chat
    notes: tuple[str, ...] = ()  # the notes so far, in order
    problem: str | None = None  # why the previous answer to this pause was not taken
    limits: Mapping[str, int] = field(default_factory=lambda: {"answer_chars": MAX_ANSWER_CHARS,
                                                                "notes_chars": MAX_NOTES_CHARS})

    def title(self, step: str) -> str:
        return self.titles.get(step, step)

    def choices(self) -> str:
        """The answers this pause takes, in one line (before the final-answer step has answered,
        ending the chat ends it without an answer, and says so)."""
        with_answer = "with this answer" if self.answer is not None else "without an answer (none yet)"
        parts = [f"Enter: end the chat {with_answer}" if self.ends else f"Enter: continue · stop: end {with_answer}"]
        if self.backs_left > 0 and self.steps:
            parts.append(f"back STEP QUESTION (STEP: {', '.join(self.steps)})")
        if not self.ends:
            parts.append("other text: a note for every later step")
        return " · ".join(parts)

    def prompt_lines(self) -> list[str]:
        """The pause as the terminal shows it (untrusted parts still to be made terminal-safe)."""
        heading = f"the {self.title(self.after)}'s review" if self.review else f"the {self.title(self.after)}'s turn"
        lines = ["", f"── UserProxy: your turn (pause {self.pause}, after {heading}, round {self.round})"]
        if self.answer is not None:
            lines.append(f"   answer so far: {self.answer}")
        if self.scores:
            lines.append("   scores: " + ", ".join(f"{dimension} {score:g}" for dimension, score in
                                                 self.scores.items()))
            lines += [f"   feedback on {dimension}: {self.questions[dimension]}" for dimension in self.scores
                      if self.questions.get(dimension)]
        if self.notes:
            lines.append(f"   your notes so far: {len(self.notes)}")
        lines.append(f"   if you continue: {self.next}")
        lines.append(f"   {self.choices()}")
        if self.problem:
            lines.append(f"   not taken: {self.problem}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        """The pause as JSON for the live page (every value plain data)."""
        return {
            "pause": self.pause, "after": self.after, "after_title": self.title(self.after), "review": self.review,
            "round": self.round, "answer": self.answer, "scores": dict(self.scores),
            "questions": dict(self.questions), "next": self.next, "ends": self.ends,
            "steps": [{"name": step, "title": self.title(step)} for step in self.steps],
            "backs_left": self.backs_left, "notes": list(self.notes), "problem": self.problem,
            "choices": self.choices(), "limits": dict(self.limits),
        }


def clean_line(text: str) -> str:
    """An answer as the chat keeps it: valid Unicode, every control character (newlines and tabs
    included) and bidi override a space, no surrounding whitespace."""
    return _CONTROLS.sub(" ", valid_text(text)).strip()


def _too_long(text: str, what: str = "the answer") -> HumanAnswerError:
    return HumanAnswerError(f"{what} is {len(text)} characters long; at most {MAX_ANSWER_CHARS} are taken")


def parse_answer(line: str, state: HumanState, *, source: AnswerSource = "api") -> HumanDecision:
    """The decision a line gives at the pause `state`; raises HumanAnswerError (saying why and
    what would do) when it cannot be taken here."""
    if len(line) > MAX_ANSWER_CHARS:
        raise _too_long(line)
    text = clean_line(line)
    word, _, rest = text.partition(" ")
    keyword, rest = word.lower(), rest.strip()
    if not text or (keyword == "continue" and not rest):
        decision = HumanDecision(said=text, source=source)
    elif keyword in _STOP_WORDS and not rest:
        decision = HumanDecision("stop", said=text, source=source)
    elif keyword == "back":
        name, _, question = rest.partition(" ")
        decision = HumanDecision("back", step=name.lower() or None, text=question.strip(), said=text, source=source)
    elif keyword == "note":
        decision = HumanDecision("note", text=rest, said=text, source=source)
    else:
        decision = HumanDecision("note", text=text, said=text, source=source)
    trouble = check_decision(decision, state)
    if trouble:
        raise HumanAnswerError(trouble)
    return decision


def accepted(reply: str | HumanDecision, state: HumanState) -> HumanDecision:
    """An answer from `on_human` (a line, or a decision built in code) checked like a typed one:
    its text cleaned and bounded, its step one the person may send back."""
    if isinstance(reply, str):
        return parse_answer(reply, state)
    if not isinstance(reply, HumanDecision):
        raise HumanAnswerError(f"on_human returned {type(reply).__name__}; return a line (str) or a HumanDecision")
    if reply.kind not in ("continue", "back", "stop", "note") or not isinstance(reply.text, str):
        raise HumanAnswerError(f"not a decision: {reply.kind!r}; use continue, back, stop or note")
    if len(reply.text) > MAX_ANSWER_CHARS:
        raise _too_long(reply.text, "its text")
    step = reply.step.lower() if isinstance(reply.step, str) else None
    decision = HumanDecision(reply.kind, step=step, text=clean_line(reply.text),
                             said=clean_line(reply.said) if isinstance(reply.said, str) else None, source=reply.source)
    trouble = check_decision(decision, state)
    if trouble:
        raise HumanAnswerError(trouble)
    return decision


def check_decision(decision: HumanDecision, state: HumanState) -> str | None:
    """Why `decision` cannot be taken at the pause `state` (None: it can)."""
    if decision.kind == "back":
        return _check_back(decision, state)
    if decision.kind == "note":
        if not decision.text:
            return "an empty note; write the note after 'note', or press Enter to continue"
        if state.ends:
            return ("no step runs after this pause, so a note would reach none: press Enter to end, "
                    "'back STEP QUESTION' to re-run a step, or 'stop'")
        used = sum(len(note) for note in state.notes)
        if used + len(decision.text) > MAX_NOTES_CHARS:
            return (f"the notes of this chat would pass {MAX_NOTES_CHARS} characters ({used} used); "
                    "send a step back with a question instead, or continue")
    return None


def _check_back(decision: HumanDecision, state: HumanState) -> str | None:
    usage = f"back STEP QUESTION (STEP: {', '.join(state.steps) or 'none yet'})"
    if state.backs_left <= 0:
        return "no more steps can be sent back in this chat (human.max_backs); continue or stop"
    if not decision.step:
        return f"say which step to send back and what to ask it: {usage}"
    if decision.step not in state.steps:
        if decision.step in state.titles:
            return (f"the {state.title(decision.step)} cannot be sent back here (only a working step that has run); "
                    f"{usage}")
        return f"'{decision.step}' is not a step of this team; {usage}"
    if not decision.text:
        return f"give the {state.title(decision.step)} a question to act on: back {decision.step} QUESTION"
    return None


__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_NOTES_CHARS",
    "AnswerSource",
    "DecisionKind",
    "HumanAnswerError",
    "HumanDecision",
    "HumanState",
    "OnHumanError",
    "accepted",
    "check_decision",
    "clean_line",
    "parse_answer",
]
