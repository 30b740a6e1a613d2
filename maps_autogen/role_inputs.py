"""What each role is shown: its declared inputs, labelled, and nothing else (a pure function).

MAPS passes each agent only the material its step needs instead of the whole chat history;
this is what keeps the cost of a chat linear in its length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from maps_autogen.images import ImageInput
from maps_autogen.problem import Problem
from maps_autogen.prompts import PromptSet, render
from maps_autogen.roles import DIMENSION_OF_STEP, Role

# The declared inputs of each role (MAPS_SPEC "The four steps"), in the order they are shown.
ROLE_INPUTS: dict[Role, tuple[str, ...]] = {
    Role.INTERPRETER: ("images",),
    Role.ALIGNER: ("question", "context", "options", "caption"),
    Role.SCHOLAR: ("question", "context", "caption", "alignment"),
    Role.SOLVER: ("question", "options", "caption", "alignment", "knowledge", "answer_format"),
    Role.CRITIC: ("caption", "alignment", "knowledge", "solution"),
}
OUTPUT_OF_INPUT = {"caption": Role.INTERPRETER, "alignment": Role.ALIGNER, "knowledge": Role.SCHOLAR, "solution": Role.SOLVER}


@dataclass(frozen=True)
class Revision:
    """A re-run with feedback: the role's previous output and the Critic's question."""

    previous_output: str
    feedback: str


def format_options(options: tuple[str, ...]) -> str:
    """Options as lettered lines (A. ..., B. ...), unless they are already lettered."""
    lines = []
    for index, option in enumerate(options):
        letter = chr(ord("A") + index) if index < 26 else str(index + 1)
        already = len(option) > 1 and option[0] == letter and option[1] in ".):"
        lines.append(option if already else f"{letter}. {option}")
    return "\n".join(lines)


def _problem_text(name: str, problem: Problem) -> str:
    if name == "question":
        return problem.question
    if name == "context":
        return problem.context
    if name == "options":
        return format_options(problem.options)
    if name == "answer_format":
        return problem.answer_format
    return ""


def labelled_inputs(role: Role, problem: Problem, outputs: Mapping[Role, str]) -> list[tuple[str, str]]:
    """(input name, text) for each declared text input of `role` that has content."""
    shown = []
    for name in ROLE_INPUTS[role]:
        if name == "images":
            continue
        text = outputs.get(OUTPUT_OF_INPUT[name], "") if name in OUTPUT_OF_INPUT else _problem_text(name, problem)
        if text and text.strip():
            shown.append((name, text.strip()))
    return shown


def image_note(prompts: PromptSet, image: ImageInput, index: int) -> str:
    """The text that stands in for an image when the model cannot see images."""
    return render(
        prompts.task.image_note,
        {"index": index, "name": image.name, "width": image.width, "height": image.height},
        source=prompts.task.source,
    )


def build_request(
    role: Role,
    problem: Problem,
    outputs: Mapping[Role, str],
    prompts: PromptSet,
    *,
    dimensions: tuple[str, ...],
    images: str = "none",
    revision: Revision | None = None,
) -> str | list[dict[str, Any]]:
    """The user message of `role`'s request: the task preamble, its labelled inputs, the
    revision material when it re-runs, and its instruction.

    `images` is "send" (images attached as data URLs), "note" (a text note per image, for
    models that cannot see) or "none" (this role does not receive images).
    """
    labels = prompts.task.labels
    sections = [prompts.task.preamble]
    if not problem.has_images:
        sections.append(prompts.task.no_image_note)
    if images == "note" and problem.has_images:
        notes = "\n".join(image_note(prompts, image, n) for n, image in enumerate(problem.images, start=1))
        sections.append(f"## {labels['images']}\n{notes}")
    for name, text in labelled_inputs(role, problem, outputs):
        sections.append(f"## {labels[name]}\n{text}")
    variables = {"dimensions": ", ".join(dimensions), "dimension_keys": "|".join(dimensions)}
    source = prompts.roles[role].source
    if revision is not None:
        sections.append(f"## {labels['previous_output']}\n{revision.previous_output.strip()}")
        sections.append(f"## {labels['feedback']}\n{revision.feedback.strip() or '-'}")
        sections.append(render(prompts.roles[role].revision, variables, source=source))
    sections.append(render(prompts.roles[role].instruction, variables, source=source))
    text = "\n\n".join(section for section in sections if section)
    if images != "send" or not problem.has_images:
        return text
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for image in problem.images:
        parts.append({"type": "image_url", "image_url": {"url": image.data_url()}})
    return parts


def revision_for(role: Role, outputs: Mapping[Role, str], feedback: Mapping[str, str]) -> Revision:
    """The revision material of the step the Critic sent back."""
    return Revision(previous_output=outputs.get(role, ""), feedback=feedback.get(DIMENSION_OF_STEP[role], ""))
