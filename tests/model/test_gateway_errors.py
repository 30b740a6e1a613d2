"""What real servers answer when every request will fail, replayed from recordings
(tests/fixtures/servers/, recorded from llama.cpp's server and a LiteLLM proxy by
`python -m tests.helpers.real_servers`), plus the client's rules for retries, cut replies and slow
streams. tests/e2e/test_real_servers.py runs the same servers for real."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maps_autogen._util._errors import FatalServiceError, ServiceError
from maps_autogen.model._client import ChatBackend, takes_no_images
from maps_autogen.settings._endpoints import ResolvedModel
from tests.helpers.common import TEST_KEY, clean_env, critic_json, make_png, run_maps, solver_json, write_config
from tests.helpers.eval_fixtures import write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Reply, RoleScript, recorded


def env_for(server: FakeOpenAI) -> dict[str, str]:
    return clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)


def error_lines(result) -> list[str]:
    assert "Traceback" not in result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


def replayed(name: str) -> str:
    """The service's own message in a recording."""
    return json.loads(json.loads((Path(__file__).parents[1] / "fixtures" / "servers" / f"{name}.json").read_text())["body"])["error"]["message"]


# ----- a model without image input, whatever the status code --------------------------------

@pytest.mark.parametrize("message", [
    replayed("llamacpp_no_image_input"),  # llama.cpp without a projector (HTTP 500)
    replayed("litellm_no_image_input"),  # the same, wrapped by LiteLLM (HTTP 500)
    "At most 0 image(s) may be provided in one prompt.",  # vLLM serving a text-only model (400)
    "Qwen2ForCausalLM is not a multimodal model",  # older vLLM
    "Invalid content type. image_url is only supported by certain models.",  # OpenAI
    "Model does not support images. Please use a model that does.",  # LM Studio
    "This model does not support image input",
    "vision is not supported for this model",
])
def test_every_way_of_saying_no_image_input_is_recognised(message: str) -> None:
    assert takes_no_images(message)


@pytest.mark.parametrize("message", [
    "At most 1 image(s) may be provided in one prompt.",  # a limit per request, not no images
    "Unsupported image format: image/tiff",
    "image format not supported",
    "Failed to load image from URL",
    "image too large: 40000000 pixels",
    "Invalid model name passed in model=gpt-5",
])
def test_errors_about_one_image_are_not_taken_for_a_text_only_model(message: str) -> None:
    assert not takes_no_images(message)


def test_a_text_only_server_refusing_an_image_with_http_500_is_fatal_at_once(tmp_path: Path) -> None:
    png = make_png(tmp_path / "figure.png")
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 4})
    with FakeOpenAI(lambda request: recorded("llamacpp_no_image_input")) as server:
        result = run_maps(["solve", str(png), "-q", "What is shown?", "--runs-dir", str(tmp_path / "runs")],
                          env=env_for(server), cwd=tmp_path)
        sent = len(server.received)
    assert result.returncode == 1
    (line,) = error_lines(result)
    assert sent == 1  # not retried: no retry gives the model eyes
    assert "does not accept images" in line and "image input is not supported" in line and "HTTP 500" in line
    assert "vision: false" in line and "endpoint 'openai'" in line and "vision model" in line
    assert "check that the service is up" not in line


# ----- gateway errors that every request meets stop an eval ----------------------------------

@pytest.mark.parametrize("fixture, attempts", [
    ("litellm_unknown_alias", 1),  # 400: never retried
    ("litellm_wrong_key", 1),  # 400 "No connected db.": never retried
    ("litellm_dead_backend", 2),  # 500: retried (max_retries 1), then given up
])
def test_the_same_gateway_error_on_two_problems_stops_the_eval(tmp_path: Path, fixture: str, attempts: int) -> None:
    data, _ = write_mathvista_jsonl(tmp_path / "mathvista", 12)
    runs = tmp_path / "runs"
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 1})
    with FakeOpenAI(lambda request: recorded(fixture)) as server:
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--concurrency", "2", "--quiet"],
                          env=env_for(server), cwd=tmp_path)
        sent = len(server.received)
    assert result.returncode == 1
    (line,) = error_lines(result)
    (run_dir,) = list(runs.glob("eval-*"))
    message = " ".join(replayed(fixture).split())
    assert "stopped early: two problems in a row failed with the same error" in line
    assert message[:60] in line  # the service's own words
    assert f"then continue with: maps eval mathvista --resume {run_dir}" in line
    assert "some problems failed" not in result.stderr
    failed = [json.loads(row) for row in (run_dir / "results.jsonl").read_text().splitlines()]
    # Bounded: the two problems in flight when the first one failed, and no more.
    assert len(failed) == 2 and all(row["status"] == "failed" for row in failed)
    assert sent == 2 * attempts  # the first step of each problem, each request `attempts` times
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] is False and "two problems in a row" in summary["stopped_by"]


# ----- retries: a 4xx is never retried, except 408/409/429 ------------------------------------

