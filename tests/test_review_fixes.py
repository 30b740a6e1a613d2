"""Defects a review of the issue 22-25 work found: each test goes red on the code before its fix."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import TEST_KEY, clean_env, run_maps
from tests.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.fake_openai import FakeOpenAI


def _config(folder: Path) -> Path:
    config = folder / "agents.yaml"
    config.write_text("endpoints:\n  openai:\n    max_retries: 0\n")
    return config


def test_a_baseline_that_sent_nothing_records_its_request_settings_not_as_sent(tmp_path: Path) -> None:
    """run.json says `sent` only for settings read back from a request that was sent."""
    data, rows = write_mathvista_jsonl(tmp_path / "data", 1)
    with FakeOpenAI(ProblemScript({}, fail=set(rows), baseline=True)) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--method", "cot",
                           "--config", str(_config(tmp_path))], env=env, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    (run_json,) = (tmp_path / "runs").glob("eval-*/problems/*/run.json")
    (model,) = json.loads(run_json.read_text())["models"].values()
    assert "sent" not in model and model["request_settings"]["model"] == "gpt-4o"
