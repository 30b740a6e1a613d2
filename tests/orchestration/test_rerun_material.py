"""What a step sent back by the reviewer is told, read from the request it received on the wire:
each team follows its own paper version (seed 000, the default team: the step's score, the
Critic's evaluation of it and its Socratic question; seed 001, Big Five: the score and the
heuristic question), as the reviewer's `sends_back` says; the transcript and run.json record the
same. A review that would send a step back with nothing to act on is never acted on: it is
retried, then ends the chat as an unusable review."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.helpers.common import TEST_KEY, clean_env, make_png, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, Received, RoleScript

EVALUATION = "The knowledge table cites no law that relates the two torques."
FEEDBACK = "Which law fixes the ratio of the two masses from their distances?"
HEADING = "## What the Critic said about your previous answer\n"


def review(knowledge: float, *, feedback: str = FEEDBACK, evaluation: str = EVALUATION, top: float = 5) -> str:
    """A review scoring every dimension `top` but the knowledge, with its texts on the knowledge."""
    dims = ("caption", "alignment", "knowledge", "solution")
    return json.dumps({
        "evaluation": {dim: evaluation if dim == "knowledge" else f"{dim} holds" for dim in dims},
        "scores": {dim: knowledge if dim == "knowledge" else top for dim in dims},
        "need_feedback": knowledge < top, "worst_step": "knowledge",
        "feedback": {dim: feedback if dim == "knowledge" else f"{dim}?" for dim in dims},
    })


def solve(tmp_path: Path, critic: list[str], *args: str, config: dict[str, Any] | None = None
          ) -> tuple[dict[str, Any], list[Received], list[dict[str, Any]]]:
    """`maps solve --json` against the scripted server: (summary, requests, transcript records)."""
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump(config or {}))
    image = make_png(tmp_path / "lever.png")
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": critic})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["solve", str(image), "-q", "Which mass?", "-o", "2 kg", "-o", "4 kg",
                           "--runs-dir", str(tmp_path / "runs"), "--json", *args], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    records = [json.loads(line) for line in (Path(summary["run_dir"]) / "transcript.jsonl").read_text().splitlines()]
    return summary, server.received, records


def rerun_review(requests: list[Received]) -> str:
    """The review part of the re-run Scholar's request: the lines under the reviewer's heading."""
    rerun = [request for request in requests if request.role == "scholar"][1].user_text()
    assert HEADING in rerun, rerun
    return rerun.split(HEADING, 1)[1].split("\n\n", 1)[0]


def rollback_event(records: list[dict[str, Any]]) -> dict[str, Any]:
    return next(record for record in records if record.get("event") == "rollback")


def test_the_big_seven_team_tells_a_rerun_step_its_score_the_evaluation_and_the_question(tmp_path) -> None:
    summary, requests, records = solve(tmp_path, [review(2), review(5)])
    assert summary["rollbacks"] == ["scholar"] and summary["stop_reason"] == "critic_passed"
    assert rerun_review(requests) == f"Score: 2 on a scale from 1 to 5\nEvaluation: {EVALUATION}\nFeedback: {FEEDBACK}"
    event = rollback_event(records)
    assert (event["score"], event["evaluation"], event["question"]) == (2, EVALUATION, FEEDBACK)
    run = json.loads((Path(summary["run_dir"]) / "run.json").read_text())
    assert [(r["score"], r["evaluation"], r["question"]) for r in run["rollbacks"]] == [(2, EVALUATION, FEEDBACK)]
    # the first Scholar, and the steps re-run after it, are told nothing of the review
    assert all(HEADING not in request.user_text() for request in requests if request.role in ("solver", "aligner"))


def test_the_big_five_team_tells_a_rerun_step_its_score_and_the_heuristic_question_only(tmp_path) -> None:
    summary, requests, records = solve(tmp_path, [review(0.5, top=1), review(0.85, top=1)], "--team", "big_five")
    # 0.85 passes the Big Five threshold 0.8: one rollback, then the chat ends
    assert summary["rollbacks"] == ["scholar"] and summary["stop_reason"] == "critic_passed"
    assert rerun_review(requests) == f"Score: 0.5 on a scale from 0 to 1\nFeedback: {FEEDBACK}"
    event = rollback_event(records)
    assert (event["score"], event["evaluation"], event["question"]) == (0.5, None, FEEDBACK)


def test_sends_back_is_the_switch_of_what_a_rerun_step_receives(tmp_path) -> None:
    critic = yaml.safe_load((Path(__file__).parents[2] / "agents.yaml").read_text())["team"]["steps"][-1]
    critic["sends_back"] = ["feedback"]  # the question alone, as before seed 000 was followed
    steps = yaml.safe_load((Path(__file__).parents[2] / "agents.yaml").read_text())["team"]["steps"][:-1]
    _, requests, records = solve(tmp_path, [review(2), review(5)], config={"team": {"steps": [*steps, critic]}})
    assert rerun_review(requests) == f"Feedback: {FEEDBACK}"
    assert rollback_event(records)["score"] is None


def test_a_review_that_sends_a_step_back_with_nothing_to_act_on_is_retried_then_ends_the_chat(tmp_path) -> None:
    empty = review(2, feedback="", evaluation=" ")
    summary, requests, records = solve(tmp_path, [empty], config={"endpoints": {"openai": {"max_retries": 1}}})
    assert [request.role for request in requests].count("critic") == 2  # retried once, never acted on
    assert [request.role for request in requests].count("scholar") == 1
    assert summary["stop_reason"] == "critic_unparseable" and summary["rollbacks"] == [] and summary["final_answer"] == "A"
    detail = next(record["detail"] for record in records if record.get("event") == "critic_unparseable")
    assert detail == ("the Critic's review sends the Scholar back with nothing to act on (no evaluation or feedback "
                      "on knowledge); the chat ends and the Solver's answer stands")
    run = json.loads((Path(summary["run_dir"]) / "run.json").read_text())
    assert run["critic_verdicts"] == [None]  # counted as a review that failed, never as a pass


def test_an_evaluation_without_a_question_is_still_something_to_act_on(tmp_path) -> None:
    summary, requests, _ = solve(tmp_path, [review(2, feedback=""), review(5)])
    assert summary["rollbacks"] == ["scholar"]
    assert rerun_review(requests) == f"Score: 2 on a scale from 1 to 5\nEvaluation: {EVALUATION}"


def test_the_big_five_score_alone_is_nothing_to_act_on(tmp_path) -> None:
    summary, requests, _ = solve(tmp_path, [review(0.5, feedback="", top=1)], "--team", "big_five",
                                 config={"endpoints": {"openai": {"max_retries": 0}}})
    assert summary["stop_reason"] == "critic_unparseable" and summary["rollbacks"] == []
    assert [request.role for request in requests].count("scholar") == 1


def test_a_review_with_no_rollback_left_needs_nothing_to_act_on(tmp_path) -> None:
    summary, requests, _ = solve(tmp_path, [review(2, feedback="", evaluation="")], "--max-rollbacks", "0")
    assert summary["stop_reason"] == "rollback_limit" and [r.role for r in requests].count("critic") == 1
