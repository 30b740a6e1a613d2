"""Solving problems: assemble the team once, then run one chat per problem into a run folder.

`maps solve` and `maps eval` both go through `Team` and `solve_problem`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maps_autogen._util import (
    OutputClosed,
    OutputClosedError,
    RunInterrupted,
    RunTerminated,
    Terminated,
    exit_on_second_interrupt,
    package_version,
    signals_deferred,
)
from maps_autogen.model import ChatBackend, JsonModeMemo, ReplicaPool, ResponseCache, backend_lock, open_backend
from maps_autogen.orchestration._chat import (
    CallRecord,
    ChatOutcome,
    ChatSettings,
    MapsChat,
    Observer,
    Observers,
    chat_settings,
    images_withheld,
)
from maps_autogen.orchestration._human_chat import OnHuman
from maps_autogen.orchestration._transcript import RunWriter, new_run_id, utc_now
from maps_autogen.problem import Problem
from maps_autogen.records import (
    Evaluation,
    FlowRecord,
    ModelRecord,
    RollbackRecord,
    RunRecord,
    RunStatus,
    StopEvent,
    StopReason,
    TeamRecord,
    Usage,
    VerdictRecord,
)
from maps_autogen.settings import (
    CriticVerdict,
    HumanWhen,
    LoadedConfig,
    PromptSet,
    Resolution,
    embedded_team_setting,
    load_prompts,
    resolve_models,
    shown_answer,
)


@dataclass
class Team:
    """Everything that stays the same across problems: config, prompts, models, backends."""

    loaded: LoadedConfig
    prompts: PromptSet
    resolution: Resolution
    backends: dict[str, ChatBackend]  # by step name
    cancelled: threading.Event = field(default_factory=threading.Event)  # set: no new model request starts
    # a team setting the serving model brought (settings/_endpoints.py: embedded_team_setting)
    setting_note: str | None = None
    context_note: str | None = None  # what the servers said of their contexts, budgets fitted (eval/_context_fit.py)

    @property
    def announcement(self) -> str:
        """How each step's model was chosen, any team setting that model brought, and what the
        servers said of their contexts (on a line of its own)."""
        chosen = "; ".join(part for part in (self.resolution.announcement, self.setting_note) if part)
        return f"{chosen}\n{self.context_note}" if self.context_note else chosen

    def replicas_served(self) -> dict[str, dict[str, int]]:
        """Requests served by each replica, per endpoint with several (for the manifest)."""
        # An endpoint's backends share its one pool (`assemble_team`).
        pools = {b.model.endpoint_name: b.pool for b in self.backends.values() if b.pool is not None}
        return {endpoint: pool.served() for endpoint, pool in pools.items()}

    def cancel(self) -> None:
        """Stop every chat of this team at its next model request (Ctrl-C)."""
        self.cancelled.set()

    def models_record(self, calls: Sequence[CallRecord] = ()) -> dict[str, ModelRecord]:
        """Each role's model as a run records it: the resolved choice; `sent`, the settings read
        back from the body of the role's last request sent, or, for a role that sent nothing (yet),
        `request_settings`, those its request body carries (never labelled as sent); and the
        model name the service reported when it differs."""
        last = {call.role: call.completion for call in calls}
        record = {}
        for role, model in self.resolution.models.items():
            entry = ModelRecord.of(model)
            if role in last:
                completion = last[role]
                entry = entry.model_copy(update={"sent": completion.sent})
                if completion.served_model:
                    entry = entry.model_copy(update={"served_model": completion.served_model})
            else:
                entry = entry.model_copy(update={"request_settings": self.backends[role].settings()})
            record[role] = entry
        return record


def assemble_team(
    loaded: LoadedConfig,
    env: Mapping[str, str] | None = None,
    *,
    resolution: Resolution | None = None,
    cache: ResponseCache | None = None,
    max_connections: int = 64,
) -> Team:
    """Load prompts, resolve every role's model (unless `resolution` is given) and open the
    backends (starting the local model server if a role needs it). Roles with the same model and
    sampling settings share one backend; every backend shares the process's connection pool."""
    prompts = load_prompts(loaded)
    resolution = resolution or resolve_models(loaded, os.environ if env is None else env)
    loaded, setting_note = embedded_team_setting(loaded, resolution)
    cancelled = threading.Event()
    opened: dict[tuple[Any, ...], ChatBackend] = {}
    json_modes: dict[tuple[str, str], JsonModeMemo] = {}  # what each endpoint's model accepts, learned once
    pools: dict[str, ReplicaPool] = {}  # each endpoint's replicas, shared by its backends
    backends: dict[str, ChatBackend] = {}
    with backend_lock:
        for role, model in resolution.models.items():
            # The sampling settings are part of the key: a role never sends another role's; so is
            # where its max_tokens is set: a reply cut short names the key of its own step.
            key = (model.endpoint_name, model.model, model.temperature, model.max_tokens, model.top_p, model.seed,
                   model.max_tokens_key)
            if key not in opened:
                memo = json_modes.setdefault((model.endpoint_name, model.model), JsonModeMemo(model.json_mode))
                if len(model.base_urls) > 1 and model.endpoint_name not in pools:
                    pools[model.endpoint_name] = ReplicaPool(model.base_urls, cancel=cancelled)
                opened[key] = open_backend(
                    model, loaded=loaded, cache=cache, max_connections=max_connections, cancel=cancelled,
                    json_mode=memo, pool=pools.get(model.endpoint_name),
                )
            backends[role] = opened[key]
    return Team(loaded=loaded, prompts=prompts, resolution=resolution, backends=backends, cancelled=cancelled,
                setting_note=setting_note)


