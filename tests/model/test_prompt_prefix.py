"""The embedded model's requests share a long prefix from one step to the next, so llama.cpp
reuses its prompt cache (reading the prompt is most of each call on 2 cores): the preamble is
every step's system message, earlier steps' outputs come before the problem's fields, and the
step's own system message and instruction come last. Each step is still told exactly what it
was told before, in another order.

Structural: the request bodies the scripted server receives, standing in for the embedded
server (the launcher is replaced by one pointing at it).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.helpers.common import clean_env, critic_json, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, RoleScript

REPO = Path(__file__).resolve().parents[2]
# Each consecutive pair of requests after the first pair shares at least this share of the shorter one.
SHARED = 0.4  # 51-73% with the default prompts; 0.3-0.6% in the layout of other models
# A step's notes as long as the embedded model writes them (its replies are capped at 384 tokens).
NOTES = "The lever balances when the moments about the pivot are equal on both sides. " * 20


def rendered(messages: list[dict[str, Any]]) -> str:
    """A request's messages as one string in order (what the chat template turns into tokens)."""
    pieces = []
    for message in messages:
        content = message["content"]
        parts = [content] if isinstance(content, str) else [
            part.get("text") or part.get("image_url", {}).get("url", "") for part in content]
        pieces.append(f"<{message['role']}>" + "".join(parts))
    return "".join(pieces)


def shared_prefix(first: str, second: str) -> int:
    length = 0
    for a, b in zip(first, second):
        if a != b:
            break
        length += 1
    return length


def test_consecutive_steps_on_the_embedded_model_share_a_long_prefix(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    script = RoleScript({"solver": [solver_json("B")], "critic": [critic_json(5, 5, 3, 5, worst="knowledge"),
                                                                  critic_json()]},
                        default=NOTES)
    with FakeOpenAI(script) as server:
        import maps_autogen.model.local._server as local_server
        monkeypatch.setattr(local_server, "shared_local_server", lambda settings: SimpleNamespace(
            base_url=server.base_url, api_key="local-no-key", ensure_alive=lambda: None))
        result = run_maps(["solve", "--problem", str(REPO / "examples/lever/problem.yaml"), "--model", "local",
                           "--json", "--runs-dir", str(tmp_path / "runs")], env=clean_env(), cwd=tmp_path)
        requests = list(server.received)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["final_answer"] == "B"
    roles = [request.role for request in requests]
    # The Interpreter runs on a note standing in for the image (the embedded model is text-only).
    assert roles == ["interpreter", "aligner", "scholar", "solver", "critic", "scholar", "solver"]
    texts = [rendered(request.messages) for request in requests]
    shares = {f"{before} -> {after}": shared_prefix(first, second) / min(len(first), len(second))
              for (before, after), (first, second) in zip(zip(roles, roles[1:]), zip(texts, texts[1:]))}
    # The first step has no earlier output to share: from the second on, each request begins with
    # what the one before it began with.
    assert shares.pop("interpreter -> aligner") > 0.05
    assert all(share >= SHARED for share in shares.values()), {pair: f"{share:.0%}" for pair, share in shares.items()}
    # Every step is still told its own system message, inputs and instruction.
    for request in requests:
        text = rendered(request.messages)
        assert f"You are the {request.role.capitalize()}" in text, request.role
        assert request.messages[0]["role"] == "system"
