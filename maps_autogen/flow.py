"""The Manager's plan as a pure function: who speaks next, when to roll back, when to stop.

Everything is derived from the turns taken so far, so the decision can be tested exhaustively
and replayed from a transcript. No LLM is ever consulted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from maps_autogen.roles import DIMENSION_OF_STEP, STEP_OF_DIMENSION, CriticVerdict, Role


@dataclass(frozen=True)
class FlowSettings:
    """The rules of one chat.

    `steps` are the solving steps that run, in order (no image: no Interpreter; ablations drop
    more). `max_rounds` bounds the number of agent turns.
    """

    steps: tuple[Role, ...]
    critic: bool = True
    threshold: float = 5
    max_rollbacks: int = 1
    final_review: bool = False
    max_rounds: int = 40

    def __post_init__(self) -> None:
        if not self.steps or any(step not in DIMENSION_OF_STEP for step in self.steps):
            raise ValueError(f"steps must be a non-empty subset of the solving steps, got {self.steps}")
        if self.max_rollbacks < 0 or self.max_rounds < 1:
            raise ValueError("max_rollbacks must be >= 0 and max_rounds >= 1")

    @property
    def dimensions(self) -> tuple[str, ...]:
        return tuple(DIMENSION_OF_STEP[step] for step in self.steps)


@dataclass(frozen=True)
class Turn:
    """One agent turn as the flow sees it; `verdict` is the Critic's (None if unparseable)."""

    role: Role
    verdict: CriticVerdict | None = None


@dataclass(frozen=True)
class Rollback:
    """A rollback the Critic's verdict triggered: which step re-runs, and why."""

    number: int
    step: Role
    dimension: str
    verdict: CriticVerdict


@dataclass(frozen=True)
class FlowState:
    """Where a chat stands after its turns so far."""

    pending: tuple[Role, ...]
    rollbacks: tuple[Rollback, ...] = ()
    stop_reason: str | None = None
    round_of_turn: tuple[int, ...] = ()
    revising: Role | None = None  # the step that re-runs next with its feedback

    @property
    def round(self) -> int:
        return len(self.rollbacks)


@dataclass(frozen=True)
class Decision:
    """The next speaker, or why the chat stops."""

    next_role: Role | None
    stop_reason: str | None = None
    round: int = 0
    revision: Rollback | None = field(default=None)  # set when next_role re-runs with feedback


class FlowError(ValueError):
    """The turns do not follow the plan (a bug, never user input)."""


def weakest_step(verdict: CriticVerdict, steps: Sequence[Role]) -> Role:
    """k*: the step whose dimension scored lowest.

    Ties go to the Critic's `worst_step` when it is among the lowest, else to the earliest step.
    """
    scored = [(verdict.scores[DIMENSION_OF_STEP[step]], step) for step in steps]
    lowest = min(score for score, _ in scored)
    tied = [step for score, step in scored if score == lowest]
    if verdict.worst_step is not None:
        named = STEP_OF_DIMENSION.get(verdict.worst_step)
        if named in tied:
            return named
    return tied[0]


def passes(verdict: CriticVerdict, settings: FlowSettings) -> bool:
    """Every dimension of the running steps scored at least the threshold."""
    return all(verdict.scores[dim] >= settings.threshold for dim in settings.dimensions)


def _review(settings: FlowSettings) -> tuple[Role, ...]:
    return (Role.CRITIC,) if settings.critic else ()


def _after_critic(
    state: FlowState, verdict: CriticVerdict | None, settings: FlowSettings
) -> FlowState:
    if verdict is None:
        return FlowState((), state.rollbacks, "critic_unparseable", state.round_of_turn)
    if passes(verdict, settings):
        return FlowState((), state.rollbacks, "critic_passed", state.round_of_turn)
    if len(state.rollbacks) >= settings.max_rollbacks:
        return FlowState((), state.rollbacks, "rollback_limit", state.round_of_turn)
    step = weakest_step(verdict, settings.steps)
    rollback = Rollback(len(state.rollbacks) + 1, step, DIMENSION_OF_STEP[step], verdict)
    is_last_allowed = rollback.number >= settings.max_rollbacks
    review = () if is_last_allowed and not settings.final_review else _review(settings)
    rerun = settings.steps[settings.steps.index(step) :] + review
    return FlowState(rerun, (*state.rollbacks, rollback), None, state.round_of_turn, revising=step)


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
        if turn.role is Role.CRITIC:
            state = _after_critic(state, turn.verdict, settings)
    if state.stop_reason is None and not state.pending:
        # The plan ran out without a passing review: the rollback budget (zero without a
        # Critic) was spent.
        state = FlowState((), state.rollbacks, "rollback_limit", state.round_of_turn)
    if state.stop_reason is None and len(turns) >= settings.max_rounds:
        state = FlowState((), state.rollbacks, "max_rounds", state.round_of_turn)
    return state


def decide_next(turns: Sequence[Turn], settings: FlowSettings) -> Decision:
    """The Manager's speaker selection: the next role, or the stop reason."""
    state = replay(turns, settings)
    if state.stop_reason is not None:
        return Decision(None, state.stop_reason, state.round)
    next_role = state.pending[0]
    revision = state.rollbacks[-1] if state.revising is next_role else None
    return Decision(next_role, None, state.round, revision)
