"""The team is data: renamed, removed, added and reordered steps run through the real `maps
solve` (its console entry point, in-process for speed) against the scripted server; the
requests on the wire carry exactly each step's declared inputs, images, personality and the
task preamble; the reviewer's schema follows the configured dimensions; rollbacks work on any
team; the Big Five team scores on [0, 1]; every validation error is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from maps_autogen.cli import main
from tests.helpers.common import REPO, TEST_KEY, critic_json, make_png, solver_json
from tests.helpers.fake_openai import FakeOpenAI, Received, RoleScript
from tests.helpers.team import DEFAULT, by_name, solve, steps, write_team_config

PREAMBLE = "A user has brought a scientific problem"










def shown(request: Received, labels: dict[str, str]) -> set[str]:
    """Which labelled inputs a request shows (by the heading of each)."""
    text = request.user_text()
    return {name for name, heading in labels.items() if f"## {heading}\n" in text}


LABELS = {"question": "Question", "context": "Context", "options": "Answer options",
          **{step["name"]: step["label"].replace("{{step}}", step["name"].title())
             for step in DEFAULT["team"]["steps"] if "label" in step}}


def assert_every_request_carries_personality_and_preamble(server: FakeOpenAI, team: list[dict[str, Any]]) -> None:
    personality = {step["name"]: step["personality"] for step in team}
    for request in server.received:
        system = request.messages[0]
        assert system["role"] == "system" and f"Your temperament: {personality[request.role]}" in system["content"], request.role
        assert request.user_text().startswith(PREAMBLE), request.role


def test_a_renamed_step_runs_under_its_new_name_with_its_declared_inputs(tmp_path, monkeypatch, capsys) -> None:
    team = steps()
    by_name(team, "scholar")["name"] = "researcher"
    by_name(team, "researcher")["label"] = "Findings of the Researcher"
    for step in team:
        step["inputs"] = ["researcher" if name == "scholar" else name for name in step["inputs"]]
    by_name(team, "critic")["reviews"] = ["interpreter", "aligner", "researcher", "solver"]
    write_team_config(tmp_path, team)
    script = RoleScript({"interpreter": ["P-caption"], "aligner": ["L-aligned"], "researcher": ["R-found"],
                         "solver": [solver_json("A")], "critic": [critic_json()]})
    with FakeOpenAI(script) as server:
        code, summary, err = solve(tmp_path, monkeypatch, capsys, server)
    assert code == 0, err
    assert summary["final_answer"] == "A" and summary["stop_reason"] == "critic_passed"
    assert server.roles() == ["interpreter", "aligner", "researcher", "solver", "critic"]
    labels = {**LABELS, "researcher": "Findings of the Researcher"}
    expected = {"interpreter": {"question", "context", "options"}, "aligner": {"question", "context", "options", "interpreter"},
                "researcher": {"question", "context", "options", "interpreter", "aligner"},
                "solver": {"question", "options", "interpreter", "aligner", "researcher"},
                "critic": {"interpreter", "aligner", "researcher", "solver"}}
    for request in server.received:
        assert shown(request, labels) == expected[request.role], request.role
        assert bool(request.image_urls()) == (request.role == "interpreter")
    assert "R-found" in server.received[3].user_text()
    assert_every_request_carries_personality_and_preamble(server, team)
    transcript = [json.loads(line) for line in (Path(summary["run_dir"]) / "transcript.jsonl").read_text().splitlines()]
    assert [r["agent"] for r in transcript if r["type"] == "message"][1:] == ["Interpreter", "Aligner", "Researcher", "Solver", "Critic"]


def test_a_removed_step_and_without_give_the_same_requests(tmp_path, monkeypatch, capsys) -> None:
    """Deleting the Scholar from the list, `--without scholar` or `enabled: false`: no Scholar
    request, nobody shows its output, and the Critic scores three dimensions."""
    three = json.dumps({"reasoning": "r", "scores": {"caption": 5, "alignment": 5, "solution": 5}, "need_feedback": False,
                        "worst_step": "solution", "feedback": {"caption": "c?", "alignment": "a?", "solution": "s?"}})
    script = lambda: RoleScript({"solver": [solver_json("A")], "critic": [three]})  # noqa: E731
    team = [step for step in steps() if step["name"] != "scholar"]
    for step in team:
        step["inputs"] = [name for name in step["inputs"] if name != "scholar"]
        if "reviews" in step:
            step["reviews"] = [name for name in step["reviews"] if name != "scholar"]
    (tmp_path / "removed").mkdir()
    write_team_config(tmp_path / "removed", team)
    with FakeOpenAI(script()) as removed:
        code, summary, err = solve(tmp_path / "removed", monkeypatch, capsys, removed)
    assert code == 0, err
    (tmp_path / "ablated").mkdir()
    write_team_config(tmp_path / "ablated")
    with FakeOpenAI(script()) as ablated:
        code, summary, err = solve(tmp_path / "ablated", monkeypatch, capsys, ablated, "--without", "scholar")
    assert code == 0, err
    disabled_team = steps()
    by_name(disabled_team, "scholar")["enabled"] = False
    (tmp_path / "disabled").mkdir()
    write_team_config(tmp_path / "disabled", disabled_team)
    with FakeOpenAI(script()) as disabled:
        code, summary, err = solve(tmp_path / "disabled", monkeypatch, capsys, disabled)
    assert code == 0, err
    assert [r.user_text() for r in disabled.received] == [r.user_text() for r in ablated.received]
    for server in (removed, ablated, disabled):
        assert server.roles() == ["interpreter", "aligner", "solver", "critic"]
        assert all("scholar" not in shown(r, LABELS) for r in server.received)
        critic = server.received[-1].body["response_format"]["json_schema"]["schema"]
        assert critic["properties"]["scores"]["required"] == ["caption", "alignment", "solution"]
    assert [r.user_text() for r in removed.received] == [r.user_text() for r in ablated.received]


def test_without_the_interpreter_and_images_to_next_step_the_images_go_to_the_next_step(tmp_path, monkeypatch, capsys) -> None:
    write_team_config(tmp_path, images={"to_next_step": True})  # the paper's ablation (the default) sends them nowhere
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": [critic_json(caption=None)]})) as server:
        code, summary, err = solve(tmp_path, monkeypatch, capsys, server, "--without", "interpreter")
    assert code == 0, err
    assert server.roles() == ["aligner", "scholar", "solver", "critic"]
    assert [bool(r.image_urls()) for r in server.received] == [True, False, False, False]


def test_an_added_verifier_is_scored_and_the_schema_lists_exactly_the_configured_dimensions(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "verifier.yaml").write_text(
        "system: 'You are the Verifier. Your temperament: {{personality}}'\n"
        "instruction: 'Check the solution against every given value.'\n"
        "revision: 'Check again with the question in mind.'\n")
    team = steps()
    verifier = {"name": "verifier", "prompt": "verifier.yaml", "label": "Verification", "inputs": ["question", "solver"],
                "critic_dimension": "verification", "personality": "Conscientiousness: you check every number twice."}
    team.insert(4, verifier)
    by_name(team, "critic")["inputs"].append("verifier")
    by_name(team, "critic")["reviews"] = ["aligner", "solver", "verifier"]  # the reviewer scores only these
    write_team_config(tmp_path, team)
    verdict = json.dumps({"reasoning": "r", "scores": {"alignment": 5, "solution": 5, "verification": 5}, "need_feedback": False,
                          "worst_step": "verification", "feedback": {"alignment": "a?", "solution": "s?", "verification": "v?"}})
    script = RoleScript({"solver": [solver_json("B")], "verifier": ["V-checked"], "critic": [verdict]})
    with FakeOpenAI(script) as server:
        code, summary, err = solve(tmp_path, monkeypatch, capsys, server)
    assert code == 0, err
    assert summary["final_answer"] == "B" and summary["stop_reason"] == "critic_passed"
    assert server.roles() == ["interpreter", "aligner", "scholar", "solver", "verifier", "critic"]
    assert shown(server.received[4], {**LABELS, "verifier": "Verification"}) == {"question", "solver"}
    critic = server.received[-1]
    schema = critic.body["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"])[0] == "evaluation"  # the evaluation before the scores
    assert schema["properties"]["scores"]["required"] == ["alignment", "solution", "verification"]
    assert schema["properties"]["worst_step"]["enum"] == ["alignment", "solution", "verification"]
    assert "- verification: Verification" in critic.user_text() and "- caption" not in critic.user_text()
    assert "## Verification\nV-checked" in critic.user_text()
    assert_every_request_carries_personality_and_preamble(server, team)


def test_a_reordered_team_runs_in_its_declared_order(tmp_path, monkeypatch, capsys) -> None:
    """The Scholar before the Aligner: the Scholar can no longer read the Aligner, the Aligner
    now reads the Scholar."""
    team = steps()
    aligner, scholar = by_name(team, "aligner"), by_name(team, "scholar")
    scholar["inputs"] = ["question", "context", "interpreter"]
    aligner["inputs"] = ["question", "context", "options", "interpreter", "scholar"]
    team = [team[0], scholar, aligner, *team[3:]]
    write_team_config(tmp_path, team)
    with FakeOpenAI(RoleScript({"scholar": ["S-known"], "solver": [solver_json("A")], "critic": [critic_json()]})) as server:
        code, summary, err = solve(tmp_path, monkeypatch, capsys, server)
    assert code == 0, err
    assert server.roles() == ["interpreter", "scholar", "aligner", "solver", "critic"]
    assert shown(server.received[1], LABELS) == {"question", "context", "interpreter"}
    assert shown(server.received[2], LABELS) == {"question", "context", "options", "interpreter", "scholar"}
    assert "S-known" in server.received[2].user_text()


def test_a_rollback_to_the_first_step_then_a_second_rollback(tmp_path, monkeypatch, capsys) -> None:
    """Algorithm 1: the Critic reviews after every rollback; each re-run carries its previous
    output and the Critic's question for it."""
    script = RoleScript({
        "interpreter": ["CAPTION v1", "CAPTION v2"],
        "solver": [solver_json("A"), solver_json("B"), solver_json("C")],
        "critic": [critic_json(caption=2, worst="caption", feedback={"caption": "Where is the pivot drawn?"}),
                   critic_json(solution=3, feedback={"solution": "Do the torques balance?"}),
                   critic_json()],
    })
    with FakeOpenAI(script) as server:
        code, summary, err = solve(tmp_path, monkeypatch, capsys, server)
    assert code == 0, err
    assert summary["rollbacks"] == ["interpreter", "solver"] and summary["stop_reason"] == "critic_passed"
    assert summary["final_answer"] == "C"
    assert server.roles() == ["interpreter", "aligner", "scholar", "solver", "critic",
                              "interpreter", "aligner", "scholar", "solver", "critic", "solver", "critic"]
    first_rerun, second_rerun = server.received[5].user_text(), server.received[10].user_text()
    assert "CAPTION v1" in first_rerun and "Where is the pivot drawn?" in first_rerun
    assert "CAPTION v2" in server.received[6].user_text()  # later steps read the revised caption
    assert "Do the torques balance?" in second_rerun and '"final_answer": "B"' in second_rerun
    run = json.loads((Path(summary["run_dir"]) / "run.json").read_text())
    assert [r["question"] for r in run["rollbacks"]] == ["Where is the pivot drawn?", "Do the torques balance?"]


