"""The agents' fixed names and the typed outputs (and JSON schemas) of the answer and review steps.

The steps themselves are data: see _team.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

MANAGER_NAME = "Manager"
USER_PROXY_NAME = "UserProxy"


@dataclass(frozen=True)
class SolverAnswer:
    """The Solver's reply: its reasoning phases and the final answer.

    `parsed` is False when the reply was not valid JSON and the final answer fell back to the
    reply's text.
    """

    final_answer: str
    process: Any = None
    parsed: bool = True
    repaired: bool = False


@dataclass(frozen=True)
class CriticVerdict:
    """The Critic's scores (1-5 per dimension; a half mark stays a float), its evaluation of each
    dimension and its Socratic feedback per dimension."""

    scores: dict[str, int | float]
    need_feedback: bool
    worst_step: str | None = None
    feedback: dict[str, str] = field(default_factory=dict)
    repaired: bool = False
    evaluation: dict[str, str] = field(default_factory=dict)


def option_letter(index: int) -> str:
    """The letter of the option at `index` (0-based): A, B, ..., then numbers past Z."""
    return chr(ord("A") + index) if index < 26 else str(index + 1)


def answer_with_option(answer: str, options: Sequence[str]) -> str:
    """An answer that names an option by its letter, with the option's text: "C" -> "C. 3 kg".
    Any other answer (or an option already written out) is returned as it is."""
    letter = answer.strip().strip("()").rstrip(".):").strip().upper()
    for index, option in enumerate(options):
        if option_letter(index) == letter and letter:
            return lettered_option(index, option)
    return answer


NO_ANSWER = "no answer"
_ERROR_SHOWN_CHARS = 200  # the part of an error a shown "no answer (error: …)" quotes


def shown_answer(answer: str | None, options: Sequence[str], *, error: str | None = None) -> str:
    """A run's final answer as the terminal and the pages show it (`answer_with_option`); a run
    without one is "no answer (error: …)" (or "no answer"), never an empty answer to be read as wrong."""
    if answer and answer.strip():
        return answer_with_option(answer, options)
    if not error:
        return NO_ANSWER
    reason = " ".join(error.split())
    if len(reason) > _ERROR_SHOWN_CHARS:
        reason = reason[: _ERROR_SHOWN_CHARS - 1] + "…"
    return f"{NO_ANSWER} (error: {reason})"


def lettered_option(index: int, option: str) -> str:
    """The option at `index` (0-based) with its letter ("B. 4 kg"), unless it already starts with it."""
    letter = option_letter(index)
    already = len(option) > 1 and option[0] == letter and option[1] in ".):"
    return option if already else f"{letter}. {option}"


def solver_schema(option_count: int = 0) -> dict[str, Any]:
    """JSON schema of the Solver's reply (strict-mode compatible). With options, the final
    answer is one of their letters, so even a tiny model answers with a real choice."""
    phases = {f"Phase {n}": {"type": "string"} for n in range(1, 5)}
    answer: dict[str, Any] = {"type": "string"}
    if option_count:
        answer["enum"] = [option_letter(n) for n in range(option_count)]
    return {
        "type": "object",
        "properties": {
            "process": {
                "type": "object",
                "properties": phases,
                "required": list(phases),
                "additionalProperties": False,
            },
            "final_answer": answer,
        },
        "required": ["process", "final_answer"],
        "additionalProperties": False,
    }


def review_text_chars(max_tokens: int, dimensions: int) -> int:
    """The characters each text of a review (an evaluation, a feedback) may take so that the
    whole review fits in `max_tokens`: an equal share of what its JSON frame leaves (about four
    characters a token), at least 40."""
    return max(40, (max_tokens - 32 * (dimensions + 2)) * 4 // (2 * max(dimensions, 1)))


def critic_schema(
    dimensions: tuple[str, ...], *, low: float = 1, high: float = 5, whole: bool = True,
    text_chars: int | None = None,
) -> dict[str, Any]:
    """JSON schema of the reviewer's reply for the dimensions under review: its evaluation of
    each dimension first (a model writes in order, so it reviews before it scores), then the
    scores on the team's scale, the flag, the weakest dimension and the feedback per dimension.
    `text_chars` bounds each evaluation and feedback (`review_text_chars`), for a server whose
    grammar enforces it and whose reply cap would otherwise cut the scores off (the embedded
    model); None leaves them unbounded, as providers' strict modes require."""
    score = {"type": "integer" if whole else "number", "minimum": low, "maximum": high}
    scores = {dim: dict(score) for dim in dimensions}
    text: dict[str, Any] = {"type": "string"} if text_chars is None else {"type": "string", "maxLength": text_chars}
    feedback = {dim: dict(text) for dim in dimensions}
    return {
        "type": "object",
        "properties": {
            "evaluation": {
                "type": "object",
                "properties": {dim: dict(text) for dim in dimensions},
                "required": list(dimensions),
                "additionalProperties": False,
            },
            "scores": {
                "type": "object",
                "properties": scores,
                "required": list(dimensions),
                "additionalProperties": False,
            },
            "need_feedback": {"type": "boolean"},
            "worst_step": {"type": "string", "enum": list(dimensions)},
            "feedback": {
                "type": "object",
                "properties": feedback,
                "required": list(dimensions),
                "additionalProperties": False,
            },
        },
        "required": ["evaluation", "scores", "need_feedback", "worst_step", "feedback"],
        "additionalProperties": False,
    }
