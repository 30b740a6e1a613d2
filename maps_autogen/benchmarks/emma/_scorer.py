"""EMMA: the official rule-based ("fast") answer extraction and verdict, in both versions.

Record fields: `pid` (e.g. "Math_20"), `type` ("Multiple Choice"/"Open-ended"), `options`,
`answer`, optional `gt_content` (the option text or the open answer), `response`; other fields
pass through. Rule versions (EMMA-Bench/EMMA evaluation/evaluate.py + utils.py):

- `current`: letters also as "X.", an "answer:" phrase, "" when nothing is found, and a
  word-to-number step in the equality check;
- `legacy` (the first release): none of those; the whole response is the fallback extraction.

Verdict: the extraction equals the answer letter or the option text, where "equal" is
case-folded stripped equality, then (current) word-to-number, then LaTeX → sympy: the values
rounded to 2 decimals coincide or the difference simplifies to 0. Upstream parses with
latex2sympy2; we use sympy's own LaTeX parser plus the few conversions of latex2sympy2 that
change verdicts on real outputs (see `_as_latex2sympy_would`). The sympy part runs in a helper
process under the per-item time limit (a timeout counts as "not equal"); what it is sent is
bounded (`bounds.MAX_SYMBOLIC_CHARS`). An answer past that bound, or whose check did not finish,
is judged wrong and its verdict says why (`Verdict.unjudged`). The extraction here is linear.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from maps_autogen.benchmarks import _symbolic
from maps_autogen.benchmarks._base import RecordError, Verdict
from maps_autogen.benchmarks._bounds import Unjudgeable, bounded_symbolic
from maps_autogen.benchmarks._boxed import boxed_contents

CHOICE_LETTERS = "ABCDEFGH"  # the letters the official fast extractor recognises
_PHRASES = {
    "current": ("final answer is", "correct answer is", "answer should be", "answer is", "answer:"),
    "legacy": ("final answer is", "correct answer is", "answer should be", "answer is"),
}
_TEXT_COMMAND = "\\text{"


# --------------------------------------------------------------------------------------------
# Extraction (pure string work, run in the caller)
# --------------------------------------------------------------------------------------------


def _text_command_contents(text: str) -> list[str]:
    r"""What `re.findall(r"\\text{(.*?)}", text)` finds (the contents of each `\text{…}` up to
    the first `}` on its line), in linear time: when no `}` closes a `\text{` before the line
    ends, no later one on that line can close either, so the search skips to the next line."""
    found: list[str] = []
    position = 0
    while (start := text.find(_TEXT_COMMAND, position)) != -1:
        body = start + len(_TEXT_COMMAND)
        line_end = text.find("\n", body)
        line_end = len(text) if line_end == -1 else line_end
        close = text.find("}", body, line_end)
        if close == -1:
            position = line_end
            continue
        found.append(text[body:close])
        position = close + 1
    return found


def is_float_literal(text: str) -> bool:
    """Whether Python's float() accepts the text (so "nan", "1e3", " 2_0 " count)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def extract_answer(response: str, rules: str = "current") -> str:
    """The official fast extraction from a response (see the module docstring for versions)."""
    text = response.strip()
    for letter in CHOICE_LETTERS:
        if text.upper() == letter or text.startswith(f"{letter}:"):
            return letter
        if rules == "current" and text.startswith(f"{letter}."):
            return letter
    if is_float_literal(text):
        return text
    if "boxed{" in text:
        boxes = boxed_contents(text)
        if boxes:
            # Coding answers come as \boxed{\text{…}}: the last \text{} inside wins.
            inner = _text_command_contents(boxes[-1])
            return (inner[-1] if inner else boxes[-1]).strip()
    lowered = text.lower()
    for phrase in _PHRASES[rules]:
        if phrase in lowered:
            tail = lowered.split(phrase)[-1].strip()
            return tail.split("\n")[0].split(".")[0]
    return "" if rules == "current" else text


# --------------------------------------------------------------------------------------------
# Equality (runs in the helper process)
# --------------------------------------------------------------------------------------------


def _word_number(text: str) -> str | None:
    """word2number's reading of the text ("seven" → "7"), None when it finds none."""
    from word2number import w2n  # type: ignore[import-untyped]  # (word2number ships no types)

    try:
        return str(w2n.word_to_num(text))
    except Exception:  # noqa: BLE001 - upstream catches ValueError; others crashed its run
        return None


_PERCENT_NUMBER = re.compile(r"^\s*([-+]?\d[\d,]*(?:\.\d+)?)\s*\\%\s*$")
_THOUSANDS = re.compile(r"^\s*[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?\s*$")


def _has_top_level_comma(text: str) -> bool:
    depth = 0
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            return True
    return False


# What latex2sympy2 rewrites before it parses.
_LATEX2SYMPY_REWRITES = (("\\dfrac", "\\frac"), ("\\tfrac", "\\frac"), ("\\mathrm{T}", "T"), ("\\mathrm{d}", "d"),
                         ("{\\rm d}", "d"), ("\\displaystyle", " "), ("\\quad", " "), ("\\qquad", " "), ("~", " "),
                         ("\\,", " "), ("$", " "))