def test_the_big_five_team_scores_on_zero_to_one(tmp_path, monkeypatch, capsys) -> None:
    def verdict(solution: float) -> str:
        scores = {"caption": 0.9, "alignment": 0.95, "knowledge": 0.85, "solution": solution}
        return json.dumps({"reasoning": "r", "scores": scores, "need_feedback": solution < 0.8, "worst_step": "solution",
                           "feedback": {dim: f"{dim}?" for dim in scores}})

    script = RoleScript({"solver": [solver_json("A"), solver_json("B")], "critic": [verdict(0.5), verdict(0.9)]})
    write_team_config(tmp_path)
    with FakeOpenAI(script) as server:
        code, summary, err = solve(tmp_path, monkeypatch, capsys, server, "--team", "big_five")
    assert code == 0, err
    assert summary["rollbacks"] == ["solver"] and summary["stop_reason"] == "critic_passed" and summary["final_answer"] == "B"
    critic = server.received[4]
    score = critic.body["response_format"]["json_schema"]["schema"]["properties"]["scores"]["properties"]["solution"]
    assert score == {"type": "number", "minimum": 0, "maximum": 1}
    assert "from 0 to 1" in critic.user_text() and "0.8" not in critic.user_text()  # the pass mark is not told
    five = yaml.safe_load((REPO / "maps_autogen" / "settings" / "defaults" / "teams" / "big_five.yaml").read_text())["steps"]
    assert_every_request_carries_personality_and_preamble(server, five)
    assert "Openness" in server.received[0].messages[0]["content"]


