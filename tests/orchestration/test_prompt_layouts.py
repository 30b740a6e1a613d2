"""`prompt_layout: paper | shared_prefix`, per endpoint: every step (re-runs and the reviewer
included) is told the same things in both layouts, only in another order; the layout is
recorded as sent (run.json's models), and the shared-prefix layout's consecutive requests begin
alike. Structural: the request bodies the scripted server receives."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from tests.helpers.common import REPO, TEST_KEY, clean_env, critic_json, run_maps, solver_json, write_config
from tests.helpers.fake_openai import FakeOpenAI, Received, RoleScript

NOTES = "The lever balances when the moments about the pivot are equal on both sides. " * 10


def told(request: Received) -> Counter[str]:
    """Everything a request tells its model, order aside: each paragraph of every message (with
    the message's role) and each image."""
    told: Counter[str] = Counter()
    for message in request.messages:
        content = message["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        text = "\n\n".join(part["text"] if part["type"] == "text" else f"[image {part['image_url']['url'][-40:]}]"
                           for part in parts)
        told.update(paragraph.strip() for paragraph in text.split("\n\n") if paragraph.strip())
    return told


def solve(tmp_path: Path, layout: str | None) -> tuple[list[Received], dict[str, Any]]:
    """One solve of examples/lever (the Critic sends the Scholar back once) in `layout`."""
    folder = tmp_path / (layout or "default")
    folder.mkdir()
    changes = {"endpoints.openai.prompt_layout": layout} if layout else {}
    config = write_config(folder / "agents.yaml", **changes)
    script = RoleScript({"solver": [solver_json("B"), solver_json("B")],
                         "critic": [critic_json(5, 5, 3, 5, worst="knowledge"), critic_json()]}, default=NOTES)
    with FakeOpenAI(script) as server:
        result = run_maps(["solve", "--problem", str(REPO / "examples/lever/problem.yaml"), "--config", str(config),
                           "--json", "--runs-dir", str(folder / "runs")],
                          env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=folder)
        requests = list(server.received)
    assert result.returncode == 0, result.stderr
    run_dir = Path(json.loads(result.stdout)["run_dir"])
    return requests, json.loads((run_dir / "run.json").read_text())


def test_every_step_is_told_the_same_in_both_layouts_only_the_order_differs(tmp_path: Path) -> None:
    paper, paper_run = solve(tmp_path, "paper")
    shared, shared_run = solve(tmp_path, "shared_prefix")
    roles = [request.role for request in paper]
    assert roles == [request.role for request in shared]
    assert set(roles) == {"interpreter", "aligner", "scholar", "solver", "critic"} and len(roles) > 5  # re-runs too
    for role, first, second in zip(roles, paper, shared, strict=True):
        assert told(first) == told(second), role
        assert first.messages != second.messages, role  # the order is another one
    # Recorded as sent, per step.
    assert {model["prompt_layout"] for model in paper_run["models"].values()} == {"paper"}
    assert {model["prompt_layout"] for model in shared_run["models"].values()} == {"shared_prefix"}
    # Shared prefix: every step's system message is the same (the task's preamble) and each
    # request begins with the one before it; the paper's layout starts each with the step's own.
    assert len({request.messages[0]["content"] for request in shared}) == 1
    assert len({request.messages[0]["content"] for request in paper}) == 5


def test_the_default_layout_of_a_service_is_shared_prefix(tmp_path: Path) -> None:
    _, run = solve(tmp_path, None)
    assert {model["prompt_layout"] for model in run["models"].values()} == {"shared_prefix"}
