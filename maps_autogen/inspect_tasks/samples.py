"""A benchmark's rows as Inspect samples, read by the same row readers and checks as `maps eval`
(a local copy with `data`, else the hub); each sample keeps the problem's id, its gold answer
as the target, the problem shown as a user message with its images, and its metadata."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser

from maps_autogen.benchmarks.tasks import EvalItem, Task, available_subsets, find_subsets
from maps_autogen.config import LoadedConfig
from maps_autogen.errors import MapsError
from maps_autogen.eval.selection import load_items
from maps_autogen.eval.validate import validate_rows
from maps_autogen.inspect_tasks.backend import chat_messages
from maps_autogen.problem import Problem
from maps_autogen.prompts import PromptSet
from maps_autogen.role_inputs import format_options, interleave_images


def problem_message(problem: Problem, labels: dict[str, str]) -> ChatMessageUser:
    """The problem as a user message: question, context, options and answer format, each image
    after its `<image_k>` placeholder (as the chat and the baselines send them)."""
    sections = [f"{labels['question']}: {problem.question}"]
    if problem.context:
        sections.append(f"{labels['context']}: {problem.context}")
    if problem.options:
        sections.append(f"{labels['options']}:\n{format_options(problem.options)}")
    if problem.answer_format:
        sections.append(f"{labels['answer_format']}: {problem.answer_format}")
    text = "\n\n".join(sections)
    content: str | list[dict[str, Any]] = text
    if problem.images:
        content = interleave_images(text, problem.images, problem.options)
    message = chat_messages([{"role": "user", "content": content}])[0]
    assert isinstance(message, ChatMessageUser)
    return message


def sample_of(item: EvalItem, prompts: PromptSet) -> Sample:
    """One problem as an Inspect sample (its images read now, as data URLs). A problem whose
    images cannot be read fails alone, as in `maps eval`: its sample says why, and the solver
    meets the same error when it loads the problem."""
    metadata = {**item.metadata, "subset": item.subset, "gold": item.gold}
    try:
        problem = item.load_problem()
    except MapsError as broken:
        return Sample(id=item.pid, input=f"problem {item.pid} cannot be loaded: {broken}", target=item.gold,
                      metadata={**metadata, "load_error": str(broken)})
    return Sample(
        id=item.pid,
        input=[problem_message(problem, prompts.task.labels)],
        target=item.gold,
        choices=list(problem.options) or None,
        metadata=metadata,
    )


def benchmark_items(task: Task, loaded: LoadedConfig, data: Path | None,
                    subsets: Sequence[str] = ()) -> list[EvalItem]:
    """The problems of the chosen subsets (all by default), from `data` or the hub, after the
    same row checks as `maps eval`."""
    chosen = find_subsets(task, tuple(subsets), available_subsets(task, data))
    validate_rows(task, chosen, data)
    return load_items(task, chosen, data, loaded)


def benchmark_dataset(name: str, items: Sequence[EvalItem], prompts: PromptSet) -> MemoryDataset:
    """The problems as an Inspect dataset, ids preserved."""
    return MemoryDataset([sample_of(item, prompts) for item in items], name=name)
