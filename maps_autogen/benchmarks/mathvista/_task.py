"""MathVista testmini as an eval task: general (460) and math (540) problems."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from maps_autogen.problem import (
    AnswerFormats,
    EvalItem,
    Problem,
    Row,
    Subset,
    check_image_reference,
    image_from_field,
    rows_for,
)


def _metadata(fields: dict[str, Any]) -> dict[str, Any]:
    metadata = fields.get("metadata") or {}
    return metadata if isinstance(metadata, dict) else {}


def decimal_places(precision: Any) -> int | None:
    """The row's `precision` (stored as a float, 1.0) as a whole number of places, None if absent."""
    try:
        places = float(precision)
    except (TypeError, ValueError):
        return None
    return int(places) if places == places and places >= 0 and places == int(places) else None


class MathVistaTask:
    name = "mathvista"
    title = "MathVista"
    hub_id = "AI4Math/MathVista"
    split = "testmini"
    subsets = (
        Subset("general", "Gen.", 460, "general-vqa"),
        Subset("math", "Math", 540, "math-targeted-vqa"),
    )

    def rows(self, subsets: tuple[Subset, ...], data: Path | None) -> Iterator[Row]:
        wanted = {subset.source: subset.name for subset in subsets}
        rows, base_dir = rows_for(self.hub_id, None, self.split, data)
        for fields in rows:
            category = _metadata(fields).get("category") or fields.get("category")
            if category in wanted:
                yield Row(wanted[category], dict(fields), base_dir)

    def answer_format(self, fields: dict[str, Any], formats: AnswerFormats) -> str:
        if fields.get("question_type") == "multi_choice":
            text = formats.render(self.name, "multi_choice")
        elif fields.get("answer_type") == "float":
            places = decimal_places(fields.get("precision"))
            if places is None:
                text = formats.render(self.name, "float_unrounded")
            else:
                places_text = (formats.render(self.name, "one_place") if places == 1
                               else formats.render(self.name, "places", precision=places))
                text = formats.render(self.name, "float", places=places_text)
        else:
            answer_type = fields.get("answer_type") or "text"
            text = formats.render(self.name, answer_type if answer_type in ("integer", "list") else "text")
        if fields.get("unit"):
            text += " " + formats.render(self.name, "unit", unit=fields["unit"])
        return text

    def to_item(self, row: Row, *, prompts: AnswerFormats, max_side: int) -> EvalItem:
        fields = row.fields
        pid = str(fields["pid"])
        question = str(fields["question"])
        image_field = fields.get("decoded_image") or fields.get("image")
        check_image_reference(image_field, name=pid, base_dir=row.base_dir)
        choices = [str(choice) for choice in fields.get("choices") or []]
        metadata = _metadata(fields)
        answer_format = self.answer_format(fields, prompts)

        def load_problem() -> Problem:
            image = image_from_field(image_field, name=pid, base_dir=row.base_dir, max_side=max_side)
            return Problem(
                question=question,
                options=tuple(choices),
                images=(image,) if image else (),
                answer_format=answer_format,
                id=pid,
            )

        record = {
            "pid": pid,
            "question_type": fields.get("question_type"),
            "answer_type": fields.get("answer_type"),
            "precision": fields.get("precision"),
            "choices": choices or None,
            "unit": fields.get("unit"),
            "answer": str(fields.get("answer")),
            "category": metadata.get("category"),
            "subset": row.subset,
        }
        return EvalItem(
            pid=pid,
            subset=row.subset,
            load_problem=load_problem,
            record=record,
            gold=str(fields.get("answer")),
            metadata={
                "question_type": fields.get("question_type"),
                "answer_type": fields.get("answer_type"),
                "category": metadata.get("category"),
                "task": metadata.get("task"),
                "grade": metadata.get("grade"),
                "skills": metadata.get("skills"),
                "source": metadata.get("source"),
                "choices": len(choices),  # what a random guess chooses from (0: open answer)
            },
            shown=(question, choices, answer_format), image_refs=(image_field,),
            base_dir=row.base_dir,
        )

    def render_response(self, final_answer: str, item: EvalItem) -> str:
        # MathVista's extractor reads a bare answer (a letter, a number, a list) directly.
        return final_answer.strip()


TASK = MathVistaTask()
