"""The Critic's request as the scripted server receives it: its five anchors mean exactly Table 6's
(seed 000), nothing added to the 5; it is not told the pass mark (the Manager applies it), so its
request is the same whatever the threshold; its reply schema asks for an evaluation of every
dimension before the scores. Its prompt file holds nothing that is never sent: a `revision` there
is refused, since every review after a rollback is a fresh one. A review reads, for people, as its
evaluation of each dimension."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from maps_autogen.records._chat_records import VerdictParsed
from maps_autogen.report._replies import read_reply
from tests.helpers.common import REPO, TEST_KEY, clean_env, make_png, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, Received, RoleScript

PASSING = {"evaluation": {}, "need_feedback": False, "worst_step": "solution", "feedback": {}}


def critic_request(tmp_path: Path, *args: str, top: float = 5) -> Received:
    """The Critic's request of one `maps solve` whose review passes."""
    scores = {dim: top for dim in ("caption", "alignment", "knowledge", "solution")}
    tmp_path.mkdir(exist_ok=True)
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": [json.dumps({**PASSING, "scores": scores})]})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["solve", str(make_png(tmp_path / "f.png")), "-q", "Which mass?", "--runs-dir",
                           str(tmp_path / "runs"), "--json", *args], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    return next(request for request in server.received if request.role == "critic")


@pytest.mark.parametrize("team", ["maps", "big_five"])
def test_the_critic_is_not_told_the_pass_mark(tmp_path, team) -> None:
    top = 5 if team == "maps" else 1
    default = critic_request(tmp_path / "a", "--team", team, top=top)
    other = critic_request(tmp_path / "b", "--team", team, "--threshold", "3" if team == "maps" else "0.6", top=top)
    assert default.user_text() == other.user_text() and default.messages[0] == other.messages[0]
    assert default.body["response_format"] == other.body["response_format"]
    text = " ".join(default.user_text().split())
    assert "pass" not in text.lower() and "threshold" not in text.lower()


def test_the_five_anchors_are_table_6s_with_nothing_added(tmp_path) -> None:
    text = critic_request(tmp_path).user_text()
    rubric = text.split("by what the\nchallenges found:\n", 1)[1].split("\n\n", 1)[0]
    assert rubric.splitlines() == [
        "- 5: it withstands three counterfactual scenarios (three small changes of the given conditions);",
        "- 4: at most one of its assumptions still needs validating;",
        "- 3: it needs two or three further pieces of evidence;",
        "- 2: it holds a structural contradiction;",
        "- 1: it fails the basic check that its elements exist.",
    ]


def test_the_review_schema_asks_for_each_dimensions_evaluation_before_its_scores(tmp_path) -> None:
    schema = critic_request(tmp_path).body["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["evaluation", "scores", "need_feedback", "worst_step", "feedback"]
    assert schema["properties"]["evaluation"]["required"] == ["caption", "alignment", "knowledge", "solution"]
    assert schema["properties"]["scores"]["properties"]["solution"] == {"type": "integer", "minimum": 1, "maximum": 5}


@pytest.mark.parametrize(("prompt", "key", "why"), [
    ("critic.yaml", "revision", "the reviewer is never sent back: every review after a rollback is a fresh review"),
    ("manager.yaml", "instruction", "the Manager never calls a model"),
    ("manager.yaml", "revision", "the Manager never calls a model"),
])
def test_a_prompt_key_that_is_never_sent_is_refused_in_one_line(tmp_path, prompt, key, why) -> None:
    folder = tmp_path / "prompts"
    folder.mkdir()
    data = yaml.safe_load((REPO / "prompts" / prompt).read_text())
    (folder / prompt).write_text(yaml.safe_dump({**data, key: "Review it again."}))
    (tmp_path / "agents.yaml").write_text("{}\n")  # prompts/ beside it take the place of the built-in ones
    result = run_maps(["solve", "-q", "Which mass?"], env=clean_env(OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == "" and len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith(f"error: {folder / prompt}: '{key}' is never sent ({why})")
    assert f"remove '{key}' from {prompt}" in result.stderr


def test_a_step_the_critic_scores_needs_its_revision_and_one_it_does_not_may_leave_it_out(tmp_path) -> None:
    (tmp_path / "prompts").mkdir()
    data = yaml.safe_load((REPO / "prompts" / "scholar.yaml").read_text())
    (tmp_path / "prompts" / "scholar.yaml").write_text(yaml.safe_dump({k: v for k, v in data.items() if k != "revision"}))
    (tmp_path / "agents.yaml").write_text("{}\n")
    result = run_maps(["solve", "-q", "Which mass?"], env=clean_env(OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    assert result.returncode == 2 and "scholar.yaml: missing key 'revision'" in result.stderr
    steps = yaml.safe_load((REPO / "agents.yaml").read_text())["team"]["steps"]
    steps[-1]["reviews"] = ["interpreter", "aligner", "solver"]  # the Scholar is no longer scored
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump({"team": {"steps": steps}}))
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": [json.dumps({**PASSING, "scores": {
            "alignment": 5, "solution": 5}})]})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["solve", "-q", "Which mass?", "--json"], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_a_review_reads_as_its_evaluation_of_each_dimension() -> None:
    reply = json.dumps({"evaluation": {"caption": "Lengths are given.", "solution": "The torque sign flips."},
                        "scores": {"caption": 5, "solution": 2}, "feedback": {"solution": "Recheck the sign."}})
    reading = read_reply(reply, VerdictParsed(scores={"caption": 5, "solution": 2}, evaluation={}))
    assert reading is not None and reading.kind == "review"
    assert [(s.heading, s.text) for s in reading.sections] == [("caption", "Lengths are given."),
                                                               ("solution", "The torque sign flips.")]
