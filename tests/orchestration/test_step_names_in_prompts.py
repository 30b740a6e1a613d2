"""A renamed step is named by its new name everywhere a model or a person reads it: the prompts
and labels name steps through the team ({{step}}, {{reviewer}}, {{answer_step}}), possessives
are written correctly ("the Units' reply"), and a step's prompt file named in a --config file
elsewhere is found beside that file, the error naming every place it looked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from maps_autogen.settings._team import possessive
from tests.helpers.common import REPO, TEST_KEY, clean_env, make_png, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply, RoleScript

RENAMED = {"scholar": "units", "solver": "answers", "critic": "judge"}


def renamed_steps() -> list[dict[str, Any]]:
    """The default team with the Scholar, Solver and Critic renamed (references follow); labels
    and prompts are left as shipped, as a user who only renames would leave them. The Aligner
    may state a preliminary result (task.yaml's text names the answer step)."""
    steps = yaml.safe_load((REPO / "agents.yaml").read_text())["team"]["steps"]
    for step in steps:
        step["name"] = RENAMED.get(step["name"], step["name"])
        for key in ("inputs", "reviews", "equation_inputs"):
            if key in step:
                step[key] = [RENAMED.get(name, name) for name in step[key]]
    steps[1]["preliminary_result"] = True
    return steps


# The requests in the paper's layout, whose order (each step's own system message first) these tests read.
PAPER_LAYOUT = {"endpoints": {"openai": {"kind": "openai", "prompt_layout": "paper"}}}


def solve(folder: Path, script: RoleScript | Any, *args: str) -> tuple[dict[str, Any], list[Received]]:
    folder.mkdir(exist_ok=True)
    (folder / "agents.yaml").write_text(yaml.safe_dump({"team": {"steps": renamed_steps()}, **PAPER_LAYOUT}))
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["solve", str(make_png(folder / "f.png")), "-q", "Which mass?", "--runs-dir",
                           str(folder / "runs"), "--json", *args], env=env, cwd=folder)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout), server.received


def review(knowledge: int) -> str:
    dims = ("caption", "alignment", "knowledge", "solution")
    return json.dumps({"evaluation": {d: "e" for d in dims}, "scores": {d: knowledge if d == "knowledge" else 5 for d in dims},
                       "need_feedback": knowledge < 5, "worst_step": "knowledge", "feedback": {d: f"{d}?" for d in dims}})


def everything_sent(request: Received) -> str:
    return "\n".join(str(message["content"]) if isinstance(message["content"], str) else request.user_text()
                     for message in request.messages)


def test_prompts_and_labels_name_a_renamed_step_by_its_new_name(tmp_path) -> None:
    summary, requests = solve(tmp_path, RoleScript({"answers": [solver_json("A")], "judge": [review(2), review(5)]}))
    assert summary["rollbacks"] == ["units"]
    by_role: dict[str, list[Received]] = {}
    for request in requests:
        by_role.setdefault(request.role or "", []).append(request)
    assert by_role["units"][0].messages[0]["content"].startswith("You are the Units of a problem-solving team.")
    assert by_role["judge"][0].messages[0]["content"].startswith("You are the Judge of a problem-solving team.")
    assert "for the Answers to verify" in " ".join(by_role["aligner"][0].user_text().split())
    assert "## Domain knowledge (from the Units)\n" in by_role["answers"][0].user_text()
    assert "- knowledge: Domain knowledge (from the Units)" in by_role["judge"][0].user_text()
    rerun = by_role["units"][1].user_text()
    assert "## What the Judge said about your previous answer\n" in rerun and "The Judge sent the knowledge" in rerun
    assert "so that the Judge can find it" in " ".join(by_role["answers"][0].user_text().split())
    for request in requests:  # the old names never reach a model
        for old in ("Scholar", "Solver", "Critic"):
            assert old not in everything_sent(request), (request.role, old)


def test_notes_write_the_possessive_of_a_name_ending_in_s(tmp_path) -> None:
    def script(request: Received) -> Reply:
        if request.role == "answers":
            return Reply("It is 4 kg.\nFinal answer: 4 kg")
        return Reply("looks fine" if request.role == "judge" else f"{request.role} notes")

    summary, _ = solve(tmp_path, script, "--max-rollbacks", "0")
    records = [json.loads(line) for line in (Path(summary["run_dir"]) / "transcript.jsonl").read_text().splitlines()]
    details = {record["event"]: record.get("detail") for record in records if record.get("type") == "event"}
    assert details["solver_unparsed"].startswith("the Answers' reply was not valid JSON")
    assert details["critic_unparseable"] == ("the Judge's reply has no usable scores; "
                                            "the chat ends and the Answers' answer stands")
    assert (possessive("Units"), possessive("Critic"), possessive("Boss")) == ("Units'", "Critic's", "Boss'")


def test_a_prompt_path_in_a_config_elsewhere_is_found_beside_it(tmp_path) -> None:
    elsewhere, here = tmp_path / "elsewhere", tmp_path / "here"
    (elsewhere / "mine").mkdir(parents=True)
    here.mkdir()
    prompt = yaml.safe_load((REPO / "prompts" / "scholar.yaml").read_text())
    prompt["system"] = "MARKER of my own Scholar. " + prompt["system"]
    (elsewhere / "mine" / "scholar.yaml").write_text(yaml.safe_dump(prompt))
    steps = yaml.safe_load((REPO / "agents.yaml").read_text())["team"]["steps"]
    steps[2]["prompt"] = "mine/scholar.yaml"
    (elsewhere / "agents.yaml").write_text(yaml.safe_dump({"team": {"steps": steps}, **PAPER_LAYOUT}))
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": [review(5)]})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["solve", "-q", "Which mass?", "--config", "../elsewhere/agents.yaml", "--runs-dir",
                           str(here / "runs"), "--json"], env=env, cwd=here)
    assert result.returncode == 0, result.stderr[-3000:]
    scholar = next(request for request in server.received if request.role == "scholar")
    assert scholar.messages[0]["content"].startswith("MARKER of my own Scholar.")

    steps[2]["prompt"] = "mine/missing.yaml"
    (elsewhere / "agents.yaml").write_text(yaml.safe_dump({"team": {"steps": steps}, **PAPER_LAYOUT}))
    result = run_maps(["solve", "-q", "Which mass?", "--config", "../elsewhere/agents.yaml"],
                      env=clean_env(OPENAI_API_KEY=TEST_KEY), cwd=here)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    config = (elsewhere / "agents.yaml").resolve()
    assert result.stderr.startswith(f"error: {config}: team.steps[2].prompt: the prompt file mine/missing.yaml does not "
                                    f"exist (looked at {config.parent / 'mine' / 'missing.yaml'} and ")
    assert str(Path("maps_autogen") / "settings" / "defaults" / "mine" / "missing.yaml") in result.stderr
