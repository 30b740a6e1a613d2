"""What a server says of its context window, read from its own answers (llama.cpp's GET /props and
GET /v1/models recorded from the real server, vLLM's /v1/models written from its ModelCard), what
its context-size errors mean, and what a reply cut short is said to be cut by.
tests/e2e/test_real_servers.py reads the same from llama.cpp's real server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from maps_autogen.model._context import (
    FITTED_KEY,
    context_in_error,
    context_in_models,
    context_in_props,
    cut_off_detail,
    exceeds_context,
    read_server_context,
    repeating,
)
from maps_autogen.settings._endpoints import ResolvedModel
from tests.helpers.fake_openai import FakeOpenAI

FIXTURES = Path(__file__).parents[1] / "fixtures" / "servers"


def body(name: str) -> Any:
    """The JSON body of a recorded (or documented) answer."""
    return json.loads(json.loads((FIXTURES / f"{name}.json").read_text())["body"])


def message(name: str) -> str:
    return str(body(name)["error"]["message"])


def test_llama_cpps_own_answers_say_one_slots_context() -> None:
    # recorded from llama.cpp's server started with --ctx-size 8192 and --parallel 2: 4,096 per request
    props = context_in_props(body("llamacpp_props"))
    assert props is not None and (props.tokens, props.server) == (4096, "llama.cpp")
    assert "default_generation_settings.n_ctx" in props.source
    models = context_in_models(body("llamacpp_models"), "any name: llama.cpp serves one model")
    assert models is not None and (models.tokens, models.server) == (4096, "llama.cpp")
    assert "--ctx-size" in props.how_to_raise


def test_vllms_models_list_says_max_model_len_of_the_model_asked_for() -> None:
    found = context_in_models(body("vllm_models"), "Qwen/Qwen2-VL-7B-Instruct")
    assert found is not None and (found.tokens, found.server) == (4096, "vllm")
    assert "--max-model-len" in found.how_to_raise
    # several models listed: only the one asked for (by id or alias) counts
    listed = {"data": [{"id": "a", "max_model_len": 1000}, {"id": "b", "aliases": ["bee"], "max_model_len": 2000}]}
    assert context_in_models(listed, "bee").tokens == 2000  # type: ignore[union-attr]
    assert context_in_models(listed, "c") is None


@pytest.mark.parametrize("value", [True, -1, 0, "4096", 4096.0, 10**12, None, [4096]])
def test_an_impossible_context_is_no_context(value: Any) -> None:
    assert context_in_props({"default_generation_settings": {"n_ctx": value}}) is None
    assert context_in_models({"data": [{"id": "m", "max_model_len": value}]}, "m") is None


@pytest.mark.parametrize("shape", [None, [], "text", {"data": "x"}, {"data": [1, "x", None]}, {"data": [{"meta": []}]}])
def test_answers_of_any_other_shape_say_nothing(shape: Any) -> None:
    assert context_in_models(shape, "m") is None and context_in_props(shape) is None


def test_the_server_is_asked_with_the_probe_header_and_no_call_is_made() -> None:
    with FakeOpenAI(props=body("llamacpp_props")) as server:
        found = read_server_context(httpx.Client(), server.base_url, "m", {"Authorization": "Bearer k"})
    assert found is not None and found.tokens == 4096
    assert [probe.path for probe in server.probes] == ["/v1/models", "/props"]
    assert server.probes[0].headers["authorization"] == "Bearer k"  # a gateway's models list may need the key
    assert all(probe.headers["x-maps-probe"] == "context" for probe in server.probes)
    assert server.received == []  # no call


def test_a_service_that_says_nothing_leaves_the_context_unknown() -> None:
    with FakeOpenAI() as server:  # OpenAI's shape: models without a context, no /props
        assert read_server_context(httpx.Client(), server.base_url, "gpt-4o", {}) is None
    assert read_server_context(httpx.Client(), "http://127.0.0.1:9/v1", "m", {}) is None  # nothing listens


def test_an_answer_over_its_bound_is_not_read() -> None:
    huge = [{"id": f"model-{n}", "max_model_len": 4096, "pad": "x" * 5000} for n in range(1000)]
    with FakeOpenAI(models=huge) as server:
        assert read_server_context(httpx.Client(), server.base_url, "model-1", {}) is None


@pytest.mark.parametrize(("said", "tokens"), [
    (message("llamacpp_context_exceeded"), 4096),  # llama.cpp's server
    (message("litellm_context_exceeded"), 4096),  # the same through a LiteLLM proxy
    (message("vllm_context_exceeded"), 4096),  # vLLM
    ("This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
     128000),  # OpenAI
    ("context_length_exceeded", None),
])
def test_every_servers_context_error_is_recognised_with_its_size(said: str, tokens: int | None) -> None:
    assert exceeds_context(said)
    assert context_in_error(said) == tokens


@pytest.mark.parametrize("said", ["Invalid model name passed in model=gpt-5", "context: missing field",
                                  "The request's max_tokens is too large"])
def test_other_errors_are_not_taken_for_a_context_error(said: str) -> None:
    assert not exceeds_context(said)


def model(**extra: Any) -> ResolvedModel:
    fields: dict[str, Any] = dict(endpoint_name="openai", kind="openai", model="m", base_url="http://x/v1",
                                  timeout_s=60, max_retries=0, json_mode="schema", stream=False, temperature=0,
                                  max_tokens=512, max_tokens_key="team.steps[3].model.max_tokens in agents.yaml")
    return ResolvedModel(**{**fields, **extra})


def test_a_reply_stopped_below_its_cap_names_the_context_not_max_tokens() -> None:
    said = cut_off_detail("the Solver's", model(context_tokens=4096, context_raise="start it with a larger --ctx-size"),
                          512, 3800, 296, "Torque balance gives")
    assert "cut off after 296 tokens, below its max_tokens (512)" in said
    assert "the server's 4,096-token context was full (3,800 prompt and 296 reply tokens)" in said
    assert "--ctx-size" in said and "--max-tokens" in said and "raise team.steps" not in said


def test_a_reply_at_its_cap_names_the_key_its_step_uses() -> None:
    said = cut_off_detail("the Solver's", model(), 512, 300, 512, "Torque balance gives the mass as")
    assert said == ("the Solver's reply was cut off at max_tokens (512); raise team.steps[3].model.max_tokens in "
                    "agents.yaml for longer replies")
    fitted = cut_off_detail("the Solver's", model(max_tokens_key=FITTED_KEY, context_raise="start vLLM with a larger "
                                                  "--max-model-len"), 512, 300, 512, "Torque balance")
    assert "the cap maps fitted to the server's context: start vLLM with a larger --max-model-len" in fitted


def test_a_reply_going_round_in_a_loop_is_not_told_to_raise_max_tokens() -> None:
    loop = "The answer is the mass. " * 200
    said = cut_off_detail("the Scholar's", model(), 512, 300, 512, loop)
    assert "while repeating itself: a larger max_tokens would not end it" in said and "raise" not in said
    assert repeating(loop)
    prose = " ".join(f"Step {n}: the torque about the pivot is {n * 0.37:.3f} N m at {n * 11 % 97} cm." for n in range(80))
    assert not repeating(prose) and not repeating("short")


def test_openais_api_is_not_asked_and_a_silent_server_is_asked_once() -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        raise httpx.ConnectTimeout("no answer", request=request)

    http = httpx.Client(transport=httpx.MockTransport(handler))
    assert read_server_context(http, "https://api.openai.com/v1", "gpt-4o", {}) is None
    assert asked == []  # OpenAI's models list says no context: not asked at all
    assert read_server_context(http, "http://10.0.0.9:8000/v1", "m", {}) is None
    assert asked == ["http://10.0.0.9:8000/v1/models"]  # no answer: /props is not asked too
