"""A run against a server with a small context either fits or stops before its first call with
the fix (eval/_context_fit.py): the server's own answer (llama.cpp's GET /props and vLLM's
/v1/models, as recorded or documented in tests/fixtures/servers/) read before the first call, the
reply budgets capped so that every request fits, announced and recorded as sent; refused, naming
the setting to change, when they cannot fit or when the user chose them for every step; and a
context-size error the service sends anyway named as what it is. tests/e2e/test_real_servers.py
runs the same against llama.cpp's real server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers.common import TEST_KEY, clean_env, critic_json, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, Reply, RoleScript, recorded

REPO = Path(__file__).parents[2]
LEVER = REPO / "examples" / "lever" / "problem.yaml"
FIXTURES = REPO / "tests" / "fixtures" / "servers"


def answered(**overrides: list[Reply | str]) -> RoleScript:
    return RoleScript({"interpreter": ["A lever."], "aligner": ["Balanced."], "scholar": ["m1 d1 = m2 d2."],
                       "solver": [solver_json("A")], "critic": [critic_json(5, 5, 5, 5)], **overrides})


def said(name: str) -> Any:
    return json.loads(json.loads((FIXTURES / f"{name}.json").read_text())["body"])


def llama_props(n_ctx: int) -> dict[str, Any]:
    """llama.cpp's recorded GET /props with another slot context."""
    props = said("llamacpp_props")
    props["default_generation_settings"]["n_ctx"] = n_ctx
    return dict(props)


def solve(server: FakeOpenAI, folder: Path, *extra: str):
    env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
    return run_maps(["solve", "--problem", str(LEVER), "--runs-dir", str(folder / "runs"), *extra], env=env, cwd=folder)


def one_error(result) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    return line


def test_a_4096_token_slot_gets_budgets_every_request_fits_in(tmp_path: Path) -> None:
    with FakeOpenAI(answered(), props=llama_props(4096)) as server:
        result = solve(server, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "with a context of 4,096 tokens per request (said by llama.cpp's GET /props, default_generation_settings.n_ctx)" in result.stderr
    line = next(line for line in result.stderr.splitlines() if "max_tokens capped at" in line)
    cap = int(line.split("max_tokens capped at ")[1].split()[0])
    assert 256 <= cap < 2048 and "was: interpreter 3072, aligner 3072, scholar 4096, solver 8192" in line
    assert "--max-tokens N chooses another cap" in line and "--ctx-size" in line
    # said before the first call, and every request carries the cap (the defaults are 2,048 to 8,192)
    assert {request.body["max_tokens"] for request in server.received} == {cap}
    assert [probe.path for probe in server.probes] == ["/v1/models", "/props"]
    run = json.loads(next((tmp_path / "runs").glob("*/run.json")).read_text())
    assert {m["sent"]["max_tokens"] for m in run["models"].values() if m.get("sent")} == {cap}
    assert {m["server_context"] for m in run["models"].values()} == {4096}


def test_a_large_context_changes_nothing_and_says_so(tmp_path: Path) -> None:
    with FakeOpenAI(answered(), props=llama_props(131072)) as server:
        result = solve(server, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "every request fits at the steps' own max_tokens" in result.stderr
    assert sorted({request.body["max_tokens"] for request in server.received}) == [2048, 3072, 4096, 8192]


def test_a_context_too_small_for_any_reply_stops_before_the_first_call(tmp_path: Path) -> None:
    with FakeOpenAI(answered(), props=llama_props(1024)) as server:
        result = solve(server, tmp_path)
        assert server.received == []  # not one call
    assert result.returncode == 2
    error = one_error(result)
    assert "a context of 1,024 tokens per request" in error and "--ctx-size" in error and "--without STEP" in error
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_max_tokens_chosen_for_every_step_is_refused_with_the_cap_that_fits(tmp_path: Path) -> None:
    with FakeOpenAI(answered(), props=llama_props(4096)) as server:
        result = solve(server, tmp_path, "--max-tokens", "3000")
        assert server.received == []
    assert result.returncode == 2
    error = one_error(result)
    assert "max_tokens 3000 for every step does not fit" in error
    cap = int(error.split("pass --max-tokens ")[1].split()[0])
    with FakeOpenAI(answered(), props=llama_props(4096)) as server:  # the fix, as written, runs
        fixed = solve(server, tmp_path, "--max-tokens", str(cap))
    assert fixed.returncode == 0, fixed.stderr
    assert "every request fits at the steps' own max_tokens" in fixed.stderr


def test_vllms_max_model_len_fits_an_eval_and_its_manifest_records_what_is_sent(tmp_path: Path) -> None:
    entry = said("vllm_models")["data"][0]
    with FakeOpenAI(answered(), models=[{**entry, "id": "gpt-4o"}]) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "custom", "--data", str(REPO / "examples" / "bench.jsonl"), "--runs-dir",
                           str(tmp_path / "runs")], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "a context of 4,096 tokens per request (said by vLLM's max_model_len in GET /v1/models)" in result.stderr
    assert "--max-model-len" in result.stderr
    caps = {request.body["max_tokens"] for request in server.received}
    assert len(caps) == 1 and next(iter(caps)) < 2048
    manifest = json.loads(next((tmp_path / "runs").glob("eval-*/manifest.json")).read_text())
    assert {m["max_tokens"] for m in manifest["models"].values()} == caps
    # the estimate printed before the first call counts the fitted budgets
    assert f"max_tokens {next(iter(caps))})" in result.stderr


def test_a_context_error_names_max_tokens_and_the_context_not_the_key(tmp_path: Path) -> None:
    for name in ("llamacpp_context_exceeded", "litellm_context_exceeded", "vllm_context_exceeded"):
        with FakeOpenAI(answered(aligner=[recorded(name)])) as server:  # a server that says nothing of its context
            result = solve(server, tmp_path)
        assert result.returncode == 1
        error = one_error(result)
        assert "the request is longer than the model's context (4,096 tokens)" in error, error
        assert "--max-tokens N" in error and "--ctx-size" in error
        assert "API key" not in error and "check the model name" not in error


def test_a_reply_cut_by_the_context_says_so_and_names_how_to_raise_it(tmp_path: Path) -> None:
    cut = Reply("Torque balance gives", finish_reason="length",
                usage_body={"prompt_tokens": 3900, "completion_tokens": 196})
    with FakeOpenAI(answered(scholar=[cut]), props=llama_props(4096)) as server:
        result = solve(server, tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    assert "the Scholar's reply was cut off after 196 tokens, below its max_tokens" in out
    assert "the server's 4,096-token context was full (3,900 prompt and 196 reply tokens)" in out
    assert "raise team.steps" not in out
