"""The config mistakes of a first hour, each refused before any model call with one line that
names the file, the key and the fix: an unreachable reviewer threshold, a missing prompt file,
a step's unknown endpoint, a step deleted while others still read it; and `maps` names the
default team."""

from __future__ import annotations

from pathlib import Path

import yaml

from maps_autogen.settings._config import load_config
from tests.helpers.common import REPO, TEST_KEY, clean_env, run_maps, write_config
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.solve_errors import assert_one_line_error

QUESTION = ["-q", "What is 3 times 4?"]


def test_a_threshold_the_reviewer_scale_cannot_reach_is_refused(tmp_path: Path) -> None:
    # in the team: the reviewer step's own threshold
    team_threshold = write_config(tmp_path / "team.yaml", **{"team.steps.4.threshold": 7})
    result = run_maps(["config", "--config", str(team_threshold)], env=clean_env(), cwd=tmp_path)
    assert_one_line_error(result, 2, str(team_threshold), "team.steps[4] (critic).threshold: 7 is above the reviewer's "
                          "score scale (1-5)", "use a threshold from 1 to 5")
    # in the config: critic.threshold, checked against the team's scale (Big Five scores on [0, 1])
    five = write_config(tmp_path / "five.yaml", **{"team": "big_five", "critic.threshold": 3})
    result = run_maps(["config", "--config", str(five)], env=clean_env(), cwd=tmp_path)
    assert_one_line_error(result, 2, str(five), "critic.threshold 3 is above the reviewer's score scale (0-1)",
                          "use a threshold from 0 to 1")
    # on the command line, through maps eval against the scripted server: refused before any call
    with FakeOpenAI(lambda request: None) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(tmp_path), "--threshold", "6",
                           "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
        assert_one_line_error(result, 2, "--threshold 6 is above the reviewer's score scale (1-5)")
        assert not server.received and not (tmp_path / "runs").exists()
    result = run_maps(["config", "--team", "big_five", "--threshold", "3"], env=clean_env(), cwd=tmp_path)
    assert_one_line_error(result, 2, "--threshold 3 is above the reviewer's score scale (0-1)")
    allowed = run_maps(["config", "--team", "big_five", "--threshold", "1"], env=clean_env(), cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr


def test_missing_prompt_file_and_step_endpoint_name_their_file_and_key(tmp_path: Path) -> None:
    no_prompt = write_config(tmp_path / "prompt.yaml", **{"team.steps.2.prompt": "prompts/scholar_v2.yaml"})
    no_task = write_config(tmp_path / "task.yaml", **{"task_prompt": "prompts/my_task.yaml"})
    no_endpoint = write_config(tmp_path / "endpoint.yaml", **{"team.steps.3.model": {"endpoint": "azure"}})
    with FakeOpenAI(lambda request: None) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)

        def solve(config: Path):
            return run_maps(["solve", *QUESTION, "--config", str(config), "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)

        assert_one_line_error(solve(no_prompt), 2, f"{no_prompt}: team.steps[2].prompt: the prompt file",
                              "scholar_v2.yaml does not exist", "set team.steps[2].prompt to an existing file")
        assert_one_line_error(solve(no_task), 2, f"{no_task}: task_prompt: the prompt file", "my_task.yaml")
        assert_one_line_error(solve(no_endpoint), 2, f"{no_endpoint}: team.steps[3].model.endpoint 'azure' is not declared",
                              "use one of: ")
        assert not server.received


def test_a_deleted_step_is_named_everywhere_it_is_read_with_the_way_to_leave_it_out(tmp_path: Path) -> None:
    data = yaml.safe_load((REPO / "maps_autogen" / "settings" / "defaults" / "agents.yaml").read_text())
    kept = data["team"]["steps"]
    data["team"]["steps"] = [step for step in kept if step["name"] != "scholar"]
    deleted = tmp_path / "deleted.yaml"
    deleted.write_text(yaml.safe_dump(data))
    result = run_maps(["config", "--config", str(deleted)], env=clean_env(), cwd=tmp_path)
    assert_one_line_error(result, 2, "team.steps[2] (solver).inputs: 'scholar' is not a step",
                          "team.steps[3] (critic).inputs: 'scholar' is not a step",
                          "team.steps[3] (critic).reviews: 'scholar' is not a step",
                          "enabled: false", "--without scholar")
    # what the error suggests works
    data["team"]["steps"] = [dict(step, enabled=False) if step["name"] == "scholar" else step for step in kept]
    disabled = tmp_path / "disabled.yaml"
    disabled.write_text(yaml.safe_dump(data))
    result = run_maps(["config", "--config", str(disabled)], env=clean_env(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_maps_names_the_default_team(tmp_path: Path) -> None:
    default = load_config(cwd=tmp_path).team.config
    assert load_config(cwd=tmp_path, team=Path("maps")).team.config == default
    named = write_config(tmp_path / "agents.yaml", team="maps")
    assert load_config(named).team.config == default
    result = run_maps(["config", "--team", "maps"], env=clean_env(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # the team itself, and where it is written (the built-in agents.yaml)
    assert "# team: from --team maps (written in " in result.stdout and "agents.yaml)\nteam:\n  manager_personality:" in result.stdout
    assert all(f"- name: {name}\n" in result.stdout for name in default.names)
    result = run_maps(["config", "--team", "nosuch"], env=clean_env(), cwd=tmp_path)
    assert_one_line_error(result, 2, "built-in team: big_five, maps")
