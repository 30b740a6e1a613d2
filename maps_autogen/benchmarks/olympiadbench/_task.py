"""OlympiadBench, multimodal open-ended part, as an eval task: the five OE_MM configs of Table 1.

Hub rows (Hothan/OlympiadBench, split "train"): id, question, solution, final_answer (list of
str: the first is the ground truth, later ones are alternatives), context, image_1..image_5,
modality, difficulty, is_multiple_answer, unit, answer_type, error, question_type, subfield,
subject, language. Several answers live in ONE string ("$a$ , $b$"); a compound
`answer_type` ("Expression,Numerical") and a comma `unit`/`error` then give one entry per answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from maps_autogen.benchmarks.olympiadbench._scorer import CHINESE_MARKER, ENGLISH_MARKER
from maps_autogen.problem import (
    AnswerFormats,
    EvalItem,
    Problem,
    Row,
    Subset,
    boxed_contents,
    check_row_image_references,
    config_rows,
    numbered_image_fields,
    numbered_image_problem,
    one_line,
    required,
)

ANSWER_TYPES = ("Numerical", "Expression", "Equation", "Interval", "Tuple")
_DOLLAR_PIECE = re.compile(r"\$(.*?)\$")
# Separators a Solver may put between several answers instead of the comma the judge splits on.
# No `\s*` around the separators: pieces are whitespace-normalised anyway, and `\s*\n` splits
# a long run of spaces in quadratic time.
_ANSWER_SEPARATORS = re.compile(r"\n|;|；|，|\band\b")
_LANGUAGES = {"en": "English", "zh": "Chinese"}
_SUBJECTS = {"maths": "Math", "physics": "Physics"}


# --------------------------------------------------------------------------------------------
# OlympiadBench
# --------------------------------------------------------------------------------------------


def _config_fields(source: str) -> dict[str, str]:
    """What a config's name says about its rows: OE_MM_maths_zh_CEE → Math, Chinese."""
    parts = source.split("_")
    known = {"subject": next((_SUBJECTS[p] for p in parts if p in _SUBJECTS), ""),
             "language": next((_LANGUAGES[p] for p in parts if p in _LANGUAGES), "")}
    return {name: value for name, value in known.items() if value}


def _answer_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [str(answer) for answer in value or []]


def _answer_kinds(answer_type: Any) -> list[str]:
    """The per-answer types of a (possibly compound) answer_type; unknown ones kept as written."""
    if not isinstance(answer_type, str) or not answer_type.strip():
        return []
    kinds = []
    for part in answer_type.split(","):
        part = part.strip().split("-")[0]  # upstream allows a "-detail" suffix on a type
        kinds.append(next((t for t in ANSWER_TYPES if t in part), part))
    return kinds


def _tolerance(error: Any) -> Any:
    # A null written as NaN by pandas would silently make every numeric comparison false.
    return None if isinstance(error, float) and math.isnan(error) else error


def _is_multiple(fields: Mapping[str, Any]) -> bool:
    return bool(fields.get("is_multiple_answer")) or len(_answer_kinds(fields.get("answer_type"))) > 1


def _strip_marker(answer: str) -> str:
    """The answer without a final-answer sentence the Solver may have written around it."""
    for marker in (ENGLISH_MARKER, CHINESE_MARKER):
        if marker in answer:
            answer = answer.rsplit(marker, 1)[1]
    return answer.strip().rstrip(".。").strip()


def answer_pieces(answer: str, *, multiple: bool) -> list[str]:
    """The answer(s) to box: the contents of boxes the Solver already wrote; else its `$…$`
    pieces (what the official pipeline reads from a line with dollars, units and words outside
    them dropped); else the text itself, split at answer separators when several are expected."""
    answer = _strip_marker(answer)
    text = one_line(answer)
    boxes = boxed_contents(text)
    if boxes:
        return boxes
    for delimiter in ("$$", "\\(", "\\)", "\\[", "\\]"):
        text = text.replace(delimiter, "$")
    dollars = [piece.strip() for piece in _DOLLAR_PIECE.findall(text) if piece.strip()]
    if dollars:
        return dollars
    if multiple:  # split before joining lines: a line break may be the separator
        pieces = (one_line(piece).strip(" ,") for piece in _ANSWER_SEPARATORS.split(answer))
        return [piece for piece in pieces if piece]
    return [text]


