"""The Manager's plan as a pure function: who speaks next, when to roll back, when to stop.

Everything is derived from the turns taken so far, so the decision can be tested exhaustively
and replayed from a transcript. No LLM is ever consulted. Steps are the team's step names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from maps_autogen.roles import CriticVerdict
from maps_autogen.team import REVIEW_PARTS, ReviewPart, TeamConfig

#: Which of the steps tied at the lowest score re-runs: the one the reviewer named as its worst
#: step when it is among them (else the earliest), or always the earliest (the paper's argmin).
TieRule = Literal["worst_step", "earliest"]


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

    def __post_init__(self) -> None:
        if not self.steps:
            raise ValueError("a chat needs at least one step")
        if any(step not in self.steps for step, _ in self.scored):
            raise ValueError(f"scored steps {self.scored} must be among the steps {self.steps}")
        if self.reviewer is not None and (self.reviewer in self.steps or not self.scored):
            raise ValueError("the reviewer is not a working step and scores at least one step")
        if self.max_rollbacks < 0 or self.max_rounds < 1:
            raise ValueError("max_rollbacks must be >= 0 and max_rounds >= 1")

    @property
    def dimensions(self) -> tuple[str, ...]:
        return tuple(dimension for _, dimension in self.scored)

    def dimension_of(self, step: str) -> str | None:
        return dict(self.scored).get(step)


@dataclass(frozen=True)
class Turn:
    """One agent turn as the flow sees it; `verdict` is the reviewer's (None if unparseable)."""

    role: str
    verdict: CriticVerdict | None = None


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
    """A rollback the reviewer's verdict triggered: which step re-runs, why, and what it
    receives of the review (`sent`, the reviewer's `sends_back` parts)."""

    number: int
    step: str
    dimension: str
    verdict: CriticVerdict
    sent: SentBack = SentBack()

    @property
    def question(self) -> str:
        """The reviewer's feedback on the step (its question or suggested adjustment)."""
        return self.verdict.feedback.get(self.dimension, "").strip()


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
    stop_reason: str | None = None
    round_of_turn: tuple[int, ...] = ()
    revising: str | None = None  # the step that re-runs next with its feedback

    @property
    def round(self) -> int:
        return len(self.rollbacks)


@dataclass(frozen=True)
class Decision:
    """The next speaker, or why the chat stops."""

    next_role: str | None
    stop_reason: str | None = None
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


def _after_review(state: FlowState, verdict: CriticVerdict | None, settings: FlowSettings) -> FlowState:
    if verdict is None:
        return FlowState((), state.rollbacks, "critic_unparseable", state.round_of_turn)
    if passes(verdict, settings):
        return FlowState((), state.rollbacks, "critic_passed", state.round_of_turn)
    if len(state.rollbacks) >= settings.max_rollbacks:
        return FlowState((), state.rollbacks, "rollback_limit", state.round_of_turn)
    rollback = rollback_to(len(state.rollbacks) + 1, weakest_step(verdict, settings), verdict, settings)
    is_last_allowed = rollback.number >= settings.max_rollbacks
    review = () if is_last_allowed and not settings.final_review else _review(settings)
    rerun = settings.steps[settings.steps.index(rollback.step) :] + review
    return FlowState(rerun, (*state.rollbacks, rollback), None, state.round_of_turn, revising=rollback.step)


def replay(turns: Sequence[Turn], settings: FlowSettings) -> FlowState:
    """Apply the plan to the turns taken so far; raises FlowError if they stray from it."""
    state = FlowState(settings.steps + _review(settings))
    for index, turn in enumerate(turns):
        if state.stop_reason is not None or not state.pending:
            raise FlowError(f"turn {index} by {turn.role} came after the chat had ended")
        if turn.role != state.pending[0]:
            raise FlowError(f"turn {index} was {turn.role}, the plan expected {state.pending[0]}")
        rounds = (*state.round_of_turn, state.round)
        state = FlowState(state.pending[1:], state.rollbacks, None, rounds)
        if turn.role == settings.reviewer:
            state = _after_review(state, turn.verdict, settings)
    if state.stop_reason is None and not state.pending:
        # The plan ran out without a passing review: the rollback budget (zero without a
        # reviewer) was spent.
        state = FlowState((), state.rollbacks, "rollback_limit", state.round_of_turn)
    if state.stop_reason is None and len(turns) >= settings.max_rounds:
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
