"""The one tolerant parser for the Solver's and the Critic's JSON replies.

Models wrap JSON in code fences, add prose around it, or leave trailing commas; this module
finds the object anyway and says whether it had to repair anything.

Replies are untrusted: every scan here is linear in the reply's length (no regex with adjacent
unbounded quantifiers that can match the same characters), at most MAX_CANDIDATES spans are
tried, and JSON nested deeper than MAX_JSON_DEPTH counts as unparseable.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from maps_autogen.settings import AnswerFallback, CriticVerdict, SolverAnswer

_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_SMART_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})
_PY_LITERALS = re.compile(r"(?<![\"\w])(True|False|None)(?![\"\w])")
# At most 64 spaces/quotes between "final answer" and the colon: a bounded run cannot backtrack
# quadratically (the unbounded `\s*["']?\s*` took 26 s on 64k spaces).
_FINAL_ANSWER_LINE = re.compile(r"final[ _]answer[\s\"']{0,64}[:：=]\s*(.+)", re.IGNORECASE)
_FENCE_MARK = "```"
MAX_JSON_DEPTH = 64
MAX_CANDIDATES = 64


def _balanced_objects(text: str) -> list[str]:
    """Every top-level {...} span of `text`, respecting JSON strings, in order of appearance."""
    spans: list[str] = []
    depth = 0
    start = -1
    in_string = False
    escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"' and depth > 0:
            in_string = True
        elif char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : index + 1])
    return spans


def _fenced_blocks(text: str) -> list[str]:
    """The contents of ```-fenced blocks (an optional `json` tag dropped), found with plain
    string search so that an unclosed fence costs one scan."""
    blocks: list[str] = []
    start = text.find(_FENCE_MARK)
    while start != -1:
        end = text.find(_FENCE_MARK, start + len(_FENCE_MARK))
        if end == -1:
            break
        block = text[start + len(_FENCE_MARK) : end]
        if block[:4] in ("json", "JSON"):
            block = block[4:]
        blocks.append(block.strip())
        start = text.find(_FENCE_MARK, end + len(_FENCE_MARK))
    return blocks


def _too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether a parsed JSON value nests lists/objects deeper than `limit` (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend([(child, depth + 1) for child in children if type(child) in (dict, list)])
    return False


def _repairs(candidate: str) -> Iterator[str]:
    """Progressively repaired versions of a JSON candidate (the cheap, safe repairs only),
    each made only when the previous one did not parse."""
    no_trailing = _TRAILING_COMMA.sub(r"\1", candidate)
    yield no_trailing
    quoted = no_trailing.translate(_SMART_QUOTES)
    yield quoted
    yield _PY_LITERALS.sub(lambda m: {"True": "true", "False": "false", "None": "null"}[m.group(1)], quoted)


def _loads_object(candidate: str) -> dict[str, Any] | None:
    try:
        value = json.loads(candidate, strict=False)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or _too_deep(value):
        return None
    return value


def extract_json_object(text: str | None) -> tuple[dict[str, Any] | None, bool]:
    """Find the JSON object in a model reply.

    Returns (object, repaired): `repaired` is True when the object was not the whole reply as
    valid JSON (it had to be cut out of fences/prose or fixed). (None, True) when nothing parses.
    """
    if not text:
        return None, True
    stripped = text.strip()
    direct = _loads_object(stripped)
    if direct is not None:
        return direct, False
    # Only spans with a colon can hold a key; LaTeX braces such as {1}{2} cannot.
    candidates = [c for c in [*_fenced_blocks(stripped), *_balanced_objects(stripped)] if ":" in c]
    # A reply that opens an object but never closes it is usually cut off; nothing to recover.
    for candidate in candidates[:MAX_CANDIDATES]:
        for version in itertools.chain([candidate], _repairs(candidate)):
            found = _loads_object(version)
            if found is not None:
                return found, True
    return None, True


def value_text(value: Any) -> str:
    """A JSON value as text: strings trimmed, lists joined with commas, objects as JSON."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return ", ".join(value_text(item) for item in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else str(value)


def parse_solver_reply(text: str | None, *, fallback: AnswerFallback = "text") -> SolverAnswer:
    """Parse the Solver's JSON; when that fails, fall back to the reply's own text (its last
    "final answer:" line, else all of it), or with `fallback` "none" to no answer."""
    found, repaired = extract_json_object(text)
    if found is not None:
        keys = {key.lower().replace(" ", "_"): key for key in found}
        if "final_answer" in keys:
            return SolverAnswer(
                final_answer=value_text(found[keys["final_answer"]]),
                process=found.get(keys.get("process", "process")),
                parsed=True,
                repaired=repaired,
            )
    if fallback == "none":
        return SolverAnswer(final_answer="", process=None, parsed=False, repaired=True)
    body = (text or "").strip()
    lines = _FINAL_ANSWER_LINE.findall(body)
    answer = lines[-1].strip().strip('"').strip() if lines else body
    return SolverAnswer(final_answer=answer, process=None, parsed=False, repaired=True)


def _score(value: Any, low: float, high: float) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or not low <= value <= high:
        return None
    return int(value) if float(value).is_integer() else float(value)


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "yes", "false", "no"}:
        return value.strip().lower() in {"true", "yes"}
    return None


def _dimension_name(value: Any, dimension_of_step: Mapping[str, str]) -> str | None:
    """A dimension named by its own name or by its step's name."""
    if not isinstance(value, str):
        return None
    name = value.strip().lower()
    if name in dimension_of_step.values():
        return name
    return dimension_of_step.get(name)


def parse_critic_reply(
    text: str | None, scored: Sequence[tuple[str, str]], *, low: float = 1, high: float = 5
) -> CriticVerdict | None:
    """Parse the reviewer's verdict; None when it is unusable.

    `scored` is (step, dimension) for each step under review. Usable means: a `scores` object
    with a number in [low, high] for every dimension (scores for others are ignored); 0 is also
    read on a 1-5 scale, as the lowest mark. `worst_step` may name a dimension or a step.
    """
    dimension_of_step = dict(scored)
    dimensions = tuple(dimension for _, dimension in scored)
    found, repaired = extract_json_object(text)
    if found is None:
        return None
    scores_raw = found.get("scores")
    if not isinstance(scores_raw, dict):
        return None
    scores_by_name = {_dimension_name(key, dimension_of_step): value for key, value in scores_raw.items()}
    scores: dict[str, int | float] = {}
    for dimension in dimensions:
        score = _score(scores_by_name.get(dimension), min(low, 0), high)
        if score is None:
            return None
        scores[dimension] = score
    worst = _dimension_name(found.get("worst_step"), dimension_of_step)
    need_feedback = _flag(found.get("need_feedback"))
    return CriticVerdict(
        scores=scores,
        need_feedback=need_feedback if need_feedback is not None else False,
        worst_step=worst if worst in dimensions else None,
        feedback=_per_dimension(found.get("feedback"), dimension_of_step),
        repaired=repaired,
        evaluation=_per_dimension(found.get("evaluation"), dimension_of_step),
    )


def _per_dimension(raw: Any, dimension_of_step: Mapping[str, str]) -> dict[str, str]:
    """A text per dimension from a {dimension or step: text} object (other keys ignored); one
    text for all of them when the reply gave a single string; empty texts left out."""
    dimensions = tuple(dimension_of_step.values())
    texts: dict[str, str] = {}
    if isinstance(raw, dict):
        for key, value in raw.items():
            named = _dimension_name(key, dimension_of_step)
            if named is not None and named in dimensions and value is not None and value_text(value):
                texts[named] = value_text(value)
    elif isinstance(raw, str) and raw.strip():
        texts = {dimension: raw.strip() for dimension in dimensions}
    return texts
