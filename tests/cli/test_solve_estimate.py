"""`maps solve` in a terminal: after the first reply, the live view estimates the rest of the
solve from the measured speed and the chat's plan (its flow: the steps, the review, the
rollbacks left), and again after each rollback."""

from __future__ import annotations

import json
import re
from pathlib import Path

from maps_autogen.orchestration._flow import calls_left
from maps_autogen.records._schema import FlowRecord
from tests.helpers.common import TEST_KEY, clean_env, critic_json, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, RoleScript

ESTIMATE = re.compile(r"≈ (\d+)(?:-(\d+))? more model calls? at ~[\d.]+ s each \(measured so far\): about .+ left")


def test_the_terminal_estimates_the_rest_after_the_first_reply_and_each_rollback(tmp_path: Path) -> None:
    script = RoleScript({"solver": [solver_json("12")],
                         "critic": [critic_json(None, 5, 2, 5, worst="knowledge"), critic_json(None, 5, 5, 5)]})
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        shown = run_maps(["solve", "-q", "What is 3 times 4?", "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    run_dir = Path(re.search(r"run saved in (\S+)", shown.stdout).group(1))
    flow = json.loads((run_dir / "run.json").read_text())["flow"]
    steps, most_rollbacks = flow["steps"], flow["max_rollbacks"]
    assert steps == ["aligner", "scholar", "solver"] and flow["final_review"] and most_rollbacks >= 2  # no image: no Interpreter
    lines = [line for line in shown.stdout.splitlines() if ESTIMATE.search(line)]
    assert len(lines) == 2, shown.stdout
    # After the Aligner's reply: the rest of one pass and its review, up to every rollback used.
    first = ESTIMATE.search(lines[0]).groups()
    one_pass = len(steps) + 1
    most = one_pass + most_rollbacks * len(steps) + most_rollbacks  # each rollback re-run and reviewed again
    assert (int(first[0]), int(first[1])) == (one_pass - 1, most - 1)
    # After the rollback to the Scholar: the Scholar, the Solver and a review, up to the rollbacks left.
    after = ESTIMATE.search(lines[1]).groups()
    left = most_rollbacks - 1
    assert (int(after[0]), int(after[1])) == (3, 3 + left * len(steps) + left)
    assert shown.stdout.index(lines[0]) < shown.stdout.index("── Scholar") < shown.stdout.index(lines[1])


def test_calls_left_follows_the_flow() -> None:
    flow = FlowRecord(steps=["a", "b", "c", "d"], reviewer="r", max_rollbacks=2, final_review=False)
    assert calls_left(flow) == (5, 5 + 2 * 4 + 1)  # the last rollback is not reviewed again
    assert calls_left(flow, "c", 1) == (3, 3 + 4)  # c, d, review; then one more rollback, unreviewed
    assert calls_left(flow, "b", 2) == (3, 3)  # the last allowed rollback: b, c, d and no review
    assert calls_left(FlowRecord(steps=["a", "b"], reviewer=None, max_rollbacks=3)) == (2, 2)  # no review: no rollback


def test_before_the_first_call_every_endpoint_gets_an_estimate(tmp_path: Path) -> None:
    """Not only the embedded model: on any service the calls and the reply budgets, and the time
    at a speed said to be assumed (the first reply measures it)."""
    with FakeOpenAI(RoleScript({"solver": [solver_json("12")], "critic": [critic_json(None, 5, 5, 5)]})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        shown = run_maps(["solve", "-q", "What is 3 times 4?", "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    # no image: aligner, scholar, solver and the review; up to 3 rollbacks each re-running them and reviewed again
    line = next(line for line in shown.stderr.splitlines() if line.startswith("this takes"))
    budgets = 3072 + 4096 + 8192 + 2048  # the default team's aligner, scholar, solver and critic
    assert line == (f"this takes 4 to 16 calls with replies of up to 8,192 tokens ({budgets * 4:,} reply tokens at "
                    f"most): up to {budgets * 4 / 50 / 60:.1f} min at 50 tokens/s (an assumed speed, not measured: the "
                    "estimate follows the measured speed from the first reply on)")
    assert shown.stderr.index("this takes") < shown.stdout.index("── Aligner")  # (stdout and stderr apart: said first)


def test_solve_json_says_how_the_run_goes_on_standard_error(tmp_path: Path) -> None:
    script = RoleScript({"solver": [solver_json("12")],
                         "critic": [critic_json(None, 5, 2, 5, worst="knowledge"), critic_json(None, 5, 5, 5)]})
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        shown = run_maps(["solve", "-q", "What is 3 times 4?", "--json", "--runs-dir", str(tmp_path / "runs")],
                         env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    summary = json.loads(shown.stdout)  # standard output: the JSON alone
    assert summary["rollbacks"] == ["scholar"]
    err = shown.stderr.splitlines()
    assert err[0].startswith("using gpt-4o at ") and err[1].startswith("this takes 4 to 16 calls")
    replied = [line for line in err if " replied in " in line]
    assert [line.split(" replied")[0] for line in replied] == ["Aligner", "Scholar", "Solver", "Critic", "Scholar",
                                                               "Solver", "Critic"]
    assert any(ESTIMATE.search(line) for line in err)  # the time left, from the first measured reply
    assert "rollback 1: re-running from the scholar step" in err and err[-1] == "stopped: critic_passed"
