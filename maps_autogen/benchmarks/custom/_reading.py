"""How the custom benchmark reads an answer out of what a model wrote (its rules are ours, so
they read what chat models actually write; docs/benchmarks.md has the phrasing set they are
measured on).

`read_answer` finds the answer part of a reply: the last `\\boxed{…}`; else the text after the
last answer phrase ("The answer is", "Answer:", "Final answer:", "The correct answer would
be", "**Answer:**", a "Final answer" heading with the answer on the next line); else the whole
reply. Markdown emphasis, backticks, `$…$`, `\\text{…}`, quotes and a final full stop around it
are dropped.

`read_letter` reads which option that answer names: a letter in any case, with or without
parentheses or brackets, followed by ".", ":" or ")" or by the option's text ("(B) 4 kg"),
"Option B", or the text of one option instead of its letter. It never accepts an answer that
names two options ("B or C", "(B) 2 kg" when 2 kg is option A) or negates one ("not B",
"B is wrong"). A whole reply without an answer phrase is read only when it is short (one line of
at most `SHORT_REPLY_CHARS`); a longer one must be a letter or an option's text by itself.

Every pattern is linear in the text it reads, and the text is bounded (`MAX_ANSWER_CHARS`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
MAX_ANSWER_CHARS = 10_000  # the part of a reply the rules read (bounds the work per record)
SHORT_REPLY_CHARS = 200  # a whole reply (no answer phrase) read for an option it names, at most this long

_SPACES = re.compile(r"[^\S\n]+")
# "The answer is", "answer:", "Final answer =", "the correct answer would be", "answer choice is".
_PHRASE = re.compile(
    r"\b(?:answer(?: (?:choice|option))?|(?:correct|right|best) (?:option|choice)) ?"
    r"(?:(?:is|would be|should be|will be|must be)\b ?[:=]?|[:=])",
    re.IGNORECASE,
)
# A heading or a line of its own: "### Final answer", "**Answer**", "Answer:" (the answer follows on a later line).
_HEADING = re.compile(r"^[#> ]*(?:final )?answer ?:? *$", re.IGNORECASE | re.MULTILINE)
_EMPHASIS = re.compile(r"\*\*|__|`+")
_LATEX_WRAPPER = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|operatorname)\{([^{}]*)\}")
_EDGE = " \t*_\"'“”‘’$"
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")

# The whole answer is one letter: "B", "b", "(B)", "[B]", "B.", "B)", "B:", "Option B", "choice (b)".
_WHOLE_LETTER = re.compile(r"(?:(?:option|choice) ?)?[(\[]?([A-Za-z])[)\]]?[.:)]?", re.IGNORECASE)
# A letter leading the answer, then its text or a reason: "B. 4 kg", "(b) up", "B) y", "B: north", "[C] left".
_LEADING = re.compile(r"(?:(?:option|choice) ?)?(?:[(\[]([A-Za-z])[)\]]|([A-Za-z])[.:)]) ?(.*)", re.IGNORECASE)
# Letters named anywhere: "(B)", "[B]", "option B", "choice b", and a capital standing alone ("B or C").
_NAMED = re.compile(
    r"[(\[]([A-Za-z])[)\]]|(?i:\b(?:option|choice) ?\(?([a-z])\b)|(?<![\w'’\-])([B-HJ-Z])(?![\w'’\-])"
)
# "A" and "I" are also words: a capital A or I counts as a letter only where a word would not stand
# ("A is right", "A or B", "I."), never as an article or a pronoun ("A block", "I think").
_BARE_A_OR_I = re.compile(r"(?<![\w'’\-])(A(?= (?:and|or|nor|is|was)\b)|[AI](?= ?(?:[.,;:!?)]|$)))")
_NEGATION_BEFORE = re.compile(
    r"(?:\bnot|n't|\bnever|\bneither|\bnor|\bexcept|\bthan|\bno|\bwithout|\binstead of|\bexclude|\bexcluding)"
    r" ?(?:(?:the )?(?:option|choice|answer) ?)?[(\[]?$",
    re.IGNORECASE,
)
_NEGATION_AFTER = re.compile(
    r"^[)\]]? ?,? ?(?:(?:is|are|was|would be|'s|’s) ?)?(?:not\b|n't|never\b|wrong\b|incorrect\b|false\b|eliminated\b|"
    r"ruled out\b)",
    re.IGNORECASE,
)
_NEGATION_WINDOW = 40  # characters either side of a named option searched for a negation
# The same, in normalised text (punctuation gone: "isn't" is "isn t"), around an option named by its text.
_NEGATION_WORDS = re.compile(
    r"\b(?:not|never|neither|nor|except|than|no|without|instead|isn|aren|wasn|wrong|incorrect|false|excluding)\b"
)


@dataclass(frozen=True)
class Extracted:
    """The answer part of a reply, and whether an answer phrase or a box marked it (`marked`)."""

    text: str
    marked: bool


def normalise_text(text: str) -> str:
    """NFKC, case-folded, punctuation and the articles a/an/the dropped, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(" " if unicodedata.category(char).startswith("P") else char for char in text)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _last_box(text: str) -> str | None:
    """The contents of the last `\\boxed{…}` (brace matched), None when there is none or it is
    unclosed; a box the reply negates ("…, not \\boxed{C}") is kept with its negation."""
    box = text.rfind("\\boxed{")
    if box == -1:
        return None
    depth, pos = 1, box + len("\\boxed{")
    start = pos
    while pos < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[pos], 0)
        pos += 1
    if depth:
        return None
    negated = _NEGATION_BEFORE.search(text[max(0, box - _NEGATION_WINDOW) : box].rstrip(" $"))
    return ("not " if negated else "") + text[start : pos - 1]


