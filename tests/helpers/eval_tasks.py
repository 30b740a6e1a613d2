"""Shared by the tests of tests/e2e/test_eval_tasks.py and others: EMMA_FEATURES, MV_FEATURES, MV_ROWS, OB_FEATURES, OB_IMAGES, emma_row, image_widths, items, ob_row, write_jsonl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from datasets import Features, Image, List, Value
from PIL import Image as PILImage

from maps_autogen.problem._tasks import AnswerFormats, EvalItem, Row, load_answer_formats

REPO = Path(__file__).resolve().parents[2]


MAX_SIDE = 512


STRING = Value("string")


@pytest.fixture(scope="module")
def formats() -> AnswerFormats:
    return load_answer_formats(REPO / "maps_autogen" / "settings" / "defaults" / "prompts" / "answer_formats.yaml")


def picture(width: int) -> PILImage.Image:
    """A small image whose width identifies it (so tests can tell which image went where)."""
    return PILImage.new("RGB", (width, 24), (width % 256, 80, 160))


def write_jsonl(path: Path, rows: list[dict[str, Any]], image_fields: tuple[str, ...]) -> Path:
    """JSONL with every image saved as a PNG beside it and referenced by a relative path."""
    folder = path.parent / f"{path.stem}_images"
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for number, row in enumerate(rows):
        row = dict(row)
        for field in image_fields:
            if isinstance(row.get(field), PILImage.Image):
                name = f"{number}_{field}.png"
                row[field].save(folder / name)
                row[field] = f"{folder.name}/{name}"
        lines.append(json.dumps(row, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def image_widths(item: EvalItem) -> list[int]:
    return [image.width for image in item.load_problem().images]


def items(task: Any, rows: list[Row], formats: AnswerFormats) -> dict[str, EvalItem]:
    return {item.pid: item for item in (task.to_item(row, prompts=formats, max_side=MAX_SIDE) for row in rows)}


OB_IMAGES = tuple(f"image_{n}" for n in range(1, 6))


OB_FEATURES = Features({
    "id": Value("int64"), "question": STRING, "solution": List(STRING), "final_answer": List(STRING),
    "context": STRING, **{field: Image() for field in OB_IMAGES}, "modality": STRING,
    "difficulty": STRING, "is_multiple_answer": Value("bool"), "unit": STRING, "answer_type": STRING,
    "error": STRING, "question_type": STRING, "subfield": STRING, "subject": STRING, "language": STRING,
})


def ob_row(row_id: int, final_answer: list[str], answer_type: str, *, subject: str = "Math", language: str = "English",
           widths: tuple[int | None, ...] = (41,), multiple: bool = False, unit: str | None = None,
           error: str | None = None, context: str | None = None, question: str = "Find $x$ in <image_1>.") -> dict[str, Any]:
    images = {field: (picture(w) if w else None) for field, w in zip(OB_IMAGES, (*widths, None, None, None, None, None))}
    return {
        "id": row_id, "question": question, "solution": ["(worked solution)"], "final_answer": final_answer,
        "context": context, **images, "modality": "Multimodal", "difficulty": "Competition",
        "is_multiple_answer": multiple, "unit": unit, "answer_type": answer_type, "error": error,
        "question_type": "Open-ended", "subfield": "Geometry", "subject": subject, "language": language,
    }


EMMA_IMAGES = tuple(f"image_{n}" for n in range(1, 6))


EMMA_FEATURES = Features({
    "pid": STRING, "question": STRING, "options": List(STRING), "answer": STRING,
    **{field: Image() for field in EMMA_IMAGES}, "solution": STRING, "subject": STRING, "task": STRING,
    "category": STRING, "source": STRING, "type": STRING, "context": STRING,
})


def emma_row(pid: str, subject: str, kind: str, question: str, options: list[str] | None, answer: str,
             widths: tuple[int, ...]) -> dict[str, Any]:
    images = {field: (picture(w) if w else None) for field, w in zip(EMMA_IMAGES, (*widths, 0, 0, 0, 0, 0))}
    return {
        "pid": pid, "question": question, "options": options, "answer": answer, **images, "solution": None,
        "subject": subject, "task": f"{subject} task", "category": "Path Tracing", "source": "EMMA", "type": kind,
        "context": None,
    }


MV_FEATURES = Features({
    "pid": STRING, "question": STRING, "image": STRING, "decoded_image": Image(), "choices": List(STRING),
    "unit": STRING, "precision": Value("float64"), "answer": STRING, "question_type": STRING, "answer_type": STRING,
    "metadata": {"category": STRING, "context": STRING, "grade": STRING, "img_height": Value("int64"),
                 "img_width": Value("int64"), "language": STRING, "skills": List(STRING), "source": STRING,
                 "split": STRING, "task": STRING},
    "query": STRING,
})


def mv_row(pid: str, category: str, question_type: str, answer_type: str, answer: str, *, width: int,
           choices: list[str] | None = None, precision: float | None = None, unit: str | None = None) -> dict[str, Any]:
    return {
        "pid": pid, "question": f"Question {pid}?", "image": f"images/{pid}.jpg", "decoded_image": picture(width),
        "choices": choices, "unit": unit, "precision": precision, "answer": answer, "question_type": question_type,
        "answer_type": answer_type,
        "metadata": {"category": category, "context": "scientific figure", "grade": "high school", "img_height": 24,
                     "img_width": width, "language": "english", "skills": ["algebraic reasoning"], "source": "Geometry3K",
                     "split": "testmini", "task": "geometry problem solving"},
        "query": f"Hint: ... Question {pid}?",
    }


MV_ROWS = [
    mv_row("1", "math-targeted-vqa", "multi_choice", "text", "145°", width=91, choices=["35°", "55°", "125°", "145°"]),
    mv_row("2", "general-vqa", "free_form", "integer", "7", width=92, unit="cm"),
    mv_row("3", "math-targeted-vqa", "free_form", "float", "1.45", width=93, precision=2.0),
]
