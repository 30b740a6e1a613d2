"""`maps config` prints the team that runs (written out, whichever file or built-in team it comes
from, never only its path) and each step's model, endpoint and sampling settings, as the README
says; no secret appears."""

from __future__ import annotations

from pathlib import Path

import yaml

from maps_autogen.settings._config import defaults_dir, find_team_file, load_named_team
from tests.helpers.common import TEST_KEY, clean_env, run_maps, write_config


def printed_team(stdout: str) -> dict:
    """The `team:` section of maps config's YAML."""
    return yaml.safe_load(stdout)["team"]


def test_config_team_big_five_prints_the_team_not_a_path(tmp_path: Path) -> None:
    result = run_maps(["config", "--team", "big_five"], env=clean_env(OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    big_five = load_named_team("big_five", tmp_path).config
    team = printed_team(result.stdout)
    assert [step["name"] for step in team["steps"]] == list(big_five.names)
    assert [step["personality"] for step in team["steps"]] == [step.personality for step in big_five.steps]
    assert f"# team: from --team big_five (written in {find_team_file('big_five', tmp_path)})" in result.stdout
    assert f"team: {defaults_dir()}" not in result.stdout


def test_config_names_each_step_s_model_endpoint_and_settings(tmp_path: Path) -> None:
    steps = load_named_team("maps", tmp_path).config.names
    own = len(steps) - 2  # one step on a model of its own
    write_config(tmp_path / "agents.yaml", **{f"team.steps.{own}.model": {"name": "gpt-4o-mini", "max_tokens": 500}})
    result = run_maps(["config", "--seed", "7"], env=clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL="http://127.0.0.1:9/v1"),
                      cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = {line.split(":")[0].strip("# "): line for line in result.stdout.splitlines() if line.startswith("#   ")}
    assert sorted(lines) == sorted(steps)
    assert "gpt-4o-mini on endpoint openai (http://127.0.0.1:9/v1)" in lines[steps[own]]
    assert "max_tokens=500" in lines[steps[own]] and "seed=7" in lines[steps[own]]
    assert all("gpt-4o on endpoint openai" in lines[step] and "seed=7" in lines[step] for step in steps if step != steps[own])
    assert TEST_KEY not in result.stdout
