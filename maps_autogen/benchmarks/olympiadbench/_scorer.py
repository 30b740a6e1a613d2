"""OlympiadBench: answer extraction and the official judge's verdict, quirks included.

Record fields: `final_answer` (list of str; only the first is the ground truth, as upstream),
`error` (tolerance: a float, a comma list with blanks meaning 1e-8; any false value, 0 as a
number included, means 1e-8: `precision_of`), `answer_type`,
`response`, optional `language` ("English"/"Chinese"); other fields pass through untouched.

The judge is re-implemented from the official rules (OpenBMB/OlympiadBench, inference/judge.py +
code/math_judger.py, sympy 1.12 + antlr 4.11) and reproduces its verdicts, including the ones
that look wrong. The pipeline calls it as judge(model_answer, ground_truth, precision): the
model answer is the FIRST argument, which matters for the ×100/÷100 variants (applied to it).

Every sympy-touching step runs in a helper process under the per-item time limit
(see `_symbolic`); a timeout counts as "not equal". The string work runs here, in linear time
or within the bounds of `bounds` (nested boxes repeat their contents: their output is bounded);
an answer past a bound, or whose symbolic check did not finish, is judged wrong and its verdict
says why (`Verdict.unjudged`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from maps_autogen.benchmarks import _symbolic
from maps_autogen.benchmarks._base import RecordError, Verdict
from maps_autogen.benchmarks._bounds import Unjudgeable, bounded_symbolic, charge

DEFAULT_PRECISION = 1e-8
ENGLISH_MARKER = "So the final answer is "
CHINESE_MARKER = "所以最终答案是"
SYMBOLIC_TOLERANCE = 1e-3  # fixed upstream for expressions with free symbols
MAX_EXPONENT = 1000  # upstream refuses to evaluate a numeric power beyond this exponent

# Decorative LaTeX replaced before comparing; upstream applies them in this order.
_REPLACEMENTS: tuple[tuple[str, str], ...] = (
    ("\\left", ""),
    ("\\right", ""),
    ("∶", ":"),
    ("，", ","),
    ("$", ""),
    ("\\approx", "="),
    ("\\simeq", "="),
    ("\\sim", "="),
    ("^\\prime", "'"),
    ("^{\\prime}", "'"),
    ("^\\circ", ""),  # only this spelling: `^{\circ}` survives (an official quirk)
    ("%", ""),
)
_EDGE_PUNCTUATION = "\n$,.:;^_=+`!@#$%^&*~，。"
_FONT_COMMAND_OPENING = re.compile(r"\\(?:mathrm|mathbf)\{")
_DOLLAR_PIECE = re.compile(r"\$(.*?)\$")
_CJK = re.compile(r"[\u4e00-\u9fff]+")
_MARKER_PATTERNS = {
    "English": re.compile(re.escape(ENGLISH_MARKER) + "(.*)"),
    "Chinese": re.compile(re.escape(CHINESE_MARKER) + "(.*)"),
    None: re.compile(f"(?:{re.escape(ENGLISH_MARKER)}|{re.escape(CHINESE_MARKER)})(.*)"),
}


# --------------------------------------------------------------------------------------------
# Extraction and record fields (run in the caller: plain string work)
# --------------------------------------------------------------------------------------------


def extract_answer(response: str, language: str | None = None) -> str:
    """The text after the last final-answer marker up to the end of its line, else everything.

    Like upstream's `re.findall(marker + "(.*)")`, a marker only counts as the first one on its
    line (a repeated marker later on the same line is part of the answer).
    """
    pattern = _MARKER_PATTERNS.get(language, _MARKER_PATTERNS[None])
    matches = pattern.findall(response)
    return matches[-1].strip() if matches else response


def precision_of(error: Any, answer_type: str | None) -> float | list[float]:
    """The numeric tolerance for a record, as the official pipeline derives it (judge.py).

    Tuple answers always use the default, whatever `error` holds. Otherwise the pipeline tests
    `error` for truth: every false value of any JSON type (null, "", 0, 0.0, false, [], {})
    means the default tolerance, so an `error` of 0 given as a number is the default, not a
    tolerance of 0 ("0" as a string is a tolerance of 0). A string is read as a float, or as a
    comma list with one tolerance per answer (blank entries mean the default). The pipeline
    stops with a TypeError on any other true value: a nonzero number is read as the value its
    string would give, and true, a non-empty list or object cannot be scored (RecordError).
    """
    if answer_type is not None and "Tuple" in answer_type:
        return DEFAULT_PRECISION
    if not error:
        return DEFAULT_PRECISION
    if isinstance(error, bool) or not isinstance(error, (int, float, str)):
        raise RecordError("field 'error' must be a number, a string or null")
    if isinstance(error, (int, float)):
        return float(error)
    try:
        if "," in error:
            # Upstream only treats "" as blank (" " crashed it); whitespace counts as blank here.
            return [float(p) if p.strip() else DEFAULT_PRECISION for p in error.split(",")]
        return float(error)
    except ValueError:
        raise RecordError(f"field 'error' is not a tolerance: {error!r}") from None


def _validated(record: Mapping[str, Any]) -> tuple[str, str | None, str | None, str | None]:
    """(ground truth, response, language, answer_type) or RecordError naming the bad field."""
    final = record.get("final_answer")
    if not isinstance(final, list) or not final or not isinstance(final[0], str):
        raise RecordError("field 'final_answer' must be a non-empty list of strings")
    response = record.get("response")
    if response is not None and not isinstance(response, str):
        raise RecordError("field 'response' must be a string or null")
    language = record.get("language")
    if language is not None and language not in ("English", "Chinese"):
        raise RecordError("field 'language' must be 'English', 'Chinese' or absent")
    answer_type = record.get("answer_type")
    if answer_type is not None and not isinstance(answer_type, str):
        raise RecordError("field 'answer_type' must be a string or null")
    return final[0], response, language, answer_type


# --------------------------------------------------------------------------------------------
# Pre-processing (pure string work)
# --------------------------------------------------------------------------------------------


class _UnclosedBox(ValueError):
    """A `\\boxed{` without its closing brace: upstream then judges the pair unequal."""


def _matching_braces(text: str) -> dict[int, int]:
    """{position of a "{": position of the "}" closing it}, in one pass (a "}" with nothing
    open is skipped; a "{" never closed is absent)."""
    closing: dict[int, int] = {}
    opened: list[int] = []
    for match in re.finditer(r"[{}]", text):
        if match.group() == "{":
            opened.append(match.start())
        elif opened:
            closing[opened.pop()] = match.start()
    return closing


def boxed_or_dollar_content(text: str) -> str:
    """Every `\\boxed{…}` content followed by ","; else the `$…$` pieces of the last line.

    Falls back to the text itself. Nested boxes are found again on their own (as upstream), so
    the output may be far longer than the text: past `bounds.MAX_BOXED_CHARS` the answer cannot
    be judged (Unjudgeable). Each box's closing brace is the one upstream's depth count finds,
    taken from one matching pass instead of a scan per box.
    """
    starts = [match.end() for match in re.finditer(r"\\boxed{", text)]
    if starts:
        closing = _matching_braces(text)
        if any(start - 1 not in closing for start in starts):
            raise _UnclosedBox("mismatched braces")
        ends = [closing[start - 1] for start in starts]
        charge("boxed chars", sum(end - start + 1 for start, end in zip(starts, ends)), "the boxed answers")
        return "".join(text[start:end] + "," for start, end in zip(starts, ends))
    last_line = text.strip().split("\n")[-1]
    dollars = _DOLLAR_PIECE.findall(last_line)
    if dollars:
        return "".join(p + "," for p in dollars)
    return text


def _drop_font_commands(text: str) -> str:
    r"""`re.sub(r"\\(?:mathrm|mathbf)\{~?([^}]*)\}", r"\1", text)` in linear time: a command
    with no "}" after it ends the search (no later one can close either)."""
    pieces: list[str] = []
    position = 0
    while (opening := _FONT_COMMAND_OPENING.search(text, position)) is not None:
        close = text.find("}", opening.end())
        if close == -1:
            break
        body = opening.end() + (1 if text.startswith("~", opening.end()) and close > opening.end() else 0)
        pieces += [text[position : opening.start()], text[body:close]]
        position = close + 1
    return "".join(pieces) + text[position:]


def clean(text: str) -> str:
    """Drop decoration: what precedes `\\in `, `\\left`/`\\right`, `$`, degree marks, `%`, …"""
    if "\\in " in text:
        text = text.split("\\in ")[1]  # the piece after the FIRST `\in ` (up to a second one)
    for old, new in _REPLACEMENTS:
        text = text.replace(old, new)
    text = text.strip(_EDGE_PUNCTUATION)
    return _drop_font_commands(text)


def preprocess(text: str) -> str:
    """Both stages of upstream's pre-processing; raises _UnclosedBox like upstream, and
    Unjudgeable past the boxed-output bound."""
    return clean(boxed_or_dollar_content(text))


def split_top_level(text: str) -> list[str]:
    """Split on commas outside ()/[] (a running depth that may go negative, as upstream)."""
    items: list[str] = []
    depth, start = 0, 0
    for i, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    if start < len(text):
        items.append(text[start:].strip())
    return items


def expand_plus_minus(items: Sequence[str]) -> list[str]:
    """Each item containing `\\pm` becomes two: all `+`, then all `-`."""
    expanded: list[str] = []
    for item in items:
        if "\\pm" in item:
            expanded += [item.replace("\\pm", "+"), item.replace("\\pm", "-")]
        else:
            expanded.append(item)
    return expanded


def is_interval(text: str) -> bool:
    """Upstream's test: starts with ( or [ and ends with ) or ]."""
    return text.startswith(("(", "[")) and text.endswith((")", "]"))


