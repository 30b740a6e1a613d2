"""MathVista's integer and float answers: the final number a response states, read by rules
(thousands separators, fractions, scientific notation, number words, units). (The rule set is
described in `_extract.py`.)"""

from __future__ import annotations

import re
from typing import Literal

from maps_autogen.benchmarks.mathvista._response_text import (
    UNREADABLE,
    Extraction,
    cut_continuation,
    declined,
    is_refusal,
    last_boxed,
    last_paragraph,
    statements_after_cues,
    strip_markup,
)

# Thousands groups are matched possessively and a number never starts inside such a chain
# ("1,000,000" is scanned once, not once per group), which keeps the scan linear.
_DIGITS = r"(?:\d{1,3}(?:,\d{3})++(?!\d|,\d)|\d+)(?:\.\d+)?|\.\d+"
_SIGN = r"[-+−–]?"
# One token: a LaTeX fraction, a plain fraction (float answers only) or a decimal number with
# an optional exponent. Each alternative is a fixed sequence of bounded or single runs.
_LATEX_FRACTION = r"\\[dt]?frac\{\s{0,3}(-?[\d.]{1,20})\s{0,3}\}\{\s{0,3}([\d.]{1,20})\s{0,3}\}"
_PLAIN_FRACTION = r"(?<![A-Za-z0-9_./])(-?\d{1,12})\s{0,2}/\s{0,2}(\d{1,12})(?![\w/]|\.\d)"
# A number does not start inside a Latin word or number ("A1", "x2", "1.5") nor is it an
# exponent ("cm/s^2", "x^{2}"), but it may follow CJK text directly ("面积是6") or an "S" that
# text recognition made of a dollar sign ("S24"). Its first character is checked first.
_NUMBER_START = r"(?=[-+−–\d.])(?:(?<![A-Za-z0-9_.^])|(?<=S)(?<![A-Za-z0-9_/^]S))(?<!\^\{)(?<!\d,)"
_NUMBER = rf"{_NUMBER_START}({_SIGN}(?:{_DIGITS}))(?:[eE]([-+−]?\d{{1,3}}))?(?![\d])"
_NUMBER_TOKEN = re.compile(rf"{_LATEX_FRACTION}|{_NUMBER}")
_NUMBER_OR_FRACTION_TOKEN = re.compile(rf"{_LATEX_FRACTION}|{_PLAIN_FRACTION}|{_NUMBER}")
# "3.2 × 10^4", "3.2 \times 10^{-4}", right after a number.
_TIMES_TEN = re.compile(r"\s{0,2}(?:×|\\times|x|\*)\s{0,2}10\s{0,2}\^\s{0,2}\{?\s{0,2}([-+−]?\d{1,3})\}?")

_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
_LEADING_WORD = re.compile(r"\W{0,10}([A-Za-z]{1,12})\b")


def _plain(token: str) -> str:
    """A number token in Python's form: no thousands separators, ASCII minus, no plus."""
    return token.replace(",", "").replace("−", "-").replace("–", "-").lstrip("+")


def _ratio(numerator: str, denominator: str) -> str | None:
    try:
        value = float(_plain(numerator)) / float(denominator)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return str(value)


def _scaled(mantissa: str, exponent: str) -> str | None:
    try:
        return str(float(f"{_plain(mantissa)}e{_plain(exponent)}"))
    except (ValueError, OverflowError):
        return None


# Plain "a/b" read as one number and kept as written (for integer answers: "the ratio is 1/2"
# answers 1/2, which no integer rule may truncate to 0).
AS_WRITTEN: Literal["as written"] = "as written"


def numbers_in(text: str, *, fractions: bool | Literal["as written"] = False) -> list[str]:
    """Every number in `text`, in order, as a plain decimal string.

    LaTeX fractions become their value; with `fractions`, so do plain "a/b" (for float
    answers; without, "3/4 of 12" is three numbers), or with AS_WRITTEN they are kept as
    "a/b". "1.2e-3" and "1.2 × 10^-3" are read as one number; thousands separators and
    Unicode minus signs are normalised.
    """
    pattern = _NUMBER_OR_FRACTION_TOKEN if fractions else _NUMBER_TOKEN
    found: list[str] = []
    resume = 0  # end of the last "× 10^k", whose digits are part of the number before it
    for match in pattern.finditer(text):
        if match.start() < resume:
            continue
        groups = match.groups()
        if groups[0] is not None:
            value = _ratio(groups[0], groups[1])
        elif fractions and groups[2] is not None:
            if fractions == AS_WRITTEN:
                value = f"{_plain(groups[2])}/{groups[3]}"
            else:
                value = _ratio(groups[2], groups[3])
        else:
            mantissa, exponent = groups[-2], groups[-1]
            if exponent is None:
                scale = _TIMES_TEN.match(text, match.end())
                exponent = scale.group(1) if scale else None
                resume = scale.end() if scale else resume
            value = _scaled(mantissa, exponent) if exponent is not None else _plain(mantissa)
        if value is not None:
            found.append(value)
    return found


def number_word(text: str) -> str | None:
    """The value of a leading English number word ("two" → "2"), zero to twenty."""
    match = _LEADING_WORD.match(text)
    return _NUMBER_WORDS.get(match.group(1).lower()) if match else None