def _bad(change) -> list[dict[str, Any]]:
    team = steps()
    change(team)
    return team


INVALID = {
    "unknown input": (lambda t: by_name(t, "solver")["inputs"].append("scholr"), "team.steps[3] (solver).inputs: 'scholr' is not a step"),
    "reads a later step": (lambda t: (by_name(t, "interpreter")["inputs"].append("aligner"), by_name(t, "aligner")["inputs"].remove("interpreter")),
                           "team.steps[0] (interpreter).inputs: 'aligner' runs later"),
    "cycle": (lambda t: (by_name(t, "aligner")["inputs"].append("scholar")), "team.steps[1] (aligner).inputs: a cycle: aligner -> scholar -> aligner"),
    "two final answers": (lambda t: by_name(t, "scholar").update(final_answer=True), "team.steps[3] (solver).final_answer: a second final-answer step"),
    "disabled final answer": (lambda t: by_name(t, "solver").update(enabled=False), "team.steps[3] (solver).enabled: the final-answer step is disabled"),
    "reviewer scores unknown": (lambda t: by_name(t, "critic")["reviews"].append("verifier"), "team.steps[4] (critic).reviews: 'verifier' is not a step"),
    "missing personality": (lambda t: by_name(t, "aligner").pop("personality"), "team.steps[1] (aligner).personality: missing"),
    "describer without images": (lambda t: by_name(t, "interpreter").update(sees_images=False),
                                 "team.steps[0] (interpreter).sees_images: this step describes the images"),
}