def _last(matches: Iterator[re.Match[str]]) -> re.Match[str] | None:
    """The last of the matches (None when there is none)."""
    found = None
    for found in matches:  # noqa: B007 (the loop keeps the last one)
        pass
    return found


def _after_phrase(text: str) -> str | None:
    """The text after the last answer phrase up to the end of its line; when the phrase ends its
    line (a heading, "**Final answer:**"), the next line that has text."""
    last = _last(_PHRASE.finditer(text))
    heading = _last(_HEADING.finditer(text))
    if heading is not None and (last is None or heading.start() > last.start()):
        end = heading.end()
    elif last is not None:
        end = last.end()
    else:
        return None
    lines = text[end:].split("\n")
    if not _clean(lines[0]):
        return next((line for line in lines[1:] if _clean(line)), "")
    return lines[0]


def _clean(text: str) -> str:
    """One line without emphasis, backticks, `$`, `\\text{}` wrappers, surrounding quotes, a leading
    ":" or "=" and a final full stop."""
    text = _LATEX_WRAPPER.sub(r"\1", _EMPHASIS.sub("", text))
    text = " ".join(text.split()).strip(_EDGE).lstrip(":=").strip(_EDGE)
    while text.endswith((".", "!")):
        text = text[:-1].rstrip(_EDGE)
    return text


def extract(response: str) -> Extracted:
    """The answer part of a reply (see the module docstring)."""
    text = response[-MAX_ANSWER_CHARS:] if len(response) > MAX_ANSWER_CHARS else response
    text = _SPACES.sub(" ", _EMPHASIS.sub("", text))
    boxed = _last_box(text)
    if boxed is not None:
        return Extracted(_clean(boxed), True)
    phrase = _after_phrase(text)
    if phrase is not None:
        return Extracted(_clean(phrase), True)
    return Extracted(_clean(text), False)


def read_answer(response: str) -> str:
    """The answer part of a response, on one line (`extract`)."""
    return extract(response).text


def _negated(text: str, start: int, end: int) -> bool:
    """Whether the option named at text[start:end] is negated ("not B", "B is wrong")."""
    before = text[max(0, start - _NEGATION_WINDOW) : start]
    after = text[end : end + _NEGATION_WINDOW]
    return bool(_NEGATION_BEFORE.search(before) or _NEGATION_AFTER.search(after))


def _named_letters(text: str, count: int) -> list[tuple[str, int, int]]:
    """Each option letter (within the first `count`) the text names, with where."""
    found = []
    for match in _NAMED.finditer(text):
        letter = next(group for group in match.groups() if group)
        found.append((letter.upper(), match.start(), match.end()))
    found += [(match.group(1), match.start(), match.end()) for match in _BARE_A_OR_I.finditer(text)]
    return [(letter, start, end) for letter, start, end in found if LETTERS.index(letter) < count]


def _named_texts(text: str, options: Sequence[str]) -> tuple[list[str], bool]:
    """The letters of the options whose whole text the answer contains (as words, compared
    normalised), and whether any of them is negated."""
    wanted = normalise_text(text)
    found, negated = [], False
    for index, option in enumerate(options):
        target = normalise_text(option)
        match = re.search(rf"(?<!\w){re.escape(target)}(?!\w)", wanted) if target else None
        if match:
            found.append(LETTERS[index])
            window = wanted[max(0, match.start() - _NEGATION_WINDOW) : match.end() + _NEGATION_WINDOW]
            negated = negated or bool(_NEGATION_WORDS.search(window.replace(target, " ")))
    return found, negated


def _option_of_text(text: str, options: Sequence[str]) -> str | None:
    """The letter of the one option whose text the whole answer is (None: none, or several alike)."""
    wanted = normalise_text(text)
    letters = [LETTERS[i] for i, option in enumerate(options) if wanted and normalise_text(option) == wanted]
    return letters[0] if len(letters) == 1 else None


def read_letter(answer: str | Extracted, options: Sequence[str]) -> str | None:
    """The option letter an answer names, None when it names none, several, or negates one (see
    the module docstring). A plain string is read as a marked answer (after an answer phrase)."""
    extracted = answer if isinstance(answer, Extracted) else Extracted(answer, True)
    text, count = extracted.text, len(options)
    if not text:
        return None
    whole = _WHOLE_LETTER.fullmatch(text)
    by_text = _option_of_text(text, options)
    if whole and LETTERS.index(whole.group(1).upper()) < count:
        letter = whole.group(1).upper()
        return letter if by_text in (None, letter) else None  # options written as letters: "C" could be either
    if by_text is not None or whole:
        return by_text
    if not extracted.marked and ("\n" in text or len(text) > SHORT_REPLY_CHARS):
        return None
    leading = _LEADING.fullmatch(text)
    if leading:
        letter = (leading.group(1) or leading.group(2)).upper()
        rest = leading.group(3)
        named_rest = {named for named, _, _ in _named_letters(rest, count)}
        restated = _option_of_text(rest, options)
        if LETTERS.index(letter) >= count or named_rest - {letter} or restated not in (None, letter):
            return None  # beyond the options, or a second option named ("(B) 2 kg" when 2 kg is A)
        return None if _NEGATION_AFTER.search(rest) else letter
    named = _named_letters(text, count)
    if named:
        if len({letter for letter, _, _ in named}) != 1 or any(_negated(text, s, e) for _, s, e in named):
            return None
        return named[0][0]
    texts, negated = _named_texts(text, options)
    return texts[0] if len(texts) == 1 and not negated else None


__all__ = ["LETTERS", "MAX_ANSWER_CHARS", "SHORT_REPLY_CHARS", "Extracted", "extract", "normalise_text",
           "read_answer", "read_letter"]
