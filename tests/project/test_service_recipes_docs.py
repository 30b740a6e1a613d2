"""The service recipes and figures in the docs say what the services and our measurements say:
vLLM's reasoning parser streams its thinking in `reasoning` (the docs name it; our client reads it as
progress, not as the reply), OpenRouter's app attribution headers are `HTTP-Referer` and
`X-OpenRouter-Title` (the recipe's headers arrive as written), docs/paper.md attributes each
prompt-layout figure to what it was measured on (the embedded model's, llama.cpp's own server's), and
the "why our own HTTP client" figures (in the docs and the client's own docstring) come from
perf/client_vs_sdk.py, which prints both clients."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

from maps_autogen.model._client import ChatBackend
from maps_autogen.settings._endpoints import ResolvedModel
from tests.helpers.common import REPO
from tests.helpers.fake_openai import FakeOpenAI, recorded

CONFIGURATION = (REPO / "docs" / "configuration.md").read_text()
PAPER = (REPO / "docs" / "paper.md").read_text()


def recipe(service: str) -> str:
    """The bullet of docs/configuration.md's recipes that starts with `service`, as one line."""
    match = re.search(rf"^- {re.escape(service)}.*?(?=^- |^\n)", CONFIGURATION, flags=re.MULTILINE | re.DOTALL)
    assert match is not None, service
    return " ".join(match.group(0).split())


def test_vllms_reasoning_field_is_named_and_read_as_progress_not_reply() -> None:
    text = recipe("vLLM")
    assert "`reasoning` field" in text and "`reasoning_content`" in text
    model = ResolvedModel(endpoint_name="vllm", kind="openai", model="Qwen/Qwen3-8B", base_url="", timeout_s=30,
                          max_retries=0, json_mode="none", stream=True, temperature=0.0, max_tokens=64)
    with FakeOpenAI(lambda request: recorded("vllm_reasoning_stream")) as server:
        completion = ChatBackend(ResolvedModel(**{**model.__dict__, "base_url": server.base_url})).complete(
            [{"role": "user", "content": "hi"}], role="aligner")
    assert completion.text == "ALIGNED: 4 kg balances it."


def test_openrouters_attribution_headers_are_the_current_ones_and_arrive_as_written() -> None:
    text = recipe("OpenRouter")
    endpoint = yaml.safe_load(re.search(r"`(\{kind: openai, base_url: https://openrouter.*?\})`", text).group(1))
    assert set(endpoint["headers"]) == {"HTTP-Referer", "X-OpenRouter-Title"}
    with FakeOpenAI() as server:
        model = ResolvedModel(endpoint_name="openrouter", kind="openai", model=endpoint["default_model"],
                              base_url=server.base_url, timeout_s=30, max_retries=0, json_mode="none", stream=False,
                              temperature=0.0, max_tokens=64, headers=endpoint["headers"], api_key="sk-or-test")
        ChatBackend(model).complete([{"role": "user", "content": "hi"}], role="aligner")
        (request,) = server.received
    assert request.headers["http-referer"] == endpoint["headers"]["HTTP-Referer"]
    assert request.headers["x-openrouter-title"] == "maps"


def test_the_prompt_layout_figures_are_attributed_to_what_they_were_measured_on() -> None:
    (row,) = [line for line in PAPER.splitlines() if line.startswith("| Order of a step's request")]
    assert "the embedded model's prompt time of a solve 76.3 s → 39.6 s" in row
    assert "llama.cpp's own server's 224.3 s → 201.9 s" in row
    # the figures docs/configuration.md gives for each
    said = " ".join(CONFIGURATION.split())
    assert "The embedded model (the same engine, `perf/local_model.py`) read a solve's prompts in 39.6 s instead of 76.3 s" in said
    assert "`paper` took 38% of the prompt tokens from the server's cache and 224.3 s of prompt time, `shared_prefix` 46% and 201.9 s" in said


def test_the_client_figures_come_from_the_script_that_prints_both_clients() -> None:
    section = CONFIGURATION.split("### Why our own HTTP client", 1)[1].split("\n### ", 1)[0]
    assert "`perf/client_vs_sdk.py`" in section and "perf/throughput.py" not in section
    # the client's own reason points there too (perf/throughput.py measures a bare client, not the SDK)
    reason = ast.get_docstring(ast.parse((REPO / "maps_autogen/model/_client.py").read_text())) or ""
    assert "`perf/client_vs_sdk.py`" in reason and "throughput" not in reason
    script = (REPO / "perf" / "client_vs_sdk.py").read_text()
    assert "from openai import OpenAI" in script and "ChatBackend" in script
    assert Path(REPO / "perf" / "client_vs_sdk.py").is_file()
