"""Cached prompt tokens: read from the usage a service reports (prompt_tokens_details.cached_tokens,
as OpenAI, vLLM, llama.cpp's server and LiteLLM say it), checked like every other usage field,
priced at the model's cached-input price where the price table has one (the price used is
recorded), and shown in the progress bar, run.json, the summary, `maps report` and the viewer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maps_autogen.eval._workers import progress_note
from maps_autogen.model._client import ChatBackend
from maps_autogen.model._service_answers import checked_usage
from maps_autogen.records._schema import CallUsage, RoleUsage, Usage
from maps_autogen.report.view import render_view
from maps_autogen.settings._config import PriceConfig
from maps_autogen.settings._endpoints import ResolvedModel
from tests.helpers.common import TEST_KEY, clean_env, run_maps, write_config
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply

CACHED_PRICE = PriceConfig(prompt_per_million=2.5, cached_prompt_per_million=1.25, completion_per_million=10.0)
NO_CACHED_PRICE = PriceConfig(prompt_per_million=2.5, completion_per_million=10.0)
REPORTED = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100,
            "prompt_tokens_details": {"cached_tokens": 600}}


def backend(server: FakeOpenAI, price: PriceConfig, *, stream: bool = False) -> ChatBackend:
    model = ResolvedModel(endpoint_name="svc", kind="openai", model="m", base_url=server.base_url, timeout_s=30,
                          max_retries=0, json_mode="none", stream=stream, temperature=0.0, max_tokens=64,
                          prices={"m": price})
    return ChatBackend(model)


def test_the_usage_shapes_that_carry_cached_tokens() -> None:
    # OpenAI, vLLM, LiteLLM and llama.cpp's server (which also sends timings.cache_n beside it).
    assert checked_usage(REPORTED) == ({"prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 600}, None)
    assert checked_usage({**REPORTED, "prompt_tokens_details": {"cached_tokens": 600.0}})[0] == {
        "prompt_tokens": 1000, "completion_tokens": 100, "cached_tokens": 600}
    # Not said: no cached count (priced as uncached), the usage still usable.
    for details in (None, {}, {"cached_tokens": None}, {"audio_tokens": 0}):
        assert checked_usage({"prompt_tokens": 5, "completion_tokens": 1, "prompt_tokens_details": details}) == (
            {"prompt_tokens": 5, "completion_tokens": 1}, None)


@pytest.mark.parametrize("details, why", [
    ({"cached_tokens": -1}, "cached_tokens is negative"),
    ({"cached_tokens": 1001}, "cached_tokens is more than prompt_tokens"),
    ({"cached_tokens": 10**30}, "cached_tokens is over 1,000,000,000"),
    ({"cached_tokens": "600"}, "cached_tokens is a str"),
    ({"cached_tokens": 2.5}, "cached_tokens is not a whole number"),
    ({"cached_tokens": float("nan")}, "cached_tokens is nan"),
    ([600], "prompt_tokens_details is a list, not an object"),
])
def test_an_impossible_cached_count_makes_the_usage_unusable(details: object, why: str) -> None:
    assert checked_usage({**REPORTED, "prompt_tokens_details": details}) == (None, why)
    with FakeOpenAI(lambda request: Reply("a short reply", usage_body={**REPORTED, "prompt_tokens_details": details})) as server:
        completion = backend(server, CACHED_PRICE).complete([{"role": "user", "content": "hi"}], role="solver")
    assert completion.tokens_estimated and completion.usage_unusable == why
    assert completion.cached_tokens is None and completion.cost is not None and completion.cost > 0


@pytest.mark.parametrize("stream", [False, True])
def test_cached_tokens_are_priced_at_the_cached_input_price_and_the_price_is_recorded(stream: bool) -> None:
    with FakeOpenAI(lambda request: Reply("a short reply", usage_body=REPORTED)) as server:
        priced = backend(server, CACHED_PRICE, stream=stream).complete([{"role": "user", "content": "hi"}], role="solver")
        plain = backend(server, NO_CACHED_PRICE, stream=stream).complete([{"role": "user", "content": "hi"}], role="solver")
    assert priced.cached_tokens == 600 and priced.prompt_tokens == 1000 and not priced.tokens_estimated
    assert priced.cost == pytest.approx((400 * 2.5 + 600 * 1.25 + 100 * 10.0) / 1e6)
    assert priced.usage().cached_tokens == 600 and priced.usage().cached_rate == 1.25
    # A price table without a cached-input price: the cached tokens cost the prompt price, said so.
    assert plain.cost == pytest.approx((1000 * 2.5 + 100 * 10.0) / 1e6) and plain.usage().cached_rate == 2.5


def test_records_without_cached_tokens_still_read() -> None:
    assert Usage.model_validate({"calls": 2, "prompt_tokens": 10, "completion_tokens": 3, "cost": 0.1}).cached_tokens == 0
    assert RoleUsage.model_validate({"calls": 1, "prompt_tokens": 10}).cached_tokens == 0
    assert CallUsage.model_validate({"prompt_tokens": 10, "completion_tokens": 3}).cached_tokens is None


def test_the_progress_bar_says_the_cached_share() -> None:
    assert progress_note(50.0, 0.25, 1000, 600) == "acc 50.0% · cost $0.2500 · cached 60% of prompt"
    assert progress_note(None, None, 0, 0) == "acc - · cost unknown"


def test_an_eval_records_and_shows_its_cached_tokens(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    answers = ProblemScript({pid: "B" if row["question_type"] == "multi_choice" else row["answer"]
                             for pid, row in rows.items()})

    def cached(request: Received) -> Reply:
        reply = answers(request)
        reply.usage_body = REPORTED
        return reply

    write_config(tmp_path / "agents.yaml", **{"prices.gpt-4o": CACHED_PRICE.model_dump()})
    runs = tmp_path / "runs"
    with FakeOpenAI(cached) as server:
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--concurrency", "1"],
                          env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (eval_dir,) = list(runs.glob("eval-*"))
    summary = json.loads((eval_dir / "summary.json").read_text())
    calls = summary["usage"]["calls"]
    assert calls >= 6 and summary["usage"]["cached_tokens"] == 600 * calls
    assert summary["usage"]["cost"] == pytest.approx(calls * (400 * 2.5 + 600 * 1.25 + 100 * 10.0) / 1e6)
    assert f"{600 * calls} of {1000 * calls} prompt tokens cached" in result.stdout
    results = [json.loads(line) for line in (eval_dir / "results.jsonl").read_text().splitlines()]
    assert all(role["cached_tokens"] == 600 * role["calls"] for row in results for role in row["usage_by_role"].values())
    run_dir = next(path.parent for path in eval_dir.rglob("run.json"))
    run = json.loads((run_dir / "run.json").read_text())
    assert run["usage"]["cached_tokens"] == 600 * run["usage"]["calls"]
    turns = [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]
    called = [turn["usage"] for turn in turns if turn.get("usage")]
    assert called and all(usage["cached_tokens"] == 600 and usage["cached_rate"] == 1.25 for usage in called)

    report = run_maps(["report", str(eval_dir), "--out", str(tmp_path / "report")], env=clean_env(), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    usage_md = (tmp_path / "report" / "usage.md").read_text()
    assert "Of them cached by the service / problem" in usage_md
    steps = [line for line in usage_md.splitlines() if "| solver |" in line]
    assert steps and "| 1000 | 600 | 100 |" in steps[0]

    assert "of them cached" in render_view(eval_dir)
    run_page = render_view(run_dir)
    assert "of them cached" in run_page and "600 prompt tokens cached" in run_page


def test_inspect_usage_counts_its_cache_reads_as_cached_prompt_tokens() -> None:
    from inspect_ai.model import ModelOutput, ModelUsage

    from maps_autogen.inspect_tasks._backend import completion_of
    from maps_autogen.records import SentSettings

    output = ModelOutput.from_content("mockllm/model", "an answer")
    # Inspect counts cache reads apart from input_tokens (OpenAI's 1000 prompt tokens, 600 cached).
    output.usage = ModelUsage(input_tokens=400, output_tokens=100, total_tokens=1100, input_tokens_cache_read=600)
    completion = completion_of(output, model="mockllm/model", requested="mockllm/model", seconds=1.0, attempts=1,
                               sent=SentSettings(), rejected=None)
    assert completion.prompt_tokens == 1000 and completion.cached_tokens == 600