def configured_chat_settings(problem: Problem, loaded: LoadedConfig, *, without: frozenset[str] = frozenset(),
                             human: HumanWhen | None = None) -> ChatSettings:
    """The chat settings of `problem` under the config's team, review loop, stop and image rules;
    `human`: when a person is asked (None: no person takes part; `human.max_backs` bounds them)."""
    config = loaded.config
    return chat_settings(
        problem,
        team=loaded.team.config,
        threshold=config.critic.threshold,
        max_rollbacks=config.critic.max_rollbacks,
        final_review=config.critic.final_review,
        max_rounds=config.stop.max_rounds,
        without=without,
        images_to_next=config.images.to_next_step,
        human=human,
        ties=config.critic.ties,
        max_backs=config.human.max_backs,
    )


@dataclass
class SolveResult:
    """One solve: its run folder, `run` (run.json as written, typed) and the chat's outcome; the
    properties read run.json's fields."""

    run_id: str
    run_dir: Path
    outcome: ChatOutcome
    run: RunRecord
    options: tuple[str, ...] = ()  # the problem's options (an answer letter is shown with its text)

    @property
    def final_answer(self) -> str | None:
        """The final-answer step's answer (an option letter for a problem with options)."""
        return self.run.final_answer

    @property
    def stop_reason(self) -> StopReason | None:
        """Why the chat stopped (records.StopReason: critic_passed, rollback_limit, no_reviewer, ...)."""
        return self.run.stop_reason

    @property
    def rollbacks(self) -> list[RollbackRecord]:
        """Each rollback: the step sent back, its dimension, the scores and the question asked."""
        return self.run.rollbacks

    @property
    def verdicts(self) -> list[VerdictRecord | None]:
        """Each review's verdict in order (None: a reply with no usable scores)."""
        return self.run.critic_verdicts

    @property
    def usage(self) -> Usage | None:
        """Calls, tokens and cost of the whole chat."""
        return self.run.usage

    @property
    def error(self) -> str | None:
        """Why the run ended with stop reason `error` (None otherwise)."""
        return self.run.error

    @property
    def final_answer_text(self) -> str:
        """The final answer as shown: an option's letter with the option's text ("C. 3 kg");
        "no answer (error: …)" for a run that has none."""
        return shown_answer(self.outcome.final_answer, self.options, error=self.outcome.error)

    def summary(self) -> dict[str, Any]:
        """What `maps solve --json` prints."""
        return {
            "run_id": self.run_id,
            "final_answer": self.outcome.final_answer,
            "final_answer_text": self.final_answer_text,
            "stop_reason": self.outcome.stop_reason,
            "rollbacks": [rollback.step for rollback in self.outcome.rollbacks],
            "usage": self.outcome.usage().model_dump(),
            "run_dir": str(self.run_dir),
            "error": self.outcome.error,
            "gold": self.run.gold,  # the problem file's gold answer, and whether the final answer matches it
            "correct": self.run.correct,
            # The steps whose reply was cut at its token cap, or stopped by the service's content filter.
            "max_tokens_reached": self._stopped("length"),
            "content_filtered": self._stopped("content_filter"),
        }

    def _stopped(self, finish_reason: str) -> list[str]:
        """The steps (in the order they ran) with a reply that ended with `finish_reason`."""
        return list(dict.fromkeys(call.role for call in self.outcome.calls
                                  if call.completion.finish_reason == finish_reason))


