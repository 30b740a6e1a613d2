"""A benchmark of the user's own, from one JSONL file (`maps eval custom --data FILE.jsonl`).

Row schema (docs/benchmarks.md, "Your own benchmark"): `id`, `question`, `images` (a list of paths relative
to the file, or URLs) or `image` (one), `options` (optional list; the gold `answer` is then
the letter, A for the first option), `answer`, optional `answer_type` (`choice`, `number`
with optional `tolerance`, `text`), optional `category` (the subsets: Table 1 has a column
per category), optional `context`. Scoring rules: `_scorer.py`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from maps_autogen._util import UsageError
from maps_autogen.benchmarks._base import RecordError
from maps_autogen.benchmarks.custom._scorer import DEFAULT_CATEGORY, LETTERS, answer_type_of, gold_problem
from maps_autogen.problem import (
    AnswerFormats,
    EvalItem,
    Problem,
    Row,
    Subset,
    check_image_reference,
    image_from_field,
    local_rows,
    one_line,
    required,
)

MAX_CATEGORY_CHARS = 80


def category_of(fields: Mapping[str, Any]) -> str:
    """The row's category (its subset), "all" when it has none."""
    category = fields.get("category")
    return category.strip() if isinstance(category, str) and category.strip() else DEFAULT_CATEGORY


def image_references(fields: Mapping[str, Any]) -> list[Any]:
    """The row's image references: `images` (a list) or `image` (one), in order."""
    images = fields.get("images")
    if images not in (None, "", []):
        return list(images) if isinstance(images, list) else [images]
    image = fields.get("image")
    return [] if image in (None, "") else [image]


def row_problems(fields: Mapping[str, Any]) -> list[str]:
    """What is wrong with a row's own fields beyond the required ones (an empty list when nothing)."""
    problems = []
    if fields.get("images") not in (None, "", []) and not isinstance(fields.get("images"), list):
        problems.append("has 'images' that is not a list (use 'image' for one)")
    if any(not isinstance(ref, str) or not ref.strip() for ref in image_references(fields)):
        problems.append("has an image that is not a path or URL")
    options = fields.get("options")
    if options is not None and (not isinstance(options, list) or any(isinstance(o, (dict, list)) for o in options)):
        problems.append("has 'options' that is not a list of texts")
    category = fields.get("category")
    # A category names a Table 1 column and a --subset: one printable line, no Markdown cell break.
    if category is not None and (not isinstance(category, str) or len(category) > MAX_CATEGORY_CHARS
                                 or not category.isprintable() or "|" in category):
        problems.append(f"has a 'category' that is not one printable line of at most {MAX_CATEGORY_CHARS} "
                        "characters without '|'")
    if fields.get("answer") not in (None, "") and not problems:
        try:
            gold = gold_problem(fields)
        except RecordError as error:
            gold = str(error)
        if gold:
            problems.append(f"cannot be scored: {gold}")
    return problems


class CustomTask:
    name = "custom"
    title = "Custom"
    hub_id = ""  # no hub copy: the rows come from --data only
    split = "test"
    subsets: tuple[Subset, ...] = ()  # the categories of the data: see subsets_for

    def row_problems(self, fields: Mapping[str, Any]) -> list[str]:
        """Checks of a row beyond its required fields (eval/_validate.py asks every task that has them)."""
        return row_problems(fields)

    def subsets_for(self, data: Path | None) -> tuple[Subset, ...]:
        """One subset per category of the data file, in order of first appearance."""
        if data is None:
            raise UsageError("maps eval custom needs --data FILE.jsonl",
                             fix="pass your benchmark file (docs/benchmarks.md: 'Your own benchmark')")
        rows, _ = local_rows(data, None, self.split)
        names = dict.fromkeys(category_of(fields) for fields in rows if isinstance(fields, Mapping))
        return (tuple(Subset(name, name, 0, name) for name in names)
                or (Subset(DEFAULT_CATEGORY, DEFAULT_CATEGORY, 0, DEFAULT_CATEGORY),))

    def rows(self, subsets: tuple[Subset, ...], data: Path | None) -> Iterator[Row]:
        """The file's rows whose category is one of `subsets`."""
        if data is None:
            self.subsets_for(data)  # the one-line error
        wanted = {subset.name for subset in subsets}
        rows, base_dir = local_rows(data, None, self.split)  # type: ignore[arg-type]
        for fields in rows:
            if category_of(fields) in wanted:
                yield Row(category_of(fields), dict(fields), base_dir)

    def answer_format(self, fields: Mapping[str, Any], formats: AnswerFormats) -> str:
        """The answer instruction for the row's answer type (choice, number, text)."""
        kind = answer_type_of(fields)
        if kind == "choice":
            count = len(fields.get("options") or [])
            return formats.render(self.name, "choice", letters=f"A-{LETTERS[max(count, 1) - 1]}")
        return formats.render(self.name, kind)

    def to_item(self, row: Row, *, prompts: AnswerFormats, max_side: int) -> EvalItem:
        """Turn a row into an EvalItem; image paths are checked to stay inside the file's folder now."""
        fields = row.fields
        pid = str(required(fields, "id"))
        question = str(required(fields, "question"))
        references = image_references(fields)
        for number, reference in enumerate(references, start=1):
            check_image_reference(reference, name=f"{pid}_image_{number}", base_dir=row.base_dir)
        kind = answer_type_of(fields)
        options = [str(option) for option in fields.get("options") or []]
        answer = str(required(fields, "answer")).strip()
        answer_format = self.answer_format(fields, prompts)

        def load_problem() -> Problem:
            images = (image_from_field(reference, name=f"{pid}_image_{number}", base_dir=row.base_dir,
                                       max_side=max_side)
                      for number, reference in enumerate(references, start=1))
            return Problem(question=question, context=str(fields.get("context") or "").strip(),
                           options=tuple(options) if kind == "choice" else (),
                           images=tuple(image for image in images if image is not None),
                           answer_format=answer_format, id=pid)

        gold = answer.upper() if kind == "choice" else answer
        record = {
            "id": pid,
            "answer": gold,
            "answer_type": kind,
            "options": options if kind == "choice" else None,
            "tolerance": fields.get("tolerance"),
            "category": fields.get("category"),
            "subset": row.subset,
        }
        return EvalItem(
            pid=pid,
            subset=row.subset,
            load_problem=load_problem,
            record=record,
            gold=gold,
            metadata={
                "question_type": "multiple choice" if kind == "choice" else "open",
                "answer_type": kind,
                "category": fields.get("category"),
                "difficulty": fields.get("difficulty"),
                "choices": len(options) if kind == "choice" else 0,  # what a random guess chooses from
            },
            shown=(question, fields.get("context"), options if kind == "choice" else [], answer_format),
            image_refs=tuple(references),
            base_dir=row.base_dir,
        )

    def render_response(self, final_answer: str, item: EvalItem) -> str:
        """The Solver's final answer on one line (the rules read it as a whole)."""
        return one_line(final_answer)


TASK = CustomTask()
