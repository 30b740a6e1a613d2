"""Reasoning models: a service that refuses `temperature` and `top_p` (and `max_tokens`) with
OpenAI's documented HTTP 400 (tests/fixtures/servers/openai_unsupported_*.json: message, param,
code). docs/configuration.md's recipe runs as written against it; a refused field otherwise stops
the run at once with one line naming the setting that sent it (the top-level model's, a step's
own, every_step's, the command line's) and how to leave it out, never the model name or the key."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.common import REPO, TEST_KEY, clean_env, make_png, run_maps, write_config
from tests.helpers.eval_fixtures import ProblemScript, write_custom_jsonl
from tests.helpers.fake_openai import FIXTURES, FakeOpenAI, Received, Reply, Script
from tests.helpers.solve_cli import rollback_script, solve_args

REFUSED = ("temperature", "top_p", "max_tokens")


def refusal(field: str) -> Reply:
    """OpenAI's 400 for a field the model does not take, as the fixture records it, for `field`."""
    name = "openai_unsupported_max_tokens" if field == "max_tokens" else "openai_unsupported_parameter"
    kept = json.loads((FIXTURES / f"{name}.json").read_text())
    body = kept["body"] if field == "max_tokens" else kept["body"].replace("temperature", field)
    return Reply(status=kept["status"], raw_body=body.encode(), headers={"content-type": kept["content_type"]})


def reasoning_service(answers: Script) -> Script:
    """A service that refuses every request carrying a field a reasoning model does not take."""
    def script(request: Received) -> Reply:
        carried = [field for field in REFUSED if field in request.body]
        return refusal(carried[0]) if carried else answers(request)
    return script


def documented_recipe() -> dict[str, Any]:
    """The agents.yaml docs/configuration.md shows under "Reasoning models", as written."""
    docs = (REPO / "docs" / "configuration.md").read_text()
    section = docs.split("#### Reasoning models", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, flags=re.DOTALL)
    assert block is not None
    loaded = yaml.safe_load(block.group(1))
    assert isinstance(loaded, dict)
    return loaded


def test_the_documented_recipe_runs_as_written_against_a_service_refusing_temperature(tmp_path: Path) -> None:
    recipe = documented_recipe()
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump(recipe))
    png = make_png(tmp_path / "lever.png")
    with FakeOpenAI(reasoning_service(rollback_script())) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        solved = run_maps([*solve_args(png, tmp_path), "--json"], env=env, cwd=tmp_path)
        assert solved.returncode == 0, solved.stderr
        data, answers = write_custom_jsonl(tmp_path / "data", 2)
        server.script = reasoning_service(ProblemScript(answers))
        evaluated = run_maps(["eval", "custom", "--data", str(data), "--runs-dir", str(tmp_path / "evals"),
                              "--no-cache", "--quiet"], env=env, cwd=tmp_path)
        assert evaluated.returncode == 0, evaluated.stderr
        sent = [request.body for request in server.received if request.method == "POST"]
    assert len(sent) > 10
    assert not [body for body in sent if any(field in body for field in REFUSED)]
    assert {body["model"] for body in sent} == {recipe["model"]["name"]}
    assert all(body["reasoning_effort"] == "medium" and body["max_completion_tokens"] == 16384 for body in sent)


def refused_line(tmp_path: Path, *extra: str, config: Path | None = None) -> tuple[str, int]:
    """What `maps solve` says (stderr) when the service refuses a field, and the requests it sent."""
    png = make_png(tmp_path / "lever.png")
    args = [*solve_args(png, tmp_path, *extra), "--model", "o4-mini"]
    if config is not None:
        args += ["--config", str(config)]
    with FakeOpenAI(reasoning_service(rollback_script())) as server:
        done = run_maps(args, env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
        sent = len([request for request in server.received if request.method == "POST"])
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if "does not take" in line]
    assert len(lines) == 1, done.stderr
    line = lines[0]
    # never blamed on the model name or the key
    assert "check the model name" not in line and "API key" not in line and TEST_KEY not in done.stderr
    return line, sent


def test_the_built_in_temperature_is_named_with_how_to_drop_it(tmp_path: Path) -> None:
    line, sent = refused_line(tmp_path)
    assert "'temperature'" in line and "Unsupported parameter" in line
    assert "sent by model.temperature" in line
    assert "set model.temperature: null in a copy of the built-in agents.yaml (in your folder or --config): no request then carries temperature" in line
    assert sent == 1  # every request would meet it: fatal at once, not retried


def test_the_command_lines_temperature_is_named_as_the_flag(tmp_path: Path) -> None:
    line, _ = refused_line(tmp_path, "--temperature", "0.3")
    assert "sent by --temperature" in line and "drop --temperature" in line


@pytest.mark.parametrize("changes, key", [
    # a step's own model (the Interpreter, steps[0] of the team in agents.yaml)
    ({"model.temperature": None, "team.steps.0.model": {"temperature": 0.2, "max_tokens": 1024}},
     "team.steps[0].model.temperature"),
    # every step's top_p, written in the file
    ({"model.temperature": None, "every_step.top_p": 0.9}, "every_step.top_p"),
])
def test_a_setting_in_the_file_is_named_by_its_key(tmp_path: Path, changes: dict[str, Any], key: str) -> None:
    config = write_config(tmp_path / "agents.yaml", **changes)
    line, _ = refused_line(tmp_path, config=config)
    assert f"sent by {key}" in line and f"set {key}: null in {config}" in line


def test_max_tokens_is_named_with_the_endpoints_token_field(tmp_path: Path) -> None:
    config = write_config(tmp_path / "agents.yaml", **{"model.temperature": None})
    line, _ = refused_line(tmp_path, config=config)
    assert "'max_tokens'" in line and "max_tokens_field: max_completion_tokens" in line


def test_the_unsupported_value_shape_is_read_too() -> None:
    from maps_autogen.model._service_answers import unsupported_parameter

    kept = json.loads(json.loads((FIXTURES / "openai_unsupported_value.json").read_text())["body"])
    assert unsupported_parameter(kept["error"]["message"]) == "temperature"
    assert unsupported_parameter("litellm.UnsupportedParamsError: openai does not support parameters: "
                                 "['top_p'], for model=o3-mini.") == "top_p"
    assert unsupported_parameter("Invalid model name passed in model=o4") is None