def solve_problem(
    problem: Problem,
    team: Team,
    *,
    runs_dir: Path,
    observer: Observer | None = None,
    run_id: str | None = None,
    without: frozenset[str] = frozenset(),
    on_human: OnHuman | None = None,
    extra: Mapping[str, Any] | None = None,
    evaluate: Callable[[ChatOutcome], Evaluation | None] | None = None,
) -> SolveResult:
    """Run one problem through the team; write runs_dir/<run-id>/ (run.json, transcript.jsonl,
    images/). Model-service failures end the chat with stop reason `error`; the files are
    written either way. run.json is written twice: when the chat starts (with `extra`, fields
    of `records.RunRecord` an eval sets) and when it ends, with how `evaluate` scored the
    outcome (an eval's verdict, a problem file's gold answer; None: not scored). With
    `on_human` a person takes part (at the config's `human.when`): it receives each pause and
    returns their decision."""
    config = team.loaded.config
    run_id = run_id or new_run_id("solve")
    run_dir = runs_dir / run_id
    writer = RunWriter(run_dir)
    try:
        image_files = writer.save_images(problem)
        human = config.human.when if on_human is not None else None
        settings = configured_chat_settings(problem, team.loaded, without=without, human=human)
        started_at = utc_now()
        chat = MapsChat(
            problem,
            prompts=team.prompts,
            backends=team.backends,
            settings=settings,
            observer=Observers(writer, observer),
            image_files=image_files,
            on_human=on_human,
        )
        base_run = RunRecord(
            kind="solve",
            run_id=run_id,
            maps_version=package_version(),
            started_at=started_at,
            problem=problem.describe(image_files),
            config_path=str(team.loaded.path),
            config=config,
            models=team.models_record(),
            team=TeamRecord.of(team.loaded.team.config, team.loaded.team.source),
            flow=FlowRecord(
                steps=list(settings.flow.steps),
                critic=settings.flow.reviewer is not None,
                reviewer=settings.flow.reviewer,
                scored=dict(settings.flow.scored),
                threshold=settings.flow.threshold,
                max_rollbacks=settings.flow.max_rollbacks,
                final_review=settings.flow.final_review,
                max_rounds=settings.flow.max_rounds,
                image_roles=sorted(settings.image_roles),
                images_withheld=images_withheld(problem, settings.image_roles, team.backends),
                without=sorted(without),
                images_dropped=list(settings.plan.images_dropped),
                human=settings.flow.human,
            ),
            team_setting=team.setting_note,
        ).model_copy(update=extra)
        chat_started = time.monotonic()
        try:
            writer.write_run(base_run.model_copy(update={"status": "running"}))
            outcome = chat.run()
        except KeyboardInterrupt as stop:
            # Ctrl-C, SIGTERM (Terminated) or standard output closed by its reader (OutputClosed):
            # a second Ctrl-C exits at once; the finished turns are already in the transcript.
            exit_on_second_interrupt()
            closed = isinstance(stop, OutputClosed)
            terminated = isinstance(stop, Terminated)
            outcome = chat.outcome_so_far(
                "interrupted",
                time.monotonic() - chat_started,
                "standard output was closed by its reader" if closed
                else "stopped by SIGTERM" if terminated else "interrupted by the user (Ctrl-C)",
            )
            writer.append(StopEvent(stop_reason="interrupted", final_answer=outcome.final_answer, at=utc_now()))
            writer.write_run(_finished_run(base_run, outcome, team, status="interrupted"))
            if closed:
                raise OutputClosedError(
                    f"standard output was closed; the finished turns are saved in {run_dir}"
                ) from None
            if terminated:
                raise RunTerminated(f"stopped by SIGTERM; the finished turns are saved in {run_dir}") from None
            raise RunInterrupted(f"interrupted; the finished turns are saved in {run_dir}") from None
        with signals_deferred():  # a Ctrl-C or SIGTERM now never leaves run.json at "running"
            evaluation = evaluate(outcome) if evaluate is not None else None
            run = _finished_run(base_run, outcome, team, status="finished", evaluation=evaluation)
            writer.write_run(run)
    finally:
        writer.close()
    return SolveResult(run_id=run_id, run_dir=run_dir, outcome=outcome, run=run, options=problem.options)


def _finished_run(base_run: RunRecord, outcome: ChatOutcome, team: Team, *, status: RunStatus,
                  evaluation: Evaluation | None = None) -> RunRecord:
    """run.json once the chat has ended (finished, or interrupted with the turns so far), with
    how its answer was scored (`evaluation`: its verdict, and the gold answer) when given."""
    run = base_run.model_copy(update={
        "status": status,
        "models": team.models_record(outcome.calls),
        "finished_at": utc_now(),
        "seconds": round(outcome.seconds, 4),
        "stop_reason": outcome.stop_reason,
        "final_answer": outcome.final_answer,
        "solver_parsed": outcome.solver_answer.parsed if outcome.solver_answer else None,
        "rollbacks": [RollbackRecord(number=r.number, step=r.step, dimension=r.dimension, scores=r.scores,
                                     question=r.sent_question, score=r.sent.score, evaluation=r.sent.evaluation,
                                     by=r.by, sender=sender)
                      for r, sender in zip(outcome.rollbacks, outcome.senders, strict=True)],
        "critic_verdicts": [_verdict_record(v) if v else None for v in outcome.verdicts],
        "usage": outcome.usage(),
        "usage_by_role": outcome.usage_by_role(),
        "error": outcome.error,
    })
    if evaluation is None:
        return run
    return run.model_copy(update={"gold": evaluation.gold, "evaluation": evaluation, "correct": evaluation.correct})


def _verdict_record(verdict: CriticVerdict) -> VerdictRecord:
    """A reviewer's verdict as run.json records it."""
    return VerdictRecord(evaluation=dict(verdict.evaluation), scores=dict(verdict.scores),
                         need_feedback=verdict.need_feedback, worst_step=verdict.worst_step,
                         feedback=dict(verdict.feedback))
