"""The Manager's plan as a pure function: who speaks next, when to roll back, when to stop.

Everything is derived from the turns taken so far, so the decision can be tested exhaustively
and replayed from a transcript. No LLM is ever consulted. Steps are the team's step names.

With a person in the chat (`human`), the UserProxy (`PERSON`) is selected after each review, or
each turn, and what it would do next waits for the person's decision: continue (or a note) lets
it happen, `stop` ends the chat, `back` sends a step back as a rollback would (the person's
rollbacks do not spend the reviewer's `max_rollbacks`; `max_backs` bounds them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from maps_autogen.orchestration._human import HumanDecision
from maps_autogen.records import USER_PROXY_ROLE, FlowRecord, RollbackBy, Score, StopReason
from maps_autogen.settings import REVIEW_PARTS, CriticVerdict, HumanWhen, ReviewPart, TeamConfig

#: Which of the steps tied at the lowest score re-runs: the one the reviewer named as its worst
#: step when it is among them (else the earliest), or always the earliest (the paper's argmin).
TieRule = Literal["worst_step", "earliest"]

#: The role of the person's turns (the UserProxy's).
PERSON = USER_PROXY_ROLE


@dataclass(frozen=True)
class FlowSettings:
    """The rules of one chat.

    `steps` are the working steps that run, in order; `reviewer` scores the steps in `scored`
    ((step, dimension) pairs) and sends the weakest back (`ties` picks among equal lowest
    scores), with the parts of its review named in `sends_back`. `max_rounds` bounds the turns.
    """

    steps: tuple[str, ...]
    reviewer: str | None = None
    scored: tuple[tuple[str, str], ...] = ()
    threshold: float = 5
    max_rollbacks: int = 3
    final_review: bool = True
    max_rounds: int = 40
    ties: TieRule = "worst_step"
    sends_back: tuple[ReviewPart, ...] = REVIEW_PARTS
    human: HumanWhen | None = None  # when the person is asked (None: no person takes part)
    max_backs: int = 10  # steps the person may send back in one chat

    def __post_init__(self) -> None:
        if not self.steps:
            raise ValueError("a chat needs at least one step")
        if any(step not in self.steps for step, _ in self.scored):
            raise ValueError(f"scored steps {self.scored} must be among the steps {self.steps}")
        if self.reviewer is not None and (self.reviewer in self.steps or not self.scored):
            raise ValueError("the reviewer is not a working step and scores at least one step")
        if self.max_rollbacks < 0 or self.max_rounds < 1 or self.max_backs < 0:
            raise ValueError("max_rollbacks and max_backs must be >= 0 and max_rounds >= 1")
        if PERSON in self.steps or self.reviewer == PERSON:
            raise ValueError(f"'{PERSON}' is the person's role, not a step")

    @property
    def dimensions(self) -> tuple[str, ...]:
        return tuple(dimension for _, dimension in self.scored)

    def dimension_of(self, step: str) -> str | None:
        return dict(self.scored).get(step)


@dataclass(frozen=True)
class Turn:
    """One agent turn as the flow sees it; `verdict` is the reviewer's (None if unparseable),
    `decision` the person's on a PERSON turn."""

    role: str
    verdict: CriticVerdict | None = None
    decision: HumanDecision | None = None


@dataclass(frozen=True)
class SentBack:
    """The parts of a review a step sent back receives (None or "": a part not sent)."""

    score: int | float | None = None
    evaluation: str = ""
    feedback: str = ""

    @property
    def actionable(self) -> bool:
        """Whether it says anything the step can act on (a score alone does not)."""
        return bool(self.evaluation or self.feedback)


@dataclass(frozen=True)
class Rollback:
    """A rollback the reviewer's verdict (or the person's `back`) triggered: which step re-runs,
    why, and what it receives of the review (`sent`, the reviewer's `sends_back` parts) or the
    person's question (`asked`)."""

    number: int
    step: str
    dimension: str
    verdict: CriticVerdict | None  # None: the person sent the step back with `asked`
    sent: SentBack = SentBack()
    asked: str = ""

    @property
    def question(self) -> str:
        """The question sent back to the step: the reviewer's feedback on it (its question or
        suggested adjustment), or the person's."""
        return self.asked if self.verdict is None else self.verdict.feedback.get(self.dimension, "").strip()

    @property
    def sent_question(self) -> str:
        """The question the step received: the reviewer's feedback as sent (empty when the
        reviewer does not send its feedback back), or the person's."""
        return self.asked if self.verdict is None else self.sent.feedback

    @property
    def by(self) -> RollbackBy:
        return "user" if self.verdict is None else "critic"

    @property
    def scores(self) -> dict[str, Score]:
        """The verdict's scores ({} for the person's rollback)."""
        return dict(self.verdict.scores) if self.verdict is not None else {}


def sent_parts(by: RollbackBy | None, question: str | None, score: Score | None = None,
               evaluation: str | None = None) -> tuple[tuple[str, str], ...]:
    """What a rolled-back step received, as (part, text) in the order it received them, from a
    rollback record's fields: the person's question (`by` "user"), or the parts of the review
    the reviewer sends back (its score, evaluation and feedback; a part not sent is left out)."""
    if by == "user":
        return (("question", question),) if question else ()
    parts = (("score", None if score is None else f"{score:g}"), ("evaluation", evaluation), ("feedback", question))
    return tuple((part, text) for part, text in parts if text)