# Its lexer reads the dots after a number's digits as the number's ("35." is 35, "2..." is 2).
_NUMBER_DOTS = re.compile(r"(\d)\.+(?![\d.])")
# Digits apart are numbers side by side, which it multiplies ("2 3" is 6; sympy's grammar reads 23).
_DIGITS_APART = re.compile(r"(\d)\s+(?=\d)")


def _latex2sympy_end(text: str) -> int:
    """Where latex2sympy2's parser stops without an error, reading nothing after: a closing
    bracket with none open, a LaTeX line break, an `&`, a "." beside no digit (its grammar has
    no end-of-input rule, so it returns what it read before such a token)."""
    depth = 0
    position = 0
    while position < len(text):
        char = text[position]
        if char == "\\":
            if text.startswith("\\\\", position) or (text.startswith("\\}", position) and depth == 0):
                return position
            position += 2
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                return position
            depth -= 1
        elif char == "&" or (char == "." and not (position and text[position - 1].isdigit())
                             and not text[position + 1 : position + 2].isdigit()):
            return position
        position += 1
    return len(text)


def _as_latex2sympy_would(text: str) -> Any:
    """Parse LaTeX the way latex2sympy2 (EMMA's parser) reads it.

    latex2sympy2 has its own grammar; where it reads answers differently from sympy's parser we
    adapt: its rewrites first (`\\dfrac`, `\\quad`, `~`, `\\,`, `$`, ...); a number's trailing
    dots are the number's ("35." is 35), digits apart are multiplied ("2 3" is 6); it stops
    silently at a closing bracket with none open, a line break `\\\\`, `&` or a lone "." and
    reads nothing after. The rest must be read whole:
    sympy's parser also stops at the first token it cannot use and returns what it read ("35."
    as 3, "7^{4}.5" as 7^4), where latex2sympy2 reads on (7^4 times .5) or fails (a ":" at the
    end), so a parse that ends before the text is not a value. "1,000" is a number but "1,2" a
    list (not a number), "50\\%" is 1/2, `e` and `\\pi` are the constants (sympy 1.12 leaves both
    as plain symbols), and "x = value" is the value. Raises when parsing fails.
    Not emulated: latex2sympy2 keeps state across calls, so an official run's verdicts can
    depend on the answers it read before (docs/benchmarks.md, "EMMA and OlympiadBench": after an answer that
    parses as a differential such as "dx", every later "x = value" fails); this is the verdict
    of a fresh run.
    """
    import sympy

    from maps_autogen.benchmarks._symbolic import parse_latex_whole

    for old, new in _LATEX2SYMPY_REWRITES:
        text = text.replace(old, new)
    text = _DIGITS_APART.sub(r"\1 \\cdot ", _NUMBER_DOTS.sub(r"\1", text))
    text = text[: _latex2sympy_end(text)]
    if "=" in text:
        # latex2sympy2 reads "symbol = value" as an assignment worth its value; any other
        # equation becomes a list of solutions or a relation: never a number.
        lhs, rhs = text.split("=", 1)
        if not isinstance(parse_latex_whole(lhs), sympy.Symbol):
            raise ValueError("an equation, not a value")
        return _as_latex2sympy_would(rhs)
    percent = _PERCENT_NUMBER.match(text)
    if percent:
        return sympy.Rational(percent.group(1).replace(",", "")) / 100
    if _THOUSANDS.match(text):
        text = text.replace(",", "")
    elif _has_top_level_comma(text):
        # sympy would silently stop at the comma; latex2sympy2 returns a list
        raise ValueError("a list, not a number")
    expr = parse_latex_whole(text)
    return expr.subs({sympy.Symbol("e"): sympy.E, sympy.Symbol("pi"): sympy.pi})


def answers_equal(model_answer: str, target: str, rules: str = "current") -> bool:
    """Upstream's equality of an extraction with one ground-truth string."""
    import sympy

    model_answer, target = model_answer.lower(), target.lower()
    if model_answer.strip() == target.strip():
        return True
    if rules == "current":
        as_number = _word_number(model_answer)
        if as_number is not None and as_number.strip() == target.strip():
            return True
    try:
        left = _as_latex2sympy_would(model_answer)
        # Upstream parses the target before converting the extraction to float, but any
        # failure ends the comparison as "unequal" either way; failing first skips parsing
        # long option texts (code, sentences) for extractions that are no number at all.
        left_value = round(float(left.evalf()), 2)
        right = _as_latex2sympy_would(target)
        if left_value == round(float(right.evalf()), 2):
            return True
        if sympy.simplify(left - right) == 0:
            return True
    except Exception:  # noqa: BLE001 - upstream: any parse/evaluation failure means unequal
        pass
    return False


