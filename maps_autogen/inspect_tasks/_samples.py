"""A benchmark's rows as Inspect samples, read by the same row readers and checks as `maps eval`
(a local copy with `data`, else the hub); each sample keeps the problem's id, its gold answer
as the target and its metadata, and its question as the input. No image of a problem is read
before its sample runs (Inspect applies `--limit` after making every sample): the solver reads the
problem then, once, and shows it as the sample's first message, with its images (`problem_message`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser

from maps_autogen.eval import load_items, validate_rows
from maps_autogen.inspect_tasks._backend import chat_messages
from maps_autogen.orchestration import format_options, interleave_images
from maps_autogen.problem import EvalItem, Problem, Task, available_subsets, find_subsets
from maps_autogen.settings import LoadedConfig


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


def sample_of(item: EvalItem) -> Sample:
    """One problem as an Inspect sample, its images not read: its input is the problem's question
    (text, already in the row), so a log can be browsed and searched by question; the solver reads
    the whole problem (its images, once) when the sample runs and shows it as the first message. A
    problem whose images cannot be read fails alone there, as in `maps eval`."""
    metadata = {**item.metadata, "subset": item.subset, "gold": item.gold}
    question = item.shown[0] if item.shown and isinstance(item.shown[0], str) and item.shown[0].strip() else None
    return Sample(id=item.pid, input=question or f"{item.subset} problem {item.pid} (read when its sample runs)",
                  target=item.gold, metadata=metadata)


def benchmark_items(task: Task, loaded: LoadedConfig, data: Path | None,
                    subsets: Sequence[str] = ()) -> list[EvalItem]:
    """The problems of the chosen subsets (all by default), from `data` or the hub, after the
    same row checks as `maps eval`."""
    chosen = find_subsets(task, tuple(subsets), available_subsets(task, data))
    validate_rows(task, chosen, data)
    return load_items(task, chosen, data, loaded)


def benchmark_dataset(name: str, items: Sequence[EvalItem]) -> MemoryDataset:
    """The problems as an Inspect dataset, ids preserved, nothing of them read."""
    return MemoryDataset([sample_of(item) for item in items], name=name)
