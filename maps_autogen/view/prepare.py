"""What the viewer's templates show, prepared from a run's records: pure functions from the
records to small view objects (a turn, an event, the outcome, an index row...), so the templates
only lay out values and never decide anything.

Step names, the reviewer, the final-answer step and the scored dimensions come from the team
recorded in the run (`RecordedTeam`), never from the default team's names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# A step name as team.py allows it: safe inside a class name.
_STEP_TOKEN = re.compile(r"[a-z][a-z0-9_]{0,39}")
USER_PROXY = "user_proxy"
SLOTS = 4  # working steps' colours in view.css: slot-1 to slot-4 by place in the team (slot-0: the user proxy)


# ----- formatting (plain text; the templates escape it) --------------------------------------


def is_number(value: Any) -> bool:
    """A real number (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number(value: Any) -> str:
    """A count with thousands separators; "–" when unknown."""
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else ("–" if value is None else str(value))


def cost(value: Any) -> str:
    """One way to show a cost everywhere: dollars, or "unknown" when a model has no price."""
    return f"${value:.4f}" if is_number(value) else "unknown"


def seconds(value: Any) -> str:
    """A duration; "–" when unknown."""
    return f"{value:.1f} s" if is_number(value) else "–"


def compact(value: Any) -> str:
    """Short text for a small JSON value (manifest fields, metadata)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def usage_cost(usage: Any) -> float | None:
    """The cost of a usage record: nothing was spent when no call was made (whatever the record
    says); None (unknown) when calls were made and a price was missing."""
    usage = usage if isinstance(usage, Mapping) else {}
    if usage.get("calls") == 0:
        return 0.0
    value = usage.get("cost")
    return float(value) if is_number(value) else None


def sum_costs(costs: Iterable[float | None]) -> float | None:
    """The total, or None (unknown) if any part is unknown."""
    values = list(costs)
    return None if any(value is None for value in values) else sum(v for v in values if v is not None)


def model_name(described: Any) -> str:
    """A model as people name it: "gpt-4o (openai)" from a recorded model description."""
    if isinstance(described, Mapping):
        name, endpoint = described.get("model"), described.get("endpoint")
        return f"{name} ({endpoint})" if name and endpoint else str(name or endpoint or "unknown")
    return str(described)


def title(step: str) -> str:
    """A step's display name (team.py's rule): the name with a capital."""
    return step[:1].upper() + step[1:]


# ----- the team the run recorded --------------------------------------------------------------


@dataclass(frozen=True)
class RecordedTeam:
    """The team as the run recorded it: its steps in order, the reviewer, the final-answer step
    and each scored step's dimension. A run that did not record one of them gets None / empty
    there, and the page shows the plain reply instead of guessing."""

    steps: tuple[str, ...] = ()
    reviewer: str | None = None
    final_step: str | None = None
    dimensions: Mapping[str, str] = field(default_factory=dict)  # scored step -> dimension

    def role_classes(self, role: str) -> str:
        """CSS classes of a turn: role-<step> (a safe step name, else role-other), and its colour:
        the reviewer's, or a slot by the step's place among the working steps (the user proxy 0)."""
        token = role if _STEP_TOKEN.fullmatch(role) else "other"
        working = [step for step in self.steps if step != self.reviewer]
        if role == USER_PROXY:
            return f"role-{token} slot-0"
        if role == self.reviewer:
            return f"role-{token} reviewer"
        if role in working:
            return f"role-{token} slot-{1 + working.index(role) % SLOTS}"
        return f"role-{token}"

    def label(self, step: str | None, fallback: str) -> str:
        return title(step) if step else fallback


def team_of(run: Mapping[str, Any]) -> RecordedTeam:
    """The recorded team of a run.json."""
    flow = run.get("flow") if isinstance(run.get("flow"), Mapping) else {}
    team = run.get("team") if isinstance(run.get("team"), Mapping) else {}
    steps = team.get("steps") if isinstance(team.get("steps"), list) else flow.get("steps") or []
    scored = flow.get("scored") if isinstance(flow.get("scored"), Mapping) else {}
    reviewer = flow.get("reviewer") if isinstance(flow.get("reviewer"), str) else None
    final = team.get("final_step") or flow.get("final_step")
    return RecordedTeam(steps=tuple(map(str, steps)), reviewer=reviewer, final_step=str(final) if final else None,
                        dimensions={str(k): str(v) for k, v in scored.items()})


# ----- transcript records ---------------------------------------------------------------------


@dataclass(frozen=True)
class Score:
    dimension: str
    value: Any
    low: bool
    feedback: Any


@dataclass(frozen=True)
class Scores:
    """The reviewer's verdict as a table."""

    reviewer: str
    worst: Any
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
    question: Any = None
    stop_reason: Any = None
    final_answer: Any = None