def rollback_to(number: int, step: str, verdict: CriticVerdict, settings: FlowSettings) -> Rollback:
    """Rollback `number` to `step`, with the parts of `verdict` the reviewer sends back."""
    dimension = settings.dimension_of(step) or step
    parts = settings.sends_back
    sent = SentBack(
        score=verdict.scores[dimension] if "score" in parts else None,
        evaluation=verdict.evaluation.get(dimension, "").strip() if "evaluation" in parts else "",
        feedback=verdict.feedback.get(dimension, "").strip() if "feedback" in parts else "",
    )
    return Rollback(number, step, dimension, verdict, sent)


@dataclass(frozen=True)
class FlowState:
    """Where a chat stands after its turns so far."""

    pending: tuple[str, ...]
    rollbacks: tuple[Rollback, ...] = ()
    stop_reason: StopReason | None = None
    round_of_turn: tuple[int, ...] = ()
    revising: str | None = None  # the step that re-runs next with its feedback
    planned: FlowState | None = None  # at the person's pause: what happens if they continue

    @property
    def round(self) -> int:
        return len(self.rollbacks)


@dataclass(frozen=True)
class Decision:
    """The next speaker, or why the chat stops."""

    next_role: str | None
    stop_reason: StopReason | None = None
    round: int = 0
    revision: Rollback | None = field(default=None)  # set when next_role re-runs with feedback


class FlowError(ValueError):
    """The turns do not follow the plan (a bug, never user input)."""


def weakest_step(verdict: CriticVerdict, settings: FlowSettings) -> str:
    """k*: the scored step whose dimension scored lowest.

    Ties go to the reviewer's `worst_step` when it is among the lowest, else to the earliest
    step; with `ties: earliest`, always to the earliest (the paper's argmin).
    """
    scored = [(verdict.scores[dimension], step, dimension) for step, dimension in settings.scored]
    lowest = min(score for score, _, _ in scored)
    tied = [(step, dimension) for score, step, dimension in scored if score == lowest]
    named = next((step for step, dimension in tied if dimension == verdict.worst_step), None)
    return (named if settings.ties == "worst_step" else None) or tied[0][0]


def unactionable(verdict: CriticVerdict, settings: FlowSettings, rollbacks_so_far: int) -> str | None:
    """The step a review would send back with nothing to act on (no evaluation and no feedback
    among what the reviewer sends back), or None: the review passes, no rollback is left, or
    the step it sends back gets something. Such a review is unusable, like one that cannot be
    read: a step is never sent back with nothing to act on."""
    if passes(verdict, settings) or rollbacks_so_far >= settings.max_rollbacks:
        return None
    step = weakest_step(verdict, settings)
    return None if rollback_to(rollbacks_so_far + 1, step, verdict, settings).sent.actionable else step


def unusable_review(verdict: CriticVerdict | None, team: TeamConfig, settings: FlowSettings,
                    rollbacks_so_far: int) -> str | None:
    """Why a review cannot be used (None: it can): it has no usable scores, or the step it sends
    back would receive nothing to act on. Named with the team's titles."""
    reviewer = team.step(settings.reviewer or "")
    if verdict is None:
        return f"the {reviewer.possessive} reply has no usable scores"
    step = unactionable(verdict, settings, rollbacks_so_far)
    if step is None:
        return None
    said = " or ".join(part for part in settings.sends_back if part != "score") or "feedback"
    return (f"the {reviewer.possessive} review sends the {team.step(step).title} back with nothing to act on "
            f"(no {said} on {settings.dimension_of(step) or step})")


def passes(verdict: CriticVerdict, settings: FlowSettings) -> bool:
    """Every scored dimension reached the threshold."""
    return all(verdict.scores[dim] >= settings.threshold for dim in settings.dimensions)


def _review(settings: FlowSettings) -> tuple[str, ...]:
    return (settings.reviewer,) if settings.reviewer is not None else ()


def _reviewer_rollbacks(rollbacks: Sequence[Rollback]) -> int:
    """The rollbacks that spent the reviewer's budget (not the person's)."""
    return sum(1 for rollback in rollbacks if rollback.verdict is not None)


def _after_review(state: FlowState, verdict: CriticVerdict | None, settings: FlowSettings) -> FlowState:
    if verdict is None:
        return FlowState((), state.rollbacks, "critic_unparseable", state.round_of_turn)
    if passes(verdict, settings):
        return FlowState((), state.rollbacks, "critic_passed", state.round_of_turn)
    spent = _reviewer_rollbacks(state.rollbacks)
    if spent >= settings.max_rollbacks:
        return FlowState((), state.rollbacks, "rollback_limit", state.round_of_turn)
    rollback = rollback_to(len(state.rollbacks) + 1, weakest_step(verdict, settings), verdict, settings)
    is_last_allowed = spent + 1 >= settings.max_rollbacks
    review = () if is_last_allowed and not settings.final_review else _review(settings)
    rerun = settings.steps[settings.steps.index(rollback.step) :] + review
    return FlowState(rerun, (*state.rollbacks, rollback), None, state.round_of_turn, revising=rollback.step)


