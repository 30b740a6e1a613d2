"""MathVista's multiple-choice answers: the option a response names, by its letter in the usual
forms, its own text or its value. (The rule set is described in `_extract.py`.)"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from maps_autogen.benchmarks.mathvista._number_answers import _number_in_statement, _ratio
from maps_autogen.benchmarks.mathvista._response_text import (
    _STATEMENT_CHARS,
    NO_ANSWER,
    UNREADABLE,
    Extraction,
    _in_conditional_sentence,
    cut_continuation,
    declined,
    is_refusal,
    last_boxed,
    last_paragraph,
    statements_after_cues,
    strip_markup,
)

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
        if letter is not None and match is not None and letter.islower() \
                and not match.group(0).lower().startswith(("option", "choice")):
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
        number = float(coefficient) if coefficient not in ("", "+", "-") else (-1.0 if coefficient == "-" else 1.0)
        if root is None and coefficient in ("", "+", "-"):
            return None
        return number * math.sqrt(float(root)) if root is not None else number
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
    # The distance is at least the difference in length: an option whose length alone puts it
    # past the budget is not compared (so a long option costs no table).
    near = sorted((distance, index) for index, choice in enumerate(choices)
                  if (option := _comparable(choice))
                  and abs(len(option) - len(cleaned)) <= _NEAR_MISS_RATE * max(len(option), len(cleaned))
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
    whole = _whole_reply(text, choices)
    if whole is not None:
        return whole
    text = cut_continuation(text)
    lines = [line for line in text.split("\n") if line.strip()]
    boxed = last_boxed(text)
    stated = _stated_after_cues(text, boxed, choices)
    if stated is not None:
        return stated
    said = _letter_said_correct(text, len(choices))
    if said is not None:
        return Extraction(said, "answer")
    if not lines or is_refusal(last_paragraph(text)):
        return declined(text)
    if boxed is not None and 0 < len(strip_markup(boxed).strip()) <= _BOXED_VALUE_CHARS:
        # A boxed value that is no option is still what the model answered, over any option
        # mentioned around it; the official normalisation then maps it to the nearest option.
        return Extraction(strip_markup(boxed).strip(), "answer")
    for step in (_opening_letter, _closing_letter, _from_lines):
        found = step(text, lines, choices)
        if found is not None:
            return found
    return UNREADABLE


def _whole_reply(text: str, choices: Sequence[str]) -> Extraction | None:
    """The whole (stripped) response when it is an option's text or a bare letter."""
    whole = _exact_choice(text, choices)
    if whole is not None:
        return Extraction(whole, "answer")
    if len(strip_markup(text).strip()) <= 4:
        letter = _leading_letter(text, len(choices))
        if letter is not None:
            return Extraction(letter, "answer")
    return None


def _stated_after_cues(text: str, boxed: str | None, choices: Sequence[str]) -> Extraction | None:
    """The choice (or a refusal) in the last \\boxed{} or a statement after an answer phrase."""
    n_choices = len(choices)
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
    return None


def _opening_letter(text: str, lines: list[str], choices: Sequence[str]) -> Extraction | None:
    """An opening "(B)", or the option's text after an out-of-range opening letter."""
    first_line = strip_markup(lines[0])
    opening = _OPENING_PAREN_LETTER.match(first_line)
    if opening is not None and _in_range(opening.group(1), len(choices)):
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
    return None


def _closing_letter(text: str, lines: list[str], choices: Sequence[str]) -> Extraction | None:
    """A letter closing the response, or the option's text that ends it."""
    trailing = _TRAILING_LETTER.search(strip_markup(text[-80:]))
    if trailing is not None and _in_range(trailing.group(1), len(choices)):
        # "... is hotter: sample A." ends with an option's text, whose last word is no letter.
        ending = _choice_text_in(lines[-1], choices)
        if ending is not None and len(_comparable(ending)) > 1 \
                and _comparable(ending, fold_case=False).endswith(trailing.group(1)):
            return Extraction(ending, "answer")
        return Extraction(trailing.group(1), "answer")
    return None


def _from_lines(text: str, lines: list[str], choices: Sequence[str]) -> Extraction | None:
    """No answer for a list of options; else the first and last lines, a lone letter line, a
    parenthesised letter in the last line, or the value a one-line reply states."""
    n_choices = len(choices)
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
    return Extraction(found, "answer") if found is not None else None
