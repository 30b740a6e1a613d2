"""What a chat emits, typed from the moment it is made: the transcript's lines (a turn's
`MessageRecord`, and one model per event kind, chosen by `event`: a `stop` has its stop reason,
a `rollback` its step), the live-only records observers see between them (`TurnStartRecord`,
`TokenRecord`), and turn.json (the call under way). The common parts, the vocabularies and the
other files are `_schema.py`'s; `_run_files.py` reads them back.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, RootModel

from maps_autogen.records._schema import (
    AnswerSource,
    CallUsage,
    DecisionKind,
    EventKind,
    RollbackBy,
    Score,
    SentSettings,
    StopReason,
    _File,
    _Record,
)

# ----- what a turn's reply parsed into ---------------------------------------------------------


class AnswerParsed(_Record):
    """An answer step's reply as read: its final answer, whether the reply parsed (False: the
    answer is the reply's text) and whether it was repaired to parse."""

    final_answer: str
    parsed: bool = True
    repaired: bool = False


class VerdictParsed(_Record):
    """The reviewer's reply as read (roles.CriticVerdict): scores, feedback and evaluation per
    dimension, whether it asks for feedback, the step it names worst."""

    evaluation: dict[str, str]
    scores: dict[str, Score]
    need_feedback: bool = False
    worst_step: str | None = None
    feedback: dict[str, str] = Field(default_factory=dict)
    repaired: bool = False

    def feedback_on(self, dimension: str) -> str:
        """The feedback on `dimension` ("" when the reviewer gave none)."""
        return self.feedback[dimension] if dimension in self.feedback else ""


class DecisionParsed(_Record):
    """A person's decision at a pause (human.HumanDecision): its kind, the step sent back, the
    question or note, and where the answer came from."""

    decision: DecisionKind
    step: str | None = None
    text: str = ""
    source: AnswerSource = "api"


# ----- transcript.jsonl ---------------------------------------------------------------------


class MessageRecord(_File):
    """A transcript line: one agent's turn, as sent and as parsed (the opening task message has
    only the task fields and `images`)."""

    type: Literal["message"] = "message"
    index: int | None = None  # the line's number in the transcript (set by the writer)
    agent: str  # the agent's display name
    role: str  # the step name (USER_PROXY_ROLE for the task and a person's turns)
    step: str = ""  # the reviewer's dimension of this step, "review", "task", "answer" or "user" (a person's turn)
    round: int = 0
    revision: bool = False  # a re-run with the reviewer's feedback
    content: str = ""
    images: list[str] | None = None  # the task message's image files
    parsed: AnswerParsed | VerdictParsed | DecisionParsed | None = None  # what `content` was read as
    model: str | None = None
    started_at: str | None = None
    seconds: float | None = None
    usage: CallUsage | None = None
    json_mode: str | None = None
    finish_reason: str | None = None
    served_model: str | None = None
    sent: SentSettings | None = None
    rejected: str | None = None
    # The request as sent, in the chat API's own message format (images by file name).
    request: list[dict[str, Any]] | None = None


class EventRecord(_File):
    """A transcript line: something that happened between turns. Each kind is its own model
    below (the fields it always has required); this is what they share."""

    type: Literal["event"] = "event"
    index: int | None = None
    event: EventKind
    at: str | None = None
    detail: str | None = None

    def model_post_init(self, context: Any) -> None:
        if type(self) is EventRecord:
            raise TypeError("an event is made as its kind's model (chat_records.StopEvent, RollbackEvent, ...)")
        super().model_post_init(context)


class RollbackEvent(EventRecord):
    """A step sent back: which rollback, the step and its dimension, the scores, and what the
    step received (a part not sent is None), who sent it back and as whom."""

    event: Literal["rollback"] = "rollback"
    number: int
    step: str
    dimension: str
    scores: dict[str, Score]
    question: str | None = None  # the feedback (or the person's question) the step received
    score: Score | None = None  # the step's score, when sent to it
    evaluation: str | None = None  # the evaluation of the step, when sent to it
    by: RollbackBy
    # who sent it back, as the transcript names agents: the reviewer's title, or the UserProxy's
    # (the person at a pause)
    sender: str


