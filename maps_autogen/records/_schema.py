"""The schema of every file a run writes (run.json, transcript lines, results.jsonl rows,
manifest.json, summary.json, turn.json while a call is under way): one pydantic model each with
every field declared, the vocabularies (stop reasons, statuses, event kinds) defined once as
`Literal`s, the file names, and what the files' readers and writers share.

Records are typed from the moment they are made: writers build the model with its fields as
keywords (a misspelt field is a mypy error there: the pydantic plugin's `init_forbid_extra`),
derive one from another with `model_copy(update=...)` (an unknown field an error), and write it
(`run_files.write_record`, the `model_dump` of the fields they set, so a file holds exactly what
its writer recorded); readers read a file back into its model (`read_run`, `read_manifest`,
`read_summary`, `read_transcript`, `read_result_rows`) and use attributes, never `.get(` on a
dict. Each transcript event kind is its own model, chosen by `event` (a `stop` has its stop
reason, a `rollback` its step). A field a file may lack (a baseline's run.json, a run still
going, a setting left at its default) has a default; a field every writer writes is required;
an unknown field is an error (`extra="forbid"`): a tampered or foreign file is one line naming
it, not a KeyError deep inside. The few mappings that stay open say why where they are declared
(a data set's own fields, a server's own request fields).

Every file carries `SCHEMA_VERSION`, and reading checks it first (`run_files.parsed`): a file
of another version is one line naming the file and what to do, and no reader keeps a branch for
an earlier version's shapes. A change that makes an earlier file unreadable as it stands (a
field it lacks now required, a field renamed or given another meaning) bumps the version; a
field added with a default that means what earlier files did does not.

Version 2 (before 0.1.0's release): what files written earlier in the unreleased tree could
lack is required (a manifest's settings and selection, a row's scoring fields, a rollback's `by`
and sender, a review's evaluation, a step model's prompt layout), so version 1 files are refused.
Version 3: run.json's rollbacks name their sender, as the transcript's rollback events do.

The schema sits above the settings (settings/_config.py, settings/_team.py): a run records its
config and team as their own models. The transcript's lines and the live records a chat emits
are `_chat_records.py`'s, the verdict settings a manifest records `_verdict_settings.py`'s; the
one reader of each file is `_run_files.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, PlainSerializer

from maps_autogen.records._verdict_settings import VerdictSettings
from maps_autogen.settings import AppConfig, HumanWhen, TeamConfig

if TYPE_CHECKING:
    from maps_autogen.settings import ResolvedModel

SCHEMA_VERSION = 3

RUN_FILE = "run.json"
TRANSCRIPT_FILE = "transcript.jsonl"
IMAGES_DIR = "images"
RESULTS_FILE = "results.jsonl"
MANIFEST_FILE = "manifest.json"
SUMMARY_FILE = "summary.json"
TURN_FILE = "turn.json"  # the model call under way, while a run goes on (removed when it ends)
PROBLEMS_DIR = "problems"  # an eval's problem folders: problems/<safe_paths.safe_component(pid)>
USER_PROXY_ROLE = "user_proxy"  # a message record's role for the task (no team step has this name)

# ----- vocabularies -------------------------------------------------------------------------

#: Why a chat stopped: the reviewer passed the work, rollbacks ran out (none allowed, with
#: max_rollbacks 0), the reviewer's reply could not be read, the round limit, an error, the user's
#: Ctrl-C, the person's `stop` at a pause, or the steps ran with no reviewer (the team has none, or
#: --without left it out): nothing was reviewed.
StopReason = Literal["critic_passed", "rollback_limit", "critic_unparseable", "max_rounds", "error", "interrupted",
                     "user_stopped", "no_reviewer"]
STOP_REASONS: tuple[str, ...] = get_args(StopReason)

#: A run.json's state: written when the chat starts, rewritten when it ends.
RunStatus = Literal["running", "finished", "interrupted"]
#: A results.jsonl row: scored, or failed (an error before a verdict; retried by --resume).
ResultStatus = Literal["ok", "failed"]
#: What wrote a run.json: a MAPS chat, or one baseline model call.
RunKind = Literal["solve", "baseline"]
#: The transcript's events (things that happen between turns).
EventKind = Literal["rollback", "stop", "error", "solver_unparsed", "critic_unparseable", "max_tokens_reached",
                    "interpreter_skipped", "images_withheld", "images_dropped", "content_filtered"]
EVENT_KINDS: tuple[str, ...] = get_args(EventKind)
#: Who sent a step back: the reviewer's verdict, or the person at a pause (`back STEP QUESTION`).
RollbackBy = Literal["critic", "user"]
#: What a person in the chat decided at a pause.
DecisionKind = Literal["continue", "back", "stop", "note"]
#: Where a person's answer came from: the terminal, the live page, the API's `on_human`, or nobody
#: (the terminal's input ended and no page can answer, or `human.wait_s` passed: the chat continues).
AnswerSource = Literal["terminal", "page", "api", "end_of_input", "timeout"]

#: Fields written whenever a record is: a file's schema version and the kind a line is read by,
#: also when left at their default.
_ALWAYS_WRITTEN = ("schema_version", "type", "event")


class _Record(BaseModel):
    """A part of a file we write: every field declared, nothing else accepted."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def model_post_init(self, context: Any) -> None:
        self.__pydantic_fields_set__.update(name for name in _ALWAYS_WRITTEN if name in type(self).model_fields)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with the fields `update` names set (recorded as set: they are written); a name
        that is no field is a ValueError, never a value silently dropped."""
        unknown = sorted(set(update or ()) - set(type(self).model_fields))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no field {', '.join(unknown)}")
        return super().model_copy(update=update, deep=deep)


class _File(_Record):
    """A whole file (or JSONL line) we write: it carries the schema version, always written."""

    schema_version: int = SCHEMA_VERSION


#: A reviewer's score as it was given: a whole number on 1-5, or a fraction on [0, 1] (kept as
#: written: 5 stays 5, never 5.0).
Score = int | float


def _whole_config(config: AppConfig) -> dict[str, Any]:
    """The config as a run records it: every setting in force, those left at their default too."""
    return config.model_dump(mode="json")


#: agents.yaml as loaded (config.AppConfig), written whole.
RecordedConfig = Annotated[AppConfig, PlainSerializer(_whole_config)]


# ----- shared parts -------------------------------------------------------------------------


class Usage(_Record):
    """Calls, tokens and cost of a chat, a problem or a whole eval."""

    calls: int = 0
    cached_calls: int = 0  # of `calls`, answered from the response cache (at $0)
    prompt_tokens: int = 0
    cached_tokens: int = 0  # of `prompt_tokens`, read from the services' prefix caches (as they said)
    completion_tokens: int = 0
    cost: float | None = None  # USD; None when some call's price is unknown
    tokens_estimated: bool = False  # some server reported no usage: those tokens are our own count
    batch_calls: int = 0  # of `calls`, answered through the service's batch API (maps eval --batch)

    def spent(self) -> float | None:
        """The USD this usage cost: 0 when no call was made (nothing spent), None when some
        call's price is unknown. The one rule of the progress bar, the summary and the report."""
        return 0.0 if not self.calls else self.cost

    def added(self, other: Usage) -> Usage:
        """This usage and `other` together: what each `spent` added up (unknown once either's
        is), the estimate flag of either."""
        mine, theirs = self.spent(), other.spent()
        total = Usage(calls=self.calls + other.calls, cached_calls=self.cached_calls + other.cached_calls,
                      prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                      cached_tokens=self.cached_tokens + other.cached_tokens,
                      completion_tokens=self.completion_tokens + other.completion_tokens,
                      cost=None if mine is None or theirs is None else mine + theirs,
                      tokens_estimated=self.tokens_estimated or other.tokens_estimated)
        batch_calls = self.batch_calls + other.batch_calls  # written only where some call went by batch
        return total.model_copy(update={"batch_calls": batch_calls}) if batch_calls else total


