"""Agents are built once per worker thread and reused: a problem solved on reused agents leaves
exactly the transcript and run.json that fresh agents would, even after a chat that failed."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from maps_autogen.orchestration._chat import agents_for
from maps_autogen.orchestration._solving import assemble_team, solve_problem
from maps_autogen.problem._problem import build_problem
from maps_autogen.settings._config import load_config
from tests.helpers.agent_reuse import second_chat_shape
from tests.helpers.common import TEST_KEY, critic_json, make_png, solver_json, write_config
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply

# Wall-clock fields differ between any two runs; everything else must match.
TIMING_KEYS = {"at", "started_at", "finished_at", "seconds", "run_id"}


def script(request: Received) -> Reply:
    """Deterministic per problem: problem a's Scholar is refused (the chat ends in an error);
    problem b's first answer is scored low, so the Solver revises once."""
    text = request.user_text()
    if request.role == "scholar" and "[q:a]" in text:
        return Reply("no", status=400)
    if request.role == "aligner":
        return Reply("alignment of " + ("[q:a]" if "[q:a]" in text else "[q:b]"))
    if request.role == "solver":
        return Reply(solver_json("answer-4" if "check the units" in text else "answer-2"))
    if request.role == "critic":
        return Reply(critic_json(solution=3 if "answer-2" in text else 5, feedback={"solution": "check the units"}))
    return Reply(f"{request.role} notes")


def without_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


def run_folder(run_dir: Path) -> dict[str, Any]:
    transcript = [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]
    return {"transcript": without_timing(transcript), "run": without_timing(json.loads((run_dir / "run.json").read_text()))}


def in_thread(work: Any) -> Any:
    """Run `work` on a new thread (so with no agents built yet) and return its result."""
    result: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: result.setdefault("value", work()))
    thread.start()
    thread.join()
    return result["value"]


def test_reused_agents_give_the_transcripts_of_fresh_agents(tmp_path: Path) -> None:
    # the one-rollback budget variant: the second problem stops at its one rollback
    loaded = load_config(write_config(tmp_path / "agents.yaml", **{"critic.max_rollbacks": 1, "critic.final_review": False}))
    side = loaded.config.images.max_side
    image = str(make_png(tmp_path / "figure.png"))
    problem_a = build_problem("[q:a] Which mass balances the lever?", image_sources=[image], max_side=side)
    problem_b = build_problem("[q:b] How long is the rod?", image_sources=[image], max_side=side)

    with FakeOpenAI(script) as server:
        team = assemble_team(loaded, env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": TEST_KEY})

        def one_worker() -> tuple[Any, Any, Any]:
            first = solve_problem(problem_a, team, runs_dir=tmp_path / "reused", run_id="a")
            second = solve_problem(problem_b, team, runs_dir=tmp_path / "reused", run_id="b")
            return first, second, agents_for(second_chat_shape(team, problem_b))

        first, second, agents = in_thread(one_worker)
        fresh = in_thread(lambda: solve_problem(problem_b, team, runs_dir=tmp_path / "fresh", run_id="b"))

    assert first.outcome.stop_reason == "error"
    assert second.outcome.stop_reason == "rollback_limit" and [r.step for r in second.outcome.rollbacks] == ["solver"]
    # The second problem really ran on the first one's agents: they hold its group chat.
    assert agents.chat is None
    # ... and nothing of it stays in any agent's history (memory stays flat over thousands of problems).
    assert not any(agent.chat_messages.get(other) for agent in [agents.manager, *agents.assistants.values()]
                   for other in [agents.user_proxy, agents.manager, *agents.assistants.values()])
    assert agents.manager.groupchat.messages[-1]["content"] == second.outcome.calls[-1].completion.text
    assert run_folder(second.run_dir) == run_folder(fresh.run_dir)


