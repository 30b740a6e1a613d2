"""Configuration habits of neighbouring tools: a partial agents.yaml merged onto the defaults
(`maps config` shows the result), OPENAI_API_BASE, AG2's OAI_CONFIG_LIST, and AG2's runtime
logging around a solve."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from pathlib import Path

import pytest

from maps_autogen.settings._config import merge_onto
from tests.helpers.common import TEST_KEY, all_text_in, clean_env, critic_json, make_png, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, RoleScript

KEY_ALPHA = "sk-list-alpha-0123456789-secret"
KEY_BETA = "sk-list-beta-9876543210-secret"


def script() -> RoleScript:
    return RoleScript({"interpreter": ["CAPTION: a lever."], "solver": [solver_json("A")], "critic": [critic_json()]})


def test_merge_rules() -> None:
    defaults = {"team": {"manager_personality": "calm", "steps": [{"name": "a"}, {"name": "b"}]},
                "endpoints": {"openai": {"kind": "openai", "base_url": None, "timeout_s": 120}},
                "critic": {"threshold": None, "max_rollbacks": 3}}
    user = {"team": {"steps": [{"name": "c"}]}, "critic": {"max_rollbacks": 1},
            "endpoints": {"vllm": {"kind": "openai", "base_url": "http://x/v1"}, "openai": {"timeout_s": 5}}}
    merged = merge_onto(defaults, user)
    assert merged["team"] == {"steps": [{"name": "c"}], "manager_personality": "calm"}  # a list replaces whole
    assert merged["critic"] == {"max_rollbacks": 1, "threshold": None}
    assert list(merged["endpoints"]) == ["vllm", "openai"]  # the file's own first: `endpoint: auto` prefers them
    assert merged["endpoints"]["openai"] == {"timeout_s": 5, "kind": "openai", "base_url": None}
    # an endpoint redeclared as another kind replaces the default one
    assert merge_onto(defaults, {"endpoints": {"openai": {"kind": "local"}}})["endpoints"]["openai"] == {"kind": "local"}


def test_a_file_with_an_endpoint_and_a_model_only_runs_on_the_defaults(tmp_path: Path) -> None:
    config = tmp_path / "agents.yaml"
    config.write_text("endpoints:\n  vllm: {kind: openai, base_url: 'http://127.0.0.1:9/v1', api_key_env: null}\nmodel: {name: Qwen2-VL}\n")
    shown = run_maps(["config"], env=clean_env(), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert f"# endpoints: from {config}" in out and f"# model: from {config}" in out
    assert "# team: from built-in defaults" in out and "- name: interpreter" in out and "manager_personality" in out
    assert "using Qwen2-VL at http://127.0.0.1:9/v1" in out
    config.write_text("model: {name: Qwen2-VL, colour: blue}\n")
    bad = run_maps(["config"], env=clean_env(), cwd=tmp_path)
    assert bad.returncode == 2 and f"{config}: unknown key 'model.colour'" in bad.stderr and "Traceback" not in bad.stderr


def test_openai_api_base_is_honoured_even_as_a_full_url_and_a_conflict_is_named(png: Path, tmp_path: Path) -> None:
    args = ["solve", str(png), "-q", "Which mass?", "--runs-dir", str(tmp_path / "runs"), "--json"]
    with FakeOpenAI(script()) as server:
        result = run_maps(args, env=clean_env(OPENAI_API_BASE=f"{server.base_url}/chat/completions"), cwd=tmp_path)
        received = len(server.received)
    assert result.returncode == 0, result.stderr
    assert received > 0 and json.loads(result.stdout)["final_answer"] == "A"
    both = run_maps(args, env=clean_env(OPENAI_BASE_URL="http://127.0.0.1:9/v1", OPENAI_API_BASE="http://127.0.0.1:8/v1"), cwd=tmp_path)
    assert both.returncode == 2 and "Traceback" not in both.stderr
    assert "OPENAI_BASE_URL (http://127.0.0.1:9/v1) and OPENAI_API_BASE (http://127.0.0.1:8/v1)" in both.stderr


def test_an_ag2_config_list_works_unchanged_with_its_keys_masked(png: Path, tmp_path: Path) -> None:
    with FakeOpenAI(script()) as alpha, FakeOpenAI(script()) as beta:
        entries = [{"model": "alpha-model", "api_key": KEY_ALPHA, "base_url": alpha.base_url, "price": [0.001, 0.002], "tags": ["fast"]},
                   {"model": "beta-model", "api_key": KEY_BETA, "base_url": beta.base_url, "api_type": "openai"}]
        listing = tmp_path / "OAI_CONFIG_LIST"
        listing.write_text(json.dumps(entries))
        args = ["solve", str(png), "-q", "Which mass?", "--runs-dir", str(tmp_path / "runs"), "--json", "--config-list", str(listing)]
        picked = run_maps([*args, "--model", "beta-model"], env=clean_env(), cwd=tmp_path)
        assert picked.returncode == 0, picked.stderr
        assert alpha.received == [] and beta.received
        assert {request.headers.get("authorization") for request in beta.received} == {f"Bearer {KEY_BETA}"}
        assert {request.body["model"] for request in beta.received} == {"beta-model"}
        first = run_maps(args, env=clean_env(), cwd=tmp_path)  # no --model: the list's first entry
        assert first.returncode == 0, first.stderr
        assert alpha.received and json.loads(first.stdout)["usage"]["cost"] > 0  # priced by the list's price
    # the list in a variable, as AG2 reads OAI_CONFIG_LIST
    shown = run_maps(["config", "--config-list", "OAI_CONFIG_LIST"], env=clean_env(OAI_CONFIG_LIST=json.dumps(entries)), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "config_list_1:" in shown.stdout and "- beta-model" in shown.stdout and "using alpha-model" in shown.stdout
    outputs = picked.stdout + picked.stderr + first.stdout + first.stderr + shown.stdout + shown.stderr + all_text_in(tmp_path / "runs")
    assert KEY_ALPHA not in outputs and KEY_BETA not in outputs


def test_a_config_list_for_another_api_is_refused_by_name(tmp_path: Path) -> None:
    listing = tmp_path / "list.json"
    listing.write_text(json.dumps([{"model": "claude", "api_type": "anthropic", "api_key": KEY_ALPHA}]))
    result = run_maps(["config", "--config-list", str(listing)], env=clean_env(), cwd=tmp_path)
    assert result.returncode == 2 and "entry 1 (claude) left out: api_type 'anthropic' is not OpenAI's chat API" in result.stderr
    assert "Traceback" not in result.stderr and KEY_ALPHA not in result.stderr + result.stdout


@pytest.mark.parametrize("logger_type", ["sqlite", "file"])
def test_ag2_runtime_logging_records_the_calls_of_a_solve(logger_type: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    import autogen.runtime_logging

    from maps_autogen.orchestration._solving import assemble_team, solve_problem
    from maps_autogen.problem._problem import build_problem
    from maps_autogen.settings._config import load_config

    monkeypatch.chdir(tmp_path)
    problem = build_problem("Which mass?", image_sources=[str(make_png(tmp_path / "lever.png"))], max_side=512)
    target = tmp_path / ("calls.db" if logger_type == "sqlite" else "calls.log")
    with FakeOpenAI(script()) as server:
        team = assemble_team(load_config(cwd=tmp_path), {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": TEST_KEY})
        config = {"dbname": str(target)} if logger_type == "sqlite" else {"filename": str(target)}
        caplog.set_level(logging.INFO)
        autogen.runtime_logging.start(logger_type=logger_type, config=config)
        done: list = []
        try:  # in a thread of its own, which builds its own agents (they are kept per thread)
            worker = threading.Thread(target=lambda: done.append(solve_problem(problem, team, runs_dir=tmp_path / "runs")))
            worker.start()
            worker.join()
        finally:
            autogen.runtime_logging.stop()
    result = done[0]
    calls = len(result.outcome.calls)
    assert calls == 5 and result.outcome.final_answer == "A"
    if logger_type == "sqlite":
        db = sqlite3.connect(target)
        logged = [json.loads(row[0]) for row in db.execute("SELECT request FROM chat_completions")]
        agents = {row[0] for row in db.execute("SELECT name FROM agents")}
        db.close()
        assert not [r for r in caplog.records if "Failed to log" in r.getMessage() or r.levelno >= logging.ERROR]
        assert {"Interpreter", "Aligner", "Scholar", "Solver", "Critic", "UserProxy", "Manager"} <= agents
    else:
        lines = target.read_text().splitlines()
        records = [json.loads(line) for line in lines if line.startswith("{")]
        logged = [record["request"] for record in records if "invocation_id" in record]
        replies = [json.loads(record["response"])["text"] for record in records if "invocation_id" in record]
        assert replies == [call.completion.text for call in result.outcome.calls]  # each reply, as JSON
        agents = {record["agent_name"] for record in records if "agent_name" in record}
        # every agent is recorded; AG2's own record of its model wrapper is what it cannot write
        assert not [line for line in lines if "Failed to log new agent" in line]
        assert {"Interpreter", "Aligner", "Scholar", "Solver", "Critic", "UserProxy", "Manager"} <= agents
    assert len(logged) == calls  # every call of the solve is in AG2's log
    assert TEST_KEY not in target.read_bytes().decode("utf-8", "replace")