class RoleUsage(_Record):
    """One step's (or a baseline method's) share of a chat's usage."""

    calls: int = 0
    cached_calls: int = 0  # of `calls`, answered from the response cache (at $0)
    prompt_tokens: int = 0
    cached_tokens: int = 0  # of `prompt_tokens`, read from the service's prefix cache
    completion_tokens: int = 0
    cost: float | None = None
    seconds: float = 0.0
    batch_calls: int = 0  # of `calls`, answered through the service's batch API (maps eval --batch)


class CallUsage(_Record):
    """One model call's usage, as a transcript message records it."""

    prompt_tokens: int | None = None
    cached_tokens: int | None = None  # of `prompt_tokens`, from the service's prefix cache; None: not said
    cached_rate: float | None = None  # USD per million the cached tokens cost (cached-input or prompt price)
    completion_tokens: int | None = None
    cost: float | None = None
    seconds: float | None = None
    attempts: int = 1
    cached: bool = False
    truncated: bool = False  # the reply was longer than limits.reply_bytes and was cut
    tokens_estimated: bool = False
    usage_unusable: str | None = None  # why the usage the service reported was not used (tokens estimated)
    batch: str | None = None  # the id of the batch that answered it (maps eval --batch); None: a live call
    prompt_rate: float | None = None  # a batch call's USD per million prompt tokens (the batch price)
    completion_rate: float | None = None  # a batch call's USD per million completion tokens