def _ran_out(state: FlowState, settings: FlowSettings) -> FlowState:
    """The plan ran out without a passing review: the rollback budget was spent (after the last
    allowed rollback without a final review), or no reviewer runs in this chat."""
    if state.stop_reason is None and not state.pending:
        return FlowState((), state.rollbacks, "rollback_limit" if settings.reviewer else "no_reviewer",
                         state.round_of_turn)
    return state


def _pause_due(role: str, state: FlowState, settings: FlowSettings) -> bool:
    """Whether the person is asked after `role`'s turn (`state`: the plan after it): after every
    turn, or after each review and wherever the plan would end without one."""
    if settings.human == "every_turn":
        return True
    ends_unreviewed = not state.pending and state.stop_reason is None
    return settings.human == "review" and (role == settings.reviewer or ends_unreviewed)


def _after_person(state: FlowState, decision: HumanDecision | None, settings: FlowSettings,
                  rounds: tuple[int, ...]) -> FlowState:
    """The plan after the person's decision at a pause (`state.planned`: what continuing does)."""
    kind = decision.kind if decision is not None else "continue"
    if kind == "stop":
        return FlowState((), state.rollbacks, "user_stopped", rounds)
    if kind != "back":  # continue, or a note (material for the later steps)
        return replace(state.planned or FlowState(()), round_of_turn=rounds)
    step = decision.step if decision is not None else None
    if step not in settings.steps:
        raise FlowError(f"the person sent back {step!r}, not one of the steps {settings.steps}")
    if sum(1 for rollback in state.rollbacks if rollback.verdict is None) >= settings.max_backs:
        raise FlowError(f"the person sent more than max_backs ({settings.max_backs}) steps back")
    rollback = Rollback(len(state.rollbacks) + 1, step, settings.dimension_of(step) or step, None,
                        asked=decision.text if decision is not None else "")
    spent = _reviewer_rollbacks(state.rollbacks) >= settings.max_rollbacks
    review = () if spent and not settings.final_review else _review(settings)
    rerun = settings.steps[settings.steps.index(step) :] + review
    return FlowState(rerun, (*state.rollbacks, rollback), None, rounds, revising=step)


def replay(turns: Sequence[Turn], settings: FlowSettings) -> FlowState:
    """Apply the plan to the turns taken so far; raises FlowError if they stray from it."""
    state = FlowState(settings.steps + _review(settings))
    for index, turn in enumerate(turns):
        if state.stop_reason is not None or not state.pending:
            raise FlowError(f"turn {index} by {turn.role} came after the chat had ended")
        if turn.role != state.pending[0]:
            raise FlowError(f"turn {index} was {turn.role}, the plan expected {state.pending[0]}")
        rounds = (*state.round_of_turn, state.round)
        if turn.role == PERSON:
            state = _after_person(state, turn.decision, settings, rounds)
            continue
        before = state.rollbacks
        state = FlowState(state.pending[1:], state.rollbacks, None, rounds)
        if turn.role == settings.reviewer:
            state = _after_review(state, turn.verdict, settings)
        if _pause_due(turn.role, state, settings):
            # What the plan does next waits for the person (a rollback it would start included).
            state = FlowState((PERSON,), before, None, rounds, planned=_ran_out(state, settings))
    state = _ran_out(state, settings)
    # The round limit counts the agents' turns, not the person's.
    if state.stop_reason is None and sum(1 for turn in turns if turn.role != PERSON) >= settings.max_rounds:
        state = FlowState((), state.rollbacks, "max_rounds", state.round_of_turn)
    return state


def decide_next(turns: Sequence[Turn], settings: FlowSettings) -> Decision:
    """The Manager's speaker selection: the next step, or the stop reason."""
    state = replay(turns, settings)
    if state.stop_reason is not None:
        return Decision(None, state.stop_reason, state.round)
    next_role = state.pending[0]
    revision = state.rollbacks[-1] if state.revising == next_role else None
    return Decision(next_role, None, state.round, revision)


def calls_left(flow: FlowRecord, rollback_step: str | None = None, rollbacks_done: int = 0) -> tuple[int, int]:
    """The fewest and most model calls a chat under `flow` still makes: from its start, or right
    after its `rollbacks_done`-th rollback, to `rollback_step`. The fewest: the steps to run and
    the review after them (none after the last allowed rollback without the final review); the
    most: every rollback left used, each re-running every working step and reviewed again (the
    last one only with the final review)."""
    working = len(flow.steps)
    review = 1 if flow.reviewer is not None else 0
    left = max(0, (flow.max_rollbacks or 0) - rollbacks_done) if review else 0
    if rollback_step is None:
        least = working + review
    else:
        rerun = working - flow.steps.index(rollback_step) if rollback_step in flow.steps else working
        least = rerun + (review if left or flow.final_review else 0)
    return least, least + left * working + review * (max(0, left - 1) + (1 if left and flow.final_review else 0))
