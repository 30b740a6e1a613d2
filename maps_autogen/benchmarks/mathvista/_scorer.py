"""MathVista: record schema, rule-based answer extraction, official normalisation and verdict.

The official pipeline has three stages: extract an answer from the model's free text (the
official code mostly asks an LLM), normalise it by question type / answer type / precision,
then compare it with the ground truth by exact string equality. This module reproduces the
last two stages exactly (both published versions of the integer rule) and offers a pure,
rule-only extractor for the first, plus an opt-in LLM extractor whose model call is supplied by
the caller.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from maps_autogen.benchmarks._base import RecordError, Verdict
from maps_autogen.benchmarks._bounds import Unjudgeable, charge
from maps_autogen.benchmarks.mathvista._choice_answers import levenshtein
from maps_autogen.benchmarks.mathvista._extract import EXTRACTOR_VERSION, extract

QuestionType = Literal["multi_choice", "free_form"]
AnswerType = Literal["text", "integer", "float", "list"]
IntegerRule = Literal["current", "legacy"]

RULE_VERSIONS: tuple[str, ...] = ("current", "legacy")

# MathVista's own category labels, mapped to the names the paper's tables use.
CATEGORY_TO_SUBSET = {"general-vqa": "general", "math-targeted-vqa": "math"}

EXTRACTION_METHOD_GIVEN = "given"
EXTRACTION_METHOD_RULES = "rules"
EXTRACTION_METHOD_LLM = "llm"
EXTRACTION_METHOD_UNREADABLE = "unreadable"

PROMPT_FILE = "extract_mathvista.md"


# --------------------------------------------------------------------------------------------
# Record schema
# --------------------------------------------------------------------------------------------


class MathVistaRecord(BaseModel):
    """One line of a MathVista results file: the problem's scoring fields plus the model output.

    Unknown fields are kept (they pass through to the scored file). JSON numbers in text fields
    are accepted and turned into strings, since result files written by other tools do that.
    """

    model_config = ConfigDict(extra="allow", coerce_numbers_to_str=True, frozen=True)

    pid: str
    question_type: QuestionType
    answer_type: AnswerType
    precision: int | None = None
    choices: list[str] | None = None
    answer: str
    response: str | None = None
    extraction: str | None = None

    @field_validator("precision", mode="before")
    @classmethod
    def _precision_as_int(cls, value: Any) -> int | None:
        # The official code applies int() to precision: accept 1, 1.0 and "2" (and "2.0", as
        # JSON writers produce it), reject anything that is not a whole number.
        if value is None:
            return None
        problem = "must be a whole number of decimal places"
        if isinstance(value, bool):
            raise ValueError(problem)
        try:
            number = float(value) if isinstance(value, str) else value
            if isinstance(number, float) and not number.is_integer():
                raise ValueError(problem)
            return int(number)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(problem) from None

    @field_validator("extraction", mode="before")
    @classmethod
    def _list_extraction_as_text(cls, value: Any) -> Any:
        # Some tools store a list answer as a JSON array; the official code applies str() to
        # the extraction, which turns [1, 2] into "[1, 2]".
        return str(value) if isinstance(value, list) else value

    def check_consistency(self) -> None:
        """Raise RecordError when the fields cannot be scored together."""
        if self.question_type == "multi_choice" and not self.choices:
            raise RecordError("field 'choices': a multi_choice record needs a non-empty list")
        if (
            self.question_type == "free_form"
            and self.answer_type == "float"
            and self.precision is None
        ):
            raise RecordError("field 'precision': a float answer needs the number of decimals")


def parse_record(record: Mapping[str, Any]) -> MathVistaRecord:
    """Validate a raw record; raise RecordError naming the first bad or missing field."""
    if not isinstance(record, Mapping):
        raise RecordError(f"expected a JSON object, got {type(record).__name__}")
    try:
        parsed = MathVistaRecord.model_validate(dict(record))
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "record"
        kind = "missing" if first["type"] == "missing" else first["msg"]
        raise RecordError(f"field {field!r}: {kind}") from None
    parsed.check_consistency()
    return parsed


# --------------------------------------------------------------------------------------------
# Normalisation (the official rules)
# --------------------------------------------------------------------------------------------


def nearest_choice(text: str, choices: Sequence[str]) -> str:
    """The choice with the smallest edit distance to `text`; the first one wins a tie. A text
    that is a choice is that choice (distance 0, found without the tables); otherwise the tables'
    cells are bounded (`bounds.MAX_EDIT_CELLS`: Unjudgeable past it)."""
    if text in choices:
        return text
    cells = sum(len(text) * len(choice) for choice in choices)
    charge("edit cells", cells, "matching the answer to the nearest option")
    distances = [levenshtein(text, choice) for choice in choices]
    return choices[distances.index(min(distances))]


_PAREN_LETTER = re.compile(r"\(([a-zA-Z])\)")


def normalize_multi_choice(extraction: str, choices: Sequence[str]) -> str:
    """Map an extraction to one of the choices, as the official code does.

    Strip; if a letter in parentheses occurs anywhere, the first one (upper-cased) replaces the
    text; a capital letter within range selects that choice; anything else goes to the nearest
    choice by edit distance. The result is always one of `choices`.
    """
    text = extraction.strip()
    letters = _PAREN_LETTER.findall(text)
    if letters:
        text = letters[0].upper()
    option_letters = [chr(ord("A") + index) for index in range(len(choices))]
    if text in option_letters:
        return choices[option_letters.index(text)]
    return nearest_choice(text, choices)


def normalize_integer(extraction: str, rule: IntegerRule = "current") -> str | None:
    """`current`: str(int(float(x))), truncating "5.7" to "5"; `legacy`: str(int(x)), so "5.0"
    fails. Any failure gives None."""
    try:
        if rule == "legacy":
            return str(int(extraction))
        return str(int(float(extraction)))
    except (ValueError, TypeError, OverflowError):
        return None


def normalize_float(extraction: str, precision: int | None) -> str | None:
    """str(round(float(x), precision)); any failure (including a missing precision) gives None."""
    try:
        return str(round(float(extraction), int(precision)))  # type: ignore[arg-type]
    except (ValueError, TypeError, OverflowError):
        return None


def normalize(
    extraction: str | None,
    *,
    question_type: str,
    answer_type: str,
    choices: Sequence[str] | None = None,
    precision: int | None = None,
    rules: str = "current",
) -> str | None:
    """The official normalisation of an extraction; None when it cannot be normalised.

    A missing extraction (None) normalises to None for every question type: the official code
    would turn it into the text "None", which only makes a wrong answer look like a guess.
    """
    if extraction is None:
        return None
    if question_type == "multi_choice":
        if not choices:
            return None
        return normalize_multi_choice(extraction, choices)
    if answer_type == "integer":
        return normalize_integer(extraction, "legacy" if rules == "legacy" else "current")
    if answer_type == "float":
        return normalize_float(extraction, precision)
    if answer_type == "list":
        return str(extraction)
    # A free-form text answer has no official branch: the official code leaves it unset, which
    # never equals a ground truth. Keep the stripped text so an exact answer still counts.
    return extraction.strip()


def is_correct(prediction: str | None, answer: str) -> bool:
    """The official verdict: exact string equality with the ground truth."""
    return prediction is not None and prediction == answer


# --------------------------------------------------------------------------------------------
# Rule-based extraction (no LLM)
# --------------------------------------------------------------------------------------------

def extract_answer(
    response: str | None,
    *,
    question_type: str,
    answer_type: str,
    choices: Sequence[str] | None = None,
) -> str | None:
    """Rule-only extraction of the answer from a raw model response; None if nothing is found
    (see `maps_autogen.benchmarks.mathvista._extract.extract`, which also says why)."""
    return extract(response, question_type=question_type, answer_type=answer_type,
                   choices=choices).answer


# --------------------------------------------------------------------------------------------
# Optional LLM extraction (off by default; the caller supplies the model call)
# --------------------------------------------------------------------------------------------

def load_prompt(name: str, variables: Mapping[str, str]) -> str:
    """Read prompts/<name> (the built-in prompts) and fill its {{variable}} placeholders."""
    from maps_autogen._util import ConfigError
    from maps_autogen.settings import defaults_dir, render

    path = defaults_dir() / "prompts" / name
    try:
        template = path.read_text(encoding="utf-8")
    except OSError:
        raise ConfigError(f"prompt file {path} is missing or unreadable",
                          fix="restore it from the repository") from None
    return render(template, variables, source=str(path))


def _prompt_variables(record: MathVistaRecord, response: str) -> dict[str, str]:
    """The data the extraction prompt is filled with; all wording lives in the prompt file."""
    options = "\n".join(
        f"({chr(ord('A') + index)}) {choice}"
        for index, choice in enumerate(record.choices or [])
    )
    extra = record.model_extra or {}
    return {
        "question": str(extra.get("query") or extra.get("question") or ""),
        "question_type": record.question_type,
        "answer_type": record.answer_type,
        "precision": "" if record.precision is None else str(record.precision),
        "options": options or "-",
        "response": response.strip(),
    }


def extract_with_llm(
    response: str | None,
    record: Mapping[str, Any],
    complete: Callable[[str], str],
) -> str | None:
    """Ask a language model (via `complete(prompt) -> text`) to extract the answer.

    Returns the model's extraction stripped of whitespace (and of a leading "Extracted
    answer:" it may echo), or None for an empty response. Errors from `complete` propagate:
    the caller decides whether to retry or fall back to the rules.
    """
    parsed = parse_record(record)
    if response is None or not response.strip():
        return None
    prompt = load_prompt(PROMPT_FILE, _prompt_variables(parsed, response))
    reply = re.sub(r"^extracted answer\s*:\s*", "", complete(prompt).strip(), flags=re.IGNORECASE)
    # The prompt asks for one line; a chatty model may add an explanation below it.
    return reply.strip().split("\n", 1)[0].strip()


def with_llm_extraction(
    record: Mapping[str, Any], complete: Callable[[str], str]
) -> dict[str, Any]:
    """A copy of `record` with `extraction` from the LLM and `extraction_method: "llm"`, ready
    for scoring (scoring starts from an existing extraction)."""
    extraction = extract_with_llm(record.get("response"), record, complete)
    return {**record, "extraction": extraction if extraction is not None else "",
            "extraction_method": EXTRACTION_METHOD_LLM}


# --------------------------------------------------------------------------------------------
# Scorer
# --------------------------------------------------------------------------------------------


def score_parsed(record: MathVistaRecord, rules: str = "current") -> Verdict:
    """Score a validated record: from its `extraction` if present, else from `response`.

    Scoring from a response that is missing or blank, or from which the rules extract
    nothing, is a wrong answer (prediction None), never a guess. The verdict says how the
    extraction was obtained: "given", "rules", or "unreadable" (text the rules cannot read).
    """
    extraction = record.extraction
    method = EXTRACTION_METHOD_GIVEN
    if extraction is None:
        read = extract(
            record.response,
            question_type=record.question_type,
            answer_type=record.answer_type,
            choices=record.choices,
        )
        extraction = read.answer
        method = EXTRACTION_METHOD_UNREADABLE if read.status == "unreadable" else EXTRACTION_METHOD_RULES
    try:
        prediction = normalize(
            extraction,
            question_type=record.question_type,
            answer_type=record.answer_type,
            choices=record.choices,
            precision=record.precision,
            rules=rules,
        )
    except Unjudgeable as beyond:  # judged wrong, and the verdict says why
        return Verdict(extraction=extraction, prediction=None, correct=False, extraction_method=method,
                       extractor_version=EXTRACTOR_VERSION, unjudged=beyond.reason)
    return Verdict(extraction=extraction, prediction=prediction,
                   correct=is_correct(prediction, record.answer), extraction_method=method,
                   extractor_version=EXTRACTOR_VERSION)


def subset_of(record: Mapping[str, Any]) -> str:
    """`subset` if given, else the MathVista category under the paper's name, else "all"."""
    subset = record.get("subset")
    if subset not in (None, ""):
        return str(subset)
    category = record.get("category")
    if category in (None, ""):
        metadata = record.get("metadata")
        if isinstance(metadata, Mapping):
            category = metadata.get("category")
    if category in (None, ""):
        return "all"
    return CATEGORY_TO_SUBSET.get(str(category), str(category))


