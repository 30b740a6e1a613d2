"""`maps report`'s tokens per correct answer: per report row, accuracy (correct / scored, a failure
never counted wrong) beside prompt tokens (of them cached), completion tokens, calls and cost per
problem (every problem run, failed ones included: they were paid for) and per correct answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.common import TEST_KEY, clean_env, run_maps, write_config
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply

REPORTED = {"prompt_tokens": 1000, "completion_tokens": 100, "prompt_tokens_details": {"cached_tokens": 600}}
PER_CALL = (400 * 2.5 + 600 * 1.25 + 100 * 10.0) / 1e6


def dollars(cell: str) -> float:
    assert cell.startswith("$"), cell
    return float(cell[1:])


def test_the_report_shows_tokens_and_cost_per_problem_and_per_correct_answer(tmp_path: Path) -> None:
    write_config(tmp_path / "agents.yaml", **{
        "endpoints.openai.max_retries": 0,
        "prices.gpt-4o": {"prompt_per_million": 2.5, "cached_prompt_per_million": 1.25, "completion_per_million": 10.0}})
    data, rows = write_mathvista_jsonl(tmp_path / "data", 4)
    answers = {pid: ("B" if row["question_type"] == "multi_choice" else row["answer"]) for pid, row in rows.items()}
    answers["4"] = "999"  # wrong
    runs = tmp_path / "runs"
    env_of = lambda server: clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)  # noqa: E731

    def scripted(script: ProblemScript):
        def reply(request: Received) -> Reply:
            answer = script(request)
            if answer.status == 200:
                answer.usage_body = REPORTED
            return answer
        return reply

    with FakeOpenAI(scripted(ProblemScript(answers, fail={"2"}))) as server:
        maps = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs / "maps")],
                        env=env_of(server), cwd=tmp_path)
    with FakeOpenAI(scripted(ProblemScript(answers))) as server:
        cot = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs / "cot"), "--method", "cot"],
                       env=env_of(server), cwd=tmp_path)
    assert maps.returncode == 1 and cot.returncode == 0, maps.stderr + cot.stderr
    (maps_dir,), (cot_dir,) = list((runs / "maps").glob("eval-*")), list((runs / "cot").glob("eval-*"))
    calls = sum(json.loads(line)["usage"]["calls"] for line in (maps_dir / "results.jsonl").read_text().splitlines())
    assert calls >= 9  # three problems through the team; the failed one made no call

    out = tmp_path / "report"
    report = run_maps(["report", str(maps_dir), str(cot_dir), "--out", str(out)], env=clean_env(), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    table = (out / "tokens.md").read_text().splitlines()
    assert table[0].startswith("| Row | Accuracy (correct / scored) | Failed | Prompt tokens / problem | of them cached")
    (maps_row,) = [line for line in table if line.startswith("| maps (gpt-4o)")]
    (cot_row,) = [line for line in table if line.startswith("| cot (gpt-4o)")]
    cells = [cell.strip() for cell in maps_row.strip("|").split("|")]
    # The failed problem is no wrong answer: 2 correct of 3 scored, 1 failed; its (zero) tokens still count per problem.
    assert cells[1:3] == ["66.67% (2 / 3)", "1"]
    assert cells[3:7] == [f"{1000 * calls / 4:,.0f}", f"{600 * calls / 4:,.0f}", f"{100 * calls / 4:,.0f}",
                          f"{calls / 4:.2f}"]
    assert cells[8:12] == [f"{1000 * calls / 2:,.0f}", f"{600 * calls / 2:,.0f}", f"{100 * calls / 2:,.0f}",
                           f"{calls / 2:.2f}"]
    assert dollars(cells[7]) == pytest.approx(PER_CALL * calls / 4, abs=1e-5)
    assert dollars(cells[12]) == pytest.approx(PER_CALL * calls / 2, abs=1e-5)
    cells = [cell.strip() for cell in cot_row.strip("|").split("|")]
    assert cells[1:7] + cells[8:12] == ["75.00% (3 / 4)", "0", "1,000", "600", "100", "1.00",
                                         "1,333", "800", "133", "1.33"]
    assert dollars(cells[7]) == pytest.approx(PER_CALL, abs=1e-5)
    assert dollars(cells[12]) == pytest.approx(PER_CALL * 4 / 3, abs=1e-5)
    assert "## Tokens and cost per problem and per correct answer" in (out / "report.md").read_text()
    listed = json.loads((out / "report.json").read_text())["answer_costs"]
    assert [(row["problems"], row["correct"], row["failed"]) for row in listed] == [(4, 2, 1), (4, 3, 0)]
