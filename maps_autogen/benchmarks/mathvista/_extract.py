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

The rules live in `_response_text.py` (the outcome and the shared text helpers),
`_number_answers.py`, `_choice_answers.py` and here (lists, free text and the entry point,
`extract`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from maps_autogen.benchmarks.mathvista._choice_answers import _BOXED_VALUE_CHARS, extract_choice
from maps_autogen.benchmarks.mathvista._number_answers import extract_number, numbers_in
from maps_autogen.benchmarks.mathvista._program_output import parse_program, program_output
from maps_autogen.benchmarks.mathvista._response_text import (
    EMPTY_RESPONSE,
    MAX_RESPONSE_CHARS,
    NO_ANSWER_EXTRACTION,
    UNREADABLE,
    Extraction,
    ExtractionStatus,
    bound_text,
    cut_continuation,
    declined,
    is_refusal,
    last_boxed,
    statements_after_cues,
    strip_markup,
)

# The version of these rules (and of the program reader they use), recorded in every scored
# line so that scores made by different rules can be told apart. Raise it whenever a change
# can read any response differently. 2: programs needing a library are unreadable, never
# emulated (issue 24).
EXTRACTOR_VERSION = "mathvista-rules-2"


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
