"""summary.json: an eval's accuracy per subset and overall, its usage and how it ended."""

from __future__ import annotations

from pydantic import Field

from maps_autogen.records._batch_records import BatchTally
from maps_autogen.records._schema import Usage, _File, _Record


class SubsetSummary(_Record):
    """Accuracy of one subset."""

    n: int = 0
    scored: int = 0
    correct: int = 0
    failed: int = 0
    accuracy: float | None = None


class AverageSummary(_Record):
    """Accuracy pooled over the subsets run."""

    n: int = 0
    scored: int = 0
    correct: int = 0
    accuracy: float | None = None


class Summary(_File):
    """summary.json: accuracy per subset and overall, feedback shares, usage and cost."""

    benchmark: str
    eval_id: str | None = None
    method: str | None = None
    without: list[str] = Field(default_factory=list)
    subsets: dict[str, SubsetSummary] = Field(default_factory=dict)
    average: AverageSummary = Field(default_factory=AverageSummary)
    failed: int = 0
    feedback_shares: dict[str, float | None] = Field(default_factory=dict)  # step (or "none") -> share
    stop_reasons: dict[str, int] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    seconds: float = 0.0
    complete: bool | None = None  # every problem of the manifest scored
    stopped_for_cost: bool | None = None
    interrupted: bool | None = None
    stopped_by: str | None = None  # a fatal service error, or the signal that stopped the run ("SIGTERM")
    mixed_settings: bool | None = None
    missing: list[str] | None = None  # the manifest's problems without a result (not run, or pending)
    workers_replaced: int | None = None  # worker processes that died and were replaced (eval/_processes.py)
    batches: BatchTally | None = None  # maps eval --batch: the rounds and batches (records/_batch_records.py)
