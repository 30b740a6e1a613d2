"""`maps` against third-party servers started as a user starts them: llama.cpp's own server
from the `xllamacpp` wheel serving the SmolLM2 GGUF (not through maps' launcher), and a
LiteLLM proxy (master key, no database) in front of it. One server process of each per module.

Text-only: SmolLM2 has no vision projector. What is slow to reach for real is replayed from
recordings in tests/model/test_gateway_errors.py; here each server runs end to end once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.helpers.common import clean_env, make_png, run_maps, write_config
from tests.helpers.eval_tasks import OB_IMAGES, ob_row, write_jsonl
from tests.helpers.real_server_config import server_config
from tests.helpers.real_servers import ALIAS, MASTER_KEY, free_port, litellm_proxy, llama_server

pytestmark = [pytest.mark.local, pytest.mark.real_server]

PROBLEM = {
    "id": "lever-text",
    "question": "A light lever balances on its pivot. A 3 kg mass hangs 0.4 m left of the pivot and a mass m hangs 0.6 m right of it. What is m?",
    "options": ["1 kg", "2 kg", "3 kg", "4.5 kg"],
    "answer_format": "Give only the letter of the correct option as the final answer.",
}


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with llama_server(tmp_path_factory.mktemp("llama") / "llama.log") as url:
        yield url


@pytest.fixture(scope="module")
def proxy(llama: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # "dead": an alias whose backend port has nothing listening.
    with litellm_proxy(llama, f"http://127.0.0.1:{free_port()}/v1", tmp_path_factory.mktemp("litellm")) as url:
        yield url


@pytest.fixture(scope="module")
def small_llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's server with a 2,048-token context and one slot: the steps' own budgets (3,072 to
    8,192 tokens) cannot fit it."""
    with llama_server(tmp_path_factory.mktemp("small") / "llama.log", ctx_size=2048, parallel=1) as url:
        yield url


# Two calls per solve (the Solver's and the Critic's JSON): a CPU reads SmolLM2's long prompts
# at tens of tokens a second, and the suite's time budget is shared.
SHORT_TEAM = ["--without", "aligner", "--without", "scholar"]




def write_problem(folder: Path, **extra) -> Path:
    path = folder / "problem.yaml"
    path.write_text(yaml.safe_dump({**PROBLEM, **extra}))
    return path


def transcript(runs: Path) -> list[dict]:
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]


def one_error(result) -> str:
    assert "Traceback" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    return line


