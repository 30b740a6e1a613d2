"""A benchmark of the user's own (`maps eval custom --data FILE.jsonl`): plain, documented rules.

Record fields: `id`, `answer` (the gold answer: a letter for `choice`), `answer_type` (`choice`,
`number` or `text`; see `answer_type_of` for the default), `options` (list, for `choice`),
optional `tolerance` (for `number`), optional `category`, `response`; other fields pass
through. The verdict, by answer type:

- reading the response (`_reading.py`): the last `\\boxed{…}` if any, else the text after the
  last answer phrase ("The answer is", "Answer:", "Final answer:", a "Final answer" heading...),
  else the whole response; on one line, without markdown emphasis, `$`, quotes or a final full
  stop;
- `choice`: the option that answer names (`reading.read_letter`: a letter in any case, with or
  without parentheses, ".", ":" or ")", "Option B", "(B) its text", or the text of one option)
  must be the gold letter; an answer naming two options or negating one names none;
- `number`: the answer's number as a grader reads it (`_numbers.py`: the last number written as
  a whole, LaTeX fractions, roots, powers of ten, signs, thousands separators and mixed numbers
  evaluated; units and words around it left aside; unreadable, never credited, when it cannot
  be evaluated or is not one number) against the gold answer's (the same reading, of nothing
  but the number): exactly (12.50 equals 12.5, \frac{1}{4} equals 0.25), a value that is not
  exact (a root, π) to `numbers.RELATIVE_TOLERANCE`; a "%" on either side also reads its
  value as hundredths; with a `tolerance`, the absolute difference may be at most that much;
- `text`: both sides normalised (Unicode NFKC, case-folded, punctuation dropped, the English
  articles a/an/the dropped, whitespace collapsed) and then equal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, ClassVar

from maps_autogen.benchmarks._base import RecordError, Verdict
from maps_autogen.benchmarks._bounds import Unjudgeable
from maps_autogen.benchmarks.custom._numbers import Reading, read_number, same_number
from maps_autogen.benchmarks.custom._reading import (
    LETTERS,
    MAX_ANSWER_CHARS,
    extract,
    normalise_text,
    read_answer,
    read_letter,
)
from maps_autogen.records import Evaluation

ANSWER_TYPES = ("choice", "number", "text")
DEFAULT_CATEGORY = "all"  # rows without a category count under this one


def answer_type_of(record: Mapping[str, Any]) -> str:
    """The record's answer type: `answer_type` when given; else `choice` when it has options,
    `number` when the gold answer is a number, `text` otherwise."""
    given = record.get("answer_type")
    if given not in (None, ""):
        if given not in ANSWER_TYPES:
            raise RecordError(f"field 'answer_type' must be one of {', '.join(ANSWER_TYPES)}, not {given!r}")
        return str(given)
    if record.get("options"):
        return "choice"
    return "number" if _gold_number(str(record.get("answer") or "")) is not None else "text"


def _gold_number(text: str, field: str = "answer") -> Reading | None:
    """A row's own number (its gold answer or tolerance: nothing but the number, read as an
    answer's is), None when it is not one; a number past the bounds makes the row unusable
    (RecordError naming the field), before any model call."""
    try:
        reading = read_number(text[:MAX_ANSWER_CHARS], whole=True)
    except Unjudgeable as beyond:
        raise RecordError(f"field {field!r} cannot be scored: {beyond.reason}") from None
    return reading if reading.value is not None else None


def _options(record: Mapping[str, Any]) -> list[str]:
    options = record.get("options")
    if options is None:
        return []
    if not isinstance(options, list) or len(options) > len(LETTERS):
        raise RecordError(f"field 'options' must be a list of at most {len(LETTERS)} options")
    return [str(option) for option in options]


def _tolerance(record: Mapping[str, Any]) -> Fraction:
    value = record.get("tolerance")
    if value in (None, ""):
        return Fraction(0)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise RecordError("field 'tolerance' must be a non-negative number")
    tolerance = _gold_number(str(value), "tolerance")
    if tolerance is None or tolerance.value is None or tolerance.value < 0:
        raise RecordError("field 'tolerance' must be a non-negative number")
    return Fraction(tolerance.value)


def gold_problem(record: Mapping[str, Any]) -> str | None:
    """What makes a record's gold answer unusable (None when it is fine)."""
    try:
        _gold(record, answer_type_of(record))
    except RecordError as error:
        return str(error)
    return None


