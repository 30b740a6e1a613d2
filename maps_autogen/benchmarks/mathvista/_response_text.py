"""What reading a MathVista response yields (`Extraction`), and the text helpers the rules for
every answer type share: the size bound, the cut at an invented next exercise, markup, boxed
answers, the phrases after which an answer is stated, and refusals. (The rule set is described
in `_extract.py`.)"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from maps_autogen.benchmarks._boxed import boxed_contents

# Longer responses keep their head and tail: answers are stated up front or at the end.
MAX_RESPONSE_CHARS = 16_000
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
