"""The person's side of one chat: at each pause the UserProxy asks them (AG2's human input calls
`PersonTurns.ask`), and their answers become UserProxy turns, notes and rollbacks.

The pause shows what continuing would do (from the Manager's pure plan, `flow.replay`); an answer
the pause cannot take is asked again, with the reason, a bounded number of times.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from maps_autogen.orchestration._flow import PERSON, FlowSettings, FlowState, Turn, replay
from maps_autogen.orchestration._human import HumanAnswerError, HumanDecision, HumanState, OnHumanError, accepted
from maps_autogen.orchestration._transcript import utc_now
from maps_autogen.records import MessageRecord
from maps_autogen.settings import USER_PROXY_NAME, CriticVerdict, TeamConfig, answer_with_option, possessive

#: How often one pause asks `on_human` again after an answer it cannot take.
MAX_TRIES = 3

OnHuman = Callable[[HumanState], str | HumanDecision]


class PersonTurns:
    """The pauses, notes and answers of the person in one chat. `ask` is what the UserProxy's
    human input returns (the decision as a line of the answer language); `take` hands the
    Manager the decision to record as the UserProxy's turn."""

    def __init__(self, on_human: OnHuman, *, team: TeamConfig, flow: FlowSettings, options: Sequence[str] = ()):
        self._on_human = on_human
        self.team = team
        self.flow = flow
        self.options = tuple(options)
        self.notes: list[str] = []
        self.pauses = 0
        self._answer: HumanDecision | None = None

    def _title(self, step: str) -> str:
        return self.team.step(step).title

    def state(self, turns: Sequence[Turn], answer: str | None, verdict: CriticVerdict | None) -> HumanState:
        """The pause the chat is at after `turns` (the plan's next step is the person's)."""
        now = replay(turns, self.flow)
        if now.pending[:1] != (PERSON,) or now.planned is None:
            raise RuntimeError("the person was asked when the plan did not pause for them")
        after = turns[-1].role
        ran = {turn.role for turn in turns}
        titles = {step.name: step.title for step in self.team.steps}
        return HumanState(
            pause=self.pauses,
            after=after,
            titles=titles,
            review=after == self.flow.reviewer,
            round=now.round,
            answer=answer_with_option(answer, self.options) if answer else None,
            scores=dict(verdict.scores) if verdict is not None else {},
            questions=dict(verdict.feedback) if verdict is not None else {},
            next=self._next(now, now.planned),
            ends=now.planned.stop_reason is not None,
            steps=tuple(step for step in self.flow.steps if step in ran),
            backs_left=self.flow.max_backs - sum(1 for rollback in now.rollbacks if rollback.verdict is None),
            notes=tuple(self.notes),
        )

    def _next(self, now: FlowState, planned: FlowState) -> str:
        """What continuing does, in words."""
        reviewer = self._title(self.flow.reviewer) if self.flow.reviewer else "reviewer"
        ends = "the chat ends with this answer"
        if planned.stop_reason == "critic_passed":
            return f"the {reviewer} passed every step: {ends}"
        if planned.stop_reason == "rollback_limit":
            return f"no rollback is left: {ends}"
        if planned.stop_reason == "no_reviewer":
            return f"no reviewer runs in this chat: {ends}"
        if planned.stop_reason == "critic_unparseable":
            return f"the {possessive(reviewer)} reply has no usable scores: {ends}"
        if planned.stop_reason is not None:
            return f"{ends} ({planned.stop_reason})"
        if len(planned.rollbacks) > len(now.rollbacks):
            rollback = planned.rollbacks[-1]
            return (f"rollback {rollback.number}: the {reviewer} sends the {self._title(rollback.step)} back; it "
                    f"re-runs with {self._sent(reviewer)} on {rollback.dimension}, then every step after it")
        return f"the {self._title(planned.pending[0])} speaks next"

    def _sent(self, reviewer: str) -> str:
        """What a step the reviewer sends back receives (the team's `sends_back`), in words: "its
        score and the Critic's evaluation and feedback"."""
        review = [part for part in self.flow.sends_back if part != "score"]
        said = f"the {possessive(reviewer)} {' and '.join(review)}" if review else ""
        return " and ".join(filter(None, ["its score" if "score" in self.flow.sends_back else "", said]))

    def ask(self, turns: Sequence[Turn], answer: str | None, verdict: CriticVerdict | None) -> str:
        """Ask the person at this pause; returns their decision as the UserProxy's line. Raises
        OnHumanError when `on_human` raises, or gives no answer the pause takes in MAX_TRIES tries."""
        self.pauses += 1
        state = self.state(turns, answer, verdict)
        for _ in range(MAX_TRIES):
            try:
                reply = self._on_human(state)
            except Exception as error:  # the caller's code: solve() raises it again
                raise OnHumanError(f"on_human failed at pause {state.pause}: {error.__class__.__name__}: {error}",
                                   original=error) from error
            try:
                decision = accepted(reply, state)
            except HumanAnswerError as error:
                state = replace(state, problem=str(error))
                continue
            if decision.kind == "note":
                self.notes.append(decision.text)
            self._answer = decision
            return decision.line
        raise OnHumanError(f"on_human gave no answer pause {state.pause} takes in {MAX_TRIES} tries: {state.problem}",
                           fix="return '' to continue, 'stop', 'back STEP QUESTION' or a note")

    def take(self) -> HumanDecision | None:
        """The person's decision at the pause just answered (once)."""
        decision, self._answer = self._answer, None
        return decision

    def message(self, decision: HumanDecision, *, round_: int) -> MessageRecord:
        """The person's turn as the transcript keeps it: a UserProxy message with what they said."""
        return MessageRecord(agent=USER_PROXY_NAME, role=PERSON, step="user", round=round_, revision=False,
                             content=decision.said or decision.line, parsed=decision.record(), started_at=utc_now())


__all__ = ["MAX_TRIES", "OnHuman", "PersonTurns"]