def _gold(record: Mapping[str, Any], kind: str) -> Any:
    answer = record.get("answer")
    if isinstance(answer, bool) or not isinstance(answer, (str, int, float)) or str(answer).strip() == "":
        raise RecordError("field 'answer' must be a non-empty string or a number")
    text = str(answer).strip()
    if kind == "choice":
        options = _options(record)
        if len(options) < 2:
            raise RecordError("a 'choice' record needs 'options': a list of at least two")
        if len(text) != 1 or text.upper() not in LETTERS[: len(options)]:
            raise RecordError(f"field 'answer' must be an option letter A-{LETTERS[len(options) - 1]} "
                              f"(A for the first option), not {text!r}")
        return text.upper()
    if kind == "number":
        value = _gold_number(text)
        if value is None:
            raise RecordError(f"field 'answer' is not a number: {text[:40]!r}")
        _tolerance(record)
        return value
    if not normalise_text(text):
        raise RecordError("field 'answer' has no letters or digits to compare")
    return normalise_text(text)


class CustomScorer:
    """The rules of `maps eval custom` (module docstring); one rule version."""

    name: ClassVar[str] = "custom"
    rule_versions: ClassVar[tuple[str, ...]] = ("current",)

    def score(self, record: Mapping[str, Any], rules: str = "current") -> Verdict:
        """Read the answer from `response` and compare it with `answer` by the record's type."""
        kind = answer_type_of(record)
        gold = _gold(record, kind)
        response = record.get("response")
        if response is not None and not isinstance(response, str):
            raise RecordError("field 'response' must be a string or null")
        if not response:
            return Verdict(extraction=None, prediction=None, correct=False)
        extracted = extract(response)
        answer = extracted.text
        if kind == "choice":
            letter = read_letter(extracted, _options(record))
            return Verdict(extraction=answer, prediction=letter, correct=letter == gold)
        if kind == "number":
            tolerance = _tolerance(record)
            try:
                reading = read_number(answer)
                correct = same_number(reading, gold, tolerance)
            except Unjudgeable as beyond:  # judged wrong, and the verdict says why
                return Verdict(extraction=answer, prediction=None, correct=False, unjudged=beyond.reason)
            if reading.unreadable is not None:  # a number it cannot evaluate: never credited
                return Verdict(extraction=answer, prediction=None, correct=False, extraction_method="unreadable")
            return Verdict(extraction=answer, prediction=reading.text, correct=correct)
        normalised = normalise_text(answer)
        return Verdict(extraction=answer, prediction=normalised, correct=normalised == gold)

    def subset(self, record: Mapping[str, Any]) -> str:
        """`subset` if given, else `category`, else "all"."""
        for key in ("subset", "category"):
            value = record.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
        return DEFAULT_CATEGORY


def gold_evaluation(gold: str, options: Sequence[str], final_answer: str | None) -> Evaluation:
    """A solve's answer scored against its problem file's gold answer by these same rules (the
    answer type follows from the options and the gold, as for a record without `answer_type`),
    as run.json records an eval's (its `evaluation`; `gold` and `correct` beside it). A run with
    no answer (`final_answer` None or empty: it failed, or ended before the answer step replied)
    has no verdict: `correct` is None, never False."""
    if not final_answer:
        return Evaluation(response=final_answer, extraction=None, prediction=None, correct=None, gold=gold)
    verdict = SCORER.score({"answer": gold, "options": list(options), "response": final_answer})
    evaluation = Evaluation(response=final_answer, extraction=verdict.extraction, prediction=verdict.prediction,
                            correct=verdict.correct, gold=gold)
    return evaluation if verdict.unjudged is None else evaluation.model_copy(update={"unjudged": verdict.unjudged})


SCORER = CustomScorer()

__all__ = ["ANSWER_TYPES", "LETTERS", "SCORER", "CustomScorer", "answer_type_of", "gold_evaluation", "gold_problem",
           "normalise_text", "read_answer", "read_letter", "read_number"]
