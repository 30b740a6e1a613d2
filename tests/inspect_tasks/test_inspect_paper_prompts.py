"""Inspect's path tells each step what `maps solve` does (tests/orchestration/test_paper_defaults.py):
the real `inspect eval maps_autogen/custom` against the scripted server, one problem; the Critic
asks one Socratic question per dimension, no step before the Solver is asked for a result, and
every request's preamble keeps its grounding sentence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.common import REPO, TEST_KEY, clean_env, critic_json, solver_json
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply

if os.environ.get("CI") != "true":  # CI installs the inspect extra (scripts/setup.sh): missing is a failure
    pytest.importorskip("inspect_ai")

INSPECT = Path(sys.executable).parent / "inspect"


def script(request: Received) -> Reply:
    if request.role == "solver":
        return Reply(solver_json("B"))
    if request.role == "critic":
        return Reply(critic_json())
    return Reply(f"{request.role} notes")


def test_inspect_eval_tells_each_step_what_maps_solve_does(tmp_path: Path) -> None:
    with FakeOpenAI(script) as server:
        env = {key: value for key, value in clean_env(FAKE_BASE_URL=server.base_url, FAKE_API_KEY=TEST_KEY).items()
               if not key.startswith("INSPECT_")}
        result = subprocess.run([str(INSPECT), "eval", "maps_autogen/custom", "-T",
                                 f"data={REPO / 'examples' / 'bench.jsonl'}", "--limit", "1",
                                 "--model", "openai-api/fake/fake-model", "--log-dir", str(tmp_path / "logs"),
                                 "--display", "none"], env=env, cwd=tmp_path, capture_output=True, text=True,
                                timeout=300)
        received = list(server.received)
    assert result.returncode == 0, result.stdout + result.stderr
    texts = {request.role: " ".join("\n".join(
        message["content"] if isinstance(message["content"], str) else
        "\n".join(part.get("text", "") for part in message["content"]) for message in request.messages).split())
        for request in received}
    assert list(texts) == ["interpreter", "aligner", "scholar", "solver", "critic"]
    assert "ask the single Socratic question that would lead its author to re-examine the work" in texts["critic"]
    assert "suggest" not in texts["critic"].lower()
    assert all("preliminary" not in texts[role].lower() for role in ("interpreter", "aligner", "scholar"))
    assert all(text.count("Do not invent measurements that are not given.") == 1 for text in texts.values())