class StopEvent(EventRecord):
    """The chat ended: why, and with which final answer."""

    event: Literal["stop"] = "stop"
    stop_reason: StopReason
    final_answer: str | None = None


class ErrorEvent(EventRecord):
    """The chat failed (a service error, a bug): the error, secrets masked."""

    event: Literal["error"] = "error"
    detail: str


class SolverUnparsedEvent(EventRecord):
    event: Literal["solver_unparsed"] = "solver_unparsed"
    detail: str


class CriticUnparseableEvent(EventRecord):
    event: Literal["critic_unparseable"] = "critic_unparseable"
    detail: str


class InterpreterSkippedEvent(EventRecord):
    event: Literal["interpreter_skipped"] = "interpreter_skipped"
    detail: str


class MaxTokensReachedEvent(EventRecord):
    """A step's reply was cut at its token cap."""

    event: Literal["max_tokens_reached"] = "max_tokens_reached"
    role: str
    detail: str


class ContentFilteredEvent(EventRecord):
    """The service's content filter stopped a step's reply."""

    event: Literal["content_filtered"] = "content_filtered"
    role: str
    detail: str


class ImagesWithheldEvent(EventRecord):
    """Steps whose model takes no images (or fewer): a note stands in for each image not sent."""

    event: Literal["images_withheld"] = "images_withheld"
    roles: list[str]
    detail: str


class ImagesDroppedEvent(EventRecord):
    """Left-out steps whose images go to no other step."""

    event: Literal["images_dropped"] = "images_dropped"
    roles: list[str]
    detail: str


#: Any event, read by its `event`.
Event = Annotated[
    RollbackEvent | StopEvent | ErrorEvent | SolverUnparsedEvent | CriticUnparseableEvent | InterpreterSkippedEvent
    | MaxTokensReachedEvent | ContentFilteredEvent | ImagesWithheldEvent | ImagesDroppedEvent,
    Field(discriminator="event"),
]


class TurnStartRecord(_Record):
    """A live-only record: a turn begins (observers see it; the transcript does not keep it)."""

    type: Literal["turn_start"] = "turn_start"
    role: str
    agent: str | None = None
    round: int = 0
    revision: bool = False


class TokenRecord(_Record):
    """A live-only record: streamed text of the turn under way."""

    type: Literal["token"] = "token"
    role: str
    text: str


#: A transcript line, read by its `type` (an event then by its `event`).
TranscriptLine = Annotated[MessageRecord | Event, Field(discriminator="type")]
#: What a chat hands its observers (`chat.Observer.emit`): the transcript's lines and the
#: live-only records.
ChatRecord = MessageRecord | EventRecord | TurnStartRecord | TokenRecord


class TranscriptLineModel(RootModel[TranscriptLine]):
    """A transcript line, parsed through `run_files.parsed` like the other files."""


class TurnInProgress(_File):
    """turn.json: the step whose model call is under way (written when a turn starts, removed
    when the run ends), so a live page can say who is thinking during a long call. `messages` is
    how many messages the transcript held when the turn started: a later message ends it."""

    role: str
    agent: str | None = None
    round: int = 0
    revision: bool = False
    started_at: str
    messages: int = 0


__all__ = ["AnswerParsed", "ChatRecord", "ContentFilteredEvent", "CriticUnparseableEvent", "DecisionParsed",
           "ErrorEvent", "Event", "EventRecord", "ImagesDroppedEvent", "ImagesWithheldEvent",
           "InterpreterSkippedEvent", "MaxTokensReachedEvent", "MessageRecord", "RollbackEvent",
           "SolverUnparsedEvent", "StopEvent", "TokenRecord", "TranscriptLine", "TranscriptLineModel",
           "TurnInProgress", "TurnStartRecord", "VerdictParsed"]
