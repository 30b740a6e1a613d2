"""Solving problems: assemble the team once, then run one chat per problem into a run folder.

`maps solve` and `maps eval` both go through `Team` and `solve_problem`.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from maps_autogen.cache import ResponseCache
from maps_autogen.chat import ChatOutcome, MapsChat, Observer, Observers, chat_settings
from maps_autogen.config import LoadedConfig
from maps_autogen.endpoints import Resolution, ResolvedModel, resolve_models
from maps_autogen.llm import ChatBackend
from maps_autogen.problem import Problem
from maps_autogen.prompts import PromptSet, load_prompts
from maps_autogen.redact import register_secret
from maps_autogen.transcript import RunWriter, new_run_id, utc_now


def _package_version() -> str:
    try:
        return importlib.metadata.version("maps-autogen")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@dataclass
class Team:
    """Everything that stays the same across problems: config, prompts, models, backends."""

    loaded: LoadedConfig
    prompts: PromptSet
    resolution: Resolution
    backends: dict[str, ChatBackend]  # by step name

    @property
    def announcement(self) -> str:
        return self.resolution.announcement

    def replicas_served(self) -> dict[str, dict[str, int]]:
        """Requests served by each replica, per endpoint with several (for the manifest)."""
        served: dict[str, dict[str, int]] = {}
        for backend in {id(b): b for b in self.backends.values()}.values():
            if backend.pool is not None:
                counts = served.setdefault(backend.model.endpoint_name, {})
                for url, count in backend.pool.served().items():
                    counts[url] = counts.get(url, 0) + count
        return served


_backend_lock = threading.Lock()


def _open_backend(model: ResolvedModel, *, loaded: LoadedConfig, cache: ResponseCache | None, max_connections: int) -> ChatBackend:
    reply_bytes = loaded.config.limits.reply_bytes
    if model.kind != "local":
        return ChatBackend(model, cache=cache, max_connections=max_connections, max_reply_bytes=reply_bytes)
    from maps_autogen.local_server import shared_local_server, settings_from_endpoint

    # Started on first use, shared by the whole process, stopped at exit (and on Ctrl-C).
    server = shared_local_server(settings_from_endpoint(model.local, base_dir=loaded.base_dir))
    register_secret(server.api_key)
    local = replace(model, base_url=server.base_url, api_key=server.api_key)
    return ChatBackend(local, cache=cache, max_connections=max_connections, health_check=server.ensure_alive, max_reply_bytes=reply_bytes)


def assemble_team(
    loaded: LoadedConfig,
    env: Mapping[str, str] | None = None,
    *,
    resolution: Resolution | None = None,
    cache: ResponseCache | None = None,
    max_connections: int = 64,
) -> Team:
    """Load prompts, resolve every role's model (unless `resolution` is given) and open the
    backends (starting the local model server if a role needs it). Roles on the same model
    share one backend."""
    prompts = load_prompts(loaded)
    resolution = resolution or resolve_models(loaded, os.environ if env is None else env)
    opened: dict[tuple[str, str], ChatBackend] = {}
    backends: dict[str, ChatBackend] = {}
    with _backend_lock:
        for role, model in resolution.models.items():
            key = (model.endpoint_name, model.model)
            if key not in opened:
                opened[key] = _open_backend(model, loaded=loaded, cache=cache, max_connections=max_connections)
            backends[role] = opened[key]
    return Team(loaded=loaded, prompts=prompts, resolution=resolution, backends=backends)


@dataclass
class SolveResult:
    run_id: str
    run_dir: Path
    outcome: ChatOutcome
    run: dict[str, Any]

    def summary(self) -> dict[str, Any]:
        """What `maps solve --json` prints."""
        return {
            "run_id": self.run_id,
            "final_answer": self.outcome.final_answer,
            "stop_reason": self.outcome.stop_reason,
            "rollbacks": [rollback.step for rollback in self.outcome.rollbacks],
            "usage": self.outcome.usage(),
            "run_dir": str(self.run_dir),
            "error": self.outcome.error,
        }


def solve_problem(
    problem: Problem,
    team: Team,
    *,
    runs_dir: Path,
    observer: Observer | None = None,
    run_id: str | None = None,
    without: frozenset[str] = frozenset(),
    human: bool = False,
    extra: dict[str, Any] | None = None,
    evaluate: Callable[[ChatOutcome], dict[str, Any]] | None = None,
) -> SolveResult:
    """Run one problem through the team; write runs_dir/<run-id>/ (run.json, transcript.jsonl,
    images/). Model-service failures end the chat with stop reason `error`; the files are
    written either way. run.json is written twice: when the chat starts and when it ends, with
    what `evaluate` returns for the outcome (an eval's verdict) merged in."""
    config = team.loaded.config
    run_id = run_id or new_run_id("solve")
    run_dir = runs_dir / run_id
    writer = RunWriter(run_dir)
    try:
        image_files = writer.save_images(problem)
        settings = chat_settings(
            problem,
            team=team.loaded.team.config,
            threshold=config.critic.threshold,
            max_rollbacks=config.critic.max_rollbacks,
            final_review=config.critic.final_review,
            max_rounds=config.stop.max_rounds,
            without=without,
            human=human,
        )
        started_at = utc_now()
        chat = MapsChat(
            problem,
            prompts=team.prompts,
            backends=team.backends,
            settings=settings,
            observer=Observers(writer, observer),
            image_files=image_files,
        )
        base_run = {
            "kind": "solve",
            "run_id": run_id,
            "maps_version": _package_version(),
            "started_at": started_at,
            "problem": {**problem.describe(), "image_files": image_files},
            "config_path": str(team.loaded.path),
            "config": config.model_dump(mode="json"),
            "models": {role: model.describe() for role, model in team.resolution.models.items()},
            "team": {"source": str(team.loaded.team.source), "steps": list(team.loaded.team.config.names)},
            "flow": {
                "steps": list(settings.flow.steps),
                "critic": settings.flow.reviewer is not None,
                "reviewer": settings.flow.reviewer,
                "scored": dict(settings.flow.scored),
                "threshold": settings.flow.threshold,
                "max_rollbacks": settings.flow.max_rollbacks,
                "final_review": settings.flow.final_review,
                "max_rounds": settings.flow.max_rounds,
                "image_roles": sorted(settings.image_roles),
                "without": sorted(without),
            },
            **(extra or {}),
        }
        writer.write_run({**base_run, "status": "running"})
        outcome = chat.run()
        run = {
            **base_run,
            "status": "finished",
            "finished_at": utc_now(),
            "seconds": round(outcome.seconds, 4),
            "stop_reason": outcome.stop_reason,
            "final_answer": outcome.final_answer,
            "solver_parsed": outcome.solver_answer.parsed if outcome.solver_answer else None,
            "rollbacks": [
                {"number": r.number, "step": r.step, "dimension": r.dimension, "scores": r.verdict.scores, "question": r.question}
                for r in outcome.rollbacks
            ],
            "critic_verdicts": [v.to_dict() if v else None for v in outcome.verdicts],
            "usage": outcome.usage(),
            "usage_by_role": outcome.usage_by_role(),
            "error": outcome.error,
            **(evaluate(outcome) if evaluate is not None else {}),
        }
        writer.write_run(run)
    finally:
        writer.close()
    return SolveResult(run_id=run_id, run_dir=run_dir, outcome=outcome, run=run)