def test_solve_against_llama_cpp_streaming_text_only(tmp_path: Path, llama: str) -> None:
    server_config(tmp_path, llama, **{"endpoints.openai.stream": True})
    runs = tmp_path / "runs"
    # The Solver alone (its cut is what is checked): the Critic's grammar-constrained review takes
    # a CPU about a minute, and the review through llama.cpp is the other tests' part.
    result = run_maps(["solve", "--problem", str(write_problem(tmp_path)), "--runs-dir", str(runs), *SHORT_TEAM,
                       "--without", "critic"], env=clean_env(), cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    turns = [r for r in transcript(runs) if r.get("usage")]
    assert turns
    # Usage comes from the server (llama.cpp reports it in the stream), not from our estimate.
    assert all(turn["usage"]["tokens_estimated"] is False and turn["usage"]["completion_tokens"] for turn in turns)
    solver = next(turn for turn in turns if turn.get("role") == "solver")
    assert solver.get("json_mode") == "schema" and solver.get("finish_reason") in ("stop", "length")
    # 48 tokens cannot hold the Solver's four phases: the cut is reported with the key that
    # raises it, and the request is not sent again.
    assert solver["finish_reason"] == "length" and solver["usage"]["attempts"] == 1
    assert f"raise model.max_tokens in {tmp_path / 'agents.yaml'}" in result.stdout + result.stderr


def test_small_eval_against_llama_cpp(tmp_path: Path, llama: str) -> None:
    server_config(tmp_path, llama)
    data = tmp_path / "olympiad"
    write_jsonl(data / "OE_MM_physics_en_COMP.jsonl", [
        ob_row(3001, ["$3$"], "Numerical", subject="Physics", widths=(None,), question="A block moves 6 m in 2 s. Find its speed in m/s."),
        ob_row(3002, ["$4$"], "Numerical", subject="Physics", widths=(None,), question="A 2 kg mass feels 8 N. Find its acceleration in m/s^2."),
    ], OB_IMAGES)
    runs = tmp_path / "runs"
    # The single-call baseline: the eval's path (selection, results, summary) at one call a problem.
    result = run_maps(["eval", "olympiadbench", "--subset", "PECO", "--data", str(data), "--runs-dir", str(runs),
                       "--method", "direct", "--concurrency", "2", "--quiet"], env=clean_env(), cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    (run_dir,) = list(runs.glob("eval-*"))
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(row["pid"] for row in rows) == ["3001", "3002"] and all(row["status"] == "ok" for row in rows)
    assert all(row["usage"]["completion_tokens"] > 0 for row in rows)
    assert {row["models"]["direct"]["model"] for row in rows} == {ALIAS}


def test_an_image_sent_to_text_only_llama_cpp_is_fatal_at_once(tmp_path: Path, llama: str) -> None:
    server_config(tmp_path, llama)
    make_png(tmp_path / "figure.png")
    result = run_maps(["solve", "--problem", str(write_problem(tmp_path, images=["figure.png"])), "--runs-dir", str(tmp_path / "runs")],
                      env=clean_env(), cwd=tmp_path, timeout=300)
    assert result.returncode == 1
    line = one_error(result)
    assert "does not accept images" in line and "image input is not supported" in line and "vision: false" in line
    assert "gave up" not in line  # not retried


def test_litellm_proxy_end_to_end_and_its_errors(tmp_path: Path, llama: str, proxy: str) -> None:
    env = clean_env(GATEWAY_KEY=MASTER_KEY)
    problem = write_problem(tmp_path)
    runs = tmp_path / "runs"

    def solve(**changes) -> object:
        run_env = changes.pop("env", env)
        server_config(tmp_path, changes.pop("base_url", proxy), key_env="GATEWAY_KEY", **changes)
        # the Solver alone: llama.cpp's grammar-constrained Critic costs a CPU a minute, and
        # each error below comes at the first call
        return run_maps(["solve", "--problem", str(problem), "--runs-dir", str(runs), *SHORT_TEAM, "--without", "critic"],
                        env=run_env, cwd=tmp_path, timeout=600)

    happy = solve()
    assert happy.returncode == 0, happy.stderr
    assert MASTER_KEY not in happy.stdout + happy.stderr
    unknown = one_error(solve(**{"endpoints.openai.default_model": "no-such-alias"}))
    assert "HTTP 400" in unknown and "Invalid model name passed in model=no-such-alias" in unknown and "gave up" not in unknown
    wrong_key = one_error(solve(env=clean_env(GATEWAY_KEY="sk-wrong-key")))
    assert "HTTP 400" in wrong_key and "No connected db." in wrong_key and "API key" in wrong_key
    assert "sk-wrong-key" not in wrong_key
    dead = one_error(solve(**{"endpoints.openai.default_model": "dead"}))
    assert "HTTP 500" in dead and "Connection error" in dead and "gave up after 2 attempts" in dead
    down = one_error(solve(base_url=f"http://127.0.0.1:{free_port()}/v1"))
    assert "cannot reach the model service" in down


def one_call(folder: Path, config: dict, *, config_list: list[dict] | None = None, env: dict | None = None):
    """One request through maps' own client to the endpoint `config` declares (or the config
    list gives): the settings each step would send, resolved as `maps solve` resolves them."""
    from maps_autogen.model._client import ChatBackend
    from maps_autogen.settings._config import load_config
    from maps_autogen.settings._endpoints import resolve_models

    (folder / "agents.yaml").write_text(json.dumps(config))
    listing = None
    if config_list is not None:
        listing = folder / "OAI_CONFIG_LIST"
        listing.write_text(json.dumps(config_list))
    loaded = load_config(cwd=folder, config_list=str(listing) if listing else None, env=env or {})
    model = resolve_models(loaded, env or {}).models["solver"]
    return ChatBackend(model).complete([{"role": "user", "content": "Say hello."}], role="solver")


def test_reasoning_model_settings_reach_llama_cpp(tmp_path: Path, llama: str) -> None:
    # max_completion_tokens (the field OpenAI's reasoning models take), reasoning_effort and
    # extra_body (llama.cpp's top_k and seed), as an endpoint of agents.yaml declares them.
    endpoint = {"kind": "openai", "base_url": llama, "api_key_env": None, "default_model": ALIAS,
                "max_tokens_field": "max_completion_tokens", "max_tokens": 4, "reasoning_effort": "low",
                "extra_body": {"top_k": 1, "seed": 3}, "headers": {"X-Title": "maps"}}
    completion = one_call(tmp_path, {"endpoints": {"llama": endpoint}, "model": {"endpoint": "llama"}})
    # llama.cpp honoured the cap sent under max_completion_tokens: the reply stops at 4 tokens.
    assert completion.finish_reason == "length" and completion.completion_tokens == 4
    assert not completion.tokens_estimated and completion.usage_unusable is None
    sent = completion.sent.model_dump(exclude_unset=True)  # as the run records it
    assert sent["max_completion_tokens"] == 4 and "max_tokens" not in sent
    assert sent["top_k"] == 1 and sent["reasoning_effort"] == "low"
    assert sent["headers"] == {"X-Title": "maps"}


def test_llama_cpps_cached_prompt_tokens_are_read_from_its_usage(tmp_path: Path, llama: str) -> None:
    # The same request twice: llama.cpp's prompt cache serves the second one's prompt and says so
    # in usage.prompt_tokens_details.cached_tokens, which our client reads (never more than the
    # prompt) and records with the call.
    endpoint = {"kind": "openai", "base_url": llama, "api_key_env": None, "default_model": ALIAS, "max_tokens": 2}
    config = {"endpoints": {"llama": endpoint}, "model": {"endpoint": "llama"}}
    one_call(tmp_path, config)
    again = one_call(tmp_path, config)
    assert not again.tokens_estimated and again.usage_unusable is None
    assert again.prompt_tokens is not None and again.cached_tokens is not None
    assert 0 < again.cached_tokens <= again.prompt_tokens
    assert again.usage().cached_tokens == again.cached_tokens


def test_an_azure_config_list_entry_through_litellms_azure_route(tmp_path: Path, proxy: str) -> None:
    # LiteLLM's proxy serves Azure's deployment route (/openai/deployments/NAME/chat/completions)
    # and takes the key in an `api-key` header, as Azure does: an AG2 Azure entry talks to it unchanged.
    entry = {"model": ALIAS, "api_type": "azure", "base_url": proxy.removesuffix("/v1"),
             "api_version": "2024-10-21", "api_key": MASTER_KEY, "max_tokens": 4}
    completion = one_call(tmp_path, {}, config_list=[entry])
    assert completion.text and completion.finish_reason == "length" and completion.completion_tokens == 4
    sent = completion.sent
    assert sent.url is not None and sent.url.endswith(f"/openai/deployments/{ALIAS}/chat/completions")
    assert sent.query == {"api-version": "2024-10-21"} and sent.headers == {"api-key": "***"}


def own_server_config(folder: Path, base_url: str) -> Path:
    """agents.yaml for one's own server, the team's own reply budgets kept (3,072 to 8,192 tokens)."""
    return write_config(folder / "agents.yaml", **{
        "endpoints.openai.base_url": base_url, "endpoints.openai.api_key_env": None,
        "endpoints.openai.default_model": ALIAS, "endpoints.openai.max_retries": 1, "critic.max_rollbacks": 0})


def test_a_small_context_on_llama_cpp_is_read_and_the_budgets_fit_it(tmp_path: Path, small_llama: str) -> None:
    own_server_config(tmp_path, small_llama)
    runs = tmp_path / "runs"
    result = run_maps(["solve", "--problem", str(write_problem(tmp_path)), "--runs-dir", str(runs), *SHORT_TEAM],
                      env=clean_env(), cwd=tmp_path, timeout=900)
    assert result.returncode == 0, result.stderr
    # read from the server itself before the first call, and said with the cap and how to raise it
    said = next(line for line in result.stderr.splitlines() if "max_tokens capped at" in line)
    assert "with a context of 2,048 tokens per request (said by llama.cpp's GET /props, default_generation_settings.n_ctx)" in said
    assert "--ctx-size" in said
    cap = int(said.split("max_tokens capped at ")[1].split()[0])
    turns = [r for r in transcript(runs) if r.get("usage")]
    assert turns and {turn["sent"]["max_tokens"] for turn in turns} == {cap}
    # every request fitted: the server's own prompt count and the cap stay inside its context
    assert all(turn["usage"]["prompt_tokens"] + cap <= 2048 for turn in turns)
    assert "longer than the model's context" not in result.stdout + result.stderr


def test_budgets_chosen_that_cannot_fit_stop_before_the_first_call(tmp_path: Path, small_llama: str) -> None:
    own_server_config(tmp_path, small_llama)
    runs = tmp_path / "runs"
    result = run_maps(["solve", "--problem", str(write_problem(tmp_path)), "--runs-dir", str(runs), *SHORT_TEAM,
                       "--max-tokens", "1500"], env=clean_env(), cwd=tmp_path, timeout=300)
    assert result.returncode == 2
    line = one_error(result)
    assert "a context of 2,048 tokens per request" in line and "max_tokens 1500 for every step does not fit" in line
    assert "pass --max-tokens " in line
    assert not runs.exists()  # no run started: no call made


def test_a_context_error_through_litellm_names_max_tokens_and_the_context(tmp_path: Path, proxy: str) -> None:
    # The proxy says nothing of its backend's context, so nothing is fitted: llama.cpp refuses the
    # request (its 4,096-token slot) and the proxy passes the refusal on.
    server_config(tmp_path, proxy, key_env="GATEWAY_KEY")
    problem = write_problem(tmp_path, question="word " * 6000 + PROBLEM["question"])
    result = run_maps(["solve", "--problem", str(problem), "--runs-dir", str(tmp_path / "runs"), *SHORT_TEAM],
                      env=clean_env(GATEWAY_KEY=MASTER_KEY), cwd=tmp_path, timeout=600)
    assert result.returncode == 1
    line = one_error(result)
    assert "the request is longer than the model's context (4,096 tokens)" in line and "--max-tokens N" in line
    assert "check the model name" not in line and "the API key" not in line