def numerically_equal(first: str, second: str, precision: float) -> bool:
    """Both parse as Python floats and `first` (or first/100, first·100) is within 1.01·precision.

    Raises ValueError when either side is not a float literal.
    """
    x, y = float(first), float(second)
    return any(abs(candidate - y) <= precision * 1.01 for candidate in (x / 100, x, x * 100))


# --------------------------------------------------------------------------------------------
# Symbolic comparison (runs in the helper process)
# --------------------------------------------------------------------------------------------


def _right_of_equals(text: str) -> str:
    # Upstream keeps the piece between the first and second "=" (usually "x = value").
    return (text.split("=")[1] if "=" in text else text).strip()


def _computable(expr: Any) -> bool:
    """Upstream's guard: a top-level numeric power must have a moderate exponent."""
    import sympy

    if not isinstance(expr, sympy.Pow):
        return True
    base, exponent = expr.as_base_exp()
    if not (base.is_number and exponent.is_number):
        return False
    return not abs(exponent.evalf()) > MAX_EXPONENT


def expression_equal(first: str, second: str, precision: float) -> Any:
    """Upstream's expression test; returns a bool or a sympy relation (truth undecidable).

    Raises when either side does not parse, like upstream; callers decide what that means.
    """
    import sympy

    left = sympy.sympify(_symbolic.parse_latex(_right_of_equals(first)))
    right = sympy.sympify(_symbolic.parse_latex(_right_of_equals(second)))
    if left == right:
        return True
    pi = _symbolic.parse_latex("\\pi")
    left, right = left.subs(pi, math.pi), right.subs(pi, math.pi)
    left_symbolic, right_symbolic = left.has(sympy.Symbol), right.has(sympy.Symbol)
    if left_symbolic != right_symbolic:
        return False
    if not left_symbolic:
        try:
            if not (_computable(left) and _computable(right)):
                return False
            return bool(abs(left.evalf() - right.evalf()) <= precision * 1.01)
        except Exception:  # noqa: BLE001 - upstream: any evaluation failure means unequal
            return False
    try:
        difference = sympy.simplify(left - right).evalf()
        # May be a relation when symbols remain: its truth value is then undecidable.
        return abs(difference) < SYMBOLIC_TOLERANCE
    except Exception:  # noqa: BLE001
        return False


