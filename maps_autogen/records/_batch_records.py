"""`maps eval --batch`'s files in the eval folder (`batches/`): one record per batch the eval
sent (`BatchRecord`, `batch-NNNN.json`, written before its wait begins and rewritten as the batch
moves on), the answers read from its output and error files (`BatchAnswer`, one line each of
`batch-NNNN.answers.jsonl`), and what the summary says of them all (`BatchTally`).

What a batch's requests were is their `custom_id`s: each names the step, a hash of the request
(its URL and body) and how many times the eval had sent that same request before
(model/_batch_ledger.py), so a resumed eval, whose chats ask the same requests again, finds the
ones it already sent without keeping their bodies (images included) twice."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from pydantic import Field, JsonValue

from maps_autogen.records._schema import _File, _Record

BATCHES_DIR = "batches"

#: A batch's status as the Batch API says it (validating → in_progress → finalizing → completed,
#: or failed, expired, cancelling → cancelled).
ServiceStatus = Literal["validating", "failed", "in_progress", "finalizing", "completed", "expired", "cancelling",
                        "cancelled"]
SERVICE_STATUSES: tuple[str, ...] = get_args(ServiceStatus)
#: The statuses after which a batch changes no more.
ENDED: frozenset[str] = frozenset({"failed", "completed", "expired", "cancelled"})
#: Before the service has the batch: its input file being uploaded, uploaded (the batch being
#: created), or never created (a run stopped between the two, and the service lists no batch of
#: that file: its requests were never sent).
OwnStage = Literal["uploading", "uploaded", "abandoned"]
BatchStatus = ServiceStatus | OwnStage


class BatchCounts(_Record):
    """The batch's own `request_counts`, as the service last said them."""

    total: int = 0
    completed: int = 0
    failed: int = 0


class BatchRecord(_File):
    """batches/batch-NNNN.json: one batch of one round, to one service and model."""

    number: int  # 1, 2, ... over the whole eval (its file name)
    round: int  # the round it was sent in (a round too big for one file is split into several batches)
    endpoint: str  # the endpoint's name in agents.yaml
    model: str  # the model its requests name
    service: str  # the base URL it was sent to (user information masked)
    custom_ids: list[str] = Field(default_factory=list)  # its requests, in the input file's order
    resent: int = 0  # of them, requests sent again because an earlier batch ended without answering them
    input_bytes: int = 0
    input_file_id: str | None = None
    batch_id: str | None = None
    status: BatchStatus = "uploading"
    counts: BatchCounts | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: list[str] = Field(default_factory=list)  # a failed batch's errors, one line each, as the service said
    submitted_at: str | None = None  # when the service accepted it (ISO 8601, UTC)
    ended_at: str | None = None  # when this eval saw it end
    waited_s: float = 0.0  # seconds this eval has waited on it (over every invocation)
    answers_read: bool = False  # its output and error files are in batch-NNNN.answers.jsonl


class BatchAnswer(_File):
    """One line of batch-NNNN.answers.jsonl: a request's answer, from the batch's output file
    (`status_code` and the response `body`) or its error file (`status_code` and `body`, or
    only `error_code` and `error_message`: a request the batch never ran)."""

    custom_id: str
    status_code: int | None = None
    body: JsonValue = None  # the response body as the service sent it (bounded when read)
    request_id: str | None = None
    error_code: str | None = None
    error_message: str | None = None


class BatchTally(_Record):
    """summary.json's `batches`: what the eval's batches did, over every invocation."""

    rounds: int = 0
    batches: int = 0
    requests: int = 0  # requests sent (a request sent again counts again)
    answered: int = 0  # of them, answered with a response (a reply, or an error status for that request)
    resent: int = 0  # requests sent again because their batch ended without answering them
    unanswered: dict[str, int] = Field(default_factory=dict)  # batches that ended early, by status
    waiting: int = 0  # batches still running at the service when the run stopped (--resume picks them up)
    waited_s: float = 0.0  # seconds spent waiting on batches (rounds overlap in no invocation)


def record_path(folder: Path, number: int) -> Path:
    """Where batch `number`'s record is."""
    return folder / f"batch-{number:04d}.json"


def answers_path(folder: Path, number: int) -> Path:
    """Where batch `number`'s answers are."""
    return folder / f"batch-{number:04d}.answers.jsonl"


def tally(records: list[BatchRecord], answered: int) -> BatchTally:
    """What the summary says of an eval's batches (`answered`: the requests their output and
    error files answered with a response)."""
    unanswered: dict[str, int] = {}
    for record in records:
        if record.status in ("expired", "cancelled", "failed"):
            unanswered[record.status] = unanswered.get(record.status, 0) + 1
    sent = [record for record in records if record.batch_id is not None]
    return BatchTally(
        rounds=len({record.round for record in sent}),
        batches=len(sent),
        requests=sum(len(record.custom_ids) for record in sent),
        answered=answered,
        resent=sum(record.resent for record in sent),
        unanswered=unanswered,
        waiting=sum(1 for record in sent if record.status not in ENDED),
        waited_s=round(sum(record.waited_s for record in records), 1),
    )
