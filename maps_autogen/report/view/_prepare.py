"""What the viewer's templates show, prepared from a run's typed records (records/_schema.py): pure
functions from the records to small view objects (a turn, an event, the outcome...), so the
templates only lay out values and never decide anything.

Step names, the reviewer, the final-answer step and the scored dimensions come from the team
recorded in the run (`records.TeamRecord`), never from the default team's names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from maps_autogen.orchestration import sent_parts
from maps_autogen.records import (
    USER_PROXY_ROLE,
    AnswerParsed,
    CallUsage,
    ContentFilteredEvent,
    EventRecord,
    FlowRecord,
    MaxTokensReachedEvent,
    MessageRecord,
    ModelRecord,
    RoleUsage,
    RollbackEvent,
    RunRecord,
    StopEvent,
    TeamRecord,
    TurnInProgress,
    VerdictParsed,
)
from maps_autogen.records import Usage as UsageRecord
from maps_autogen.report._labels import sender, stop_words, title
from maps_autogen.report._replies import Lenient, Section, read_as, read_reply
from maps_autogen.settings import answer_with_option, possessive, shown_answer

# A step name as settings/_team.py allows it: safe inside a class name.
_STEP_TOKEN = re.compile(r"[a-z][a-z0-9_]{0,39}")
SLOTS = 4  # working steps' colours in view.css: slot-1 to slot-4 by place in the team (slot-0: the user proxy)


# ----- formatting (plain text; the templates escape it) --------------------------------------


def is_number(value: Any) -> bool:
    """A real number (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number(value: Any) -> str:
    """A count with thousands separators; "–" when unknown."""
    return (
        f"{value:,}"
        if isinstance(value, int) and not isinstance(value, bool)
        else ("–" if value is None else str(value))
    )


def cost(value: Any) -> str:
    """One way to show a cost everywhere: dollars, or "unknown" when a model has no price."""
    return f"${value:.4f}" if is_number(value) else "unknown"


def free_note(models: Iterable[ModelRecord]) -> str:
    """" (free: a model on this machine)" when every one of `models` runs here (an endpoint of kind
    `local`, as the embedded model): its calls cost $0, said as such, not an unknown price."""
    listed = list(models)
    return " (free: a model on this machine)" if listed and all(model.kind == "local" for model in listed) else ""


def seconds(value: Any) -> str:
    """A duration; "–" when unknown."""
    return f"{value:.1f} s" if is_number(value) else "–"


def compact(value: Any) -> str:
    """Short text for a small JSON value (manifest fields, metadata)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def usage_cost(usage: UsageRecord | RoleUsage | None) -> float | None:
    """The cost of a usage record: nothing was spent when no call was made (whatever the record
    says); None (unknown) when calls were made and a price was missing."""
    if usage is None or usage.calls == 0:
        return 0.0
    return usage.cost


def sum_costs(costs: Iterable[float | None]) -> float | None:
    """The total, or None (unknown) if any part is unknown."""
    values = list(costs)
    return None if any(value is None for value in values) else sum(v for v in values if v is not None)


def served_as(name: str, configured: str | None, served: Iterable[str] | None) -> str:
    """A model's `name` with the model(s) the service said answered instead, when it named
    another than `configured`: the page labels what was served, not only what was configured."""
    others = [model for model in dict.fromkeys(served or ()) if model and model != configured]
    return f"{name}, served as {', '.join(others)}" if others else name


def model_name(described: ModelRecord | None, served: Iterable[str] | None = None) -> str:
    """A model as people name it: "gpt-4o (openai)" from a recorded model (and "…, served as
    X" when the service reported another model, in the record or in `served`)."""
    if described is None:
        return ""
    name = (
        f"{described.model} ({described.endpoint})"
        if described.model and described.endpoint
        else described.model or "unknown"
    )
    return served_as(name, described.model, [described.served_model or "", *(served or ())])


# ----- the team the run recorded --------------------------------------------------------------


def team_of(run: RunRecord | None) -> TeamRecord:
    """The team a run recorded. Nothing recorded (a baseline's run, a run not yet started): an
    empty team (no scores table, the plain replies), never the default team's names."""
    return run.team if run is not None and run.team is not None else TeamRecord()


def role_classes(team: TeamRecord, role: str) -> str:
    """CSS classes of a turn: role-<step> (a safe step name, else role-other), and its colour:
    the reviewer's, or a slot by the step's place among the working steps (the user proxy 0)."""
    token = role if _STEP_TOKEN.fullmatch(role) else "other"
    working = [step for step in team.steps if step != team.reviewer]
    if role == USER_PROXY_ROLE:
        return f"role-{token} slot-0"
    if role == team.reviewer:
        return f"role-{token} reviewer"
    if role in working:
        return f"role-{token} slot-{1 + working.index(role) % SLOTS}"
    return f"role-{token}"


# ----- transcript records ---------------------------------------------------------------------


class _Part(Lenient):
    type: Any = None
    text: Any = ""
    file: Any = None


class _Sent(Lenient):
    """One message of a request as recorded (images by file name)."""

    role: Any = None
    content: str | list[_Part] | None = None


@dataclass(frozen=True)
class Score:
    dimension: str
    value: Any
    low: bool
    feedback: Any


@dataclass(frozen=True)
class Scores:
    """The reviewer's verdict as a table (what came of it is the rollback or stop that follows,
    as the transcript records it)."""

    reviewer: str  # its title with the possessive ending ("Critic's", "Units'")
    cells: list[Score]


@dataclass(frozen=True)
class RequestPart:
    role: Any
    text: str


@dataclass(frozen=True)
class Turn:
    kind = "turn"
    number: int
    role: str
    classes: str
    agent: str
    round: Any
    meta: str
    revision: bool
    content: Any
    sections: list[Section]  # a structured reply's headed paragraphs (the raw reply is `content`)
    scores: Scores | None
    answer: Any  # the answer an answer step gave (None: not an answer step)
    answer_parsed: bool
    request: list[RequestPart] | None
    images: list[str]


@dataclass(frozen=True)
class Event:
    kind = "event"
    event: str
    cls: str
    label: str
    detail: Any
    number: Any = None
    step: Any = None
    dimension: Any = None
    scores: str = ""
    stop_reason: Any = None
    final_answer: Any = None
    by: Any = None  # a rollback's sender: the reviewer, or the user at a pause
    sender: str = ""  # who sent a rolled-back step back: "the Critic", "the person (UserProxy)"
    sent: tuple[tuple[str, Any], ...] = ()  # what the step was sent: (label, text), as it received them
    words: str = ""  # a stop: why, in words (from the stop reason and the rollbacks recorded)


def _meta(record: MessageRecord, turn: int) -> str:
    # The card's header names the step (the agent); record.step is the dimension it is scored on.
    meta = [f"turn {turn}", f"round {record.round}"]
    if record.model:
        meta.append(served_as(record.model, record.model, [record.served_model or ""]))
    usage: CallUsage | None = record.usage
    if usage is not None:
        meta.append(f"{number(usage.prompt_tokens)} → {number(usage.completion_tokens)} tokens")
        if usage.cached_tokens:
            meta.append(f"{number(usage.cached_tokens)} prompt tokens cached")
        meta.append(cost(usage.cost))
        if usage.attempts != 1:
            meta.append(f"{usage.attempts} attempts")
        if usage.cached:
            meta.append("cached")
    if record.seconds is not None:
        meta.append(seconds(record.seconds))
    return " · ".join(meta)


def scores_of(verdict: VerdictParsed, reviewer: str, threshold: float | None) -> Scores | None:
    """The reviewer's scores and feedback per dimension (a score below the run's threshold marked
    low); None without scores. What came of the review is the rollback or stop event after it."""
    if not verdict.scores:
        return None
    cells = [
        Score(
            str(dim),
            value,
            is_number(value) and threshold is not None and value < threshold,
            verdict.feedback_on(dim),
        )
        for dim, value in verdict.scores.items()
    ]
    return Scores(reviewer=possessive(title(reviewer)), cells=cells)


def request_parts(request: list[Any] | None) -> list[RequestPart] | None:
    """What the role was sent: each message's text, image parts by file name."""
    if not request:
        return None
    parts = []
    for message in filter(None, (read_as(_Sent, item) for item in request)):
        content = message.content
        if isinstance(content, list):
            content = "\n".join(
                str(piece.text) if piece.type == "text" else f"[{piece.type}: {piece.file or '…'}]" for piece in content
            )
        parts.append(RequestPart(message.role, content or ""))
    return parts


def turn_of(
    record: MessageRecord, team: TeamRecord, threshold: float | None, include_requests: bool, turn: int,
    options: tuple[str, ...] = (),
) -> Turn:
    """One message record as a turn card (an answer naming one of `options` by its letter is
    shown with the option's text)."""
    reviewing = record.role == team.reviewer
    reading = read_reply(record.content, record.parsed)
    verdict = record.parsed if reviewing and isinstance(record.parsed, VerdictParsed) else None
    answer = record.parsed if not reviewing and isinstance(record.parsed, AnswerParsed) else None
    return Turn(
        number=turn,
        role=record.role,
        classes=role_classes(team, record.role),
        agent=record.agent or record.role,
        round=record.round,
        meta=_meta(record, turn),
        revision=record.revision,
        content=record.content,
        sections=reading.sections if reading is not None else [],
        scores=scores_of(verdict, record.role, threshold) if verdict is not None else None,
        answer=answer_with_option(answer.final_answer, options) if answer is not None else None,
        answer_parsed=answer.parsed if answer is not None else True,
        request=request_parts(record.request) if include_requests else None,
        images=list(record.images or []),
    )


def event_of(record: EventRecord, team: TeamRecord, *, rollbacks: int = 0, flow: FlowRecord | None = None,
             options: tuple[str, ...] = ()) -> Event:
    """One event record (rollback, stop, a warning or an error), labelled by what it records:
    a rollback by who sent the step back (the person at a pause, or the reviewer, as the record
    names it); a stop by its reason, the `rollbacks` before it and the `flow`'s rollback budget,
    its final answer naming one of the problem's `options` by its letter shown with its text."""
    if isinstance(record, RollbackEvent):
        scores = ", ".join(f"{key} {value:g}" for key, value in record.scores.items())
        sent = tuple((title(part), text) for part, text in sent_parts(record.by, record.question, record.score,
                                                                       record.evaluation))
        return Event(record.event, "rollback", "Rollback", None, number=record.number, step=record.step,
                     dimension=record.dimension, scores=scores, by=record.by, sender=sender(record),
                     sent=sent)
    if isinstance(record, StopEvent):
        words = stop_words(record.stop_reason, reviewer=title(team.reviewer) if team.reviewer else None,
                           rollbacks=rollbacks, max_rollbacks=flow.max_rollbacks if flow is not None else None)
        answer = answer_with_option(record.final_answer, options) if record.final_answer else record.final_answer
        return Event(record.event, "stop", "Stopped", None, stop_reason=record.stop_reason,
                     final_answer=answer, words=words)
    step = record.role if isinstance(record, (MaxTokensReachedEvent, ContentFilteredEvent)) else None
    labels = {
        "interpreter_skipped": "Image step skipped",
        "solver_unparsed": f"{title(team.final_step or 'answer')} reply not parsed",
        "critic_unparseable": f"{title(team.reviewer or 'reviewer')} reply unparseable",
        "max_tokens_reached": f"{title(step or 'a step')} reached max_tokens",
        "content_filtered": f"{title(step or 'a step')} stopped by a content filter",
        "images_withheld": "Images withheld",
        "error": "Error",
    }
    return Event(
        record.event,
        "error" if record.event == "error" else "warn",
        labels.get(record.event, record.event),
        record.detail or "",
    )


@dataclass
class TranscriptState:
    """What rendering a record needs from the records before it: the turn count (turns are
    numbered), each step's calls so far and the reviewer's rollbacks (a stop says how many of
    its budget were used). A live feed keeps one across its batches."""

    team: TeamRecord
    options: tuple[str, ...] = ()  # the problem's options
    turns: int = 0
    used: dict[str, RoleUsage] = field(default_factory=dict)  # each step's calls so far (run.json has them at the end)
    flow: FlowRecord | None = None  # the rules the Manager applied (a review's decision is read by them)
    rollbacks: int = 0  # the reviewer's rollbacks so far (the person's spend none of its budget)

    def absorb(self, record: MessageRecord | EventRecord) -> None:
        if not isinstance(record, MessageRecord):
            self.rollbacks += isinstance(record, RollbackEvent) and record.by != "user"
            return
        self.turns += 1
        if record.usage is not None:
            self.used[record.role] = add_call(self.used.get(record.role), record.usage, record.seconds)


def transcript_items(records: Iterable[MessageRecord | EventRecord], threshold: float | None, include_requests: bool,
                     state: TranscriptState) -> list[Turn | Event]:
    """The turns and events of transcript records, continuing from `state` (which it updates)."""
    items: list[Turn | Event] = []
    for record in records:
        state.absorb(record)
        if isinstance(record, MessageRecord):
            items.append(turn_of(record, state.team, threshold, include_requests, state.turns, state.options))
        else:
            items.append(event_of(record, state.team, rollbacks=state.rollbacks, flow=state.flow,
                                  options=state.options))
    return items


# ----- a run's outcome and usage --------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """The outcome card: answer, verdict, stop reason, rollbacks, usage."""

    status: Any
    final_answer: Any
    final_step: str | None
    gold: Any
    correct: bool | None
    stop_reason: Any
    rollbacks: list[tuple[str, str, str]]  # (step, dimension, who sent it back)
    error: Any
    usage: str
    stop_words: str = ""  # why it stopped, in words


def outcome_of(run: RunRecord, gold: Any, correct: bool | None, used: dict[str, RoleUsage] | None = None) -> Outcome:
    """The outcome of a run (gold and verdict: an eval's, when it has them). While the run goes
    on (run.json has its usage only at the end), the usage is the calls the transcript has so far
    (`used`, per step: what the usage table shows), never "0 calls" beside them."""
    usage = run.usage
    reviewer = team_of(run).reviewer
    so_far = ""
    if usage is None and used:
        usage = UsageRecord(calls=sum(u.calls for u in used.values()),
                            prompt_tokens=sum(u.prompt_tokens for u in used.values()),
                            cached_tokens=sum(u.cached_tokens for u in used.values()),
                            completion_tokens=sum(u.completion_tokens for u in used.values()),
                            cost=sum_costs(u.cost for u in used.values()))
        so_far = " so far"
    return Outcome(
        status=run.status,
        final_answer=shown_answer(run.final_answer, run.problem.options, error=run.error)
        if run.status != "running" else answer_with_option(run.final_answer or "–", run.problem.options),
        final_step=team_of(run).final_step,
        gold=gold,
        correct=correct,
        stop_reason=run.stop_reason,
        rollbacks=[(r.step, r.dimension, "the person" if r.by == "user" else f"the {r.sender}")
                   for r in run.rollbacks],
        stop_words=stop_words(run.stop_reason, reviewer=title(reviewer) if reviewer else None,
                              rollbacks=sum(1 for r in run.rollbacks if r.by == "critic"),
                              max_rollbacks=run.flow.max_rollbacks if run.flow is not None else None)
        if run.stop_reason else "",
        error=run.error,
        usage="no calls yet" if usage is None else (
            f"{number(usage.calls)} calls{so_far}, {number(usage.prompt_tokens)} prompt "
            f"({number(usage.cached_tokens)} of them cached) + "
            f"{number(usage.completion_tokens)} completion "
            f"tokens, {cost(usage_cost(usage))}, {seconds(run.seconds)}"
        ),
    )


@dataclass(frozen=True)
class UsageRow:
    role: str
    model: str
    calls: Any
    prompt_tokens: Any
    cached_tokens: Any
    completion_tokens: Any
    cost: str
    seconds: Any


@dataclass(frozen=True)
class Usage:
    """Models and usage per role, and the flow's settings."""

    rows: list[UsageRow]
    settings: list[tuple[str, str]]


def add_call(used: RoleUsage | None, call: CallUsage, seconds: float | None) -> RoleUsage:
    """A step's usage with one more call (a cost unknown once any call's is)."""
    used = used or RoleUsage(cost=0.0)
    return RoleUsage(
        calls=used.calls + 1,
        prompt_tokens=used.prompt_tokens + (call.prompt_tokens or 0),
        cached_tokens=used.cached_tokens + (call.cached_tokens or 0),
        completion_tokens=used.completion_tokens + (call.completion_tokens or 0),
        cost=None if used.cost is None or call.cost is None else used.cost + call.cost,
        seconds=used.seconds + (call.seconds or seconds or 0.0),
    )


def usage_so_far(run: RunRecord, state: TranscriptState) -> Usage:
    """The usage table while a run goes on: run.json has its usage per step only at the end,
    so until then each step's calls are counted from the transcript's turns."""
    if run.usage_by_role or not state.used:
        return usage_of(run)
    return usage_of(run.model_copy(update={"usage_by_role": state.used}))


def usage_of(run: RunRecord) -> Usage:
    """The usage table of a run: every role that has a model or made calls."""
    rows = []
    for role in dict.fromkeys([*run.models, *run.usage_by_role]):
        used, model = run.role_usage(role), run.role_model(role)
        rows.append(UsageRow(role, model_name(model), used.calls if used else None,
                             used.prompt_tokens if used else None, used.cached_tokens if used else None,
                             used.completion_tokens if used else None,
                             cost(usage_cost(used)) + free_note(filter(None, [model])) if used else "–",
                             used.seconds if used else None))
    settings: list[tuple[str, str]] = []
    flow = run.flow
    if flow is not None and rows:
        reviewer = team_of(run).reviewer
        review = (
            (
                f"{reviewer}: threshold {flow.threshold:g}, max rollbacks {flow.max_rollbacks}, "
                f"final review {'on' if flow.final_review else 'off'}"
            )
            if reviewer and flow.threshold is not None
            else "off"
        )
        settings = [("steps", " → ".join(flow.steps)), ("review", review), ("without", ", ".join(flow.without) or "–")]
    return Usage(rows=rows, settings=settings)


@dataclass(frozen=True)
class Thinking:
    """The live page's "… is thinking" marker: the step whose call is under way, since when
    (`since_ms`: epoch milliseconds, for the page's running count); `agent` "" hides it."""

    agent: str
    since: str
    since_ms: int


NOT_THINKING = Thinking("", "", 0)


def thinking_of(run: RunRecord | None, turn: TurnInProgress | None, state: TranscriptState) -> Thinking:
    """The marker while a run goes on and a turn has started that no message has ended yet (the
    transcript holds no more messages than when it started); hidden otherwise."""
    if run is None or run.status != "running" or turn is None or state.turns > turn.messages:
        return NOT_THINKING
    try:
        started = datetime.fromisoformat(turn.started_at)
    except ValueError:
        return NOT_THINKING
    agent = turn.agent or title(turn.role)
    return Thinking(agent + (" (revision)" if turn.revision else ""), started.strftime("%H:%M:%S UTC"),
                    int(started.timestamp() * 1000))


def threshold_of(run: RunRecord | None) -> float | None:
    """The review threshold the run used (None when not recorded)."""
    return run.flow.threshold if run is not None and run.flow is not None else None
