"""A structured reply read for people: an answer step's phases and final answer, a reviewer's
evaluation of each dimension and the questions it asks, as headed paragraphs instead of one
JSON string.

What a reply is comes from what it parsed into (a message record's `parsed`: an answer or a
verdict), never from the step's name. The headings come from the model's JSON keys: they are
untrusted, so their count and length are bounded here and the callers escape them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from maps_autogen.orchestration import extract_json_object, value_text
from maps_autogen.records import AnswerParsed, DecisionParsed, VerdictParsed

MAX_SECTIONS = 12  # headed paragraphs shown per reply; the rest stay in the raw reply
MAX_HEADING_CHARS = 80


class Lenient(BaseModel):
    """A reading of a free-form part of a record: unknown keys ignored."""

    model_config = ConfigDict(extra="ignore")


L = TypeVar("L", bound=Lenient)


def read_as(model: type[L], data: Any) -> L | None:
    """`data` read as `model`, or None when it is not one."""
    try:
        return model.model_validate(data) if data is not None else None
    except ValidationError:
        return None


@dataclass(frozen=True)
class Section:
    """One headed paragraph of a reply."""

    heading: str
    text: str


@dataclass(frozen=True)
class ReadReply:
    """A structured reply as text: `kind` "answer" (phases, final answer) or "review" (its
    evaluation per dimension; the scores and feedback are in the parsed verdict)."""

    kind: str
    sections: list[Section]
    final_answer: str | None = None


def _heading(key: Any) -> str:
    text = " ".join(str(key).split())
    return text if len(text) <= MAX_HEADING_CHARS else text[: MAX_HEADING_CHARS - 1] + "…"


def _key(found: dict[str, Any], name: str) -> Any:
    """The value under `name`, whatever its case and spaces ("Final Answer", "final_answer")."""
    for key, value in found.items():
        if isinstance(key, str) and key.strip().lower().replace(" ", "_") == name:
            return value
    return None


def _sections(value: Any, default_heading: str) -> list[Section]:
    if isinstance(value, dict):
        items = [(_heading(key), value_text(text)) for key, text in value.items()]
    elif isinstance(value, list):
        items = [(f"{default_heading} {n}", value_text(text)) for n, text in enumerate(value, 1)]
    elif value is None:
        items = []
    else:
        items = [(default_heading, value_text(value))]
    return [Section(heading, text) for heading, text in items[:MAX_SECTIONS] if text]


def read_reply(content: str, parsed: AnswerParsed | VerdictParsed | DecisionParsed | None) -> ReadReply | None:
    """The reply as headed paragraphs; None when it parsed into neither an answer nor a verdict
    (then it is shown as the text it is)."""
    if isinstance(parsed, VerdictParsed):
        found, _ = extract_json_object(content)
        return ReadReply("review", _sections(_key(found or {}, "evaluation"), "Evaluation"))
    if isinstance(parsed, AnswerParsed) and parsed.parsed:
        found, _ = extract_json_object(content)
        if found is None:
            return None
        return ReadReply("answer", _sections(_key(found, "process"), "Process"), parsed.final_answer)
    return None
