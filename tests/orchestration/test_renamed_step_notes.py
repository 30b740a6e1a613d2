"""The notes a chat writes about a step's reply (an answer that is not JSON, a review without
usable scores) name the step as the team titles it, not the default team's Solver and Critic."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.common import TEST_KEY, clean_env, run_maps
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply
from tests.helpers.renamed_team import write_renamed_team


def _script(request: Received) -> Reply:
    if request.role == "reasoner":
        return Reply("I believe it is 4 kg.\nFinal answer: 4 kg")
    if request.role == "judge":
        return Reply("looks fine to me")
    return Reply(f"{request.role} notes")


def test_notes_about_a_renamed_step_name_it_by_its_title(tmp_path: Path) -> None:
    config = write_renamed_team(tmp_path)
    with FakeOpenAI(_script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["solve", "-q", "What is m?", "--config", str(config), "--runs-dir", str(tmp_path / "runs"),
                           "--json"], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["final_answer"] == "4 kg" and summary["stop_reason"] == "critic_unparseable"
    records = [json.loads(line) for line in (Path(summary["run_dir"]) / "transcript.jsonl").read_text().splitlines()]
    details = {record["event"]: record.get("detail") for record in records if record.get("type") == "event"}
    assert details["solver_unparsed"] == ("the Reasoner's reply was not valid JSON; "
                                         "its final answer falls back to the reply's text")
    assert details["critic_unparseable"] == ("the Judge's reply has no usable scores; "
                                            "the chat ends and the Reasoner's answer stands")
    rejected = {record["role"]: record["rejected"] for record in records
                if record.get("type") == "message" and record.get("rejected")}
    assert rejected == {"reasoner": "the Reasoner's reply is not valid JSON with a final answer",
                        "judge": "the Judge's reply has no usable scores"}
    notes = " ".join(str(detail) for detail in details.values()) + result.stdout + result.stderr
    assert "Solver" not in notes and "Critic" not in notes
