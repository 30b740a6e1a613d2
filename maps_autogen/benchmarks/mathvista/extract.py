"""Rule-based answer extraction for MathVista: what a model meant, read from its free text.

The official MathVista pipeline asks an LLM to pull the answer out of each response. This
module does the same job with deterministic rules and no model call, so results files that only
carry raw responses can be scored offline. It reads choice letters in their usual forms
("(B)", "B.", "Answer: B", "the answer is option B", "选项为B"), an option's own text, the final
number of a worked solution (not its intermediate values), units, thousands separators,
fractions, simple LaTeX (\\frac, \\boxed), percentages, scientific notation, lists, and tells a
refusal ("cannot be determined") from a response it cannot read.

Untrusted text: the response is cut to a fixed size first and every pattern below is either
free of unbounded repetition or has one unbounded run next to a fixed token, so matching is
linear in the (bounded) input.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from maps_autogen.benchmarks.boxed import boxed_contents
from maps_autogen.benchmarks.mathvista.program_output import parse_program, program_output

# Longer responses keep their head and tail: answers are stated up front or at the end.
MAX_RESPONSE_CHARS = 16_000
# The version of these rules (and of the program reader they use), recorded in every scored
# line so that scores made by different rules can be told apart. Raise it whenever a change
# can read any response differently. 2: programs needing a library are unreadable, never
# emulated (issue 24).
EXTRACTOR_VERSION = "mathvista-rules-2"
_KEEP_EACH_END = MAX_RESPONSE_CHARS // 2

ExtractionStatus = Literal["answer", "no_answer", "unreadable"]


@dataclass(frozen=True)
class Extraction:
    """The outcome of reading one response.

    `status` is "answer" (with `answer` set), "no_answer" (the response is empty or declines
    to answer: nothing to extract, nothing for an LLM to find; `answer` is then the official
    pipeline's no-answer extraction, NO_ANSWER_EXTRACTION or the refusal stated as the answer,
    and None for a blank response) or "unreadable" (there is text, but the rules cannot tell
    which answer it gives, `answer` is None; an LLM extractor may try).
    """

    answer: str | None
    status: ExtractionStatus


# What the official pipeline extracts from a response that gives no answer: its extractor
# returns "" for a blank response (and "" is its fallback), and its normalisation then maps ""
# like any other text (multiple choice: to the nearest option by edit distance, the shortest).
# Emitting the same "" keeps our verdicts on such records those of the official pipeline.
NO_ANSWER_EXTRACTION = ""
NO_ANSWER = Extraction(NO_ANSWER_EXTRACTION, "no_answer")
# A missing or blank response has nothing to normalise: it stays a wrong answer, never an
# option picked by edit distance. (The official code would extract "" from it too; we do not
# follow it there, because a blank reply is how an unfinished run shows up in `maps eval`,
# and an unfinished reply is never scored as correct.)
EMPTY_RESPONSE = Extraction(None, "no_answer")
UNREADABLE = Extraction(None, "unreadable")


# --------------------------------------------------------------------------------------------
# Shared text helpers
# --------------------------------------------------------------------------------------------


def bound_text(text: str) -> str:
    """`text` cut to MAX_RESPONSE_CHARS: its head and tail, joined by a blank line."""
    if len(text) <= MAX_RESPONSE_CHARS:
        return text
    return text[:_KEEP_EACH_END] + "\n\n" + text[-_KEEP_EACH_END:]


# A model that goes on to invent the next exercise ("\n\nQuestion: ...", "Hint: ...", in
# Chinese "问题:") has answered before it: what follows is not its answer to this problem.
_CONTINUATION = re.compile(r"^[ \t*#]{0,8}(?:Question|Hint|问题)\s{0,4}[:：]", re.MULTILINE)


def cut_continuation(text: str) -> str:
    """`text` up to the first line starting "Question:", "Hint:" or "问题:" that follows some
    content."""
    for match in _CONTINUATION.finditer(text):
        head = text[: match.start()]
        if head.strip():
            return head
    return text


_BOXED_START = "\\boxed{"
# A lone "*" is emphasis or a bullet, except between numbers ("1.4 * 10^-20", "3*4"): a product.
_MARKUP = re.compile(r"\*\*|__|[`$]|\*(?<![\d)]\*)(?<![\d)] \*)|\*(?! ?[\d(])"
                     r"|\\text(?:bf)?\{|\\mathrm\{|\\left|\\right|\\[,;! ]")


def last_boxed(text: str) -> str | None:
    """Content of the last closed \\boxed{...}, braces matched; None if there is none."""
    boxes = boxed_contents(text) if _BOXED_START in text else []
    return boxes[-1] if boxes else None


_LATEX_FRACTION_FORM = re.compile(r"\\[dt]?frac\{([^{}\n]{1,20})\}\{([^{}\n]{1,20})\}")


def strip_markup(text: str) -> str:
    """Drop markdown emphasis, math dollars, simple LaTeX wrappers and spacing commands;
    \\frac{a}{b} becomes a/b."""
    text = _LATEX_FRACTION_FORM.sub(r"\1/\2", text)
    return _MARKUP.sub("", text).replace("}", "").replace("{", "")


# Phrases after which models state their final answer.
_ANSWER_CUES = re.compile(
    # "answer/option/choice", optionally a short qualifier ("to the question"), then a verb or
    # a colon: a bare mention such as "each option" or "answer choices" is not a cue, nor is
    # a negated verb ("a definitive answer cannot be provided").
    r"\b(?:answer|option|choice|final value|final result|result)\b"
    r"(?:[^.,(\n:：]{0,40}?(?<!not )(?<!n't )\b(?:is|would be|should be|will be|be)\b"
    r"\s{0,3}[:：=]?"
    r"|\s{0,3}[:：=])\s{0,3}"
    r"|\bI (?:would )?(?:choose|pick|select|go with)\s{1,3}(?:option\s{1,3})?"
    r"|答案(?:应该|应)?(?:是|为|為|选)?\s{0,3}[:：]?\s{0,3}|故选\s{0,3}[:：]?\s{0,3}"
    r"|选项(?:是|为|為)?\s{0,3}[:：]?\s{0,3}|应选(?!项)\s{0,3}|选(?!项)择?\s{0,3}",
    re.IGNORECASE,
)
# What follows a cue is read up to the end of its line, at most this far.
_STATEMENT_CHARS = 200
# Only the last few cues are tried: earlier ones are usually intermediate results.
_CUES_TRIED = 4


# A sentence opening "If ..." or "Otherwise" states an answer only under a condition ("If the
# heart is wider, then the answer is (A) Yes."): it is not the answer the response gives.
_CONDITIONAL_OPENING = re.compile(r"[\s*#>-]{0,8}(?:if|otherwise|unless)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?。！？\n]")


def _in_conditional_sentence(text: str, position: int) -> bool:
    """Whether the sentence holding `position` (looked back on at most a statement's length)
    opens with a condition."""
    head = text[max(0, position - _STATEMENT_CHARS):position]
    ends = [match.end() for match in _SENTENCE_END.finditer(head)]
    return _CONDITIONAL_OPENING.match(head, ends[-1] if ends else 0) is not None


_INNER_SENTENCE_END = re.compile(r"[.!?。！？](?=\s{1,3}\S)")


def _stands_alone(text: str, start: int) -> bool:
    """Whether the line at `start` is a paragraph of its own (a blank line or the end after it)
    holding one sentence: what an answer put on the line after "Answer:" looks like, unlike
    the opening of a worked paragraph or of a list ("the count for each option is:")."""
    line_end = text.find("\n", start, start + _STATEMENT_CHARS + 1)
    if line_end < 0:
        if start + _STATEMENT_CHARS < len(text):
            return False  # a line longer than a statement
        line_end = len(text)
    next_line = text[line_end + 1:line_end + 1 + _STATEMENT_CHARS].split("\n", 1)[0]
    return not next_line.strip() and _INNER_SENTENCE_END.search(text[start:line_end].strip()) is None


def statements_after_cues(text: str) -> list[str]:
    """The statements after the last answer phrases ("the answer is", "答案是", ...), last
    first: each the rest of its line (bounded), skipping cues that end their line and answers
    stated under a condition ("If ..., the answer is (A)"). A cue closing its line ("Answer:")
    states the next line only when that line stands alone as one sentence."""
    matches = list(_ANSWER_CUES.finditer(text))
    statements: list[str] = []
    for match in reversed(matches):
        end = match.end()
        if _in_conditional_sentence(text, match.start()):
            continue
        if "\n" in match.group(0) and not _stands_alone(text, end):
            continue
        statement = text[end:end + _STATEMENT_CHARS].split("\n", 1)[0]
        if statement.strip():
            statements.append(statement)
            if len(statements) == _CUES_TRIED:
                break
    return statements


# Declining to answer. Only consulted when no answer was found: a response that reasons
# "without the image we cannot be sure" and then answers is an answer.
_REFUSAL = re.compile(
    r"\b(?:cannot|can ?not|can't|unable to|not possible to|impossible to|not able to)\s{1,3}"
    r"(?:be\s{1,3})?(?:determine|determined|tell|answer|calculate|provide|say|find|solve|know"
    r"|help|process|see|view|access)"
    r"|\b(?:need|needs|require|requires)\s{1,3}(?:more|additional|further)\s{1,3}information"
    r"|\bnot enough information|\binsufficient information|\bno (?:answer|information)\b"
    r"|\bwithout (?:the |any |more |additional |further )?(?:image|information|context|data)"
    r"|\bI'?m sorry|\bsorry, but|\bN/A\b|\bnot (?:provided|given|applicable)\b|无法"
    r"|\bplease provide\b|\b(?:do not|don't) have (?:enough|sufficient|the) information"
    r"|\bmissing the (?:necessary|required) information|\bindeterminate\b"
    r"|\bnone of the (?:given |above |provided )?(?:options|choices)\b",
    re.IGNORECASE,
)


def last_paragraph(text: str) -> str:
    """The last paragraph (block of lines after a blank line) of the text."""
    paragraphs = [part for part in re.split(r"\n[ \t]{0,8}\n", text) if part.strip()]
    return paragraphs[-1] if paragraphs else text


def is_refusal(text: str) -> bool:
    """Whether the text declines to give an answer."""
    return _REFUSAL.search(text) is not None


# A refusal stated as the answer ("The answer is: Cannot be determined.") or making up the
# whole reply ("I can't process this file.") is copied by the official extractor as its
# extraction, which its normalisation then maps like any text; at most this long.
_STATED_REFUSAL_CHARS = 120


def declined(stated: str | None = None) -> Extraction:
    """No answer. The extraction is the refusal the response states in place of an answer
    (markup and the final period dropped), if short; else NO_ANSWER_EXTRACTION."""
    if stated is None or "\n" in stated.strip():
        return NO_ANSWER
    # A leading "(C)" is kept: the official normalisation reads that letter, as it would read
    # the official extraction.
    text = strip_markup(stated).strip().rstrip(".。").strip()
    if not text or len(text) > _STATED_REFUSAL_CHARS:
        return NO_ANSWER
    return Extraction(text, "no_answer")


# --------------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------
# Multiple choice
# --------------------------------------------------------------------------------------------

# A letter followed by punctuation or the end ("C", "C.", "(C) text", "C: text") ...
_LEADING_LETTER = re.compile(r"[(（\[]?([A-Z])(?:[)）\]]|[.:：。,，]|$)")
# ... or, right after an answer phrase, by anything but a letter or digit ("is C because").
_LEADING_LETTER_LOOSE = re.compile(r"(?:option\s{1,3}|choice\s{1,3})?[(（\[]?([A-Z])(?![A-Za-z0-9])",
                                   re.IGNORECASE)
_OPTION_LINE = re.compile(r"\s{0,8}[(（]?[A-Z][)）.]\s")
_PAREN_CAPITAL = re.compile(r"[(（]([A-Z])[)）]")
_OPENING_PAREN_LETTER = re.compile(r"\s{0,8}[(（]([A-Z])[)）]")
# "(B) is correct", "option B is the right answer", "B是正确答案".
_LETTER_IS_CORRECT = re.compile(
    r"(?<![A-Za-z])[(（]?([A-Z])[)）]?\s{0,3}(?:is\s{1,3}(?:the\s{1,3})?(?:correct|right)\b|是正确)"
    # ... or "x is (B)", "BF is **(B).**".
    r"|\b(?:is|be)\s{1,3}[(（]([A-Z])[)）](?![^\S\n]{0,3}(?:is|are)\b)"
)


# What a multiple-choice answer phrase may state in place of an option: "None (E)", "None of
# the above", "not one of the given choices" (read only when no option is named there).
_NO_OPTION_STATED = re.compile(
    r"^[\s*(]{0,4}none\b|\bnone of the above\b"
    r"|\bnot (?:one of|among|in) the (?:given |provided |listed |answer )?(?:options|choices)\b",
    re.IGNORECASE,
)

# A letter closing the response: "... so the count is C.", "...面积为D。", "B (No)".
_TRAILING_LETTER = re.compile(r"(?<![A-Za-z'’])([A-Z])(?:\s{0,2}[(（][^()（）\n]{0,40}[)）])?[\s.。!*]{0,6}$")


def _in_range(letter: str, n_choices: int) -> bool:
    return 0 <= ord(letter) - ord("A") < n_choices


def _leading_letter(text: str, n_choices: int, *, loose: bool = False) -> str | None:
    """A choice letter at the start of `text` ("C", "(C)", "C.", "C: ..."), if in range.

    Only with `loose` (right after an answer phrase) may a space follow the bare letter:
    elsewhere "A cube has..." or "I think..." would read as answers.
    """
    cleaned = strip_markup(text).strip()
    if loose:
        match = _LEADING_LETTER_LOOSE.match(cleaned)
        letter = match.group(1) if match else None
        # "option b" is a letter; a lone lower-case "a" after "is" is an article.
        if letter is not None and letter.islower() and not match.group(0).lower().startswith(("option", "choice")):
            letter = None
        letter = letter.upper() if letter else None
    else:
        match = _LEADING_LETTER.match(cleaned)
        letter = match.group(1) if match else None
    return letter if letter is not None and _in_range(letter, n_choices) else None


# A line holding nothing but a choice letter ("C", "(C)", "**C.**"), not indented: a letter
# standing in a drawn figure is indented or has company on its line.
_LONE_LETTER = re.compile(r"[(（\[]?([A-Z])[)）\]]?[.。]?")


def _lone_letter_line(lines: Sequence[str], n_choices: int) -> str | None:
    """The letter of the last line that is only a choice letter ("Here is my reply:\\n\\nC"),
    if in range; lines inside a ``` block are figures, not replies."""
    found = None
    in_code = False
    for line in lines:
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code or line[:1].isspace():
            continue
        match = _LONE_LETTER.fullmatch(strip_markup(line).strip())
        if match is not None and _in_range(match.group(1), n_choices):
            found = match.group(1)
    return found


def _labelled_option(line: str, choices: Sequence[str]) -> str | None:
    """The letter of a line ending in "(C) <an option's text>": the letter labels the choice,
    even when the text is another option's ("the time is (C) 5:30" picks C). Only the line's
    tail is searched, which bounds the work."""
    cleaned = strip_markup(line)[-_STATEMENT_CHARS:]
    for match in _PAREN_CAPITAL.finditer(cleaned):
        if _in_range(match.group(1), len(choices)) \
                and _exact_choice(cleaned[match.end():], choices) is not None:
            return match.group(1)
    return None


def _parenthesised_letter(text: str, n_choices: int) -> str | None:
    """The first parenthesised capital "(C)" in `text` that is in range."""
    for match in _PAREN_CAPITAL.finditer(text):
        if _in_range(match.group(1), n_choices):
            return match.group(1)
    return None


def _letter_said_correct(text: str, n_choices: int) -> str | None:
    """The last letter the text calls correct ("(B) is the correct answer"), unless only
    under a condition ("If so, the answer is (A)")."""
    found = None
    cleaned = strip_markup(text)
    for match in _LETTER_IS_CORRECT.finditer(cleaned):
        letter = match.group(1) or match.group(2)
        if _in_range(letter, n_choices) and not _in_conditional_sentence(cleaned, match.start()):
            found = letter
    return found


def _comparable(text: str, *, fold_case: bool = True) -> str:
    """Text as compared with an option: no markup, no end punctuation, no list brackets or
    quotes around it (a printed ['Insects']), lower case (unless not `fold_case`), one space."""
    text = strip_markup(text).strip().rstrip(".。!").strip("[]'\" ")
    return " ".join((text.lower() if fold_case else text).split())


def _choice_text_in(text: str, choices: Sequence[str]) -> str | None:
    """The choice that `text` starts or ends with (the longest such choice), if any.

    An option that is one letter ("A" of a picture puzzle) is matched in its own case: the
    article "a" opening "a pentagon" does not name it."""
    cleaned = _comparable(text)
    cased = _comparable(text, fold_case=False)
    best: str | None = None
    for choice in choices:
        option = _comparable(choice)
        if not option:
            continue
        if len(option) == 1 and option.isalpha():
            cleaned_here, option = cased, _comparable(choice, fold_case=False)
        else:
            cleaned_here = cleaned
        after = cleaned_here[len(option):len(option) + 2]
        # "2" does not start "2.83" or "25"; "... is 80." ends with the option "80".
        starts = cleaned_here.startswith(option) and not after[:1].isalnum() \
            and not (after[:1] in ".," and after[1:2].isdigit())
        before = cleaned_here[: -len(option)][-2:]
        ends = cleaned_here.endswith(option) and not before[-1:].isalnum() \
            and not (option[:1].isdigit() and (before[-1:] in "-−" or (before[-1:] == "." and before[:1].isdigit())))
        if (starts or ends) and (best is None or len(option) > len(_comparable(best))):
            best = choice
    return best


_OPTION_NUMBER = re.compile(r"([-+]?\d{0,12}(?:\.\d{1,12})?)\s{0,2}(?:√\s{0,2}\{?(\d{1,12}(?:\.\d{1,12})?)\}?)?"
                            r"\s{0,2}(?:°|%|[a-zA-Z]{1,4}|[a-zA-Z]{1,2}\^?[23²³])?")
# A stated value and an option's value this close (relatively) are the same answer.
_VALUE_TOLERANCE = 2e-3


_OPTION_FRACTION = re.compile(r"(-?\d{1,12})\s{0,2}/\s{0,2}(\d{1,12})")


def option_value(option: str) -> float | None:
    """The numeric value of an option such as "36°", "4.5 cm", "2√{2}", "√3", "3/11" or
    "\\frac{5}{12}"; else None."""
    fraction = _OPTION_FRACTION.fullmatch(strip_markup(option.replace(" ", "")))
    if fraction is not None:
        value = _ratio(*fraction.groups())
        return float(value) if value is not None else None
    match = _OPTION_NUMBER.fullmatch(option.strip())
    if match is None:
        return None
    coefficient, root = match.groups()
    try:
        value = float(coefficient) if coefficient not in ("", "+", "-") else (-1.0 if coefficient == "-" else 1.0)
        if root is None and coefficient in ("", "+", "-"):
            return None
        return value * math.sqrt(float(root)) if root is not None else value
    except (ValueError, OverflowError):
        return None


def _choice_by_value(statement: str, choices: Sequence[str]) -> str | None:
    """The one option whose value equals the number a statement gives ("2.828" → "2√{2}")."""
    number = _number_in_statement(statement, fractions=True)
    if number is None:
        return None
    try:
        stated = float(number)
    except (ValueError, OverflowError):
        return None
    close = [choice for choice in choices
             if (value := option_value(choice)) is not None
             and abs(value - stated) <= _VALUE_TOLERANCE * max(1.0, abs(value))]
    return close[0] if len(close) == 1 else None


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


# A one-line reply this close to one option (edits per character) names it despite a typo.
_NEAR_MISS_RATE = 0.1


def _near_choice(text: str, choices: Sequence[str]) -> str | None:
    """The option a short reply matches up to a few typos ("Adult" for "Adults"): the nearest
    one within the typo budget, if no other is as near."""
    cleaned = _comparable(text)
    near = sorted((distance, index) for index, choice in enumerate(choices)
                  if (option := _comparable(choice))
                  and (distance := levenshtein(cleaned, option))
                  <= _NEAR_MISS_RATE * max(len(option), len(cleaned)))
    if not near or (len(near) > 1 and near[1][0] == near[0][0]):
        return None
    return choices[near[0][1]]


def _exact_choice(text: str, choices: Sequence[str]) -> str | None:
    """The option the whole text is (ignoring case, markup and a final period)."""
    cleaned = _comparable(text)
    for choice in choices:
        if _comparable(choice) == cleaned:
            return choice
    return None


# A boxed value that is no option is kept as the answer only when short: it goes on to an
# edit-distance match against every option.
_BOXED_VALUE_CHARS = 100


def extract_choice(response: str, choices: Sequence[str]) -> Extraction:
    """Multiple choice: a letter (A, B, ...) or an option's text.

    The whole response if it is an option or a bare letter; else, in order: the last
    \\boxed{} and the statements after the last answer phrases not made under a condition (a
    leading letter, an option's text at either end, a parenthesised letter, or a value equal
    to one option's; "None of the above" there chooses none); a letter called correct; no
    answer if the response ends by declining; a boxed value that is no option; an opening
    "(B)"; a letter closing the response (or the option's text it ends); no answer if the
    response only lists options; the first and last lines (a leading letter, "(C) <option>",
    or an option's text); a line holding only a letter; a parenthesised letter in the last
    line; the value a one-line reply states.
    """
    text = response.strip()
    n_choices = len(choices)
    whole = _exact_choice(text, choices)
    if whole is not None:
        return Extraction(whole, "answer")
    if len(strip_markup(text).strip()) <= 4:
        letter = _leading_letter(text, n_choices)
        if letter is not None:
            return Extraction(letter, "answer")
    text = cut_continuation(text)
    lines = [line for line in text.split("\n") if line.strip()]
    boxed = last_boxed(text)
    for piece in ([boxed] if boxed is not None else []) + statements_after_cues(text):
        if piece is not boxed and is_refusal(piece):
            return declined(piece)
        found = (
            _leading_letter(piece, n_choices, loose=True)
            or _choice_text_in(piece, choices)
            or _parenthesised_letter(piece, n_choices)
            or _choice_by_value(piece, choices)
        )
        if found is not None:
            return Extraction(found, "answer")
        if piece is not boxed and _NO_OPTION_STATED.search(piece):
            # "The answer is None of the above.": no option is chosen; the text is copied.
            return declined(piece)
    said = _letter_said_correct(text, n_choices)
    if said is not None:
        return Extraction(said, "answer")
    if not lines or is_refusal(last_paragraph(text)):
        return declined(text)
    if boxed is not None and 0 < len(strip_markup(boxed).strip()) <= _BOXED_VALUE_CHARS:
        # A boxed value that is no option is still what the model answered, over any option
        # mentioned around it; the official normalisation then maps it to the nearest option.
        return Extraction(strip_markup(boxed).strip(), "answer")
    first_line = strip_markup(lines[0])
    opening = _OPENING_PAREN_LETTER.match(first_line)
    if opening is not None and _in_range(opening.group(1), n_choices):
        # "(B) sample A": the reply opens by naming its option (the official normalisation
        # also takes the first parenthesised letter).
        return Extraction(opening.group(1), "answer")
    named = None
    if opening is not None and len(lines) == 1:
        named = _exact_choice(first_line[opening.end():], choices)
    if named is not None:
        # "(D) sample A" of three options: a letter beyond the options, then an option's own
        # text, which is the choice (its "A" is no letter).
        return Extraction(named, "answer")
    trailing = _TRAILING_LETTER.search(strip_markup(text[-80:]))
    if trailing is not None and _in_range(trailing.group(1), n_choices):
        # "... is hotter: sample A." ends with an option's text, whose last word is no letter.
        ending = _choice_text_in(lines[-1], choices)
        if ending is not None and len(_comparable(ending)) > 1 \
                and _comparable(ending, fold_case=False).endswith(trailing.group(1)):
            return Extraction(ending, "answer")
        return Extraction(trailing.group(1), "answer")
    if len(lines) > 1 and all(_OPTION_LINE.match(line) for line in lines):
        # A list of options ("(C) Yes\n(D) No") chooses none of them.
        return NO_ANSWER
    for line in (lines[0], lines[-1]):
        found = (_leading_letter(line, n_choices) or _labelled_option(line, choices)
                 or _choice_text_in(line, choices))
        if found is not None:
            return Extraction(found, "answer")
    found = _lone_letter_line(lines, n_choices)
    if found is not None:
        return Extraction(found, "answer")
    found = _parenthesised_letter(lines[-1], n_choices)
    if found is None and len(lines) == 1 and len(text) <= _STATEMENT_CHARS:
        # A one-line reply stating a value ("2.83", "It is 36 degrees").
        found = _choice_by_value(text, choices) or _near_choice(text, choices)
    return Extraction(found, "answer") if found is not None else UNREADABLE


# --------------------------------------------------------------------------------------------
# Lists, free text, and the entry point
# --------------------------------------------------------------------------------------------

_LIST = re.compile(r"\[[^\[\]\n]{0,500}\]")


def extract_list(response: str) -> Extraction:
    """List: the bracketed list in the last \\boxed{}, else the last [...] in the response."""
    text = cut_continuation(response.strip())
    boxed = last_boxed(text)
    if boxed is not None and _LIST.search(boxed):
        text = boxed
    matches = _LIST.findall(text)
    if matches:
        return Extraction(matches[-1], "answer")
    return declined(text) if is_refusal(text) else UNREADABLE


def extract_text(response: str) -> Extraction:
    """Free-form text: \\boxed{} content, else the first line after the last answer phrase,
    else the whole response."""
    text = cut_continuation(response.strip())
    boxed = last_boxed(text)
    if boxed is not None:
        return Extraction(strip_markup(boxed).strip(), "answer")
    for statement in statements_after_cues(text)[:1]:
        stated = strip_markup(statement).strip().rstrip(".").strip()
        if stated:
            return Extraction(stated, "answer")
    return Extraction(text, "answer")


def extract(
    response: str | None,
    *,
    question_type: str,
    answer_type: str,
    choices: Sequence[str] | None = None,
) -> Extraction:
    """Read the answer a raw MathVista response gives, by rules alone.

    Pure and total: never raises for any string, and the work is linear in the response
    (which is first cut to MAX_RESPONSE_CHARS). Multiple choice gives a letter or an option's
    text; integer and float give a plain decimal number; list gives the bracketed list; text
    gives the stated answer.
    """
    if response is None or not response.strip():
        return EMPTY_RESPONSE
    text = bound_text(response)
    program = parse_program(text)
    if program is not None:
        # An answer written as a program: read what it prints (worked out, never run).
        printed = program_output(program)
        if printed is None:
            return UNREADABLE
        if not printed:
            # It prints nothing: no answer, and nothing for the normalisation to map to an
            # option (a program that fails is never credited by edit distance).
            return EMPTY_RESPONSE
        # A program states its result last: earlier lines are its working or other cases.
        text = printed.rsplit("\n", 1)[-1].strip()
    if question_type == "multi_choice":
        read = extract_choice(text, choices or [])
        if program is not None and read.status == "unreadable" and len(text) <= _BOXED_VALUE_CHARS \
                and not numbers_in(text):
            # Printed text that is no option ("Grasshopper population will increase") is still
            # the program's answer: the official normalisation maps it to the nearest option.
            # A printed number that is no option's value ("140.0" for 30°/40°/50°) stays
            # unreadable: its nearest option by edit distance would credit a wrong value.
            return Extraction(text, "answer")
        return read
    if answer_type in ("integer", "float"):
        return extract_number(text, answer_type)
    if answer_type == "list":
        return extract_list(text)
    return extract_text(text)


__all__ = [
    "EMPTY_RESPONSE",
    "EXTRACTOR_VERSION",
    "MAX_RESPONSE_CHARS",
    "NO_ANSWER_EXTRACTION",
    "Extraction",
    "ExtractionStatus",
    "extract",
    "extract_choice",
    "extract_list",
    "extract_number",
    "extract_text",
    "is_refusal",
    "numbers_in",
]
