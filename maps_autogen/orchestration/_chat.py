"""One MAPS chat on AG2: the UserProxy opens it, the GroupChatManager runs it, each step of
the team is an AssistantAgent, and the speaker selection is the pure `flow.decide_next`.

Each step's request is rebuilt from its declared inputs by an AG2 `process_all_messages_before_reply`
hook, so no step sees the whole history; model calls go through `MapsModelClient`. The AG2 agents
themselves, built once per shape and thread, are `_chat_agents.py`'s.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from maps_autogen._util import MapsError, RunInterrupted, redact
from maps_autogen.model import CUT_REASONS, Completion, ModelBackend, cut_off_detail
from maps_autogen.orchestration._ag2 import AssistantAgent, IOStream
from maps_autogen.orchestration._chat_agents import AgentShape, ChatAgents, _SilentStream, agents_for
from maps_autogen.orchestration._flow import PERSON, FlowSettings, Rollback, TieRule, Turn, decide_next, unusable_review
from maps_autogen.orchestration._human_chat import OnHuman, PersonTurns
from maps_autogen.orchestration._role_inputs import (
    asked_revision,
    build_request,
    format_options,
    review_variables,
    revision_for,
    shared_prefix_system,
)
from maps_autogen.orchestration._transcript import request_for_transcript, utc_now
from maps_autogen.orchestration._verdict import parse_critic_reply, parse_solver_reply
from maps_autogen.problem import Problem
from maps_autogen.records import (
    USER_PROXY_ROLE,
    AnswerParsed,
    ChatRecord,
    ContentFilteredEvent,
    CriticUnparseableEvent,
    ErrorEvent,
    ImagesDroppedEvent,
    ImagesWithheldEvent,
    InterpreterSkippedEvent,
    MaxTokensReachedEvent,
    MessageRecord,
    RoleUsage,
    RollbackEvent,
    SolverUnparsedEvent,
    StopEvent,
    StopReason,
    TokenRecord,
    TurnStartRecord,
    Usage,
    VerdictParsed,
)
from maps_autogen.settings import (
    USER_PROXY_NAME,
    ChatPlan,
    CriticVerdict,
    HumanWhen,
    PromptSet,
    SolverAnswer,
    TeamConfig,
    critic_schema,
    derived_max_rounds,
    plan_chat,
    possessive,
    render,
    review_text_chars,
    solver_schema,
)

logger = logging.getLogger(__name__)


class Observer(Protocol):
    """Receives chat records as they happen, typed (`chat_records.ChatRecord`): each turn's
    message, each event, and the live-only turn starts and tokens."""

    def emit(self, record: ChatRecord) -> None: ...


class Observers:
    """Fans records out to several observers."""

    def __init__(self, *observers: Observer | None):
        self._observers = [observer for observer in observers if observer is not None]

    def emit(self, record: ChatRecord) -> None:
        for observer in self._observers:
            observer.emit(record)


@dataclass(frozen=True)
class ChatSettings:
    """How one chat runs: the team, the steps that run and the review loop."""

    team: TeamConfig
    plan: ChatPlan
    flow: FlowSettings

    @property
    def image_roles(self) -> frozenset[str]:
        """Steps that receive the images (or, on a text-only model, a note in their place)."""
        return self.plan.image_steps


def images_withheld(problem: Problem, image_roles: frozenset[str], backends: Mapping[str, ModelBackend]) -> list[str]:
    """The steps that would receive the problem's images but talk to a text-only model
    (`vision: false`) or one that takes fewer per request (`max_images`): their requests carry a
    text note in place of each image not sent."""
    if not problem.has_images:
        return []
    count = len(problem.images)
    return sorted(role for role in image_roles if backends[role].model.images_carried(count) < count)


def chat_settings(
    problem: Problem,
    *,
    team: TeamConfig,
    threshold: float | None,
    max_rollbacks: int,
    final_review: bool,
    max_rounds: int | None,
    without: frozenset[str] = frozenset(),
    images_to_next: bool = False,
    human: HumanWhen | None = None,
    max_backs: int = 10,
    ties: TieRule = "worst_step",
) -> ChatSettings:
    """Settings for `problem`: a step that describes images is skipped without images; the
    images of a left-out step reach no step, or with `images_to_next` the next step that runs
    (see `team.plan_chat`). `threshold` and `max_rounds` None: the reviewer's threshold, and
    rounds derived from the plan (room for `max_backs` re-runs more when a person is asked,
    `human`). A step sent back receives what the team's reviewer sends back; `ties` picks among
    equally low scores."""
    plan = plan_chat(team, has_images=problem.has_images, without=without, images_to_next=images_to_next)
    flow = FlowSettings(
        steps=plan.steps,
        reviewer=plan.reviewer,
        scored=plan.scored,
        threshold=team.threshold if threshold is None else threshold,
        max_rollbacks=max_rollbacks,
        final_review=final_review,
        max_rounds=max_rounds or derived_max_rounds(plan, max_rollbacks + (max_backs if human else 0)),
        ties=ties,
        sends_back=team.sends_back,
        human=human,
        max_backs=max_backs,
    )
    return ChatSettings(team=team, plan=plan, flow=flow)


@dataclass
class CallRecord:
    role: str
    completion: Completion
    request: list[dict[str, Any]]
    started_at: str


@dataclass
class ChatOutcome:
    """What a chat produced."""

    final_answer: str
    stop_reason: StopReason
    solver_answer: SolverAnswer | None
    rollbacks: list[Rollback]
    senders: list[str]  # who sent each rollback's step back, as its RollbackEvent names them
    verdicts: list[CriticVerdict | None]
    calls: list[CallRecord]
    seconds: float
    error: str | None = None
    failure: MapsError | None = None  # the service failure that ended the chat, if any

    def usage(self) -> Usage:
        """Calls, tokens and cost (None when any call's price is unknown)."""
        completions = [call.completion for call in self.calls]
        costs = [c.cost for c in completions]
        known = [cost for cost in costs if cost is not None]
        usage = Usage(
            calls=len(completions),
            cached_calls=sum(1 for c in completions if c.cached),  # answered from the cache, at $0
            prompt_tokens=sum(c.prompt_tokens or 0 for c in completions),
            cached_tokens=sum(c.cached_tokens or 0 for c in completions),
            completion_tokens=sum(c.completion_tokens or 0 for c in completions),
            cost=round(sum(known), 8) if len(known) == len(costs) else None,  # no calls cost nothing
            # Some call's server reported no usage: its tokens (and cost) are our own count.
            tokens_estimated=any(c.tokens_estimated for c in completions),
        )
        by_batch = sum(1 for c in completions if c.batch is not None)  # written only where some call was
        return usage.model_copy(update={"batch_calls": by_batch}) if by_batch else usage

    def usage_by_role(self) -> dict[str, RoleUsage]:
        """Each step's calls, tokens, cost (None once a call's price is unknown) and seconds."""
        table: dict[str, RoleUsage] = {}
        for call in self.calls:
            row = table[call.role] if call.role in table else RoleUsage(cost=0.0)
            completion = call.completion
            table[call.role] = RoleUsage(
                calls=row.calls + 1,
                cached_calls=row.cached_calls + int(completion.cached),
                prompt_tokens=row.prompt_tokens + (completion.prompt_tokens or 0),
                cached_tokens=row.cached_tokens + (completion.cached_tokens or 0),
                completion_tokens=row.completion_tokens + (completion.completion_tokens or 0),
                cost=None if row.cost is None or completion.cost is None else row.cost + completion.cost,
                seconds=row.seconds + completion.seconds,
            )
            if completion.batch is not None or row.batch_calls:
                table[call.role] = table[call.role].model_copy(
                    update={"batch_calls": row.batch_calls + (completion.batch is not None)})
        return table


def verdict_parsed(verdict: CriticVerdict) -> VerdictParsed:
    """A reviewer's verdict as its turn's record keeps it (`parsed`)."""
    return VerdictParsed(scores=dict(verdict.scores), need_feedback=verdict.need_feedback,
                         worst_step=verdict.worst_step, feedback=dict(verdict.feedback),
                         evaluation=dict(verdict.evaluation), repaired=verdict.repaired)


def _solver_check(text: str, *, title: str) -> str | None:
    """Why an answer step's reply (the step titled `title`) is unusable (None when it parses)."""
    if parse_solver_reply(text).parsed:
        return None
    return f"the {possessive(title)} reply is not valid JSON with a final answer"


def _critic_check(text: str, *, team: TeamConfig, flow: FlowSettings, rollbacks: int) -> str | None:
    """Why the reviewer's reply is unusable (`flow.unusable_review`; None: it can be used)."""
    verdict = parse_critic_reply(text, flow.scored, low=team.scale.low, high=team.scale.high)
    return unusable_review(verdict, team, flow, rollbacks)


class MapsChat:
    """Runs one problem through the MAPS roles on AG2."""

    def __init__(
        self,
        problem: Problem,
        *,
        prompts: PromptSet,
        backends: Mapping[str, ModelBackend],
        settings: ChatSettings,
        observer: Observer,
        image_files: list[str] | None = None,
        on_human: OnHuman | None = None,
    ):
        self.problem = problem
        self.prompts = prompts
        self.backends = backends
        self.settings = settings
        self.observer = observer
        self.image_files = image_files or [f"image-{n}" for n in range(1, len(problem.images) + 1)]
        self._data_urls = {image.data_url(): file for image, file in zip(problem.images, self.image_files)}
        self.turns: list[Turn] = []
        self.outputs: dict[str, str] = {}
        self.calls: list[CallRecord] = []
        self.verdicts: list[CriticVerdict | None] = []
        self.rollbacks: list[Rollback] = []
        self.senders: list[str] = []  # each rollback's sender, as its event names them
        self.solver_answer: SolverAnswer | None = None
        self._pending: dict[str, CallRecord] = {}
        self._current_round = 0
        self._current_revision: Rollback | None = None
        self._stop_reason: StopReason | None = None
        if (settings.flow.human is None) != (on_human is None):
            raise ValueError("a chat with a person (flow.human) needs on_human, and only such a chat takes it")
        self._person = PersonTurns(on_human, team=settings.team, flow=settings.flow,
                                   options=problem.options) if on_human is not None else None

    def agent_shape(self) -> AgentShape:
        """The shape of this chat's agents: the team, the steps that run, their prompts and
        models, --human."""
        flow = self.settings.flow
        team = self.settings.team
        roles = [*flow.steps, *([flow.reviewer] if flow.reviewer else [])]
        return AgentShape(
            user_proxy_system=render(
                self.prompts.user_proxy.system, {"personality": self.prompts.personalities["user_proxy"]}
            ),
            manager_system=render(self.prompts.manager.system, {"personality": self.prompts.personalities["manager"]}),
            assistants=tuple(
                (role, team.step(role).title,
                 shared_prefix_system(self.prompts) if self._shared_prefix(role) else self.prompts.system_message(role),
                 self.backends[role].model.model)
                for role in roles
            ),
            human=flow.human is not None,
            # AG2 counts the person's turns as rounds too: one may follow every agent's turn.
            max_round=(2 * flow.max_rounds if flow.human else flow.max_rounds) + 2,
            team=team.model_dump_json(),
        )

    def _shared_prefix(self, role: str) -> bool:
        """Whether `role`'s requests use the shared-prefix layout (`role_inputs.build_request`):
        its endpoint's `prompt_layout`, so the server reuses its prefix cache from one step to
        the next."""
        return self.backends[role].model.prompt_layout == "shared_prefix"

    def _opening_message(self) -> str:
        parts = [
            self.prompts.user_proxy.instruction.strip(),
            f"{self.prompts.task.labels['question']}: {self.problem.question}",
        ]
        if self.problem.context:
            parts.append(f"{self.prompts.task.labels['context']}: {self.problem.context}")
        if self.problem.options:
            parts.append(f"{self.prompts.task.labels['options']}:\n{format_options(self.problem.options)}")
        if self.problem.images:
            parts.append(
                f"{self.prompts.task.labels['images']}: " + ", ".join(f"[{name}]" for name in self.image_files)
            )
        return "\n\n".join(parts)

    # ----- the Manager's selection ----------------------------------------------------
    def _select_speaker(
        self, assistants: dict[str, AssistantAgent], user_proxy: Any, last_speaker: Any, groupchat: Any
    ) -> Any:
        if last_speaker is not user_proxy:
            role = next(name for name, agent in assistants.items() if agent is last_speaker)
            self._record_turn(role, groupchat.messages[-1].get("content") or "")
        elif self._person is not None and (answer := self._person.take()) is not None:
            self.turns.append(Turn(PERSON, decision=answer))  # the person's turn at a pause
            self.observer.emit(self._person.message(answer, round_=self._current_round))
        decision = decide_next(self.turns, self.settings.flow)
        if decision.revision is not None and decision.revision.number > len(self.rollbacks):
            self.rollbacks.append(decision.revision)
            rollback = decision.revision
            sender = USER_PROXY_NAME if rollback.by == "user" else self.settings.team.step(
                self.settings.flow.reviewer or "").title  # who sent it, named as the transcript names agents
            self.senders.append(sender)
            self.observer.emit(RollbackEvent(
                number=rollback.number, step=rollback.step, dimension=rollback.dimension, scores=rollback.scores,
                question=rollback.sent_question, score=rollback.sent.score, evaluation=rollback.sent.evaluation or None,
                by=rollback.by, sender=sender, at=utc_now(),
            ))
        if decision.next_role is None:
            self._stop_reason = decision.stop_reason
            return None
        self._current_round = decision.round
        self._current_revision = decision.revision
        return user_proxy if decision.next_role == PERSON else assistants[decision.next_role]

    def _ask_person(self) -> str:
        """The person's answer at this pause (AG2's human input of the UserProxy)."""
        if self._person is None:
            raise RuntimeError("AG2 asked for human input in a chat no person takes part in")
        answer = self.solver_answer.final_answer if self.solver_answer is not None else None
        return self._person.ask(self.turns, answer, self.verdicts[-1] if self.verdicts else None)

    def _record_turn(self, role: str, content: str) -> None:
        call = self._pending.pop(role, None)
        parsed: AnswerParsed | VerdictParsed | None = None
        verdict: CriticVerdict | None = None
        step = self.settings.team.step(role)
        if step.output == "answer":
            fallback = step.answer_fallback or "text"
            answer = parse_solver_reply(content, fallback=fallback)
            parsed = AnswerParsed(final_answer=answer.final_answer, parsed=answer.parsed, repaired=answer.repaired)
            if role == self.settings.plan.final_step:
                self.solver_answer = answer
            if not answer.parsed:
                self.observer.emit(SolverUnparsedEvent(
                    at=utc_now(),
                    detail=f"the {step.possessive} reply was not valid JSON; " + (
                        "its final answer falls back to the reply's text" if fallback == "text"
                        else "it gives no final answer (answer_fallback: none)"),
                ))
        elif role == self.settings.plan.final_step:
            self.solver_answer = SolverAnswer(final_answer=content.strip())
        if role == self.settings.flow.reviewer:
            scale = self.settings.team.scale
            verdict = parse_critic_reply(content, self.settings.flow.scored, low=scale.low, high=scale.high)
            if verdict is not None:
                parsed = verdict_parsed(verdict)
            unusable = unusable_review(verdict, self.settings.team, self.settings.flow, len(self.rollbacks))
            if unusable is not None:
                verdict = None  # a review that cannot be used is recorded, and ends the chat, as unreadable
                self.observer.emit(CriticUnparseableEvent(
                    at=utc_now(),
                    detail=f"{unusable}; the chat ends and the "
                    f"{self.settings.team.step(self.settings.plan.final_step).possessive} answer stands",
                ))
            self.verdicts.append(verdict)
        self.outputs[role] = content
        self.turns.append(Turn(role, verdict))
        completion = call.completion if call is not None else None
        self.observer.emit(MessageRecord(
            agent=step.title,
            role=role,
            step=self.settings.flow.dimension_of(role) or ("review" if role == self.settings.flow.reviewer else role),
            round=self._current_round,
            revision=self._current_revision is not None and self._current_revision.step == role,
            content=content,
            parsed=parsed,
            model=completion.model if completion else None,
            started_at=call.started_at if call else None,
            seconds=round(completion.seconds, 4) if completion else None,
            usage=completion.usage() if completion else None,
            json_mode=completion.json_mode if completion else None,
            finish_reason=completion.finish_reason if completion else None,
            served_model=completion.served_model if completion else None,
            sent=completion.sent if completion else None,
            rejected=completion.rejected if completion else None,
            request=call.request if call else None,
        ))
        if completion is not None and completion.finish_reason in CUT_REASONS:
            # Told once, after the turn it concerns (the turn's record carries finish_reason too).
            model = self.backends[role].model
            if completion.finish_reason == "length":
                self.observer.emit(MaxTokensReachedEvent(role=role, at=utc_now(), detail=cut_off_detail(
                    f"the {step.possessive}", model, completion.sent.token_cap(), completion.prompt_tokens,
                    None if completion.tokens_estimated else completion.completion_tokens, completion.text)))
            else:
                self.observer.emit(ContentFilteredEvent(
                    role=role, at=utc_now(),
                    detail=f"the service's content filter stopped the {step.possessive} reply (finish_reason "
                    "content_filter): it is incomplete, and was not sent again",
                ))

    # ----- each role's view and call ---------------------------------------------------
    def _role_view(self, role: str, _history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        revision = None
        rollback = self._current_revision
        if rollback is not None and rollback.step == role and rollback.verdict is not None:
            scale = self.settings.team.scale
            revision = revision_for(role, self.outputs, rollback.sent, (scale.low, scale.high))
        asked = asked_revision(role, rollback, self.outputs)  # the person sent this step back
        backend = self.backends[role]
        images, max_images = "none", None
        if role in self.settings.image_roles:
            images = "send" if backend.supports_images else "note"
            max_images = backend.model.max_images
        step = self.settings.team.step(role)
        variables = None
        if role == self.settings.flow.reviewer:
            scale = self.settings.team.scale
            variables = review_variables(self.settings.flow.scored, self.prompts, low=scale.low, high=scale.high,
                                         threshold=self.settings.flow.threshold)
        content = build_request(
            step, self.problem, self.outputs, self.prompts, review_variables=variables, images=images,
            max_images=max_images, revision=revision, shared_prefix=self._shared_prefix(role),
            asked=asked, notes=tuple(self._person.notes) if self._person is not None else (),
        )
        self.observer.emit(TurnStartRecord(role=role, agent=step.title, round=self._current_round,
                                           revision=revision is not None or asked is not None))
        return [{"role": "user", "content": content}]

    def _call_model(self, role: str, messages: list[dict[str, Any]]) -> Completion:
        schema_name, schema, check = None, None, None
        step = self.settings.team.step(role)
        if step.output == "answer":
            schema_name, schema = "solver_answer", solver_schema(len(self.problem.options))
            check = partial(_solver_check, title=step.title)
        elif role == self.settings.flow.reviewer:
            scale = self.settings.team.scale
            dimensions, cap = self.settings.flow.dimensions, self.backends[role].model.max_tokens
            schema_name, schema = "critic_verdict", critic_schema(  # the embedded model's grammar bounds its texts
                dimensions, low=scale.low, high=scale.high, whole=scale.whole,
                text_chars=review_text_chars(cap, len(dimensions))
                if self.backends[role].model.kind == "local" and cap else None)
            check = partial(_critic_check, team=self.settings.team, flow=self.settings.flow,
                            rollbacks=sum(1 for rollback in self.rollbacks if rollback.by == "critic"))
        started_at = utc_now()
        task = self.prompts.task
        completion = self.backends[role].complete(
            messages, role=role, schema_name=schema_name, schema=schema, check=check,
            on_token=lambda text: self.observer.emit(TokenRecord(role=role, text=text)),
            retry_note=lambda reason: render(task.unusable_reply_note, {"reason": reason}, source=task.source),
        )
        # What was sent: a retry of an unusable reply carries its note.
        sent = completion.messages if completion.messages is not None else messages
        record = CallRecord(role, completion, request_for_transcript(sent, self._data_urls), started_at)
        self.calls.append(record)
        self._pending[role] = record
        return completion

    # ----- running ------------------------------------------------------------------------
    def outcome_so_far(self, stop_reason: StopReason, seconds: float, error: str | None = None) -> ChatOutcome:
        """What the chat produced up to now (the finished turns), ending with `stop_reason`."""
        return ChatOutcome(
            final_answer=self.solver_answer.final_answer if self.solver_answer else "",
            stop_reason=stop_reason,
            solver_answer=self.solver_answer,
            rollbacks=list(self.rollbacks),
            senders=list(self.senders),
            verdicts=list(self.verdicts),
            calls=list(self.calls),
            seconds=seconds,
            error=error,
        )

    def run(self) -> ChatOutcome:
        """Run the chat to its stop; model-service failures end it with stop reason `error`."""
        started = time.monotonic()
        skipped = [
            step.title
            for step in self.settings.team.steps
            if step.describes_images and step.enabled and not self.problem.has_images
        ]
        if skipped:
            self.observer.emit(InterpreterSkippedEvent(
                at=utc_now(),
                detail=f"the problem has no image, so {', '.join(skipped)} is skipped and the reviewer scores "
                f"{len(self.settings.flow.scored)} dimensions",
            ))
        dropped = self.settings.plan.images_dropped
        if dropped:
            titles = ", ".join(self.settings.team.step(role).title for role in dropped)
            receivers = (
                ", ".join(self.settings.team.step(role).title for role in sorted(self.settings.image_roles))
                or "no step"
            )
            self.observer.emit(ImagesDroppedEvent(
                roles=list(dropped), at=utc_now(),
                detail=f"{titles} left out: its images go to no other step (images.to_next_step: false); "
                f"the images reach {receivers}",
            ))
        withheld = images_withheld(self.problem, self.settings.image_roles, self.backends)
        if withheld:
            why = "; ".join(f"{self.settings.team.step(role).title}: "
                            f"{self.backends[role].model.images_withheld_because()}" for role in withheld)
            self.observer.emit(ImagesWithheldEvent(
                roles=withheld, at=utc_now(),
                detail=f"images withheld ({why}); a note stands in for each image not sent"))
        agents = agents_for(self.agent_shape())
        opening = self._opening_message()
        self.observer.emit(MessageRecord(agent=USER_PROXY_NAME, role=USER_PROXY_ROLE, step="task", round=0,
                                         revision=False, content=opening, images=self.image_files))
        error: str | None = None
        agents.chat = self
        service_failure: MapsError | None = None
        with IOStream.set_default(_SilentStream(self._ask_person if self._person is not None else None)):
            try:
                agents.user_proxy.initiate_chat(agents.manager, message=opening, clear_history=True, silent=True)
            except MapsError as failure:
                error = redact(str(failure))
                service_failure = failure
                self._stop_reason = "interrupted" if isinstance(failure, RunInterrupted) else "error"
            except Exception as failure:  # a bug or an AG2 failure: record it, keep finished work
                logger.exception("chat failed")
                error = redact(f"{failure.__class__.__name__}: {failure}")
                self._stop_reason = "error"
            finally:
                agents.chat = None
                agents.forget()
        stop_reason = self._stop_reason or "max_rounds"
        if error:
            self.observer.emit(ErrorEvent(detail=error, at=utc_now()))
        outcome = self.outcome_so_far(stop_reason, time.monotonic() - started, error)
        outcome.failure = service_failure
        self.observer.emit(StopEvent(stop_reason=stop_reason, final_answer=outcome.final_answer, at=utc_now()))
        return outcome


__all__ = [
    "AgentShape",
    "ChatAgents",
    "ChatOutcome",
    "ChatSettings",
    "MapsChat",
    "Observer",
    "Observers",
    "agents_for",
    "chat_settings",
    "images_withheld",
    "verdict_parsed",
]
