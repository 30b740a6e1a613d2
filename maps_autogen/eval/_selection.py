"""Which problems an eval runs: the `--shard` share, seeded samples per subset and `--limit`,
and the problems of the chosen subsets loaded lazily (images read when each problem starts)."""

from __future__ import annotations

import contextvars
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from maps_autogen._util import UsageError
from maps_autogen.problem import (
    EvalItem,
    ImageLimits,
    Row,
    Subset,
    Task,
    image_limits,
    load_answer_formats,
    spread_limit,
)
from maps_autogen.records import SampleRecord
from maps_autogen.settings import LoadedConfig


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
        if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
            raise UsageError(f"--shard '{text}' is not of the form i/n with 1 <= i <= n", fix="e.g. --shard 1/4")
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"



@dataclass
class Selection:
    items: list[EvalItem]
    sampled: dict[str, SampleRecord] = field(default_factory=dict)
    # Every problem of the selection a --shard's share was taken from (its items when unsharded).
    whole: list[EvalItem] = field(default_factory=list)


def select_items(items: Sequence[EvalItem], subsets: Sequence[Subset], *, sample: int | None, seed: int,
                 limit: int | None, shard: Shard | None) -> Selection:
    """Which problems run, deterministically: seeded samples per subset (the paper's 300 for the
    Zh_CEE subsets unless --sample says otherwise), then --limit, then the shard's share."""
    chosen: set[str] = set()
    sampled: dict[str, SampleRecord] = {}
    for subset in subsets:
        pids = [item.pid for item in items if item.subset == subset.name]
        size = sample if sample is not None else subset.default_sample
        if size is not None and size < len(pids):
            picked = sorted(random.Random(f"{seed}:{subset.name}").sample(range(len(pids)), size))
            sampled[subset.name] = SampleRecord(seed=seed, n=size, of=len(pids), ids=[pids[n] for n in picked])
            pids = [pids[n] for n in picked]
        chosen.update(pids)
    selected = [item for item in items if item.pid in chosen]
    if limit is not None:
        selected = spread_limit(selected, subsets, limit)
    whole = selected
    if shard is not None:
        selected = [item for n, item in enumerate(selected) if n % shard.count == shard.index - 1]
    return Selection(selected, sampled, whole)



def load_items(task: Task, subsets: Sequence[Subset], data: Path | None, loaded: LoadedConfig) -> list[EvalItem]:
    """Every problem of the chosen subsets, in data set order. Their images are read when each
    problem starts (in its worker thread), under the image limits and path rules in force now."""
    return [item for _, item in load_rows(task, subsets, data, loaded)]


def load_rows(task: Task, subsets: Sequence[Subset], data: Path | None,
              loaded: LoadedConfig) -> list[tuple[Row, EvalItem]]:
    """`load_items` with each problem's data set row (what an eval's worker processes are given:
    they never read the data set themselves, eval/_processes.py)."""
    return items_of(task, task.rows(tuple(subsets), data), loaded)


def items_of(task: Task, rows: Iterable[Row], loaded: LoadedConfig) -> list[tuple[Row, EvalItem]]:
    """Each row with its problem, built under the image limits and path rules in force now."""
    formats = load_answer_formats(loaded.resolve(loaded.config.answer_formats))
    max_side = loaded.config.images.max_side
    with image_limits(ImageLimits.of(loaded.config.limits)):
        context = contextvars.copy_context()
        return [(row, _loaded_in(context, task.to_item(row, prompts=formats, max_side=max_side))) for row in rows]


def _loaded_in(context: contextvars.Context, item: EvalItem) -> EvalItem:
    """The item with its Problem built under `context`'s settings (a worker thread has its own)."""
    build = item.load_problem
    return replace(item, load_problem=lambda: context.copy().run(build))



__all__ = ["Selection", "Shard", "items_of", "load_items", "load_rows", "select_items"]
