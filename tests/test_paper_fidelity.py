"""Where the project follows the MAPS paper: the "w/o Interpreter" ablation leaves the team
without the image (today's hand-over only behind `images.to_next_step`), the reviewer's rubric
counts as the paper does and carries each dimension's feedback template from the team, the
Interpreter asks for colours and measured geometry, an image without a tag lands where the
instruction says the images are, and each step has a reply budget that fits its work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from maps_autogen.config import load_config
from maps_autogen.problem import build_problem
from maps_autogen.prompts import load_prompts
from maps_autogen.role_inputs import build_request, review_variables
from maps_autogen.team import plan_chat
from tests.conftest import REPO, critic_json, make_png, solver_json
from tests.fake_openai import FakeOpenAI, RoleScript
from tests.test_team import by_name, solve, steps, write_team_config


def transcript(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]


# ----- 1. the paper's "w/o Interpreter": no step receives the image ---------------------------

def test_without_the_interpreter_no_request_carries_the_image_and_the_run_says_so(tmp_path, monkeypatch, capsys) -> None:
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": [critic_json(caption=None)]})) as server:
        code, summary, err = solve(tmp_path, monkeypatch, capsys, server, "--without", "interpreter")
    assert code == 0, err
    assert server.roles() == ["aligner", "scholar", "solver", "critic"]
    assert [r.image_urls() for r in server.received] == [[], [], [], []]
    assert summary is not None
    run_dir = Path(summary["run_dir"])
    run = json.loads((run_dir / "run.json").read_text())
    assert run["flow"]["images_dropped"] == ["interpreter"] and run["flow"]["image_roles"] == []
    events = [r for r in transcript(run_dir) if r.get("event") == "images_dropped"]
    assert len(events) == 1 and events[0]["roles"] == ["interpreter"] and "no step" in events[0]["detail"]
