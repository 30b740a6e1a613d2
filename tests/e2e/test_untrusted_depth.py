"""Deeply nested YAML or JSON in a problem file, agents.yaml or a data row is one line, exit 2
(not a RecursionError with a 3,000-line traceback)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.common import TEST_KEY, clean_env, run_maps, write_config
from tests.helpers.eval_fixtures import write_mathvista_jsonl

DEPTH = 500


def _one_error_line(result, *words: str) -> str:  # type: ignore[no-untyped-def]
    assert result.returncode == 2, result.stderr[-2000:]
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and all(word in line for word in words), line
    return line


def test_deep_yaml_and_json_are_one_line(tmp_path: Path) -> None:
    env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    problem = tmp_path / "problem.yaml"
    problem.write_text("question: deep\ncontext: " + "[" * DEPTH + "]" * DEPTH + "\n")
    result = run_maps(["solve", "--problem", str(problem), "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
    _one_error_line(result, "problem.yaml", "nested more than 64 levels deep")

    (tmp_path / "deep").mkdir()
    config = write_config(tmp_path / "deep" / "agents.yaml")
    block = "".join("  " * level + "- \n" for level in range(DEPTH))  # block-style nesting, one level a line
    config.write_text(config.read_text() + "extra:\n" + block)
    result = run_maps(["solve", "-q", "x", "--config", str(config), "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
    _one_error_line(result, "agents.yaml", "nested more than 64 levels deep")

    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    deep: object = "leaf"
    for _ in range(DEPTH):
        deep = {"k": deep}
    lines = data.read_text().splitlines()
    lines[1] = json.dumps({**rows["2"], "metadata": {**rows["2"]["metadata"], "extra": deep}})
    data.write_text("\n".join(lines) + "\n")
    result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
    _one_error_line(result, "testmini.jsonl line 2", "more than 64 levels deep")