class OlympiadBenchTask:
    name = "olympiadbench"
    title = "OlympiadBench"
    hub_id = "Hothan/OlympiadBench"
    split = "train"  # the only split on the hub
    subsets = (
        Subset("Math_En_COMP", "MECO", 150, "OE_MM_maths_en_COMP"),
        Subset("Math_Zh_CEE", "MZCE", 300, "OE_MM_maths_zh_CEE", default_sample=300),
        Subset("Math_Zh_COMP", "MZCO", 56, "OE_MM_maths_zh_COMP"),
        Subset("Physics_En_COMP", "PECO", 456, "OE_MM_physics_en_COMP"),
        Subset("Physics_Zh_CEE", "PZCE", 300, "OE_MM_physics_zh_CEE", default_sample=300),
    )

    def rows(self, subsets: tuple[Subset, ...], data: Path | None) -> Iterator[Row]:
        """Rows of the chosen subsets, from the hub or from a local copy."""
        return config_rows(self.hub_id, self.split, subsets, data, key="id", belongs=self._belongs)

    @staticmethod
    def _belongs(subset: Subset, fields: Mapping[str, Any]) -> bool:
        return all(fields.get(name) in (None, "", value) for name, value in _config_fields(subset.source).items())

    def _language(self, fields: Mapping[str, Any], subset: str) -> str | None:
        language = fields.get("language")
        if language in ("English", "Chinese"):
            return str(language)
        source = next((s.source for s in self.subsets if s.name == subset), "")
        return _config_fields(source).get("language")

    def answer_format(self, fields: Mapping[str, Any], formats: AnswerFormats) -> str:
        """The answer-format instruction for a row: its answer type(s), several answers, unit."""
        kinds = _answer_kinds(fields.get("answer_type"))
        multiple = _is_multiple(fields)
        # AnswerFormats strips the rendered text, so the fragment's leading space is put back here.
        several = " " + formats.render(self.name, "multiple") if multiple else ""
        distinct = sorted(set(kinds), key=kinds.index)
        if len(distinct) == 1 and distinct[0] in ANSWER_TYPES:
            text = formats.render(self.name, distinct[0], multiple=several)
        elif len(distinct) > 1:
            text = formats.render(self.name, "mixed", kinds=", ".join(kinds))
        else:
            text = formats.render(self.name, "other", multiple=several)
        unit = str(fields.get("unit") or "").strip()
        if unit:
            text += " " + self._unit_text(unit, multiple, formats)
        return text

    def _unit_text(self, unit: str, multiple: bool, formats: AnswerFormats) -> str:
        parts = [part.strip() for part in unit.split(",")] if multiple else [unit]
        if len(parts) > 1:  # one unit per answer, blank where an answer has none
            no_unit = formats.render(self.name, "no_unit")
            return formats.render(self.name, "units", units="; ".join(part or no_unit for part in parts))
        return formats.render(self.name, "unit", unit=unit)

    def to_item(self, row: Row, *, prompts: AnswerFormats, max_side: int) -> EvalItem:
        """Turn a row into an EvalItem (Problem with its answer-format instruction)."""
        fields = row.fields
        pid = str(required(fields, "id"))
        answers = _answer_list(required(fields, "final_answer"))
        question = str(required(fields, "question"))
        check_row_image_references(fields, pid=pid, base_dir=row.base_dir)
        language = self._language(fields, row.subset)
        answer_format = self.answer_format(fields, prompts)

        def load_problem() -> Problem:
            return numbered_image_problem(fields, pid=pid, base_dir=row.base_dir, max_side=max_side,
                                          question=question, answer_format=answer_format)

        record = {
            "id": pid,
            "final_answer": answers,
            "error": _tolerance(fields.get("error")),
            "answer_type": fields.get("answer_type"),
            "language": language,
            "unit": fields.get("unit"),
            "is_multiple_answer": bool(fields.get("is_multiple_answer")),
            "subset": row.subset,
        }
        return EvalItem(
            pid=pid,
            subset=row.subset,
            load_problem=load_problem,
            record=record,
            # Only the first entry is judged (later ones are alternative forms of it).
            gold=answers[0],
            metadata={
                "answer_type": fields.get("answer_type"),
                "difficulty": fields.get("difficulty"),
                "subfield": fields.get("subfield"),
                "subject": fields.get("subject"),
                "language": language,
                "question_type": fields.get("question_type"),
                "choices": 0,  # open-ended: a random guess never scores
            },
            shown=(question, fields.get("context"), answer_format),
            image_refs=tuple(numbered_image_fields(fields)),
            base_dir=row.base_dir,
        )

    def render_response(self, final_answer: str, item: EvalItem) -> str:
        """The official answer sentence of the item's language with each answer in \\boxed{}."""
        pieces = answer_pieces(final_answer, multiple=_is_multiple(item.record))
        boxed = ", ".join(f"\\boxed{{{piece}}}" for piece in pieces) or "\\boxed{}"
        if item.record.get("language") == "Chinese":
            return f"{CHINESE_MARKER}{boxed}。"
        return f"{ENGLISH_MARKER}{boxed}."


TASK = OlympiadBenchTask()
