"""What every benchmark scorer provides: a verdict per record, under a named rule version."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol


@dataclass(frozen=True)
class Verdict:
    """The outcome of scoring one record.

    `extraction` is the answer read from the response, `prediction` its normalised form (None
    where the benchmark has no such stage), `correct` the official verdict.
    """

    extraction: str | None
    prediction: str | None
    correct: bool
    # How `extraction` was obtained, for benchmarks that say so (MathVista): "given" (the
    # record had one), "rules" (read from the response; None when it gives no answer) or
    # "unreadable" (the rules could not read it). None: the benchmark does not say.
    extraction_method: str | None = None
    # The version of the rules that read answers from responses (MathVista), recorded with
    # every score so that scores made by different rules can be told apart; None: the
    # benchmark's extraction is the official one, with no version of ours.
    extractor_version: str | None = None
    # Why the response could not be judged within the scorers' bounds (`benchmarks._bounds`):
    # it is then judged wrong (`correct` False), never failed. None: it was judged.
    unjudged: str | None = None


class RecordError(ValueError):
    """A record lacks a required field or a field has the wrong type; the message names it."""


class Scorer(Protocol):
    """A benchmark's official scoring rules."""

    name: ClassVar[str]
    rule_versions: ClassVar[tuple[str, ...]]  # the first is the default ("current")

    def score(self, record: Mapping[str, Any], rules: str = "current") -> Verdict:
        """Score one record (the benchmark's own fields); raise RecordError if it is unusable."""
        ...

    def subset(self, record: Mapping[str, Any]) -> str:
        """The subset (subtask) a record counts towards in summaries."""
        ...


@dataclass(frozen=True)
class Benchmark:
    """One benchmark as a whole: its task (loading, answer format) and its official scorer.

    Each `maps_autogen.benchmarks.<name>` package exports its `TASK` and `SCORER`; the registry
    (`maps_autogen.benchmarks.get_benchmark`) makes one of them and holds the only list of names.
    """

    task: Any  # a maps_autogen.problem._tasks.Task
    scorer: Scorer

    @property
    def name(self) -> str:
        name: str = self.scorer.name
        return name

    @property
    def title(self) -> str:
        title: str = self.task.title
        return title