class SentSettings(_Record):
    """The settings read back from a request body (every field but the messages, the response
    format by its type), and the headers, query and URL it went with when they are not the
    default (secrets masked). Open beyond the fields maps writes itself: an endpoint's
    `extra_body` adds the server's own body fields (vLLM's top_k, llama.cpp's repeat_penalty),
    recorded as they were sent."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None  # a reasoning model's cap (endpoint max_tokens_field)
    reasoning_effort: str | None = None
    top_p: float | None = None
    seed: int | None = None
    response_format: str | None = None  # json_schema, json_object
    stream: bool | None = None
    headers: dict[str, str] | None = None  # a header's own name and value, as the endpoint gives them
    query: dict[str, str] | None = None  # a query parameter's own name and value
    url: str | None = None  # where the request went, when not <base_url>/chat/completions

    def token_cap(self) -> int | None:
        """The reply cap the request carried (max_tokens, or a reasoning model's max_completion_tokens)."""
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens


class ModelSent(SentSettings):
    """A step's settings sent in a results row, and the model the service reported answering
    when it named another."""

    served_model: str | None = None


class ModelRecord(_Record):
    """A step's model as a run records it (`of` a resolved model), with `sent` (the
    settings read back from the last request body sent) or, for a step that sent nothing,
    `request_settings` (what its request would carry), and the model the service reported."""

    endpoint: str | None = None
    kind: str | None = None
    model: str
    base_url: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    json_mode: str | None = None
    vision: bool | None = None
    prompt_layout: str  # the order of a request's material (settings/_config.py's PromptLayout)
    replicas: list[str] | None = None
    sent: SentSettings | None = None
    request_settings: SentSettings | None = None
    served_model: str | None = None
    server_context: int | None = None  # the most tokens per request, as the server said (max_tokens fitted to it)

    @classmethod
    def of(cls, model: ResolvedModel) -> ModelRecord:
        """A resolved model as a run records it (no secrets: URLs with their user information
        masked; `replicas` only for an endpoint with several)."""
        record = cls(endpoint=model.endpoint_name, kind=model.kind, model=model.model, base_url=model.shown_base_url,
                     temperature=model.temperature, max_tokens=model.max_tokens, json_mode=model.json_mode,
                     vision=model.vision, prompt_layout=model.prompt_layout)
        if model.context_tokens is not None:
            record = record.model_copy(update={"server_context": model.context_tokens})
        return record.model_copy(update={"replicas": model.shown_replicas}) if len(model.base_urls) > 1 else record


class TeamRecord(_Record):
    """The team a run ran with: every consumer takes step names, the reviewer, the final-answer
    step and the scored dimensions from here, never from the default team's names."""

    source: str = ""  # the file that declared it
    steps: list[str] = Field(default_factory=list)  # every step, in order
    reviewer: str | None = None  # the step that scores the others (None: no review)
    final_step: str | None = None  # the step whose answer is the run's final answer
    scored: dict[str, str] = Field(default_factory=dict)  # reviewed step -> its dimension name

    @classmethod
    def of(cls, team: TeamConfig, source: Path | str) -> TeamRecord:
        """The record of a loaded team."""
        reviewer = team.reviewer
        reviewed = reviewer.reviews or () if reviewer is not None else ()
        return cls(source=str(source), steps=list(team.names), reviewer=reviewer.name if reviewer is not None else None,
                   final_step=team.final_step.name,
                   scored={step.name: step.dimension for step in team.steps if step.name in reviewed})



class ImageInfo(_Record):
    """One problem image (by name and size, never inlined)."""

    name: str
    source: str | None = None
    mime: str | None = None
    width: int | None = None
    height: int | None = None


class ProblemRecord(_Record):
    """The problem a run solved (problem.Problem.describe), with its stored image files."""

    id: str | int | None = None
    question: str = ""
    context: str | None = None
    options: list[str] = Field(default_factory=list)
    answer_format: str | None = None
    images: list[ImageInfo] = Field(default_factory=list)
    # The problem's own fields beyond those maps reads (a data set row's, a problem file's):
    # whatever its source gives, kept as given.
    metadata: dict[str, Any] = Field(default_factory=dict)
    image_files: list[str] = Field(default_factory=list)  # relative to the run folder


class FlowRecord(_Record):
    """The rules one chat ran under (flow.FlowSettings, after --without and a missing image)."""

    steps: list[str] = Field(default_factory=list)  # the working steps that ran, in order
    critic: bool = False  # a reviewer ran
    reviewer: str | None = None
    scored: dict[str, str] = Field(default_factory=dict)  # step -> dimension
    threshold: Score | None = None
    max_rollbacks: int | None = None
    final_review: bool | None = None
    max_rounds: int | None = None
    image_roles: list[str] = Field(default_factory=list)
    images_withheld: list[str] = Field(default_factory=list)  # steps on a text-only model
    without: list[str] = Field(default_factory=list)
    images_dropped: list[str] = Field(default_factory=list)  # left-out steps whose images went to no step
    human: HumanWhen | None = None  # when a person was asked (None: no person took part)


class RollbackRecord(_Record):
    """A rollback: which step re-ran, its dimension, the scores, and what the step received of
    the review (the reviewer's `sends_back`): its score, the evaluation and the feedback
    (`question`); a part not sent is None or empty."""

    number: int
    step: str
    dimension: str
    scores: dict[str, Score] = Field(default_factory=dict)
    question: str = ""
    score: Score | None = None
    evaluation: str = ""
    by: RollbackBy = "critic"
    # who sent it back, as the transcript's rollback event names them: the reviewer's title, or
    # the UserProxy's (the person at a pause)
    sender: str


class VerdictRecord(_Record):
    """A reviewer's verdict (roles.CriticVerdict)."""

    scores: dict[str, Score] = Field(default_factory=dict)
    need_feedback: bool = False
    worst_step: str | None = None
    feedback: dict[str, str] = Field(default_factory=dict)
    evaluation: dict[str, str] = Field(default_factory=dict)


class Evaluation(_Record):
    """How an eval scored a problem's answer (written into its run.json for the viewer)."""

    response: str | None = None
    extraction: Any = None
    prediction: Any = None
    correct: bool | None = None
    gold: Any = None
    unjudged: str | None = None  # why the answer could not be judged within the scorers' bounds (judged wrong)


#: Figure 4's bars besides the steps: the first review passed the work (no regeneration); it failed
#: and no rollback was allowed (max_rollbacks 0: the chat stopped, nothing re-ran); it was
#: unreadable, or the problem failed before it decided (never counted as a pass); no reviewer ran.
#: None can be a step's name (settings/_team.py's names have no spaces).
NO_REGENERATION = "none"
NO_ROLLBACK_ALLOWED = "no rollback allowed"
NO_USABLE_REVIEW = "no usable review"
NO_REVIEWER = "no reviewer"
#: The bars that are no step, in the order they follow the steps.
NOT_A_STEP = (NO_REGENERATION, NO_ROLLBACK_ALLOWED, NO_USABLE_REVIEW, NO_REVIEWER)


def feedback_targets(teams: Iterable[TeamRecord | None], seen: Iterable[str | None] = ()) -> list[str]:
    """Where a reviewer's first decision can go (Figure 4): the scored steps of the recorded
    teams in team order, any other step `seen` as a row's decision (so no decision a row records
    goes uncounted), then "none" (no regeneration), then each other bar of NOT_A_STEP that `seen`
    holds."""
    targets: list[str] = []
    for team in teams:
        if team is not None:
            targets += [step for step in team.steps if step in team.scored and step not in targets]
    seen = set(seen)
    targets += sorted({step for step in seen if step and step not in NOT_A_STEP and step not in targets})
    return [*targets, NO_REGENERATION, *(bar for bar in NOT_A_STEP[1:] if bar in seen)]


# ----- run.json -----------------------------------------------------------------------------


class RunRecord(_File):
    """run.json: one solve (or one eval problem), written when the chat starts and rewritten when
    it ends; a baseline writes it once."""

    kind: RunKind = "solve"
    run_id: str | None = None
    maps_version: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    status: RunStatus | None = None  # None: a baseline (one call, no chat)
    problem: ProblemRecord = Field(default_factory=ProblemRecord)
    config_path: str | None = None
    config: RecordedConfig | None = None  # None: a baseline's (it records its one model)
    models: dict[str, ModelRecord] = Field(default_factory=dict)  # by step (a baseline: its final-answer step)
    team: TeamRecord | None = None
    flow: FlowRecord | None = None
    seconds: float | None = None
    stop_reason: StopReason | None = None
    final_answer: str | None = None
    solver_parsed: bool | None = None  # False: the answer step's reply never parsed; its text stands
    rollbacks: list[RollbackRecord] = Field(default_factory=list)
    critic_verdicts: list[VerdictRecord | None] = Field(default_factory=list)  # None: unparseable
    usage: Usage | None = None
    usage_by_role: dict[str, RoleUsage] = Field(default_factory=dict)
    error: str | None = None
    images_withheld: list[str] = Field(default_factory=list)  # a baseline's
    # A setting the model that served brought with it (the embedded model's shorter review loop).
    team_setting: str | None = None
    # An eval problem's: which problem, what the eval ran, and how its answer scored.
    pid: str | int | None = None
    subset: str | None = None
    gold: Any = None  # the data set's (or problem file's) answer, of whatever type it gives
    benchmark: str | None = None
    method: str | None = None
    evaluation: Evaluation | None = None
    correct: bool | None = None

    def role_model(self, role: str) -> ModelRecord | None:
        """The model `role` talked to (None: the run recorded none for it)."""
        return self.models[role] if role in self.models else None

    def role_usage(self, role: str) -> RoleUsage | None:
        """`role`'s calls, tokens, cost and seconds (None: none recorded, or not yet)."""
        return self.usage_by_role[role] if role in self.usage_by_role else None


# ----- manifest.json ------------------------------------------------------------------------


class SampleRecord(_Record):
    """A subset's seeded sample: seed, size, out of how many, and the ids picked."""

    seed: int
    n: int
    of: int
    ids: list[str | int] = Field(default_factory=list)


class SettingsChange(_Record):
    """A --resume --allow-change: when, what differed (from, to), and the pids run under it."""

    at: str | None = None
    settings: int  # the index the rows run under it record
    differences: list[str] = Field(default_factory=list)
    # By the setting's name as run_settings.differences gives it ("review.threshold",
    # "models.solver.temperature"): the value of whichever setting differed, as recorded.
    from_: dict[str, JsonValue] = Field(default_factory=dict, alias="from")
    to: dict[str, JsonValue] = Field(default_factory=dict)
    pids: list[str | int] = Field(default_factory=list)


class SelectionRecord(_Record):
    """The whole selection a run's problems were taken from (with --shard i/n, every shard's):
    every id in the selection's order and, per id, the hash of its gold answer and scoring
    fields (run_settings.scoring_hash) and of what its steps are shown (run_settings.shown_hash).
    Every shard of one evaluation records the same, so
    `maps merge` knows the data set: which shards and problems are missing, and that the shards
    ran on the same data."""

    ids: list[str]
    scoring: dict[str, str]
    shown: dict[str, str]

    def scoring_of(self, pid: str) -> str | None:
        """The hash of problem `pid`'s gold answer and scoring fields (None: not in the selection)."""
        return self.scoring[pid] if pid in self.scoring else None


class Manifest(_File):
    """manifest.json: what an eval run is (benchmark, method, subsets, problems, team, models)
    and what ran it (versions, resumes, changes, replicas)."""

    kind: Literal["eval"] = "eval"
    eval_id: str | None = None
    created_at: str | None = None
    benchmark: str
    hub_id: str | None = None
    data: str | None = None  # --data, resolved
    subsets: list[str] = Field(default_factory=list)
    ids: list[str | int] = Field(default_factory=list)
    subset_of_id: dict[str, str] = Field(default_factory=dict)
    sampled: dict[str, SampleRecord] = Field(default_factory=dict)
    seed: int | None = None
    sample: int | None = None
    limit: int | None = None
    shard: str | None = None  # "i/n"
    selection: SelectionRecord
    method: str | None = None
    without: list[str] = Field(default_factory=list)
    images_dropped: list[str] = Field(default_factory=list)  # left-out steps whose images went to no step
    models: dict[str, ModelRecord] = Field(default_factory=dict)
    team: TeamRecord | None = None
    config_path: str | None = None
    config: RecordedConfig | None = None
    rules: str = "current"
    allow_outside_paths: bool = False
    settings: VerdictSettings  # what a --resume must match (eval/_verdict_settings.py)
    changes: list[SettingsChange] = Field(default_factory=list)
    versions: dict[str, str] = Field(default_factory=dict)  # python and package versions
    git_commit: str | None = None
    resumed_at: list[str] = Field(default_factory=list)
    replicas_served: dict[str, dict[str, int]] = Field(default_factory=dict)  # endpoint -> url -> requests
    served_models: dict[str, list[str]] = Field(default_factory=dict)  # step -> models the service reported
    merged_from: list[str] | None = None  # maps merge: the shard folders
    workers_replaced: int = 0  # worker processes that died and were replaced, over every invocation

    def subset_of(self, pid: str | int) -> str | None:
        """The subset problem `pid` was selected from (None: not in the run)."""
        key = str(pid)
        return self.subset_of_id[key] if key in self.subset_of_id else None

    def sample_of(self, subset: str) -> SampleRecord | None:
        """How `subset` was sampled (None: not sampled)."""
        return self.sampled[subset] if subset in self.sampled else None

    def served_by(self, step: str) -> list[str]:
        """The models the service reported answering `step` ([]: none other than asked, or none yet)."""
        return self.served_models[step] if step in self.served_models else []

    def version_of(self, package: str) -> str | None:
        """The version of `package` (or "python") the run recorded (None: not recorded)."""
        return self.versions[package] if package in self.versions else None


# ----- results.jsonl ------------------------------------------------------------------------


class ResultRow(_File):
    """A results.jsonl line: one finished (or failed) problem."""

    pid: str | int
    subset: str = ""
    status: ResultStatus
    method: str | None = None
    gold: Any = None  # the data set's answer, of whatever type it gives
    metadata: dict[str, Any] = Field(default_factory=dict)  # the data set row's own fields, as it gives them
    response: str | None = None
    extraction: Any = None
    prediction: Any = None
    correct: bool | None = None
    unjudged: str | None = None  # why the answer could not be judged within the scorers' bounds (judged wrong)
    extractor_version: str | int | None = None
    stop_reason: StopReason | None = None
    final_answer: str | None = None
    solver_parsed: bool | None = None
    rollbacks: list[str] = Field(default_factory=list)  # the step each rollback re-ran
    critic_scores: list[dict[str, Score] | None] = Field(default_factory=list)
    feedback_step: str | None = None  # the first rollback's step (Figure 4)
    usage: Usage | None = None
    usage_by_role: dict[str, RoleUsage] = Field(default_factory=dict)
    models: dict[str, ModelSent] = Field(default_factory=dict)  # step -> the settings its last request sent
    max_tokens_reached: list[str] = Field(default_factory=list)
    # The problem's own time: from its start to its verdict, less `waited_seconds`, the time its calls
    # waited for a server that answers one request at a time (maps' local one) while other problems' ran.
    seconds: float = 0.0
    waited_seconds: float | None = None
    error: str | None = None
    run_dir: str | None = None  # problems/<safe_paths.safe_component(pid)>
    settings: int = 0  # the manifest settings it ran under: 0 the run's first, k after its k-th change
    # The data set row's fields the scorer reads, as the row gives them (maps merge re-scores with them).
    scoring: dict[str, Any]


# ----- writing -------------------------------------------------------------------------------


def dumped(record: BaseModel) -> dict[str, Any]:
    """The JSON of a record as its writer set it: the fields it was given (and the schema
    version), so a file holds exactly what was recorded."""
    # Python mode: a data set's own values (gold, metadata) may be of any type, and the writers
    # turn what JSON cannot hold into text (`default=str`), as before.
    return record.model_dump(exclude_unset=True, by_alias=True)