def _moved_to_left(equation: str) -> Any:
    import sympy

    lhs_text, rhs_text = equation.split("=")  # exactly one "=" or ValueError
    relation = sympy.Eq(_symbolic.parse_latex(lhs_text), _symbolic.parse_latex(rhs_text))
    # For two numbers Eq evaluates to true/false, which has no sides: upstream fails there.
    return sympy.simplify(relation.lhs - relation.rhs)


def equation_equal(first: str, second: str) -> bool:
    """Two equations `a = b` match when (a−b)/(c−d) or its inverse is a nonzero integer."""
    import sympy

    if first.count("=") != 1 or second.count("=") != 1:
        # Upstream would fail on this only after simplifying the first side; the verdict is
        # the same ("unequal"), found without the (sometimes seconds-long) simplification.
        return False
    left, right = _moved_to_left(first), _moved_to_left(second)
    ratios = (sympy.simplify(left / right), sympy.simplify(right / left))
    return any(bool(r.is_Integer) and r != 0 for r in ratios)


def interval_equal(first: str, second: str, precision: float) -> bool:
    """Unions of intervals: same raw bracket characters, endpoints equal pairwise.

    Pieces are split on `\\cup` without trimming, so a space beside it breaks the comparison;
    `zip` ignores extra endpoints (tuples of different length can match). Raises on parse
    failures, which upstream turns into "unequal".
    """
    if first == second:
        return True
    pieces1, pieces2 = first.split("\\cup"), second.split("\\cup")
    if len(pieces1) != len(pieces2):
        return False
    for a, b in zip(pieces1, pieces2):
        if a[0] != b[0] or a[-1] != b[-1]:
            return False
        for end_a, end_b in zip(a.strip("[]()").split(","), b.strip("[]()").split(",")):
            if not expression_equal(end_a, end_b, precision):  # bool() of a relation raises
                return False
    return True