def _meta(record: Mapping[str, Any], turn: int) -> str:
    meta = [f"turn {turn}", f"step {record.get('step', '–')}", f"round {record.get('round', '–')}"]
    if record.get("model"):
        meta.append(str(record["model"]))
    usage = record.get("usage") if isinstance(record.get("usage"), Mapping) else {}
    if usage:
        meta.append(f"{number(usage.get('prompt_tokens'))} → {number(usage.get('completion_tokens'))} tokens")
        meta.append(cost(usage.get("cost")))
        if usage.get("attempts", 1) not in (None, 1):
            meta.append(f"{usage['attempts']} attempts")
        if usage.get("cached"):
            meta.append("cached")
    if record.get("seconds") is not None:
        meta.append(seconds(record.get("seconds")))
    return " · ".join(meta)


def scores_of(parsed: Mapping[str, Any], reviewer: str, threshold: float | None) -> Scores | None:
    """The reviewer's scores and feedback per dimension; None without scores."""
    raw = parsed.get("scores")
    if not isinstance(raw, Mapping) or not raw:
        return None
    feedback = parsed.get("feedback") if isinstance(parsed.get("feedback"), Mapping) else {}
    cells = [Score(str(dim), value, is_number(value) and threshold is not None and value < threshold, feedback.get(dim, ""))
             for dim, value in raw.items()]
    return Scores(reviewer=title(reviewer), worst=parsed.get("worst_step"), cells=cells)


def request_parts(request: Any) -> list[RequestPart] | None:
    """What the role was sent: each message's text, image parts by file name."""
    if not isinstance(request, list) or not request:
        return None
    parts = []
    for message in request:
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        if isinstance(content, list):
            pieces = []
            for piece in content:
                if isinstance(piece, Mapping) and piece.get("type") == "text":
                    pieces.append(str(piece.get("text", "")))
                elif isinstance(piece, Mapping):
                    pieces.append(f"[{piece.get('type')}: {piece.get('file') or '…'}]")
            content = "\n".join(pieces)
        parts.append(RequestPart(message.get("role"), "" if content is None else str(content)))
    return parts


def turn_of(record: Mapping[str, Any], team: RecordedTeam, threshold: float | None, include_requests: bool, turn: int) -> Turn:
    """One message record as a turn card."""
    role = str(record.get("role") or "other")
    parsed = record.get("parsed") if isinstance(record.get("parsed"), Mapping) else {}
    scores = scores_of(parsed, role, threshold) if role == team.reviewer else None
    images = record.get("images")
    return Turn(
        number=turn, role=role, classes=team.role_classes(role), agent=str(record.get("agent") or role), round=record.get("round"),
        meta=_meta(record, turn), revision=bool(record.get("revision")), content=record.get("content", ""), scores=scores,
        answer=parsed["final_answer"] if "final_answer" in parsed and role != team.reviewer else None,
        answer_parsed=bool(parsed.get("parsed", True)),
        request=request_parts(record.get("request")) if include_requests else None,
        images=[str(name) for name in images] if isinstance(images, list) else [],
    )


def event_of(record: Mapping[str, Any], team: RecordedTeam, question: Any = None) -> Event:
    """One event record (rollback, stop, a warning or an error)."""
    event = str(record.get("event") or "event")
    if event == "rollback":
        scores = record.get("scores") if isinstance(record.get("scores"), Mapping) else {}
        return Event(event, "rollback", "Rollback", None, number=record.get("number"), step=record.get("step"),
                     dimension=record.get("dimension"), scores=", ".join(f"{key} {value}" for key, value in scores.items()),
                     question=question)
    if event == "stop":
        return Event(event, "stop", "Stopped", None, stop_reason=record.get("stop_reason"), final_answer=record.get("final_answer"))
    labels = {
        "interpreter_skipped": "Image step skipped",
        "solver_unparsed": "Answer not parsed",
        "critic_unparseable": f"{team.label(team.reviewer, 'Reviewer')} reply unparseable",
        "error": "Error",
    }
    return Event(event, "error" if event == "error" else "warn", labels.get(event, event), record.get("detail", ""))


