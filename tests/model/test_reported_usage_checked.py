"""A service's reported usage is checked like every other reply field: a count that is negative,
past a billion, not a whole number, NaN, infinite, a string or missing makes the usage
unusable: the tokens are estimated (`tokens_estimated`, with `usage_unusable` saying why, and
one warning line), the cost is never below zero, `--max-cost` still stops the run, nothing
crashes and the response cache never overflows."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from maps_autogen.model._cache import CachedReply, ResponseCache
from maps_autogen.model._client import ChatBackend
from maps_autogen.settings._config import PriceConfig
from maps_autogen.settings._endpoints import ResolvedModel
from tests.helpers.common import TEST_KEY, clean_env, critic_json, make_png, run_maps, solver_json, write_config
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply, RoleScript

PRICED = {"m": PriceConfig(prompt_per_million=2.5, completion_per_million=10.0)}
IMPOSSIBLE = [
    ({"prompt_tokens": -500000, "completion_tokens": 12}, "prompt_tokens is negative"),
    ({"prompt_tokens": 40, "completion_tokens": 1e308}, "completion_tokens is over 1,000,000,000"),
    ({"prompt_tokens": float("nan"), "completion_tokens": 3}, "prompt_tokens is nan"),
    ({"prompt_tokens": 3, "completion_tokens": float("inf")}, "completion_tokens is inf"),
    ({"prompt_tokens": "12", "completion_tokens": 3}, "prompt_tokens is a str"),
    ({"prompt_tokens": 10**30, "completion_tokens": 3}, "prompt_tokens is over 1,000,000,000"),  # past SQLite's INTEGER
    ({"prompt_tokens": 12.5, "completion_tokens": 3}, "prompt_tokens is not a whole number"),
    ({"prompt_tokens": 12}, "completion_tokens is missing"),
    ([12, 3], "usage is a list, not an object"),
]


def backend(server: FakeOpenAI, cache: ResponseCache | None = None, *, stream: bool = False) -> ChatBackend:
    model = ResolvedModel(endpoint_name="svc", kind="openai", model="m", base_url=server.base_url, timeout_s=30,
                          max_retries=0, json_mode="none", stream=stream, temperature=0.0, max_tokens=64, prices=PRICED)
    return ChatBackend(model, cache=cache)


@pytest.mark.parametrize("usage, why", IMPOSSIBLE)
def test_impossible_usage_is_estimated_and_said_so(tmp_path: Path, usage, why: str) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAI(lambda request: Reply("a short reply", usage_body=usage)) as server:
        completion = backend(server, cache).complete([{"role": "user", "content": "hi"}], role="solver")
    assert completion.tokens_estimated and completion.usage_unusable == why
    assert completion.prompt_tokens and completion.prompt_tokens > 0 and completion.completion_tokens
    assert completion.completion_tokens < 100 and completion.cost is not None and 0 < completion.cost < 0.01
    assert completion.usage().usage_unusable == why
    # The cache keeps the reply with its tokens unknown, never the service's impossible numbers.
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:
        rows = db.execute("SELECT prompt_tokens, completion_tokens FROM accepted_replies").fetchall()
    assert rows == [(None, None)]


def test_impossible_usage_in_a_stream_is_estimated_too() -> None:
    def streamed(request: Received) -> Reply:
        chunks = [b'data: {"model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n',
                  b'data: {"choices":[],"usage":{"prompt_tokens":-3,"completion_tokens":-9}}\n\n', b"data: [DONE]\n\n"]
        return Reply(stream_bytes=chunks)

    with FakeOpenAI(streamed) as server:
        completion = backend(server, stream=True).complete([{"role": "user", "content": "hi"}], role="solver")
    assert completion.tokens_estimated and completion.usage_unusable == "prompt_tokens is negative"
    assert completion.cost is not None and completion.cost > 0


def test_the_cache_never_overflows_whatever_it_is_given(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    cache.put("k", "text", "m", 10**30, -(10**30))
    assert cache.get("k") == CachedReply(text="text", model="m", prompt_tokens=None, completion_tokens=None,
                                         finish_reason=None)


def test_a_solve_with_lying_usage_finishes_and_records_why(tmp_path: Path) -> None:
    png = make_png(tmp_path / "lever.png")
    lying = {"prompt_tokens": float("nan"), "completion_tokens": -7}
    script = RoleScript({"interpreter": [Reply("CAPTION", usage_body=lying)], "solver": [Reply(solver_json("A"), usage_body=lying)],
                         "critic": [Reply(critic_json(), usage_body=lying)]})
    with FakeOpenAI(script) as server:
        result = run_maps(["solve", str(png), "-q", "Which mass?", "--runs-dir", str(tmp_path / "runs"), "--json"],
                          env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    (warning,) = [line for line in result.stderr.splitlines() if "unusable usage" in line]
    assert "prompt_tokens is nan" in warning and "estimated" in warning
    outcome = json.loads(result.stdout)
    assert outcome["usage"]["cost"] > 0 and outcome["usage"]["prompt_tokens"] > 0
    run_dir = next((tmp_path / "runs").iterdir())
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "finished" and run["usage"]["tokens_estimated"] is True
    turns = [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]
    lied = [turn for turn in turns if turn.get("role") in ("interpreter", "solver", "critic") and turn.get("usage")]
    assert len(lied) == 3 and all(turn["usage"]["usage_unusable"] == "prompt_tokens is nan" for turn in lied)


def test_max_cost_stops_an_eval_whose_service_reports_negative_usage(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 12)
    answers = ProblemScript({pid: "B" if row["question_type"] == "multi_choice" else row["answer"]
                             for pid, row in rows.items()})

    def lying(request: Received) -> Reply:
        reply = answers(request)
        reply.usage_body = {"prompt_tokens": -(10**6), "completion_tokens": -(10**6)}
        return reply

    write_config(tmp_path / "agents.yaml", **{"prices.gpt-4o": {"prompt_per_million": 2500.0,
                                                                "completion_per_million": 10000.0}})
    runs = tmp_path / "runs"
    with FakeOpenAI(lying) as server:
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--method", "direct",
                           "--max-cost", "1", "--concurrency", "1"],
                          env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "stopped: --max-cost reached" in result.stdout
    (eval_dir,) = list(runs.glob("eval-*"))
    summary = json.loads((eval_dir / "summary.json").read_text())
    assert summary["stopped_for_cost"] is True and summary["usage"]["cost"] >= 1
    assert len((eval_dir / "results.jsonl").read_text().splitlines()) < 12
