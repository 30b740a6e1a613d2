"""An AG2 user's OAI_CONFIG_LIST works unchanged: every key AG2 documents for an OpenAI-style
entry is honoured (the request carries what the key says, and the run records it as sent,
secrets masked) or named in one warning line, never a refusal; `price` prices the model;
Azure entries call the deployment URL with `?api-version=` and an `api-key` header (or Azure's
v1 API); and whatever a variable named as a config list holds is never echoed."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from maps_autogen.model._pool import RequestPacer
from tests.helpers.common import all_text_in, clean_env, critic_json, make_png, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, Received, RoleScript

KEY = "sk-cl-keys-5f3a9c1e7b2d4068"
HEADER_SECRET = "hk-ab12cd34ef56gh78ij90"  # a gateway's credential passed as a default header
AZURE_KEY = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"  # Azure keys are 32 hex digits


def script() -> RoleScript:
    return RoleScript({"interpreter": ["CAPTION: a lever."], "solver": [solver_json("A")], "critic": [critic_json()]})


def solve(tmp_path: Path, entries: list[dict] | dict | str, *extra: str, env: dict[str, str] | None = None):
    listing = tmp_path / "OAI_CONFIG_LIST"
    listing.write_text(entries if isinstance(entries, str) else json.dumps(entries))
    png = make_png(tmp_path / "lever.png")
    args = ["solve", str(png), "-q", "Which mass?", "--runs-dir", str(tmp_path / "runs"), "--json",
            "--config-list", str(listing), *extra]
    return run_maps(args, env=env or clean_env(), cwd=tmp_path)


def run_json(tmp_path: Path) -> dict:
    (run_dir,) = [path for path in (tmp_path / "runs").iterdir() if path.is_dir() and not path.name.startswith(".")]
    return json.loads((run_dir / "run.json").read_text())


def posts(server: FakeOpenAI) -> list[Received]:
    return [request for request in server.received if request.method == "POST"]


def test_an_entry_with_every_openai_key_solves_and_each_request_carries_what_it_says(tmp_path: Path) -> None:
    with FakeOpenAI(script()) as server:
        entry = {
            "model": "alpha-model", "api_key": KEY, "base_url": server.base_url, "api_type": "openai",
            "temperature": 0.3, "top_p": 0.9, "max_tokens": 321, "seed": 7, "stop": ["\n\nEND"],
            "presence_penalty": 0.1, "frequency_penalty": 0.2, "user": "lab-7", "reasoning_effort": "low",
            "default_headers": {"X-Title": "maps test", "Helicone-Auth": f"Bearer {HEADER_SECRET}"},
            "extra_headers": {"X-Team": "physics"}, "default_query": {"tenant": "physics"},
            "extra_body": {"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}},
            "organization": "org-lab", "project": "proj-maps", "timeout": 60, "max_retries": 1, "stream": True,
            "api_rate_limit": 100, "price": [0.001, 0.002],
            # AG2 keys that cannot apply to maps: named once, never a refusal
            "tags": ["fast"], "cache_seed": 42, "response_format": {"type": "json_object"}, "n": 1,
            "api_version": "2024-10-21",  # (Azure's only)
        }
        result = solve(tmp_path, [entry])
        received = posts(server)
    assert result.returncode == 0, result.stderr
    assert received
    for request in received:
        body = request.body
        assert (body["model"], body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == (
            "alpha-model", 0.3, 0.9, 321, 7)
        assert body["stop"] == ["\n\nEND"] and body["presence_penalty"] == 0.1 and body["frequency_penalty"] == 0.2
        assert body["user"] == "lab-7" and body["reasoning_effort"] == "low" and body["stream"] is True
        assert body["top_k"] == 20 and body["chat_template_kwargs"] == {"enable_thinking": False}
        assert "n" not in body and "tags" not in body and "cache_seed" not in body
        headers = request.headers
        assert headers["authorization"] == f"Bearer {KEY}" and headers["x-title"] == "maps test"
        assert headers["helicone-auth"] == f"Bearer {HEADER_SECRET}" and headers["x-team"] == "physics"
        assert headers["openai-organization"] == "org-lab" and headers["openai-project"] == "proj-maps"
        assert request.query == {"tenant": "physics"}
        assert "api-version" not in request.query
    # One warning line names every key maps does not use, and why.
    (warning,) = [line for line in result.stderr.splitlines() if "not used by maps" in line]
    for name in ("tags", "cache_seed", "response_format", "n (", "api_version"):
        assert name in warning
    outcome = json.loads(result.stdout)
    assert outcome["usage"]["cost"] > 0  # priced by the entry's price
    # What was sent is recorded, with the header's credential masked.
    sent = run_json(tmp_path)["models"]["solver"]["sent"]
    assert sent["temperature"] == 0.3 and sent["top_k"] == 20 and sent["reasoning_effort"] == "low"
    assert sent["headers"]["X-Title"] == "maps test" and sent["headers"]["Helicone-Auth"] == "***"
    assert sent["query"] == {"tenant": "physics"}
    everything = result.stdout + result.stderr + all_text_in(tmp_path / "runs")
    assert KEY not in everything and HEADER_SECRET not in everything


def test_max_completion_tokens_is_sent_under_its_own_name_and_the_cut_names_it(tmp_path: Path) -> None:
    cut = RoleScript({"interpreter": ["CAPTION"], "solver": [solver_json("A")],
                      "critic": [critic_json()]})
    with FakeOpenAI(cut) as server:
        entry = {"model": "o4-mini", "api_key": KEY, "base_url": server.base_url, "max_completion_tokens": 900,
                 "reasoning_effort": "high"}
        result = solve(tmp_path, [entry])
        received = posts(server)
    assert result.returncode == 0, result.stderr
    assert all(r.body["max_completion_tokens"] == 900 and "max_tokens" not in r.body for r in received)
    assert all(r.body["reasoning_effort"] == "high" for r in received)
    assert run_json(tmp_path)["models"]["critic"]["sent"]["max_completion_tokens"] == 900


def test_an_azure_entry_calls_the_deployment_url_with_api_version_and_an_api_key_header(tmp_path: Path) -> None:
    with FakeOpenAI(script()) as server:
        resource = server.base_url.removesuffix("/v1")  # https://RESOURCE.openai.azure.com
        # azure_endpoint wins over base_url, as the OpenAI SDK's Azure client (AG2's) reads them
        entry = {"model": "my-gpt4o", "api_type": "azure", "azure_endpoint": resource, "base_url": "http://127.0.0.1:9",
                 "api_version": "2024-10-21", "api_key": AZURE_KEY, "max_completion_tokens": 500}
        result = solve(tmp_path, [entry])
        received = posts(server)
    assert result.returncode == 0, result.stderr
    for request in received:
        assert request.path == "/openai/deployments/my-gpt4o/chat/completions?api-version=2024-10-21"
        assert request.headers["api-key"] == AZURE_KEY and "authorization" not in request.headers
        assert request.body["max_completion_tokens"] == 500
    sent = run_json(tmp_path)["models"]["solver"]["sent"]
    assert sent["headers"] == {"api-key": "***"} and sent["query"] == {"api-version": "2024-10-21"}
    assert sent["url"].endswith("/openai/deployments/my-gpt4o/chat/completions")
    assert AZURE_KEY not in result.stdout + result.stderr + all_text_in(tmp_path / "runs")


def test_an_azure_v1_entry_and_an_agents_yaml_azure_endpoint(tmp_path: Path) -> None:
    with FakeOpenAI(script()) as server:
        resource = server.base_url.removesuffix("/v1")
        entry = {"model": "gpt-4o", "api_type": "azure", "base_url": f"{resource}/openai/v1/", "api_key": AZURE_KEY}
        result = solve(tmp_path, [entry])
        v1 = posts(server)
        (tmp_path / "runs2").mkdir()
        (tmp_path / "agents.yaml").write_text(
            "endpoints:\n  azure:\n    kind: openai\n    api_type: azure\n"
            f"    base_url: {resource}\n    api_version: '2025-01-01-preview'\n"
            "    api_key_env: AZURE_OPENAI_API_KEY\n    default_model: dep-4o\n"
            "    max_tokens_field: max_completion_tokens\n")
        png = make_png(tmp_path / "lever.png")
        yaml_run = run_maps(["solve", str(png), "-q", "Which mass?", "--runs-dir", str(tmp_path / "runs2")],
                            env=clean_env(AZURE_OPENAI_API_KEY=AZURE_KEY), cwd=tmp_path)
        legacy = posts(server)[len(v1):]
    assert result.returncode == 0, result.stderr
    assert {r.path for r in v1} == {"/openai/v1/chat/completions"}
    assert all(r.headers["api-key"] == AZURE_KEY and r.body["model"] == "gpt-4o" for r in v1)
    assert yaml_run.returncode == 0, yaml_run.stderr
    assert {r.path for r in legacy} == {"/openai/deployments/dep-4o/chat/completions?api-version=2025-01-01-preview"}
    assert all(r.headers["api-key"] == AZURE_KEY and "max_completion_tokens" in r.body for r in legacy)


def test_an_azure_entry_without_api_version_is_refused_with_both_ways_out(tmp_path: Path) -> None:
    entry = {"model": "dep", "api_type": "azure", "base_url": "https://res.openai.azure.com", "api_key": AZURE_KEY}
    result = solve(tmp_path, [entry])
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "entry 1: api_type azure needs api_version" in result.stderr and "/openai/v1" in result.stderr


def test_an_entry_for_another_api_is_left_out_with_a_warning_not_a_refusal(tmp_path: Path) -> None:
    with FakeOpenAI(script()) as server:
        entries = [{"model": "claude-sonnet", "api_type": "anthropic", "api_key": "sk-ant-api03-abcdef0123456789xyz"},
                   {"model": "alpha-model", "api_key": KEY, "base_url": server.base_url}]
        result = solve(tmp_path, entries)
    assert result.returncode == 0, result.stderr
    (warning,) = [line for line in result.stderr.splitlines() if "left out" in line]
    assert "entry 1 (claude-sonnet) left out: api_type 'anthropic'" in warning
    assert "sk-ant-api03" not in result.stdout + result.stderr


def test_entries_with_different_settings_become_different_endpoints(tmp_path: Path) -> None:
    with FakeOpenAI(script()) as server:
        entries = [{"model": "m", "api_key": KEY, "base_url": server.base_url, "temperature": 0.1},
                   {"model": "m-hot", "api_key": KEY, "base_url": server.base_url, "temperature": 0.9}]
        result = solve(tmp_path, entries, "--model", "m-hot")
        received = posts(server)
    assert result.returncode == 0, result.stderr
    assert {(r.body["model"], r.body["temperature"]) for r in received} == {("m-hot", 0.9)}


def test_a_config_list_value_of_the_wrong_type_names_the_entry_and_key(tmp_path: Path) -> None:
    result = solve(tmp_path, [{"model": "m", "api_key": KEY, "temperature": "warm"}])
    assert result.returncode == 2 and "entry 1: temperature must be a number from 0 to 2" in result.stderr
    assert "Traceback" not in result.stderr and KEY not in result.stderr


def test_api_rate_limit_spaces_the_requests() -> None:
    pacer = RequestPacer(4.0)  # 4 a second: turns 0.25 s apart
    cancel = threading.Event()
    started = time.monotonic()
    for _ in range(3):
        pacer.wait(cancel)
    assert time.monotonic() - started >= 0.5  # the third turn comes two intervals after the first


# ----- the variable (or file) naming the list: never echoed ------------------------------------

@pytest.mark.parametrize("value, says", [
    (json.dumps({"model": "gpt-4o", "api_key": KEY}), "holds one JSON object, not a list of them"),
    (f"[{{'model': 'gpt-4o', 'api_key': '{KEY}'}}]", "is not valid JSON"),
    (KEY, "holds neither JSON nor the path of an existing file"),
    (f"/no/such/dir/{KEY}.json", "holds neither JSON nor the path of an existing file"),
])
def test_a_variable_holding_the_wrong_shape_is_never_echoed(tmp_path: Path, value: str, says: str) -> None:
    result = run_maps(["config", "--config-list", "OAI_CONFIG_LIST"], env=clean_env(OAI_CONFIG_LIST=value),
                      cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert "$OAI_CONFIG_LIST" in line and says in line
    assert KEY not in result.stdout + result.stderr and KEY[3:15] not in result.stdout + result.stderr


def test_a_list_behind_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    with FakeOpenAI(script()) as server:
        value = "\ufeff" + json.dumps([{"model": "alpha-model", "api_key": KEY, "base_url": server.base_url}])
        shown = run_maps(["config", "--config-list", "OAI_CONFIG_LIST"], env=clean_env(OAI_CONFIG_LIST=value),
                         cwd=tmp_path)
        file_result = solve(tmp_path, "\ufeff" + json.dumps([{"model": "alpha-model", "api_key": KEY,
                                                               "base_url": server.base_url}]))
    assert shown.returncode == 0, shown.stderr
    assert "using alpha-model" in shown.stdout and KEY not in shown.stdout + shown.stderr
    assert file_result.returncode == 0, file_result.stderr


def test_a_key_given_as_the_lists_name_is_never_echoed(tmp_path: Path) -> None:
    result = run_maps(["config", "--config-list", KEY], env=clean_env(), cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert KEY not in result.stdout + result.stderr and KEY[3:15] not in result.stderr
