"""Shared by the tests of tests/e2e/test_team.py and others: by_name, solve, steps, write_team_config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from maps_autogen.cli import main
from tests.helpers.common import REPO, TEST_KEY, make_png
from tests.helpers.fake_openai import FakeOpenAI

DEFAULT = yaml.safe_load((REPO / "maps_autogen" / "settings" / "defaults" / "agents.yaml").read_text())


QUESTION = ["-q", "Q-question", "-c", "C-context", "-o", "O-one", "-o", "O-two"]


def steps() -> list[dict[str, Any]]:
    """A fresh copy of the default team's steps."""
    return json.loads(json.dumps(DEFAULT["team"]["steps"]))


def by_name(team: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(step for step in team if step["name"] == name)


def write_team_config(folder: Path, team: list[dict[str, Any]] | None = None, **top: Any) -> Path:
    """agents.yaml: the default with `team` steps and top-level changes; requests in the paper's
    layout (prompt_layout: paper), whose order these tests read."""
    data = json.loads(json.dumps(DEFAULT))
    data["endpoints"]["openai"]["prompt_layout"] = "paper"
    if team is not None:
        data["team"]["steps"] = team
    data.update(top)
    path = folder / "agents.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def solve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], server: FakeOpenAI,
          *args: str, image: bool = True) -> tuple[int, dict[str, Any] | None, str]:
    """`maps solve ... --json` through the console entry point: (exit code, summary, stderr)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url if server else "http://127.0.0.1:9/v1")
    images = [str(make_png(tmp_path / "figure.png"))] if image else []
    with pytest.raises(SystemExit) as done:
        main(["solve", *images, *QUESTION, "--runs-dir", str(tmp_path / "runs"), "--json", *args])
    out, err = capsys.readouterr()
    return done.value.code, (json.loads(out) if done.value.code == 0 else None), err