class MathVistaScorer:
    """MathVista's official scoring rules ("current": int(float(x)); "legacy": int(x))."""

    name: ClassVar[str] = "mathvista"
    rule_versions: ClassVar[tuple[str, ...]] = RULE_VERSIONS
    # Optional marker read by maps_autogen.scoring._score: a None prediction is a failed
    # normalisation (written out), not a missing stage.
    has_prediction: ClassVar[bool] = True

    def score(self, record: Mapping[str, Any], rules: str = "current") -> Verdict:
        """Score one record; raise RecordError if it is unusable or `rules` is unknown."""
        if rules not in self.rule_versions:
            known = ", ".join(self.rule_versions)
            raise ValueError(f"unknown rules {rules!r}; choose one of: {known}")
        return score_parsed(parse_record(record), rules)

    def subset(self, record: Mapping[str, Any]) -> str:
        """The subset a record counts towards in summaries."""
        return subset_of(record)


SCORER = MathVistaScorer()

__all__ = [
    "SCORER",
    "MathVistaRecord",
    "MathVistaScorer",
    "extract_answer",
    "extract_with_llm",
    "is_correct",
    "levenshtein",
    "nearest_choice",
    "normalize",
    "normalize_float",
    "normalize_integer",
    "normalize_multi_choice",
    "parse_record",
    "score_parsed",
    "subset_of",
    "with_llm_extraction",
]
