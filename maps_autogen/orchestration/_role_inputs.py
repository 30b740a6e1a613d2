"""What each step is shown: its declared inputs, labelled, and nothing else (a pure function).

MAPS passes each agent only the material its step needs instead of the whole chat history;
this is what keeps the cost of a chat linear in its length.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from maps_autogen.orchestration._flow import Rollback, SentBack
from maps_autogen.problem import ImageInput, Problem
from maps_autogen.settings import PROBLEM_FIELDS, PromptSet, StepConfig, lettered_option, option_letter, render


@dataclass(frozen=True)
class Revision:
    """A re-run with feedback: the step's previous output and what it receives of the review
    (the reviewer's `sends_back`): its score on the scale `scale` ((low, high)), the reviewer's
    evaluation and its feedback; a part not sent is None or ""."""

    previous_output: str
    feedback: str
    score: int | float | None = None
    evaluation: str = ""
    scale: tuple[float, float] = (1, 5)


IMAGE_PLACEHOLDER = re.compile(r"<image_(\d+)>")


def format_options(options: tuple[str, ...]) -> str:
    """Options as lettered lines (A. ..., B. ...), unless they are already lettered."""
    return "\n".join(lettered_option(index, option) for index, option in enumerate(options))


def image_tag(number: int) -> str:
    """The placeholder that names the `number`-th image (1-based) in the problem's text."""
    return f"<image_{number}>"


def _option_of_image(options: Sequence[str]) -> dict[int, str]:
    """{image number: letter of the first option that shows it} (options such as "<image_3>")."""
    letters: dict[int, str] = {}
    for index, option in enumerate(options):
        for match in IMAGE_PLACEHOLDER.finditer(option):
            letters.setdefault(int(match.group(1)), option_letter(index))
    return letters


def image_part(image: ImageInput) -> dict[str, Any]:
    """The chat API part that carries an image."""
    return {"type": "image_url", "image_url": {"url": image.data_url()}}


def interleave_images(text: str, images: Sequence[ImageInput], options: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The text as chat parts with every image right after its tag, so a model knows which
    image each placeholder names: an image goes right after the first `<image_k>` of the text
    (as the benchmarks' own evaluation code places it; an option "B. <image_3>" is thus followed
    by its image); an image the text never names follows the text, after its tag (and its
    option's letter when an option shows it). The text keeps every placeholder."""
    return place_images([(text, True)], images, options)


def place_images(blocks: Sequence[tuple[str, bool]], images: Sequence[ImageInput], options: Sequence[str] = (), *,
                 heading: str | None = None, after: Sequence[str] = ()) -> list[dict[str, Any]]:
    """`blocks` then `after`, joined by blank lines, as chat parts carrying the images: each
    image right after the first `<image_k>` of a block marked True (the problem's own text; tags
    in other blocks, such as an instruction's examples, are left alone); the images no marked
    block names follow the blocks, under `heading` when given, each after its tag (and its
    option's letter when an option shows it); then `after`."""
    pieces: list[str | ImageInput] = []
    placed: set[int] = set()
    for index, (text, search) in enumerate(blocks):
        if index:
            pieces.append("\n\n")
        if not search:
            pieces.append(text)
            continue
        start = 0
        for match in IMAGE_PLACEHOLDER.finditer(text):
            number = int(match.group(1))
            if not 1 <= number <= len(images) or number in placed:
                continue
            pieces += [text[start : match.end()], images[number - 1]]
            placed.add(number)
            start = match.end()
        pieces.append(text[start:])
    letters = _option_of_image(options)
    unplaced = [number for number in range(1, len(images) + 1) if number not in placed]
    for position, number in enumerate(unplaced):
        tag = image_tag(number) if number not in letters else f"{letters[number]}. {image_tag(number)}"
        if position == 0:
            if pieces and isinstance(pieces[-1], str):
                pieces[-1] = pieces[-1].rstrip()
            after_text = bool(pieces) and isinstance(pieces[-1], str) and bool(pieces[-1])
            tag = f"## {heading}\n{tag}" if heading else tag
            if after_text or (heading and pieces):
                tag = "\n\n" + tag
        pieces += [tag, images[number - 1]]
    pieces += [f"\n\n{text}" for text in after]
    return _parts(pieces)


def _parts(pieces: Sequence[str | ImageInput]) -> list[dict[str, Any]]:
    """Chat parts from text pieces and images: adjacent text joined, empty text dropped."""
    parts: list[dict[str, Any]] = []
    text = ""
    for piece in pieces:
        if isinstance(piece, str):
            text += piece
            continue
        if text:
            parts.append({"type": "text", "text": text})
        parts.append(image_part(piece))
        text = ""
    if text:
        parts.append({"type": "text", "text": text})
    return parts


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


def labelled_inputs(step: StepConfig, problem: Problem, outputs: Mapping[str, str]) -> list[tuple[str, str]]:
    """(input name, text) for each declared input of `step` that has content: problem fields,
    and the outputs of earlier steps that ran (a left-out step's output is simply absent)."""
    shown = []
    for name in step.inputs:
        text = _problem_text(name, problem) if name in PROBLEM_FIELDS else outputs.get(name, "")
        if text and text.strip():
            shown.append((name, text.strip()))
    return shown


def image_note(prompts: PromptSet, image: ImageInput, index: int, max_images: int | None = None) -> str:
    """The text that stands in for an image, worded by why it was not sent: the model cannot see
    images, or (`max_images`) the request already carries as many as the endpoint takes."""
    variables = {"index": index, "tag": image_tag(index), "name": image.name, "width": image.width,
                 "height": image.height}
    if max_images is None:
        return render(prompts.task.image_note, variables, source=prompts.task.source)
    return render(prompts.task.image_capped_note, {**variables, "max_images": max_images}, source=prompts.task.source)


def withheld_image_notes(prompts: PromptSet, images: Sequence[ImageInput], sent: int, max_images: int | None) -> str:
    """One note per image after the first `sent` (the ones a request does not carry), a line each,
    worded by why (`image_note`)."""
    return "\n".join(image_note(prompts, image, n, max_images) for n, image in enumerate(images, start=1) if n > sent)


def build_request(
    step: StepConfig,
    problem: Problem,
    outputs: Mapping[str, str],
    prompts: PromptSet,
    *,
    review_variables: Mapping[str, Any] | None = None,
    images: str = "none",
    max_images: int | None = None,
    revision: Revision | None = None,
    shared_prefix: bool = False,
    asked: Revision | None = None,
    notes: Sequence[str] = (),
) -> str | list[dict[str, Any]]:
    """The user message of `step`'s request: the task preamble, its labelled inputs, the
    person's `notes` (a person in the chat), the revision material when it re-runs (`revision`:
    the reviewer's; `asked`: the person's question, with the UserProxy's `revision` instruction),
    and its instruction (filled with `{{images_label}}`, the images heading, and
    `review_variables` for the reviewer: the dimensions, the rubric's scale and threshold).

    With `shared_prefix` (the embedded model: see `shared_prefix_system`), the same material
    is laid out so that consecutive steps' requests begin alike and llama.cpp reuses its prompt
    cache: the preamble is not here (it is the system message of every step), the outputs of
    earlier steps come first and then the problem's fields (each group in the declared order),
    and the step's own system message opens the tail, before the revision material and the
    instruction. Nothing is added or left out.

    `images` is "send" (each image attached as a data URL right after its `<image_k>` tag in the
    problem's text, or, when the text names none, under the images heading after the inputs),
    "note" (a text note per image, for models that cannot see) or "none" (this step does not
    receive images). With `max_images` (an endpoint that takes at most that many per request),
    "send" attaches the first `max_images` and puts a note in place of each other one.
    """
    labels = prompts.labels
    sections = [] if shared_prefix else [prompts.task.preamble]
    if not problem.has_images:
        sections.append(prompts.task.no_image_note)
    sent = len(problem.images) if images == "send" else 0
    if max_images is not None:
        sent = min(sent, max_images)
    if images in ("note", "send") and problem.has_images and sent < len(problem.images):
        capped = max_images if images == "send" else None  # else the model cannot see images
        sections.append(f"## {labels['images']}\n" + withheld_image_notes(prompts, problem.images, sent, capped))
    blocks = [(section, False) for section in sections if section]
    inputs = labelled_inputs(step, problem, outputs)
    if shared_prefix:  # earlier steps' outputs (shared by the steps after them) before the problem's fields
        inputs = sorted(inputs, key=lambda item: item[0] in PROBLEM_FIELDS)
    # The problem's own text places the images after their tags; an earlier step's output does not.
    blocks += [(f"## {labels[name]}\n{text}", name in PROBLEM_FIELDS) for name, text in inputs]
    # any prompt may name the images heading and the team's steps
    variables = {"images_label": labels["images"], **prompts.names[step.name], **(review_variables or {})}
    prompt = prompts.roles[step.name]
    tail: list[str] = [prompts.system_message(step.name)] if shared_prefix else []
    if notes:
        tail.append(f"## {labels['user_notes']}\n" + "\n".join(f"- {note}" for note in notes))
    if asked is not None:
        tail.append(f"## {labels['previous_output']}\n{asked.previous_output.strip()}")
        tail.append(f"## {labels['user_question']}\n{asked.feedback.strip()}")
        tail.append(render(prompts.user_proxy.revision, variables, source=prompts.user_proxy.source))
    if revision is not None:
        tail.append(f"## {labels['previous_output']}\n{revision.previous_output.strip()}")
        tail.append(f"## {labels['feedback']}\n{sent_back_text(revision, prompts)}")
        tail.append(render(prompt.revision, variables, source=prompt.source))
    tail.append(render(prompt.instruction, variables, source=prompt.source))
    tail = [section for section in tail if section]
    if not sent:
        return "\n\n".join([text for text, _ in blocks] + tail)
    # Images the problem's text does not name go under the images heading, before the instruction.
    return place_images(blocks, problem.images[:sent], problem.options, heading=labels["images"], after=tail)


def shared_prefix_system(prompts: PromptSet) -> str:
    """The system message of every step in the shared-prefix layout (`build_request`): the task
    preamble, the same for all of them."""
    return prompts.task.preamble


def review_variables(
    scored: Sequence[tuple[str, str]], prompts: PromptSet, *, low: float, high: float, threshold: float
) -> dict[str, Any]:
    """What the reviewer's prompt is filled with: the dimensions under review (one line each,
    with the heading of the step it scores), each dimension's feedback template as its step
    declares it (`feedback_template`; a dimension without one is not listed), the score scale
    and the pass threshold."""
    dimensions = [dimension for _, dimension in scored]
    return {
        "dimensions": ", ".join(dimensions),
        "dimension_keys": "|".join(dimensions),
        "dimension_list": "\n".join(f"- {dimension}: {prompts.labels[step]}" for step, dimension in scored),
        "feedback_templates": "\n".join(
            f"- {dimension}: {prompts.feedback_templates[step]}"
            for step, dimension in scored
            if prompts.feedback_templates.get(step)
        ),
        "scale_low": f"{low:g}",
        "scale_high": f"{high:g}",
        "threshold": f"{threshold:g}",
    }


def sent_back_text(revision: Revision, prompts: PromptSet) -> str:
    """The lines of the review a step is sent back with, each part as task.yaml's `sent_back`
    writes it (only the parts it received)."""
    low, high = revision.scale
    parts = {"score": None if revision.score is None else {"score": f"{revision.score:g}", "low": f"{low:g}",
                                                             "high": f"{high:g}"},
             "evaluation": {"evaluation": revision.evaluation.strip()} if revision.evaluation.strip() else None,
             "feedback": {"feedback": revision.feedback.strip()} if revision.feedback.strip() else None}
    return "\n".join(render(prompts.task.sent_back[part], values, source=prompts.task.source)
                     for part, values in parts.items() if values is not None)


def revision_for(step: str, outputs: Mapping[str, str], sent: SentBack, scale: tuple[float, float]) -> Revision:
    """The revision material of the step the reviewer sent back: its previous output and what it
    receives of the review (`flow.Rollback.sent`)."""
    return Revision(previous_output=outputs.get(step, ""), feedback=sent.feedback, score=sent.score,
                    evaluation=sent.evaluation, scale=scale)


def asked_revision(step: str, rollback: Rollback | None, outputs: Mapping[str, str]) -> Revision | None:
    """The revision material of a step the person sent back (`back STEP QUESTION`): its previous
    output and their question; None when `rollback` is not the person's sending `step` back."""
    if rollback is None or rollback.step != step or rollback.by != "user":
        return None
    return Revision(previous_output=outputs.get(step, ""), feedback=rollback.question)
