"""`maps eval` says what it will call and bill before its first model call: the model and
endpoint of every step, the number of problems and a cost range from our token accounting
(eval/estimate.py), or why the cost is unknown."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import TEST_KEY, clean_env, run_maps, write_config
from tests.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.fake_openai import FakeOpenAI, Reply

STEPS = ("interpreter", "aligner", "scholar", "solver", "critic")


def test_eval_announces_models_endpoint_problems_and_cost_range(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 4)
    script = ProblemScript({pid: "B" if row["question_type"] == "multi_choice" else row["answer"] for pid, row in rows.items()})
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    err = result.stderr
    assert "maps eval: 4 problem(s), method maps" in err
    for step in STEPS:
        assert re.search(rf"^  {step}: gpt-4o at {re.escape(server.base_url)} \(endpoint \w+, max_tokens \d+\)$", err, re.M), err
    found = re.search(r"estimated cost: \$([0-9.]+) to \$([0-9.]+) \(low: one pass, replies at 25% of max_tokens; "
                      r"high: replies at max_tokens and 3 rollback\(s\)", err)
    assert found, err
    low, high = float(found[1]), float(found[2])
    assert 0 < low < high
    summary = json.loads(next((tmp_path / "runs").glob("eval-*/summary.json")).read_text())
    assert summary["usage"]["cost"] <= high  # the scripted replies are short: the real bill is inside the bound
    # said before the first call: the table and the result lines come after it
    assert err.index("maps eval: 4 problem(s)") < err.index("estimated cost")


def test_eval_without_a_price_says_the_cost_is_unknown_and_whose(tmp_path: Path) -> None:
    data, _ = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    config = write_config(tmp_path / "agents.yaml", **{"model.name": "house-model"})
    with FakeOpenAI(lambda request: Reply("down", status=401)) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"),
                           "--config", str(config), "--method", "direct"], env=env, cwd=tmp_path)
    err = result.stderr
    assert "maps eval: 2 problem(s), method direct" in err, err
    assert f"  solver: house-model at {server.base_url}" in err
    assert "interpreter:" not in err  # a baseline calls the final step's model only
    assert "cost: unknown (no price for house-model)" in err
