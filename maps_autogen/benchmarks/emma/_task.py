"""EMMA-mini as an eval task: the Math, Physics and Chemistry configs (100 problems each).

Hub rows (luckychao/EMMA-mini, split "test"): pid, question, options (list, may be empty or
null), answer (a letter, sometimes lower-case, or an open answer), image_1..image_5, solution,
subject, task, category, source, type ("Multiple Choice", "Multiple choice" or "Open-ended"),
context. Questions and options name images with `<image_N>` placeholders; options may be images
themselves ("<image_2>").
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from maps_autogen.benchmarks.emma._scorer import CHOICE_LETTERS, is_multiple_choice, named_option
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

# A letter as a Solver may write it: "B", "(B)", "B.", "B)", "Option B".
_LETTER = re.compile(r"(?:option|choice)?\s*\(?([A-Ha-h])\)?[.:)]?", re.IGNORECASE)
# A letter followed by the option's content: "B. <image_3>", "(C) 12 N".
_LEADING_LETTER = re.compile(r"\(?([A-H])[.:)]\s")  # a delimiter is required: "A block ..." is text
# The official fast extractor takes the last \boxed{} first; the phrase is its fallback reading.
_RESPONSE = "The answer is \\boxed{{{answer}}}."


def _options(fields: Mapping[str, Any]) -> list[str]:
    return [str(option) for option in fields.get("options") or []]


def _unwrapped(answer: str) -> str:
    """The answer without the math delimiters around the whole of it."""
    answer = answer.strip()
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if answer.startswith(left) and answer.endswith(right) and len(answer) > len(left) + len(right):
            return answer[len(left) : -len(right)].strip()
    return answer


class EmmaTask:
    name = "emma"
    title = "EMMA-mini"
    hub_id = "luckychao/EMMA-mini"
    split = "test"  # the only split on the hub
    subsets = (
        Subset("Math", "Math", 100, "Math"),
        Subset("Physics", "Phy.", 100, "Physics"),
        Subset("Chemistry", "Chem.", 100, "Chemistry"),
    )

    def rows(self, subsets: tuple[Subset, ...], data: Path | None) -> Iterator[Row]:
        """Rows of the chosen subsets, from the hub or from a local copy."""
        # `subject` names the config, so one local file holding all three subjects splits cleanly.
        return config_rows(self.hub_id, self.split, subsets, data, key="pid",
                           belongs=lambda subset, fields: fields.get("subject") in (None, "", subset.source))

    def to_item(self, row: Row, *, prompts: AnswerFormats, max_side: int) -> EvalItem:
        """Turn a row into an EvalItem: every image of the row (question images and option
        images, in number order) becomes a Problem image, placeholders kept in the text."""
        fields = row.fields
        pid = str(required(fields, "pid"))
        answer = str(required(fields, "answer")).strip()
        multiple_choice = is_multiple_choice(fields)
        options = _options(fields)
        question = str(required(fields, "question"))
        check_row_image_references(fields, pid=pid, base_dir=row.base_dir)
        answer_format = prompts.render(self.name, "multiple_choice" if multiple_choice else "open")

        def load_problem() -> Problem:
            return numbered_image_problem(fields, pid=pid, base_dir=row.base_dir, max_side=max_side,
                                          question=question, answer_format=answer_format,
                                          options=tuple(options) if multiple_choice else ())

        record = {
            "pid": pid,
            "type": fields.get("type"),
            "options": options if fields.get("options") is not None else None,
            "answer": answer,
            # As the official evaluation: the named option's text, or the open answer itself.
            "gt_content": named_option(answer, options) if multiple_choice else answer,
            "subset": row.subset,
        }
        return EvalItem(
            pid=pid,
            subset=row.subset,
            load_problem=load_problem,
            record=record,
            gold=answer.upper() if multiple_choice and len(answer) == 1 else answer,
            metadata={
                "type": fields.get("type"),
                "category": fields.get("category"),
                "task": fields.get("task"),
                "source": fields.get("source"),
                "subject": fields.get("subject"),
                "choices": len(options) if multiple_choice else 0,  # what a random guess chooses from
            },
            shown=(question, fields.get("context"), options if multiple_choice else [], answer_format),
            image_refs=tuple(numbered_image_fields(fields)),
            base_dir=row.base_dir,
        )

    def render_response(self, final_answer: str, item: EvalItem) -> str:
        """The answer in one \\boxed{} after "The answer is": a letter for multiple choice (an
        option's own text is mapped to its letter), the value for open questions."""
        answer = one_line(final_answer)
        boxes = boxed_contents(answer)
        answer = _unwrapped(boxes[-1] if boxes else answer.rstrip("."))
        if is_multiple_choice(item.record):
            answer = self._letter(answer, item.record.get("options") or [])
        return _RESPONSE.format(answer=answer)

    @staticmethod
    def _letter(answer: str, options: list[str]) -> str:
        match = _LETTER.fullmatch(answer) or _LEADING_LETTER.match(answer)
        if match:
            return match.group(1).upper()
        for index, option in enumerate(options[: len(CHOICE_LETTERS)]):
            if answer.casefold() == str(option).strip().casefold():
                return CHOICE_LETTERS[index]
        return answer  # the verdict also compares against the option text


TASK = EmmaTask()