def items_equal(first: str, second: str, precision: float) -> bool:
    """One answer item against another, trying each upstream rule in order."""
    if first == second and first != "":
        return True
    if is_interval(first) and is_interval(second):
        try:
            if interval_equal(first, second, precision):
                return True
        except Exception:  # noqa: BLE001 - upstream stops here when an interval fails
            return False
    try:
        if numerically_equal(first, second, precision):
            return True
    except Exception:  # noqa: BLE001
        pass
    # Upstream evaluates the expression test even when both sides are equations but then
    # ignores its result; skipping it gives the same verdict in less time.
    if not ("=" in first and "=" in second):
        try:
            if expression_equal(first, second, precision):
                return True
        except Exception:  # noqa: BLE001
            pass
    try:
        if equation_equal(first, second):
            return True
    except Exception:  # noqa: BLE001
        pass
    return False


def judge(first: str, second: str, precision: float | list[float] = DEFAULT_PRECISION) -> bool:
    """The official judge. The pipeline passes (model answer, ground truth, precision).

    Multiple answers are split on top-level commas (± expanded) and matched greedily: the
    item lists must have the same length and each item of the first must find an equal one in
    the second. With one precision per answer, item i of the first list uses precision i.
    """
    try:
        first, second = preprocess(first), preprocess(second)
    except _UnclosedBox:
        return False
    return judge_preprocessed(first, second, precision)


