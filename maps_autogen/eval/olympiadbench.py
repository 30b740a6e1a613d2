"""OlympiadBench, multimodal open-ended part, as an eval task: the five OE_MM configs of Table 1.

Hub rows (Hothan/OlympiadBench, split "train"): id, question, solution, final_answer (list of
str: the first is the ground truth, later ones are alternatives), context, image_1..image_5,
modality, difficulty, is_multiple_answer, unit, answer_type, error, question_type, subfield,
subject, language. Several answers live in ONE string ("$a$ , $b$"); a compound
`answer_type` ("Expression,Numerical") and a comma `unit`/`error` then give one entry per answer.

Also home of the small helpers the image-question tasks share (numbered image fields,
`<image_N>` placeholders, `\\boxed{}` contents).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from maps_autogen.benchmarks.olympiadbench import CHINESE_MARKER, ENGLISH_MARKER
from maps_autogen.errors import DataError
from maps_autogen.eval.data import LOCAL_SUFFIXES, image_from_field, rows_for
from maps_autogen.eval.tasks import AnswerFormats, EvalItem, Row, Subset
from maps_autogen.images import ImageInput
from maps_autogen.problem import Problem

ANSWER_TYPES = ("Numerical", "Expression", "Equation", "Interval", "Tuple")
_IMAGE_FIELD = re.compile(r"image_(\d+)")
_PLACEHOLDER = re.compile(r"<image_(\d+)>")
_DOLLAR_PIECE = re.compile(r"\$(.*?)\$")
# Separators a Solver may put between several answers instead of the comma the judge splits on.
_ANSWER_SEPARATORS = re.compile(r"\s*(?:\n|;|；|，|\band\b)\s*")
_LANGUAGES = {"en": "English", "zh": "Chinese"}
_SUBJECTS = {"maths": "Math", "physics": "Physics"}


# --------------------------------------------------------------------------------------------
# Helpers shared by the image-question tasks
# --------------------------------------------------------------------------------------------


def required(fields: Mapping[str, Any], key: str) -> Any:
    """A field every row must have; a DataError naming it otherwise."""
    value = fields.get(key)
    if value is None or value == "":
        raise DataError(f"a data set row has no '{key}'", fix="check that the data follows the benchmark's published schema")
    return value


def row_images(fields: Mapping[str, Any], *, pid: str, base_dir: Path | None, max_side: int) -> tuple[tuple[ImageInput, ...], dict[int, int]]:
    """The row's images from image_1, image_2, ... (in number order, empty ones skipped), and the
    renumbering {field number: position} to apply to `<image_N>` placeholders.

    The engine labels images by their position, so when a number is skipped the placeholders
    must be renumbered for "<image_2>" to keep naming the second image shown.
    """
    numbers = sorted(int(m.group(1)) for key in fields if (m := _IMAGE_FIELD.fullmatch(str(key))))
    images: list[ImageInput] = []
    positions: dict[int, int] = {}
    for number in numbers:
        position = len(images) + 1
        image = image_from_field(fields[f"image_{number}"], name=f"{pid}_image_{position}.png", base_dir=base_dir, max_side=max_side)
        if image is not None:
            images.append(image)
            positions[number] = position
    return tuple(images), positions


def renumber_placeholders(text: str, positions: Mapping[int, int]) -> str:
    """`<image_N>` → `<image_position>` (one pass, so renumbered tags are not renumbered again)."""
    if all(number == position for number, position in positions.items()):
        return text
    return _PLACEHOLDER.sub(lambda m: f"<image_{positions.get(int(m.group(1)), int(m.group(1)))}>", text)


def boxed_contents(text: str) -> list[str]:
    """Contents of the top-level `\\boxed{…}`s by brace matching; an unclosed box ends the search."""
    found: list[str] = []
    start = text.find("\\boxed{")
    while start != -1:
        depth, pos = 1, start + len("\\boxed{")
        while pos < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[pos], 0)
            pos += 1
        if depth:
            break
        found.append(text[start + len("\\boxed{") : pos - 1].strip())
        start = text.find("\\boxed{", pos)
    return found


def one_line(text: str) -> str:
    """The text on one line: the official extractors read the answer up to the end of a line."""
    return " ".join(text.split())


def config_rows(
    hub_id: str,
    split: str,
    subsets: tuple[Subset, ...],
    data: Path | None,
    *,
    key: str,
    belongs: Callable[[Subset, Mapping[str, Any]], bool],
) -> Iterator[Row]:
    """Rows of each subset's hub config (or local entry), in subset order.

    `belongs` drops rows whose own fields contradict the subset, so one local file holding
    several configs is split correctly. When a single local source serves every subset and a
    row would still count for two of them, the subsets cannot be told apart: a DataError asks
    for one entry per config instead of silently counting the row twice.
    """
    shared_source = data is not None and not _has_config_entries(data, subsets)
    claimed: dict[str, str] = {}
    for subset in subsets:
        rows, base_dir = rows_for(hub_id, subset.source, split, data)
        for fields in rows:
            if not belongs(subset, fields):
                continue
            if shared_source:
                row_key = str(fields.get(key))
                if claimed.setdefault(row_key, subset.name) != subset.name:
                    raise DataError(
                        f"{data} holds rows of several configs that cannot be told apart ({key} {row_key} counts for {claimed[row_key]} and {subset.name})",
                        fix="pass a folder with one entry per config: <config>/, <config>.parquet or <config>.jsonl",
                    )
            yield Row(subset.name, dict(fields), base_dir)


def _has_config_entries(data: Path, subsets: tuple[Subset, ...]) -> bool:
    """Whether `data` is a folder with an entry per config (the layout `rows_for` looks up)."""
    if not data.is_dir():
        return False
    return any((data / s.source).exists() or any((data / f"{s.source}{suffix}").exists() for suffix in LOCAL_SUFFIXES) for s in subsets)


# --------------------------------------------------------------------------------------------
# OlympiadBench
# --------------------------------------------------------------------------------------------


def _config_fields(source: str) -> dict[str, str]:
    """What a config's name says about its rows: OE_MM_maths_zh_CEE → Math, Chinese."""
    parts = source.split("_")
    known = {"subject": next((_SUBJECTS[p] for p in parts if p in _SUBJECTS), ""), "language": next((_LANGUAGES[p] for p in parts if p in _LANGUAGES), "")}
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
        return [one_line(piece).strip(" ,") for piece in _ANSWER_SEPARATORS.split(answer) if piece.strip(" ,")]
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
        images, positions = row_images(fields, pid=pid, base_dir=row.base_dir, max_side=max_side)
        language = self._language(fields, row.subset)
        problem = Problem(
            question=renumber_placeholders(str(required(fields, "question")), positions),
            context=renumber_placeholders(str(fields.get("context") or "").strip(), positions),
            images=images,
            answer_format=self.answer_format(fields, prompts),
            id=pid,
        )
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
            problem=problem,
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
            },
        )

    def render_response(self, final_answer: str, item: EvalItem) -> str:
        """The official answer sentence of the item's language with each answer in \\boxed{}."""
        pieces = answer_pieces(final_answer, multiple=_is_multiple(item.record))
        boxed = ", ".join(f"\\boxed{{{piece}}}" for piece in pieces) or "\\boxed{}"
        if item.record.get("language") == "Chinese":
            return f"{CHINESE_MARKER}{boxed}。"
        return f"{ENGLISH_MARKER}{boxed}."


TASK = OlympiadBenchTask()
