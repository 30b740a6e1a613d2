"""A run that failed is never reported as a wrong answer: `maps solve` prints "no answer
(error: …)" and no verdict, `--json` and run.json say `correct: null`, the page shows no
"incorrect"; an eval counts failed problems apart and says how the accuracy treats them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.helpers.common import TEST_KEY, clean_env, critic_json, make_png, run_maps, solver_json, write_config
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply, RoleScript


def lever(folder: Path) -> Path:
    make_png(folder / "lever.png")
    path = folder / "problem.yaml"
    path.write_text(yaml.safe_dump({"question": "Which mass balances the lever?", "images": ["lever.png"],
                                    "options": ["1 kg", "2 kg", "3 kg"], "answer": "B"}))
    return path


def failing(role: str) -> RoleScript:
    """The team's replies, except that every request of `role` fails (503)."""
    inner = RoleScript({"solver": [solver_json("A")], "critic": [critic_json()]})

    def script(request: Received) -> Reply:
        return Reply("overloaded", status=503) if request.role == role else inner(request)

    return script  # type: ignore[return-value]


@pytest.mark.parametrize("role", ["solver", "critic"])  # no answer yet; an answer (wrong) reached, then a failure
def test_a_failed_solve_has_no_verdict(tmp_path: Path, role: str) -> None:
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 0})
    problem = lever(tmp_path)
    runs = tmp_path / "runs"
    with FakeOpenAI(failing(role)) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        shown = run_maps(["solve", "--problem", str(problem), "--runs-dir", str(runs / "shown")], env=env, cwd=tmp_path)
        as_json = run_maps(["solve", "--problem", str(problem), "--runs-dir", str(runs / "json"), "--json"], env=env,
                           cwd=tmp_path)
    assert shown.returncode == 1 and as_json.returncode == 1
    assert "wrong" not in shown.stdout and "correct" not in shown.stdout
    assert "Gold answer: B (from the problem file): no verdict, the run failed" in shown.stdout
    if role == "solver":
        assert "Final answer: no answer (error: " in shown.stdout and "HTTP 503" in shown.stdout
    summary = json.loads(as_json.stdout)
    assert summary["correct"] is None and summary["gold"] == "B" and summary["stop_reason"] == "error"
    if role == "solver":
        assert summary["final_answer_text"].startswith("no answer (error: ")
    run = json.loads((Path(summary["run_dir"]) / "run.json").read_text())
    assert run["correct"] is None and run["evaluation"]["correct"] is None
    page = run_maps(["view", summary["run_dir"]], env=clean_env(), cwd=tmp_path)
    html = Path(page.stdout.strip()).read_text()
    assert "incorrect" not in html and "verdict" not in html.split('id="outcome"')[1].split("</section>")[0]
    if role == "solver":
        assert "no answer (error: " in html


def test_an_eval_counts_failed_problems_apart_and_says_so(tmp_path: Path) -> None:
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 0})
    data, rows = write_mathvista_jsonl(tmp_path / "data", 4)
    answers = {pid: ("B" if row["question_type"] == "multi_choice" else row["answer"]) for pid, row in rows.items()}
    with FakeOpenAI(ProblemScript(answers, fail={"2"})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs")], env=env,
                          cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "3 scored, 1 failed" in result.stdout
    assert "failed problems have no verdict: the accuracy is correct / scored, never counting them wrong" in result.stdout
    assert "Failed without a verdict" in result.stdout and "maps (gpt-4o): 1." in result.stdout
    eval_dir = next((tmp_path / "runs").glob("eval-*"))
    summary = json.loads((eval_dir / "summary.json").read_text())
    assert summary["failed"] == 1 and summary["average"] == {"n": 4, "scored": 3, "correct": 3, "accuracy": 100.0}
    # Figure 4 counts the failed problem in its own bar, never as "no regeneration".
    assert summary["feedback_shares"]["none"] == 0.75 and summary["feedback_shares"]["no usable review"] == 0.25