def judge_preprocessed(first: str, second: str, precision: float | list[float] = DEFAULT_PRECISION) -> bool:
    """`judge` of two texts already through `preprocess` (what the helper process is given)."""
    precisions = list(precision) if isinstance(precision, list) else [precision]
    if first == second:
        return True
    # CJK text was only useful for the exact comparison above (answers like "能" / "不能").
    list1 = expand_plus_minus(split_top_level(_CJK.sub("", first)))
    list2 = expand_plus_minus(split_top_level(_CJK.sub("", second)))
    if len(precisions) <= 1:
        precisions = precisions * len(list1)
    if len(list1) != len(list2):
        return False
    index = -1
    while list1:
        index = (index + 1) % len(list1)
        item = list1[index]
        if index >= len(precisions):
            # Upstream raises IndexError here (fewer tolerances than answers) and the run
            # crashes; "not equal" is the only verdict we can give.
            return False
        item_precision = precisions[index]
        for candidate in list2:
            if items_equal(item, candidate, item_precision):
                # Upstream removes by value (the first equal entry), not by position.
                list1.remove(item)
                list2.remove(candidate)
                precisions.remove(item_precision)
                break
        else:
            return False
    return True


# --------------------------------------------------------------------------------------------
# The scorer
# --------------------------------------------------------------------------------------------


def judge_bounded(
    model_answer: str, ground_truth: str, precision: float | list[float] = DEFAULT_PRECISION
) -> bool:
    """`judge` with its symbolic part in a helper process under the per-item time limit
    (timeout → False)."""
    return judged(model_answer, ground_truth, precision)[0]


def judged(
    model_answer: str, ground_truth: str, precision: float | list[float] = DEFAULT_PRECISION
) -> tuple[bool, str | None]:
    """`judge`'s verdict and, when the answer could not be judged within the bounds (the boxed
    output, what the helper is sent, the helper's time and memory), why (the verdict is then
    False). The pre-processing runs here, so the helper is sent only what it compares."""
    try:
        first, second = preprocess(model_answer), preprocess(ground_truth)
    except _UnclosedBox:
        return False, None
    except Unjudgeable as beyond:
        return False, beyond.reason
    if first == second:
        return True, None
    try:
        bounded_symbolic(first, second)
    except Unjudgeable as beyond:
        return False, beyond.reason
    result = _symbolic.run_bounded(judge_preprocessed, first, second, precision, fallback=_symbolic.NOT_FINISHED)
    if isinstance(result, _symbolic.NotFinished):
        return False, result.reason
    return bool(result), None


class OlympiadBenchScorer:
    """Official OlympiadBench verdicts (judge.py + MathJudger); one rule version."""

    name: ClassVar[str] = "olympiadbench"
    rule_versions: ClassVar[tuple[str, ...]] = ("current",)

    def score(self, record: Mapping[str, Any], rules: str = "current") -> Verdict:
        """Extract the final answer from `response` and judge it against `final_answer[0]`."""
        ground_truth, response, language, answer_type = _validated(record)
        precision = precision_of(record.get("error"), answer_type)
        if response is None:
            return Verdict(extraction=None, prediction=None, correct=False)
        extraction = extract_answer(response, language)
        try:
            prediction: str | None = preprocess(extraction)
        except _UnclosedBox:
            prediction = None
        except Unjudgeable as beyond:
            return Verdict(extraction=extraction, prediction=None, correct=False, unjudged=beyond.reason)
        correct, unjudged = judged(extraction, ground_truth, precision)
        return Verdict(extraction=extraction, prediction=prediction, correct=correct, unjudged=unjudged)

    def subset(self, record: Mapping[str, Any]) -> str:
        """`subset` if given, else subject and language (e.g. "Physics/English"), else "all"."""
        subset = record.get("subset")
        if isinstance(subset, str) and subset:
            return subset
        parts = [
            value
            for value in (record.get("subject"), record.get("language"))
            if isinstance(value, str) and value
        ]
        return "/".join(parts) if parts else "all"


SCORER = OlympiadBenchScorer()

__all__ = [
    "SCORER",
    "OlympiadBenchScorer",
    "extract_answer",
    "judge",
    "judge_bounded",
    "judge_preprocessed",
    "judged",
    "precision_of",
    "preprocess",
]
