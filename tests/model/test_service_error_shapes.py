"""Each service's error shapes, replayed byte for byte by the scripted server from
tests/fixtures/servers/ (each fixture's `source` says where its shape comes from): an error
inside an HTTP 200 (OpenRouter), FastAPI's `{"detail": ...}`, Gemini's JSON array of errors,
Anthropic's envelope, Ollama's and Azure's, an error event inside a stream (vLLM, OpenRouter,
the SSE `event: error`), a redirect, vLLM's limit on images per request, and replies that are
not errors but say something: content null with finish_reason length (a reasoning model that
spent its budget), content_filter, content as a list of parts. Each gives one line naming the
service's own message (and the fix), retried only when retrying can help."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maps_autogen._util._errors import FatalServiceError, ServiceError
from maps_autogen.model._client import ChatBackend
from maps_autogen.settings._endpoints import ResolvedModel
from tests.helpers.common import TEST_KEY, clean_env, critic_json, make_png, run_maps, solver_json, write_config
from tests.helpers.fake_openai import FIXTURES, FakeOpenAI, Reply, RoleScript, recorded

HI = [{"role": "user", "content": "hi"}]


def backend(server: FakeOpenAI, *, stream: bool = False, max_retries: int = 2) -> ChatBackend:
    model = ResolvedModel(endpoint_name="svc", kind="openai", model="m", base_url=server.base_url, timeout_s=30,
                          max_retries=max_retries, json_mode="none", stream=stream, temperature=0.0, max_tokens=64)
    return ChatBackend(model)


def raised_by(name: str, *, stream: bool = False, max_retries: int = 2) -> tuple[ServiceError, int]:
    """The error a backend raises when every request gets the recording `name`, and how many
    requests it sent."""
    with FakeOpenAI(lambda request: recorded(name)) as server:
        with pytest.raises(ServiceError) as raised:
            backend(server, stream=stream, max_retries=max_retries).complete(HI, role="solver")
        return raised.value, len(server.received)


def body_of(name: str) -> str:
    return json.loads((FIXTURES / f"{name}.json").read_text())["body"]


# ----- errors a service wraps its own way: the service's words, and a retry only where it helps --

@pytest.mark.parametrize("name, words, fatal, sent", [
    # OpenRouter: the model failed after the request was accepted: 200 with error.code 502, retried
    ("openrouter_error_in_200", "HTTP 502: Provider returned error", False, 3),
    # OpenRouter: a request error whose status (402) is in the body: not retried
    ("openrouter_error_in_200_no_credit", "HTTP 402: Insufficient credits", False, 1),
    ("fastapi_detail_not_found", "HTTP 404: Not Found", True, 1),
    ("fastapi_detail_validation", "HTTP 422: body.messages: Field required", False, 1),
    ("gemini_error_array", 'Unknown name "parallel_tool_calls": Cannot find field.', False, 1),
    ("gemini_error_array_quota", "HTTP 429: Resource has been exhausted (e.g. check quota).", False, 3),
    ("anthropic_compat_error", "HTTP 404: model: claude-nonexistent", True, 1),
    ("ollama_model_not_found", 'HTTP 404: model "llava" not found, try pulling it first', True, 1),
    ("azure_deployment_not_found", "HTTP 404: The API deployment for this resource does not exist.", True, 1),
    ("azure_content_filter_prompt", "HTTP 400: The response was filtered due to the prompt triggering", False, 1),
    # recorded from the real servers (python -m tests.helpers.real_servers)
    ("llamacpp_context_exceeded", "HTTP 400: request (9031 tokens) exceeds the available context size", False, 1),
    ("litellm_plain_text_500", "HTTP 500: Internal Server Error", False, 3),
])
def test_a_wrapped_error_names_the_services_words(name: str, words: str, fatal: bool, sent: int) -> None:
    error, requests = raised_by(name)
    assert requests == sent
    assert words in str(error), str(error)
    assert isinstance(error, FatalServiceError) is fatal
    assert "malformed" not in str(error) and "without message content" not in str(error)
    assert "\n" not in str(error)


@pytest.mark.parametrize("name, words, sent", [
    ("vllm_stream_error", "HTTP 400: The decoder prompt (length 33000) is longer than the maximum model length", 1),
    ("openrouter_stream_error", "Provider disconnected unexpectedly", 3),  # a server error: retried
    ("sse_error_event", "Overloaded", 3),
])
def test_an_error_inside_a_stream_is_the_services_error_not_an_incomplete_reply(name: str, words: str,
                                                                                sent: int) -> None:
    error, requests = raised_by(name, stream=True)
    assert requests == sent
    assert words in str(error) and "in its streamed reply" in str(error)
    assert "ended without" not in str(error) and "malformed" not in str(error)


@pytest.mark.parametrize("name, status, location", [
    ("nginx_redirect", 301, "https://models.example.org/v1/chat/completions"),
    ("litellm_redirect", 307, "http://127.0.0.1:41449/v1/chat/completions"),  # recorded from the real proxy
])
def test_a_redirect_is_named_with_where_it_points_and_is_not_followed(name: str, status: int, location: str) -> None:
    error, requests = raised_by(name)
    assert requests == 1 and isinstance(error, FatalServiceError)
    assert f"redirect (HTTP {status}) to {location}" in str(error)
    assert "set the base_url of endpoint 'svc'" in str(error) and "malformed" not in str(error)


@pytest.mark.parametrize("name, limit", [("vllm_too_many_images", 1), ("vllm_too_many_images_older", 2)])
def test_vllms_image_limit_is_fatal_at_once_with_both_fixes(name: str, limit: int) -> None:
    error, requests = raised_by(name)
    assert requests == 1 and isinstance(error, FatalServiceError)
    assert f"takes at most {limit} image" in str(error) and "--limit-mm-per-prompt" in str(error)
    assert f"max_images: {limit} on endpoint 'svc'" in str(error)
    assert "does not accept images" not in str(error)  # a limit, not a text-only model


# ----- replies that are not errors, and say something --------------------------------------

def test_a_reasoning_model_that_spent_its_budget_is_a_cut_not_a_retry() -> None:
    with FakeOpenAI(lambda request: recorded("reasoning_spent_budget")) as server:
        completion = backend(server).complete(HI, role="solver", check=lambda text: "empty" if not text else None)
        assert len(server.received) == 1  # the same request gives the same cut: never re-sent
    assert completion.text == "" and completion.finish_reason == "length" and completion.rejected == "empty"
    assert completion.completion_tokens == 64 and not completion.tokens_estimated


def test_a_content_filtered_reply_is_named_and_not_resent() -> None:
    with FakeOpenAI(lambda request: recorded("azure_content_filter_reply")) as server:
        completion = backend(server).complete(HI, role="solver", check=lambda text: "empty" if not text else None)
        assert len(server.received) == 1
    assert completion.finish_reason == "content_filter" and completion.text == ""


def test_content_as_a_list_of_parts_is_read_as_its_text_parts() -> None:
    with FakeOpenAI(lambda request: recorded("content_as_parts")) as server:
        completion = backend(server).complete(HI, role="interpreter")
        assert len(server.received) == 1
    assert completion.text == "CAPTION: a lever with two masses."  # the thinking part left out


def test_a_streamed_content_list_and_reasoning_are_read() -> None:
    chunks = [
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"thinking..."}}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"CAPTION: "}]}}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{"content":"a lever."},"finish_reason":"stop"}]}\n\n',
        b"data: [DONE]\n\n",
    ]
    with FakeOpenAI(lambda request: Reply(stream_bytes=chunks)) as server:
        completion = backend(server, stream=True).complete(HI, role="interpreter")
    assert completion.text == "CAPTION: a lever."


def test_a_message_without_content_says_what_it_had() -> None:
    refusal = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                                     "refusal": "I can't help with that."}, "finish_reason": "stop"}]}
    with FakeOpenAI(lambda request: Reply(raw_body=json.dumps(refusal).encode())) as server:
        with pytest.raises(ServiceError) as raised:
            backend(server, max_retries=0).complete(HI, role="solver")
    assert "without message content (the model refused: I can't help with that.)" in str(raised.value)


# ----- end to end: the terminal, the transcript and --json say it -------------------------------

def test_solve_names_a_content_filtered_step_in_the_transcript_and_in_json(tmp_path: Path) -> None:
    png = make_png(tmp_path / "figure.png")
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 3, "team.steps.3.model": {"max_tokens": 40}})
    filtered = recorded("azure_content_filter_reply")
    cut = Reply(solver_json("A")[:30], finish_reason="length")
    script = RoleScript({"interpreter": [filtered], "solver": [cut], "critic": [critic_json()]})
    with FakeOpenAI(script) as server:
        result = run_maps(["solve", str(png), "-q", "What is shown?", "--runs-dir", str(tmp_path / "runs"), "--json"],
                          env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
        roles = server.roles()
    assert result.returncode == 0, result.stderr
    assert roles.count("interpreter") == 1 and roles.count("solver") == 1
    outcome = json.loads(result.stdout)
    assert outcome["content_filtered"] == ["interpreter"] and outcome["max_tokens_reached"] == ["solver"]
    run_dir = next((tmp_path / "runs").iterdir())
    events = [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]
    (note,) = [event for event in events if event.get("event") == "content_filtered"]
    assert note["role"] == "interpreter" and "content filter stopped the Interpreter's reply" in note["detail"]
    (cut_note,) = [event for event in events if event.get("event") == "max_tokens_reached"]
    assert "cut off at max_tokens (40)" in cut_note["detail"]


def test_json_says_no_step_was_cut_when_none_was(tmp_path: Path) -> None:
    png = make_png(tmp_path / "figure.png")
    script = RoleScript({"interpreter": ["CAPTION"], "solver": [solver_json("A")], "critic": [critic_json()]})
    with FakeOpenAI(script) as server:
        result = run_maps(["solve", str(png), "-q", "What is shown?", "--runs-dir", str(tmp_path / "runs"), "--json"],
                          env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["max_tokens_reached"] == [] and outcome["content_filtered"] == []


def test_a_hostile_error_body_is_read_within_bounds() -> None:
    nested = ("[" * 900 + "]" * 900).encode()  # parses, and nests past any reading that recurses freely
    wrapped = ('{"detail":' * 400 + '"deep"' + "}" * 400).encode()
    for body in (nested, wrapped):
        for status in (400, 200):  # an error status, or an error inside an HTTP 200
            with FakeOpenAI(lambda request, body=body, status=status: Reply(status=status, raw_body=body)) as server:
                with pytest.raises(ServiceError) as raised:  # one line, never a RecursionError
                    backend(server, max_retries=0).complete(HI, role="solver")
            assert len(str(raised.value)) < 1000
