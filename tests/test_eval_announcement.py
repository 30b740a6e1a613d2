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


def test_cached_replies_are_counted_and_the_report_keeps_methods_apart(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    script = ProblemScript({pid: "B" if row["question_type"] == "multi_choice" else row["answer"] for pid, row in rows.items()})
    runs = tmp_path / "runs"
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)

        def run_eval(*extra: str) -> tuple[str, Path]:
            before = set(runs.glob("eval-*")) if runs.exists() else set()
            result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), *extra], env=env, cwd=tmp_path)
            assert result.returncode == 0, result.stderr
            return result.stdout, next(iter(set(runs.glob("eval-*")) - before))

        first_out, first = run_eval()
        sent = len(server.received)
        again_out, again = run_eval()
        assert len(server.received) == sent  # every reply came from the cache
        _, direct = run_eval("--method", "direct")
    assert "from the cache" not in first_out
    assert f"cost $0.0000 ({sent} of {sent} calls answered from the cache, at $0)" in again_out
    summary = json.loads((again / "summary.json").read_text())
    assert summary["usage"]["cached_calls"] == summary["usage"]["calls"] == sent
    row = json.loads((again / "results.jsonl").read_text().splitlines()[0])
    assert row["usage"]["cached_calls"] == row["usage"]["calls"] and row["usage_by_role"]["solver"]["cached_calls"] == 1
    run_json = json.loads(next(again.rglob("run.json")).read_text())
    assert run_json["usage"]["cached_calls"] == run_json["usage"]["calls"] > 0
    assert json.loads((first / "summary.json").read_text())["usage"]["cached_calls"] == 0
    # maps report: usage per Table 1 row (method and model), never averaged across methods
    out = tmp_path / "report"
    report = run_maps(["report", str(first), str(again), str(direct), "--out", str(out)], env=clean_env(), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    usage = json.loads((out / "report.json").read_text())["usage_by_role"]
    assert set(usage) == {"maps (gpt-4o)", "direct (gpt-4o)"}
    assert set(usage["direct (gpt-4o)"]) == {"direct"} and "direct" not in usage["maps (gpt-4o)"]
    assert usage["maps (gpt-4o)"]["solver"]["calls"] == 1 and usage["maps (gpt-4o)"]["solver"]["cached_calls"] == 0.5
    table = (out / "usage.md").read_text()
    assert "| maps (gpt-4o) | solver | 1.00 | 0.50 |" in table and "| direct (gpt-4o) | direct | 1.00 |" in table