def backend(server: FakeOpenAI, **changes) -> ChatBackend:
    model = ResolvedModel(endpoint_name="openai", kind="openai", model="m", base_url=server.base_url, timeout_s=30,
                          max_retries=2, json_mode="schema", stream=False, temperature=0.0, max_tokens=64, **changes)
    return ChatBackend(model)


@pytest.mark.parametrize("status", [400, 413, 422])
def test_a_4xx_is_sent_once(status: int) -> None:
    with FakeOpenAI(lambda request: Reply("the request is wrong", status=status)) as server:
        with pytest.raises(ServiceError) as raised:
            backend(server).complete([{"role": "user", "content": "hi"}], role="solver")
        assert len(server.received) == 1
    assert f"HTTP {status}: the request is wrong" in str(raised.value)
    assert raised.value.cause and "the request is wrong" in raised.value.cause


@pytest.mark.parametrize("status", [408, 409, 429])
def test_408_409_429_are_retried(status: int) -> None:
    replies = iter([Reply("busy", status=status, headers={"Retry-After": "0"}), Reply("fine")])
    with FakeOpenAI(lambda request: next(replies)) as server:
        completion = backend(server).complete([{"role": "user", "content": "hi"}], role="solver")
        assert len(server.received) == 2
    assert completion.text == "fine" and completion.attempts == 2


def test_an_unknown_model_at_404_stays_fatal() -> None:
    with FakeOpenAI(lambda request: Reply("no such model", status=404)) as server:
        with pytest.raises(FatalServiceError):
            backend(server).complete([{"role": "user", "content": "hi"}], role="solver")


# ----- a reply cut at max_tokens is never re-sent ---------------------------------------------

def test_a_reply_cut_at_max_tokens_is_not_resent_and_the_key_is_named(tmp_path: Path) -> None:
    png = make_png(tmp_path / "figure.png")
    # The Solver (step 4, index 3) has its own model; the Critic uses the top-level one.
    write_config(tmp_path / "agents.yaml", **{"team.steps.3.model": {"max_tokens": 40}, "team.steps.4.model": None,
                                              "endpoints.openai.max_retries": 3})
    cut_solver = Reply(solver_json("A")[:30], finish_reason="length")
    cut_critic = Reply(critic_json()[:40], finish_reason="length")
    script = RoleScript({"interpreter": ["CAPTION"], "solver": [cut_solver], "critic": [cut_critic]})
    with FakeOpenAI(script) as server:
        result = run_maps(["solve", str(png), "-q", "What is shown?", "--runs-dir", str(tmp_path / "runs")],
                          env=env_for(server), cwd=tmp_path)
        roles = server.roles()
    assert roles.count("solver") == 1 and roles.count("critic") == 1, roles  # the same request gives the same cut
    output = result.stdout + result.stderr
    assert "the Solver's reply was cut off at max_tokens (40); raise team.steps[3].model.max_tokens in" in output
    assert "the Critic's reply was cut off at max_tokens (2048); raise model.max_tokens in" in output
    assert str(tmp_path / "agents.yaml") in output


# ----- streams: bounded by the wait for each chunk, not by their length -----------------------

def test_a_slow_steady_stream_outlasts_timeout_s(tmp_path: Path) -> None:
    png = make_png(tmp_path / "figure.png")
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.stream": True, "endpoints.openai.timeout_s": 1,
                                              "endpoints.openai.stream_idle_s": 20, "endpoints.openai.max_retries": 0})
    slow = Reply("a slow server writes this long description piece by piece, as CPUs do", trickle_s=0.25)
    script = RoleScript({"interpreter": [slow], "solver": [solver_json("A")], "critic": [critic_json()]})
    with FakeOpenAI(script) as server:
        result = run_maps(["solve", str(png), "-q", "What is shown?", "--runs-dir", str(tmp_path / "runs")],
                          env=env_for(server), cwd=tmp_path)
        assert server.roles().count("interpreter") == 1
    assert result.returncode == 0, result.stderr  # 9 pieces, 2+ seconds in all: longer than timeout_s


def test_a_stalled_stream_names_stream_idle_s(tmp_path: Path) -> None:
    png = make_png(tmp_path / "figure.png")
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.stream": True, "endpoints.openai.stream_idle_s": 1,
                                              "endpoints.openai.max_retries": 0})
    stalled = Reply("first piece, then nothing for a long while", trickle_s=8)
    with FakeOpenAI(RoleScript({"interpreter": [stalled]})) as server:
        result = run_maps(["solve", str(png), "-q", "What is shown?", "--runs-dir", str(tmp_path / "runs")],
                          env=env_for(server), cwd=tmp_path)
    assert result.returncode == 1
    (line,) = error_lines(result)
    assert "sent nothing of its streamed reply for 1s (endpoints.openai.stream_idle_s)" in line
    assert "raise endpoints.openai.stream_idle_s in agents.yaml" in line