@dataclass
class TranscriptState:
    """What rendering a record needs from the records before it: the turn count (turns are
    numbered) and the reviewer's last feedback (a rollback shows the question it sends back).
    A live feed keeps one across its batches."""

    team: RecordedTeam
    turns: int = 0
    feedback: Mapping[str, Any] = field(default_factory=dict)

    def absorb(self, record: Mapping[str, Any]) -> None:
        if record.get("type") != "message":
            return
        self.turns += 1
        parsed = record.get("parsed")
        if record.get("role") == self.team.reviewer and isinstance(parsed, Mapping) and isinstance(parsed.get("feedback"), Mapping):
            self.feedback = parsed["feedback"]


def transcript_items(records: Iterable[Mapping[str, Any]], threshold: float | None, include_requests: bool,
                     state: TranscriptState) -> list[Turn | Event]:
    """The turns and events of transcript records, continuing from `state` (which it updates)."""
    items: list[Turn | Event] = []
    for record in records:
        state.absorb(record)
        if record.get("type") == "message":
            items.append(turn_of(record, state.team, threshold, include_requests, state.turns))
        elif record.get("type") == "event":
            # The rollback record carries the question it sent back; older runs only the verdict.
            items.append(event_of(record, state.team, record.get("question") or state.feedback.get(str(record.get("dimension")))))
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
    rollbacks: list[tuple[Any, Any]]
    error: Any
    usage: str


def outcome_of(run: Mapping[str, Any], gold: Any, correct: Any) -> Outcome:
    """The outcome of a run.json (gold and verdict: an eval's, when it has them)."""
    rollbacks = run.get("rollbacks") if isinstance(run.get("rollbacks"), list) else []
    usage = run.get("usage") if isinstance(run.get("usage"), Mapping) else {}
    return Outcome(
        status=run.get("status"), final_answer=run.get("final_answer", ""), final_step=team_of(run).final_step, gold=gold,
        correct=correct if isinstance(correct, bool) else None, stop_reason=run.get("stop_reason"),
        rollbacks=[(r.get("step"), r.get("dimension")) for r in rollbacks if isinstance(r, Mapping)], error=run.get("error"),
        usage=(f"{number(usage.get('calls'))} calls, {number(usage.get('prompt_tokens'))} prompt + "
               f"{number(usage.get('completion_tokens'))} completion tokens, {cost(usage_cost(usage))}, {seconds(run.get('seconds'))}"),
    )


@dataclass(frozen=True)
class UsageRow:
    role: str
    model: str
    calls: Any
    prompt_tokens: Any
    completion_tokens: Any
    cost: str
    seconds: Any


@dataclass(frozen=True)
class Usage:
    """Models and usage per role, and the flow's settings."""

    rows: list[UsageRow]
    settings: list[tuple[str, str]]


def usage_of(run: Mapping[str, Any]) -> Usage:
    """The usage table of a run.json: every role that has a model or made calls."""
    by_role = run.get("usage_by_role") if isinstance(run.get("usage_by_role"), Mapping) else {}
    models = run.get("models") if isinstance(run.get("models"), Mapping) else {}
    rows = []
    for role in dict.fromkeys([*models, *by_role]):
        row = by_role.get(role) if isinstance(by_role.get(role), Mapping) else {}
        rows.append(UsageRow(str(role), model_name(models.get(role) or ""), row.get("calls"), row.get("prompt_tokens"),
                             row.get("completion_tokens"), cost(usage_cost(row)) if row else "–", row.get("seconds")))
    flow = run.get("flow") if isinstance(run.get("flow"), Mapping) else {}
    settings: list[tuple[str, str]] = []
    if flow and rows:
        team = team_of(run)
        review = (f"{team.reviewer}: threshold {flow.get('threshold')}, max rollbacks {flow.get('max_rollbacks')}, "
                  f"final review {'on' if flow.get('final_review') else 'off'}") if team.reviewer else "off"
        settings = [("steps", " → ".join(map(str, flow.get("steps") or []))), ("review", review),
                    ("without", ", ".join(map(str, flow.get("without") or [])) or "–")]
    return Usage(rows=rows, settings=settings)


def threshold_of(run: Mapping[str, Any]) -> float | None:
    """The review threshold the run used (None when not recorded)."""
    flow = run.get("flow") if isinstance(run.get("flow"), Mapping) else {}
    threshold = flow.get("threshold")
    return threshold if is_number(threshold) else None