def is_plain_number(text: str) -> bool:
    """Whether float() reads the whole text."""
    try:
        float(text)
    except (ValueError, OverflowError):
        return False
    return True


def _number_in_statement(statement: str, fractions: bool | Literal["as written"]) -> str | None:
    """The number a final statement gives: after its last "=" if it shows a calculation
    ("2 + 3 = 5"), else its first number ("4 of the 7 cars"), else a number word."""
    cleaned = strip_markup(statement)
    if "=" in cleaned:
        after = numbers_in(cleaned.rsplit("=", 1)[1], fractions=fractions)
        if after:
            return after[0]
    numbers = numbers_in(cleaned, fractions=fractions)
    if numbers:
        return numbers[0]
    return number_word(cleaned)


_WHOLE_WITH_ZERO_DECIMALS = re.compile(r"(-?\d+)\.0+")
# A short bold span ("**70**", "**week 3**"): how several models mark their answer.
_BOLD = re.compile(r"\*\*([^*\n]{1,60})\*\*")


def _as_answer(number: str, answer_type: str) -> Extraction:
    """An integer answer stated with zero decimals ("$13.00") is that integer."""
    if answer_type == "integer":
        whole = _WHOLE_WITH_ZERO_DECIMALS.fullmatch(number)
        if whole is not None:
            number = whole.group(1)
    return Extraction(number, "answer")


def _last_bold_number(text: str, fractions: bool | Literal["as written"]) -> str | None:
    found = None
    for match in _BOLD.finditer(text):
        numbers = numbers_in(match.group(1), fractions=fractions)
        if numbers:
            found = numbers[0]
    return found


# A row of a table the response draws ("| Cab | 10 |", "2019 | 7.84 years"): data restated,
# not a result, so its numbers are not taken for the final one.
_TABLE_ROW = re.compile(r"^\s{0,8}\|.{0,500}\|\s{0,8}$|[^\s=|]\s{1,3}\|\s{1,3}[^\s=|]")


# "there are N ...": how a final sentence gives a count, after which it may restate the
# question's own numbers ("there are 4 queries with a p-value lower than 0.50").
_COUNT_STATED = re.compile(r"\bthere\s{1,3}(?:are|is|were|was|will be|would be)\s{1,3}(?=\d)",
                           re.IGNORECASE)
_SENTENCE_BREAK = re.compile(r"(?<=[.!?。])\s+|\n")
_DIGIT = re.compile(r"\d")


def _count_in_last_sentence(text: str, fractions: bool | Literal["as written"]) -> str | None:
    """The number the last sentence holding a number gives after its last "there are", if
    any ("So there are 7 - 2 - 1 = 3 objects left." gives 3)."""
    sentences = [sentence for sentence in _SENTENCE_BREAK.split(text) if _DIGIT.search(sentence)]
    if not sentences:
        return None
    cues = list(_COUNT_STATED.finditer(sentences[-1]))
    return _number_in_statement(sentences[-1][cues[-1].end():], fractions) if cues else None


def extract_number(response: str, answer_type: str) -> Extraction:
    """Integer / float answers: the whole response if it is a number or a number word; else
    the number in the last \\boxed{}; else the one the last answer phrase states; else, unless
    the response declines to answer, the last number in bold, else the count its last sentence
    with a number gives ("there are 4 ..."), else the last number it gives outside any table
    it draws.
    An integer written with zero decimals ("$13.00") is given as that integer; a plain
    fraction given for an integer answer ("the ratio is 1/2") is kept as written."""
    text = response.strip()
    if is_plain_number(text):
        # A bare number (or a program's printed result) is taken as written, as the official
        # pipeline takes it: under the legacy integer rule "5.0" is then not "5".
        return Extraction(text, "answer")
    fractions: bool | Literal["as written"] = True if answer_type == "float" else AS_WRITTEN
    if len(text) <= 12:
        short = number_word(text) if not numbers_in(text) else None
        if short is not None:
            return Extraction(short, "answer")
    text = cut_continuation(text)
    boxed = last_boxed(text)
    if boxed is not None:
        number = _number_in_statement(boxed, fractions)
        if number is not None:
            return _as_answer(number, answer_type)
    for statement in statements_after_cues(text):
        if is_refusal(statement):
            return declined(statement)
        number = _number_in_statement(statement, fractions)
        if number is not None:
            return _as_answer(number, answer_type)
    if is_refusal(last_paragraph(text)):
        return declined(text)
    bold = _last_bold_number(text, fractions)
    if bold is not None:
        return _as_answer(bold, answer_type)
    counted = _count_in_last_sentence(text, fractions)
    if counted is not None:
        return _as_answer(counted, answer_type)
    prose = "\n".join(line for line in text.split("\n") if not _TABLE_ROW.search(line))
    numbers = numbers_in(strip_markup(prose), fractions=fractions) \
        or numbers_in(strip_markup(text), fractions=fractions)
    if numbers:
        return _as_answer(numbers[-1], answer_type)
    return declined(text) if is_refusal(text) else UNREADABLE
