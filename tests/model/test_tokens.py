"""Our own token accounting: o200k_base text, GPT-4o's image tiles, and the cost estimate a run
records when the server reports no usage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maps_autogen.model._tokens import image_tokens, prompt_tokens, text_tokens
from maps_autogen.orchestration._solving import assemble_team, solve_problem
from maps_autogen.problem._problem import build_problem
from maps_autogen.settings._config import load_config
from tests.helpers.common import TEST_KEY, critic_json, make_png, solver_json, write_config
from tests.helpers.fake_openai import FakeOpenAI, Reply, RoleScript


@pytest.mark.parametrize(
    ("size", "tokens"),
    [
        ((1000, 700), 85 + 170 * 4),  # a MathVista-size figure: 2 x 2 tiles, no scaling
        ((1024, 1024), 85 + 170 * 4),  # OpenAI's worked example: scaled to 768 x 768
        ((2048, 4096), 85 + 170 * 6),  # OpenAI's worked example: 1024 x 2048, then 768 x 1536
        ((320, 200), 85 + 170 * 1),
        ((8000, 100), 85 + 170 * 4),  # fitted into 2048 wide: 2048 x 25.6
    ],
)
def test_image_tokens_follow_the_tile_rule(size: tuple[int, int], tokens: int) -> None:
    assert image_tokens(*size) == tokens


def test_text_is_counted_with_o200k_base() -> None:
    # o200k_base's counts; cl100k_base gives 2 and 15, characters/4 gives 2 and 2.
    assert text_tokens(["hello world", "一个杠杆上挂着两个质量"]) == [2, 9]
    request = [{"role": "system", "content": "hello world"}, {"role": "user", "content": [{"type": "text", "text": "hello world"}]}]
    assert prompt_tokens(request, image_size=lambda part: (0, 0)) == 3 + 2 * 3 + 2 * (1 + 2)


def test_a_server_without_usage_gets_estimated_tokens_and_cost(tmp_path: Path) -> None:
    loaded = load_config(write_config(tmp_path / "agents.yaml"))
    figure = make_png(tmp_path / "figure.png", size=(1000, 700))
    problem = build_problem("How long is the rod?", image_sources=[str(figure)], max_side=loaded.config.images.max_side)
    silent = {role: [Reply(text, usage=False)] for role, text in
              {"interpreter": "a rod", "aligner": "rod", "scholar": "lengths", "solver": solver_json("2 m"), "critic": critic_json()}.items()}
    with FakeOpenAI(RoleScript(silent)) as server:
        team = assemble_team(loaded, env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": TEST_KEY})
        result = solve_problem(problem, team, runs_dir=tmp_path / "runs", run_id="silent")
        sent = [request.messages for request in server.received]

    interpreter_request = sent[0]
    assert sum(part.get("type") == "image_url" for part in interpreter_request[-1]["content"]) == 1
    text_only = prompt_tokens(interpreter_request, image_size=lambda part: (0, 0)) - 85
    assert result.outcome.calls[0].completion.prompt_tokens == text_only + 765

    expected_prompt = sum(prompt_tokens(messages) for messages in sent)
    usage = result.run.usage
    assert usage is not None and usage.prompt_tokens == expected_prompt
    assert usage.completion_tokens == sum(text_tokens([call.completion.text])[0] for call in result.outcome.calls)
    price = loaded.config.prices["gpt-4o"]
    expected_cost = (usage.prompt_tokens * price.prompt_per_million + usage.completion_tokens * price.completion_per_million) / 1e6
    assert usage.cost == pytest.approx(expected_cost)
    assert usage.tokens_estimated is True
    messages = [json.loads(line) for line in (result.run_dir / "transcript.jsonl").read_text().splitlines()]
    assert all(m["usage"]["tokens_estimated"] for m in messages if m.get("usage"))
