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

from maps_autogen.benchmarks.base import RecordError, Verdict

QuestionType = Literal["multi_choice", "free_form"]
AnswerType = Literal["text", "integer", "float", "list"]
IntegerRule = Literal["current", "legacy"]

RULE_VERSIONS: tuple[str, ...] = ("current", "legacy")

# MathVista's own category labels, mapped to the names the paper's tables use.
CATEGORY_TO_SUBSET = {"general-vqa": "general", "math-targeted-vqa": "math"}

EXTRACTION_METHOD_RULES = "rules"
EXTRACTION_METHOD_LLM = "llm"

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


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions, each cost 1) between two strings."""
    if len(a) < len(b):
        a, b = b, a
    # Two rows suffice; keep the shorter string as the row to bound memory.
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            current.append(
                min(
                    previous[j] + 1,
                    current[j - 1] + 1,
                    previous[j - 1] + (char_a != char_b),
                )
            )
        previous = current
    return previous[-1]


def nearest_choice(text: str, choices: Sequence[str]) -> str:
    """The choice with the smallest edit distance to `text`; the first one wins a tie."""
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

# A number as models write it: optional sign, thousands separators, decimals, no exponent.
_NUMBER = r"[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+−]?\.\d+"
_NUMBER_RE = re.compile(rf"(?<![\w.])(?:{_NUMBER})(?!\d)")
_FRACTION_RE = re.compile(r"(?<![\w.])([-+−]?\d+)\s*/\s*(\d+)(?!\d|\.\d)")
_LIST_RE = re.compile(r"\[[^\[\]\n]{0,500}\]")

# Phrases after which models state their final answer; the last occurrence is taken.
_ANSWER_CUES = re.compile(
    # "answer/option/choice", optionally a short qualifier ("to the question"), then a verb or
    # a colon: a bare mention such as "each option" or "answer choices" is not a cue.
    r"\b(?:answer|option|choice)\b(?:[^.\n:：]{0,40}?\b(?:is|are|would be|should be|will be)\b"
    r"\s*[:：=]?|\s*[:：=])\s*"
    r"|答案(?:是|为|為)?\s*[:：]?\s*|故选\s*[:：]?\s*|选\s*",
    re.IGNORECASE,
)
_BOXED_START = "\\boxed{"
_MARKUP = re.compile(r"[*_`$]|\\text\{|\\mathrm\{|\\textbf\{")


def _last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...}, matching braces; None if there is none or it is open."""
    start = text.rfind(_BOXED_START)
    if start < 0:
        return None
    depth = 1
    position = start + len(_BOXED_START)
    for index in range(position, len(text)):
        char = text[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[position:index]
    return None


def _strip_markup(text: str) -> str:
    """Drop markdown emphasis, math dollars and simple LaTeX text wrappers."""
    return _MARKUP.sub("", text).replace("}", "").replace("{", "")


def _after_last_cue(text: str) -> str | None:
    """The text after the last answer phrase ("the answer is", "Answer:", "答案是", ...)."""
    last = None
    for match in _ANSWER_CUES.finditer(text):
        last = match
    if last is None:
        return None
    tail = text[last.end():]
    return tail if tail.strip() else None


def _clean_number(token: str) -> str:
    """A number token in plain Python form: no thousands separators, ASCII minus."""
    return token.replace(",", "").replace("−", "-").lstrip("+")


def _first_number(text: str) -> str | None:
    match = _NUMBER_RE.search(text)
    return _clean_number(match.group(0)) if match else None


def _last_number(text: str) -> str | None:
    matches = _NUMBER_RE.findall(text)
    return _clean_number(matches[-1]) if matches else None


def _fraction_value(text: str) -> str | None:
    """A leading simple fraction "a/b" as a decimal string (b != 0)."""
    match = _FRACTION_RE.match(text.strip())
    if not match:
        return None
    try:
        numerator = int(match.group(1).replace("−", "-"))
        denominator = int(match.group(2))
        return str(numerator / denominator)
    except (ValueError, ZeroDivisionError, OverflowError):
        # Division by zero, or digits beyond what int() or a float can hold.
        return None


_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
_LEADING_WORD = re.compile(r"^\W*([A-Za-z]+)\b")


def _number_word(text: str) -> str | None:
    """The value of a leading English number word ("two" → "2"), zero to twenty."""
    match = _LEADING_WORD.match(text)
    return _NUMBER_WORDS.get(match.group(1).lower()) if match else None


def _is_plain_number(text: str) -> bool:
    try:
        float(text)
    except (ValueError, OverflowError):
        return False
    return True


def _extract_number(response: str, answer_type: str) -> str | None:
    """Integer / float: the whole response if numeric (or a number word), else the number in
    \\boxed{}, else the one after the last answer phrase, else the last number."""
    text = response.strip()
    if _is_plain_number(text):
        return text
    if len(text) <= 12 and _number_word(text) is not None:
        # A bare "two" or "Three." as the whole reply.
        return _number_word(text)
    candidates: list[str] = []
    boxed = _last_boxed(text)
    if boxed is not None:
        candidates.append(_strip_markup(boxed))
    tail = _after_last_cue(text)
    if tail is not None:
        candidates.append(_strip_markup(tail.split("\n", 1)[0]))
    for candidate in candidates:
        if answer_type == "float":
            fraction = _fraction_value(candidate)
            if fraction is not None:
                return fraction
        number = _first_number(candidate) or _number_word(candidate)
        if number is not None:
            return number
    return _last_number(_strip_markup(text))


def _extract_list(response: str) -> str | None:
    """List: the whole response if it is a list, else the last [...] in it."""
    text = response.strip()
    boxed = _last_boxed(text)
    if boxed is not None and _LIST_RE.search(boxed):
        text = boxed
    matches = _LIST_RE.findall(text)
    if matches:
        return matches[-1]
    return None


# A letter followed by punctuation or the end ("C", "C.", "(C) text", "C: text") ...
_LEADING_LETTER = re.compile(r"^(?:[(（]([A-Z])[)）]|([A-Z])(?:[.:)：。,，]|$))")
# ... or, right after an answer phrase, also by a space ("the answer is C because").
_LEADING_LETTER_LOOSE = re.compile(r"^[(（]?([A-Z])[)）]?(?:[.:)：。,，]|\s|$)")
_PAREN_CAPITAL = re.compile(r"[(（]([A-Z])[)）]")


def _leading_letter(text: str, n_choices: int, *, loose: bool = False) -> str | None:
    """A choice letter at the start of `text` ("C", "(C)", "C.", "C: ..."), if in range.

    Only with `loose` may a space follow the bare letter: elsewhere "A cube has..." or "I
    think..." would read as answers.
    """
    pattern = _LEADING_LETTER_LOOSE if loose else _LEADING_LETTER
    match = pattern.match(_strip_markup(text).strip())
    if match is None:
        return None
    letter = next(group for group in match.groups() if group)
    return letter if ord(letter) - ord("A") < n_choices else None


def _parenthesised_letter(text: str, n_choices: int) -> str | None:
    """The first parenthesised capital "(C)" in `text` that is in range."""
    for match in _PAREN_CAPITAL.finditer(text):
        if ord(match.group(1)) - ord("A") < n_choices:
            return match.group(1)
    return None


def _choice_text_in(text: str, choices: Sequence[str]) -> str | None:
    """The choice that `text` starts or ends with (the longest such choice), if any."""
    cleaned = _strip_markup(text).strip().rstrip(".。!").strip().lower()
    best: str | None = None
    for choice in choices:
        option = choice.strip().lower()
        if not option:
            continue
        starts = cleaned.startswith(option) and not cleaned[len(option):len(option) + 1].isalnum()
        # "... is 80." ends with the option as a whole word.
        ends = cleaned.endswith(option) and not cleaned[: -len(option)][-1:].isalnum()
        if (starts or ends) and (best is None or len(option) > len(best.strip())):
            best = choice
    return best


def _extract_multi_choice(response: str, choices: Sequence[str]) -> str | None:
    """Multiple choice: the response itself if it is a choice or a bare letter; else, in the
    last \\boxed{}, the line after the last answer phrase, then the last line: a leading
    letter, an option's text at either end, or a parenthesised letter."""
    text = response.strip()
    if text in choices:
        return text
    n_choices = len(choices)
    letter = _leading_letter(text, n_choices)
    if letter is not None and len(_strip_markup(text).strip()) <= 4:
        return letter
    pieces: list[tuple[str, bool]] = []  # (text, whether a letter may be followed by a space)
    boxed = _last_boxed(text)
    if boxed is not None:
        pieces.append((boxed, False))
    tail = _after_last_cue(text)
    if tail is not None:
        # Only the rest of that line: later paragraphs often discuss the other options.
        pieces.append((tail.strip().split("\n", 1)[0], True))
    pieces.append((text.rsplit("\n", 1)[-1], False))
    for piece, loose in pieces:
        found = (
            _leading_letter(piece, n_choices, loose=loose)
            or _choice_text_in(piece, choices)
            or _parenthesised_letter(piece, n_choices)
        )
        if found is not None:
            return found
    return None


def _extract_text(response: str) -> str | None:
    """Free-form text: \\boxed{} content, else the first line after the last answer phrase."""
    text = response.strip()
    boxed = _last_boxed(text)
    if boxed is not None:
        return _strip_markup(boxed).strip()
    tail = _after_last_cue(text)
    if tail is not None:
        return _strip_markup(tail.split("\n", 1)[0]).strip().rstrip(".").strip() or None
    return text or None


def extract_answer(
    response: str | None,
    *,
    question_type: str,
    answer_type: str,
    choices: Sequence[str] | None = None,
) -> str | None:
    """Rule-only extraction of the answer from a raw model response; None if nothing is found.

    Pure and total: never raises for any string. Multiple choice gives a letter or an option's
    text; integer and float give a number as written (without thousands separators); list gives
    the bracketed list; text gives the stated answer.
    """
    if response is None or not response.strip():
        return None
    if question_type == "multi_choice":
        return _extract_multi_choice(response, choices or [])
    if answer_type in ("integer", "float"):
        return _extract_number(response, answer_type)
    if answer_type == "list":
        return _extract_list(response)
    return _extract_text(response)


# --------------------------------------------------------------------------------------------
# Optional LLM extraction (off by default; the caller supplies the model call)
# --------------------------------------------------------------------------------------------

def load_prompt(name: str, variables: Mapping[str, str]) -> str:
    """Read prompts/<name> (the built-in prompts) and fill its {{variable}} placeholders."""
    from maps_autogen.config import defaults_dir
    from maps_autogen.errors import ConfigError
    from maps_autogen.prompts import render

    path = defaults_dir() / "prompts" / name
    try:
        template = path.read_text(encoding="utf-8")
    except OSError:
        raise ConfigError(f"prompt file {path} is missing or unreadable", fix="restore it from the repository") from None
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
    nothing, is a wrong answer (prediction None), never a guess.
    """
    extraction = record.extraction
    if extraction is None:
        extraction = extract_answer(
            record.response,
            question_type=record.question_type,
            answer_type=record.answer_type,
            choices=record.choices,
        )
    prediction = normalize(
        extraction,
        question_type=record.question_type,
        answer_type=record.answer_type,
        choices=record.choices,
        precision=record.precision,
        rules=rules,
    )
    return Verdict(extraction=extraction, prediction=prediction,
                   correct=is_correct(prediction, record.answer))


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
    # Optional marker read by maps_autogen.scoring: a None prediction is a failed
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
