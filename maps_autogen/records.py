"""The schema of everything a run writes: run.json, transcript records, manifest.json, result
rows and the summary, with one schema version and the file names.

Writers validate what they write against these models and readers validate what they read
back, so a file that lacks what a reader needs is one clear line, not a KeyError deep inside.
The models name the fields the code relies on; other fields are kept as written
(`extra="allow"`): a run records more than any one reader needs.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from maps_autogen.errors import DataError

SCHEMA_VERSION = 1

RUN_FILE = "run.json"
TRANSCRIPT_FILE = "transcript.jsonl"
IMAGES_DIR = "images"
RESULTS_FILE = "results.jsonl"
MANIFEST_FILE = "manifest.json"
SUMMARY_FILE = "summary.json"
PROBLEMS_DIR = "problems"  # an eval's problem folders: problems/<safe_paths.safe_component(pid)>

#: Why a chat stopped: the Critic passed the work, rollbacks ran out, the Critic's reply could
#: not be read, the round limit, an error, or the user's Ctrl-C.
StopReason = Literal["critic_passed", "rollback_limit", "critic_unparseable", "max_rounds", "error", "interrupted"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")


class RunRecord(_Record):
    """run.json: one solve (or one eval problem), rewritten as the run goes."""

    schema_version: int = SCHEMA_VERSION
    run_id: str | None = None
    status: str | None = None  # running, finished, interrupted
    stop_reason: StopReason | None = None


class MessageRecord(_Record):
    """A transcript line: one agent's turn, as sent and as parsed."""

    type: Literal["message"]
    role: str
    agent: str
    content: Any = None


class EventRecord(_Record):
    """A transcript line: something that happened between turns (rollback, stop, error...)."""

    type: Literal["event"]
    event: str
    stop_reason: StopReason | None = None


class TurnStartRecord(_Record):
    """A live-only record: a turn begins (observers see it; the transcript does not keep it)."""

    type: Literal["turn_start"]
    role: str


class TokenRecord(_Record):
    """A live-only record: streamed text of the turn under way."""

    type: Literal["token"]
    role: str
    text: str


TranscriptRecord = Annotated[Union[MessageRecord, EventRecord, TurnStartRecord, TokenRecord], Field(discriminator="type")]
TRANSCRIPT_RECORD: TypeAdapter[Any] = TypeAdapter(TranscriptRecord)


class Manifest(_Record):
    """manifest.json: what an eval run is (benchmark, method, subsets, problems, models)."""

    schema_version: int = SCHEMA_VERSION
    benchmark: str
    eval_id: str | None = None
    method: str | None = None
    without: list[str] = Field(default_factory=list)
    rules: str = "current"
    subsets: list[str] = Field(default_factory=list)
    ids: list[str | int] = Field(default_factory=list)
    models: dict[str, Any] = Field(default_factory=dict)
    # What a --resume must match (eval/run_settings.py); None in manifests written before it.
    settings: dict[str, Any] | None = None
    # Each allowed change of settings on --resume: when, from, to, and the pids run under it.
    changes: list[dict[str, Any]] = Field(default_factory=list)


class ResultRow(_Record):
    """A results.jsonl line: one finished (or failed) problem."""

    pid: str | int
    subset: str = ""
    status: str  # ok, error
    correct: bool | None = None
    stop_reason: StopReason | None = None
    run_dir: str | None = None  # problems/<safe_paths.safe_component(pid)>
    usage: dict[str, Any] | None = None
    rollbacks: list[Any] | None = None
    settings: int = 0  # the manifest settings it ran under: 0 the run's first, k after its k-th change


class Summary(_Record):
    """summary.json: accuracy per subset and overall, usage and cost."""

    schema_version: int = SCHEMA_VERSION
    benchmark: str


def checked(model: type[BaseModel], data: dict[str, Any], *, source: str) -> dict[str, Any]:
    """`data` if it matches `model` (as the same dict, so nothing is reordered or dropped); a
    one-line DataError naming the first bad field and `source` otherwise."""
    try:
        model.model_validate(data)
    except ValidationError as error:
        raise DataError(f"{source}: {_first_problem(error)}", fix="the run folder may be damaged or from another version") from None
    return data


def check_transcript_record(record: dict[str, Any]) -> None:
    """Raise ValueError when a record about to be written is not a known transcript kind (a
    programming error: the chat emits only these)."""
    try:
        TRANSCRIPT_RECORD.validate_python(record)
    except ValidationError as error:
        raise ValueError(f"not a transcript record: {_first_problem(error)}") from None


def _first_problem(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"]) or "the file"
    return f"{where}: {problem['msg'].lower()}"