def verdict(extraction: str, answer: str, gt_content: str | None, rules: str = "current") -> bool:
    """Correct when the extraction equals the answer letter or, failing that, the option text."""
    if answers_equal(extraction, answer, rules):
        return True
    return gt_content is not None and answers_equal(extraction, gt_content, rules)


# --------------------------------------------------------------------------------------------
# The scorer
# --------------------------------------------------------------------------------------------


_CACHE_SIZE = 4096
_CACHED_CHARS = 4096  # a key holding more text is not kept (the cache's memory stays bounded)
_cache: OrderedDict[tuple[str, str, str | None, str], bool] = OrderedDict()
_cache_lock = threading.Lock()


def _cached_verdict(extraction: str, answer: str, gt_content: str | None, rules: str) -> tuple[bool, str | None]:
    """`verdict` under the time limit, memoised: runs repeat the same (extraction, answer) a lot;
    with the reason when it could not be judged within the bounds (the verdict is then False).

    Plain string matches are settled here; only the rest goes to the helper process. Timeouts
    are not memoised (a later, less loaded attempt may finish).
    """
    targets = (answer,) if gt_content is None else (answer, gt_content)
    if any(extraction.lower().strip() == t.lower().strip() for t in targets):
        return True, None
    key = (extraction, answer, gt_content, rules)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key], None
    try:
        bounded_symbolic(extraction, answer, gt_content)
    except Unjudgeable as beyond:
        return False, beyond.reason
    result = _symbolic.run_bounded(
        verdict, extraction, answer, gt_content, rules, fallback=_symbolic.NOT_FINISHED
    )
    if isinstance(result, _symbolic.NotFinished):
        return False, result.reason
    if sum(len(text or "") for text in key) <= _CACHED_CHARS:
        with _cache_lock:
            _cache[key] = bool(result)
            if len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    return bool(result), None


def is_multiple_choice(record: Mapping[str, Any]) -> bool:
    """Whether a row (or its record) is multiple choice (the hub spells the type with both cases of "choice")."""
    kind = record.get("type")
    return isinstance(kind, str) and kind.strip().lower() == "multiple choice"


def named_option(answer: str, options: Sequence[Any]) -> str | None:
    """The text of the option the answer letter names ("b": the second), None when it names none."""
    letter = answer.strip().upper()
    if len(letter) != 1 or letter not in CHOICE_LETTERS:
        return None
    index = CHOICE_LETTERS.index(letter)
    option = options[index] if index < len(options) else None
    return option if isinstance(option, str) else None


def option_text(record: Mapping[str, Any]) -> str | None:
    """`gt_content` if present, else the option the answer letter names (multiple choice)."""
    given = record.get("gt_content")
    if isinstance(given, str):
        return given
    options, answer = record.get("options"), record.get("answer")
    if not is_multiple_choice(record) or not isinstance(options, list) or not isinstance(answer, str):
        return None
    return named_option(answer, options)


def _validated(record: Mapping[str, Any]) -> tuple[str, str | None]:
    answer = record.get("answer")
    if not isinstance(answer, str):
        raise RecordError("field 'answer' must be a string")
    response = record.get("response")
    if response is not None and not isinstance(response, str):
        raise RecordError("field 'response' must be a string or null")
    gt_content = record.get("gt_content")
    if gt_content is not None and not isinstance(gt_content, str):
        raise RecordError("field 'gt_content' must be a string or null")
    options = record.get("options")
    if options is not None and not isinstance(options, list):
        raise RecordError("field 'options' must be a list or null")
    return answer, response


class EmmaScorer:
    """Official EMMA fast-eval verdicts; rule versions "current" and "legacy"."""

    name: ClassVar[str] = "emma"
    rule_versions: ClassVar[tuple[str, ...]] = ("current", "legacy")

    def score(self, record: Mapping[str, Any], rules: str = "current") -> Verdict:
        """Extract from `response` and compare with `answer` and the option text."""
        if rules not in self.rule_versions:
            known = ", ".join(self.rule_versions)
            raise ValueError(f"unknown EMMA rule version {rules!r}; use one of: {known}")
        answer, response = _validated(record)
        if not response:
            # Upstream skips extraction for missing or empty responses and marks them wrong.
            return Verdict(extraction=None, prediction=None, correct=False)
        extraction = extract_answer(response, rules)
        correct, unjudged = _cached_verdict(extraction, answer, option_text(record), rules)
        return Verdict(extraction=extraction, prediction=None, correct=correct, unjudged=unjudged)

    def subset(self, record: Mapping[str, Any]) -> str:
        """`subset` if given, else the subject before "_" in the pid ("Math_20" → "Math")."""
        subset = record.get("subset")
        if isinstance(subset, str) and subset:
            return subset
        pid = record.get("pid")
        if isinstance(pid, str) and "_" in pid and pid.split("_")[0]:
            return pid.split("_")[0]
        return "all"


SCORER = EmmaScorer()

__all__ = ["SCORER", "EmmaScorer", "answers_equal", "extract_answer", "option_text", "verdict"]