@pytest.mark.parametrize("case", list(INVALID))
def test_each_validation_error_is_one_line_naming_file_and_key(case: str, tmp_path, monkeypatch, capsys) -> None:
    change, needle = INVALID[case]
    config = write_team_config(tmp_path, _bad(change))
    code, _, err = solve(tmp_path, monkeypatch, capsys, None)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(f"error: {config.resolve()}: ") and needle in err, err
    assert not (tmp_path / "runs").exists()  # nothing half-written


def test_without_an_unknown_step_or_the_answer_step_is_refused(tmp_path, monkeypatch, capsys) -> None:
    code, _, err = solve(tmp_path, monkeypatch, capsys, None, "--without", "scholr")
    assert code == 2 and "--without scholr" in err and "interpreter, aligner, scholar, solver, critic" in err
    code, _, err = solve(tmp_path, monkeypatch, capsys, None, "--without", "solver")
    assert code == 2 and "gives the final answer" in err


def test_the_chat_runs_through_ag2_and_the_hook_chose_each_speaker(tmp_path: Path) -> None:
    """The GroupChatManager asks our selection hook for every speaker, and AG2's own group chat
    records the speakers the hook returned, in the plan's order (a plain loop would leave AG2's
    group chat empty and never call the hook)."""
    from autogen import GroupChatManager

    from maps_autogen.orchestration._chat import agents_for
    from maps_autogen.orchestration._solving import assemble_team, solve_problem
    from maps_autogen.problem._problem import build_problem
    from maps_autogen.settings._config import load_config
    from tests.helpers.agent_reuse import second_chat_shape

    loaded = load_config(write_team_config(tmp_path))
    problem = build_problem("Q-question", image_sources=[str(make_png(tmp_path / "f.png"))], max_side=1568)
    script = RoleScript({"solver": [solver_json("A"), solver_json("B")],
                         "critic": [critic_json(knowledge=3, worst="knowledge"), critic_json()]})
    with FakeOpenAI(script) as server:
        team = assemble_team(loaded, env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": TEST_KEY})
        agents = agents_for(second_chat_shape(team, problem))  # the agents this thread's chat will use
        # The group chat AG2's GroupChatManager.run_chat works on (AG2 registers a copy of ours).
        groupchat = next(entry["config"] for entry in agents.manager._reply_func_list if entry["reply_func"] is GroupChatManager.run_chat)
        hook = groupchat.speaker_selection_method
        chosen: list[str | None] = []

        def spy(last_speaker: Any, chat: Any) -> Any:
            speaker = hook(last_speaker, chat)
            chosen.append(speaker.name if speaker is not None else None)
            return speaker

        groupchat.speaker_selection_method = spy
        result = solve_problem(problem, team, runs_dir=tmp_path / "runs")
    assert result.outcome.stop_reason == "critic_passed"
    plan = ["Interpreter", "Aligner", "Scholar", "Solver", "Critic", "Scholar", "Solver", "Critic"]
    assert chosen == [*plan, None]
    assert [message["name"] for message in groupchat.messages] == ["UserProxy", *plan]
    assert [r.role for r in server.received] == [name.lower() for name in plan]


def test_eval_takes_any_step_of_the_team_for_without(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:
        main(["eval", "mathvista", "--data", str(tmp_path / "none"), "--without", "verifier"])
    assert done.value.code == 2 and "--without verifier" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:  # a step of the Big Five team passes the check, then the data is missing
        main(["eval", "mathvista", "--data", str(tmp_path / "none"), "--team", "big_five", "--without", "aligner"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and "--without" not in err and "does not exist" in err
