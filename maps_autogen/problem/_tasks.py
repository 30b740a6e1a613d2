"""What a benchmark task provides to the runner, and helpers every task shares."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from maps_autogen._util import UsageError
from maps_autogen.problem._problem import Problem


@dataclass(frozen=True)
class Subset:
    """A subtask as the paper reports it."""

    name: str  # e.g. "Math_En_COMP"
    column: str  # the paper's Table 1 column, e.g. "MECO"
    paper_size: int
    source: str  # the hub config (or category) the subset comes from
    default_sample: int | None = None  # the paper samples this many (seeded) from the subset


@dataclass(frozen=True)
class EvalItem:
    """One benchmark problem, ready for the engine and the scorer.

    The Problem is built by `load_problem` when the problem starts (in its worker): its images
    are read and decoded then, so a run never holds every image at once and a broken image
    fails its own problem only. The row's fields are checked before (eval/_validate.py)."""

    pid: str
    subset: str
    load_problem: Callable[[], Problem]  # reads and decodes the images: call once, when the problem starts
    record: dict[str, Any]  # the scorer's fields for this problem (no response yet)
    gold: str
    metadata: dict[str, Any] = field(default_factory=dict)  # question/answer type, category, difficulty
    # What the steps are shown, unread: the texts (question, context, options, answer format)
    # and each image reference as the row gives it (bytes, a path from `base_dir`, a URL). The
    # data fingerprint (eval/_verdict_settings.py) hashes the texts and the images' bytes.
    shown: tuple[Any, ...] = ()
    image_refs: tuple[Any, ...] = ()
    base_dir: Path | None = None


@dataclass(frozen=True)
class Row:
    """A raw data set row with the subset it was loaded for and where relative paths start."""

    subset: str
    fields: dict[str, Any]
    base_dir: Path | None


class Task(Protocol):
    name: str
    title: str
    hub_id: str
    split: str  # the data set split the benchmark's problems come from
    subsets: tuple[Subset, ...]

    def rows(self, subsets: tuple[Subset, ...], data: Path | None) -> Iterator[Row]:
        """Rows of the chosen subsets, from the hub or from a local copy."""
        ...

    def to_item(self, row: Row, *, prompts: AnswerFormats, max_side: int) -> EvalItem:
        """Turn a row into an EvalItem (Problem with its answer-format instruction, built when
        the problem starts; image paths are checked to stay inside the data folder now)."""
        ...

    def render_response(self, final_answer: str, item: EvalItem) -> str:
        """The Solver's final answer in the text form this benchmark's official extractor reads."""
        ...


# --------------------------------------------------------------------------------------------
# Rendering answers for the official extractors
# --------------------------------------------------------------------------------------------


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


def available_subsets(task: Task, data: Path | None) -> tuple[Subset, ...]:
    """The subsets a run chooses from: the task's own, or, for a task whose subsets come from
    its data (`subsets_for`: the custom benchmark's categories), those of `data`."""
    subsets_for = getattr(task, "subsets_for", None)
    return task.subsets if subsets_for is None else subsets_for(data)


def find_subsets(task: Task, names: tuple[str, ...], available: tuple[Subset, ...] | None = None) -> tuple[Subset, ...]:
    """The named subsets (case-insensitive; paper column names accepted) among `available`
    (default: the task's own), or all of them."""
    available = task.subsets if available is None else available
    if not names:
        return available
    chosen = []
    for name in names:
        match = next((s for s in available
                      if name.lower() in (s.name.lower(), s.column.lower(), s.source.lower())), None)
        if match is None:
            known = ", ".join(s.name for s in available)
            raise UsageError(f"{task.title} has no subset '{name}'", fix=f"use one of: {known}")
        if match not in chosen:
            chosen.append(match)
    return tuple(chosen)


def spread_limit(items: Sequence[EvalItem], subsets: Sequence[Subset], limit: int) -> list[EvalItem]:
    """`limit` problems spread over the subsets, deterministically: the subsets take turns (in
    their order) until `limit` are allotted or they run out, and within a subset the allotted
    problems are evenly spaced over its rows; the result keeps the items' order."""
    by_subset = {subset.name: [item for item in items if item.subset == subset.name] for subset in subsets}
    allotted = dict.fromkeys(by_subset, 0)
    remaining = min(limit, sum(len(group) for group in by_subset.values()))
    while remaining:
        for name, group in by_subset.items():
            if remaining and allotted[name] < len(group):
                allotted[name] += 1
                remaining -= 1
    chosen = {
        id(group[(2 * n + 1) * len(group) // (2 * allotted[name])])
        for name, group in by_subset.items()
        for n in range(allotted[name])
    }
    return [item for item in items if id(item) in chosen]


class AnswerFormats:
    """The per-benchmark answer-format instructions from prompts/answer_formats.yaml."""

    def __init__(self, templates: dict[str, dict[str, str]], source: str):
        self.templates = templates
        self.source = source

    def render(self, benchmark: str, case: str, **variables: Any) -> str:
        from maps_autogen._util import ConfigError
        from maps_autogen.settings import render

        try:
            template = self.templates[benchmark][case]
        except KeyError:
            raise ConfigError(f"{self.source}: no answer format '{benchmark}.{case}'",
                              fix="see the default prompts/answer_formats.yaml") from None
        return render(template, variables, source=self.source).strip()


def load_answer_formats(path: Path) -> AnswerFormats:
    """Read prompts/answer_formats.yaml."""
    from maps_autogen._util import ConfigError
    from maps_autogen.settings import read_yaml

    data = read_yaml(path)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ConfigError(f"{path}: expected benchmark -> case -> text",
                          fix="see the default prompts/answer_formats.yaml")
    return AnswerFormats({b: {c: str(t) for c, t in cases.items()} for b, cases in data.items()}, str(path))
