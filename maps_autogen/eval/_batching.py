"""`maps eval --batch` (docs/batch.md): the eval's model calls sent through the service's batch API
in rounds. What it refuses, how many problems are in flight, and the broker of one invocation:
the team's backends turned into batch backends (model/_batch_backend.py), the service's batch
API checked before any call, the batches an earlier invocation left picked up, and the round
condition kept (`set_running`: a round goes when every problem in flight waits on a call)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path

from maps_autogen._util import UsageError
from maps_autogen.eval._options import CONCURRENCY, EvalOptions
from maps_autogen.model import BatchBackend, BatchBroker, ChatBackend, read_batch_records
from maps_autogen.orchestration import Team
from maps_autogen.records import ENDED, BatchTally, tally
from maps_autogen.settings import Resolution

logger = logging.getLogger(__name__)

#: The most problems in flight by batch unless --concurrency says more: a thread each, waiting on
#: the round (about 0.2 MB each, more with images; perf/batch_cost.py); a larger run goes in waves.
MAX_BATCH_IN_FLIGHT = 10_000


def check_batch(request: EvalOptions, resolution: Resolution) -> None:
    """What --batch refuses, in one line before anything runs: the embedded model (no batch API)
    and worker processes (the calls wait in rounds, not on a core)."""
    if not request.batch:
        return
    local = sorted({model.endpoint_name for model in resolution.models.values() if model.kind == "local"})
    if local:
        raise UsageError(f"--batch needs a service with a batch API; the embedded model (endpoint {local[0]}, kind "
                         "local) has none", fix="drop --batch, or send the steps to an OpenAI-compatible endpoint "
                         "with a batch API (--model NAME with OPENAI_API_KEY; docs/batch.md)")
    if request.workers is not None and request.workers > 1:
        raise UsageError(f"--batch runs in one process: its problems wait on rounds, not on the cores "
                         f"(--workers {request.workers})", fix="drop --workers")


def problems_in_flight(request: EvalOptions, problems: int | None = None) -> int:
    """Problems in flight: --concurrency when given; else with --batch every problem of the run
    (each round carries the next call of each; at most MAX_BATCH_IN_FLIGHT), without it CONCURRENCY."""
    if request.concurrency is not None:
        return request.concurrency
    if not request.batch or problems is None:
        return CONCURRENCY
    return max(1, min(problems, MAX_BATCH_IN_FLIGHT))


def expected_rounds(calls_per_pass: int, passes: int, problems: int, at_once: int) -> tuple[int, int]:
    """(fewest, most) rounds: one per call of a problem's chat (its calls follow one another),
    from one pass through the team to every allowed rollback re-running it, times the waves of
    problems when fewer are in flight than the run has."""
    waves = max(1, math.ceil(problems / max(1, at_once)))
    return calls_per_pass * waves, calls_per_pass * passes * waves


class EvalBatches:
    """The broker of one eval invocation, with the team's backends turned to it."""

    def __init__(self, team: Team, eval_dir: Path):
        self._status: Callable[[str], None] | None = None
        self.broker = BatchBroker(eval_dir, cancel=team.cancelled,
                                  max_reply_bytes=team.loaded.config.limits.reply_bytes, on_status=self._say)
        turned: dict[int, ChatBackend] = {}  # backends shared by several steps stay shared
        for role, backend in team.backends.items():
            if id(backend) not in turned:
                turned[id(backend)] = BatchBackend(backend, self.broker)
            team.backends[role] = turned[id(backend)]

    def start(self, announce: Callable[[str], None] | None) -> list[str]:
        """Pick up the batches an earlier invocation left and start the broker: the lines saying
        what was picked up (said now, and kept for after the table)."""
        lines = self.broker.start()
        if announce is not None:
            for line in lines:
                announce(line)
        return lines

    def _say(self, text: str) -> None:
        if self._status is not None:
            self._status(text)

    def show_on(self, status: Callable[[str], None] | None) -> None:
        """Where the progress line of the rounds goes (the progress bar's)."""
        self._status = status


def open_batches(team: Team, eval_dir: Path, *, batch: bool, resumed: bool, notes: list[str]) -> EvalBatches | None:
    """With --batch, the team's backends turned to a broker and the service's batch API checked
    (an endpoint without one: one line, before anything is written); without it, a resume whose
    batches still run at the service is warned (in the log and in `notes`)."""
    if batch:
        batches = EvalBatches(team, eval_dir)
        batches.broker.probe()
        return batches
    running = left_running(eval_dir) if resumed else None
    if running is not None:
        logger.warning("%s", running)
        notes.append(running)
    return None


def left_running(eval_dir: Path) -> str | None:
    """What a --resume without --batch should know when the eval's batches still run at the
    service: their calls would be sent again live (and paid twice). None when none runs."""
    running = [record for record in read_batch_records(eval_dir)[0] if record.batch_id is not None
               and (record.status not in ENDED or not record.answers_read)]
    if not running:
        return None
    requests = sum(len(record.custom_ids) for record in running)
    return (f"{len(running)} batch(es) of this eval still run at the service ({requests} requests): without --batch "
            "their calls are sent again live and paid twice; resume with --batch to use them")


def batch_tally(eval_dir: Path) -> BatchTally | None:
    """The summary's account of an eval's batches (None: it sent none)."""
    records, answered = read_batch_records(eval_dir)
    return tally(records, answered) if records else None


__all__ = ["MAX_BATCH_IN_FLIGHT", "EvalBatches", "batch_tally", "check_batch", "expected_rounds",
           "left_running", "open_batches", "problems_in_flight"]
