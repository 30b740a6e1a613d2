"""A call is priced by the model the service says it served, never by the name that was asked
for: a llama.cpp server answering a request for gpt-4o with SmolLM2 has an unknown cost, shown
as unknown everywhere (summary, progress bar), and a --max-cost run stops at it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

from maps_autogen.eval._stopping import costs as _costs
from maps_autogen.eval._workers import Progress as _Progress
from maps_autogen.records._schema import ResultRow
from maps_autogen.settings._config import PriceConfig
from maps_autogen.settings._endpoints import price_of
from tests.helpers.common import TEST_KEY, clean_env, critic_json, run_maps, solver_json
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply, RoleScript

PRICES = {"gpt-4o": PriceConfig(prompt_per_million=2.5, completion_per_million=10), "gpt-4": PriceConfig(prompt_per_million=30, completion_per_million=60)}


def test_the_price_follows_the_served_name_or_its_dated_snapshot() -> None:
    assert price_of("gpt-4o", PRICES) is PRICES["gpt-4o"]
    assert price_of("gpt-4o-2024-08-06", PRICES) is PRICES["gpt-4o"]  # what OpenAI serves for gpt-4o
    assert price_of("gpt-4-0613", PRICES) is PRICES["gpt-4"]
    for unpriced in ("SmolLM2-135M-Instruct", "openai/gpt-4o", "gpt-4o-mini", "gpt-4o-2024-08-06-extra", None, ""):
        assert price_of(unpriced, PRICES) is None, unpriced


def test_the_progress_bar_says_unknown_as_the_summary_does() -> None:
    progress = _Progress(2, True)
    try:
        progress.advance(50.0, None)
        assert "cost unknown" in progress._progress.tasks[0].description
        progress.advance(50.0, 0.5)
        assert "$0.5000" in progress._progress.tasks[0].description
    finally:
        progress.close()


def test_max_cost_counts_the_known_costs_and_stops_only_for_a_paid_model_without_a_price() -> None:
    models = {"interpreter": SimpleNamespace(kind="local"), "solver": SimpleNamespace(kind="openai")}
    final = SimpleNamespace(final_step=SimpleNamespace(name="solver"))
    team = SimpleNamespace(resolution=SimpleNamespace(models=models), loaded=SimpleNamespace(team=SimpleNamespace(config=final)))
    record = {"usage": {"calls": 3, "cost": None}, "usage_by_role": {"interpreter": {"cost": None}, "solver": {"cost": 0.25}}}
    row = lambda fields: ResultRow.model_validate({"pid": "1", "status": "ok", "scoring": {}, **fields})  # noqa: E731
    assert _costs(row(record), team) == (0.25, True, [])  # the local model's cost is unknown, but it is not paid for
    record["usage_by_role"]["solver"]["cost"] = None
    assert _costs(row(record), team) == (0.0, True, ["solver"])
    assert _costs(row({"usage": {"calls": 0, "cost": None}}), team) == (0.0, False, [])  # no call, nothing spent
    assert _costs(row({"usage": {"calls": 1, "cost": 0.5}}), team) == (0.5, False, [])


def solve_script(served: str) -> RoleScript:
    replies = {"solver": [solver_json("A")], "critic": [critic_json(None)]}
    script = RoleScript(replies)
    return lambda request: replace(script(request), model=served)  # type: ignore[return-value]


def test_a_server_serving_another_model_has_an_unknown_cost_and_a_snapshot_is_priced(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    args = ["solve", "-q", "What is 1 + 1?", "--runs-dir", str(runs), "--json"]
    with FakeOpenAI(solve_script("SmolLM2-135M-Instruct")) as server:  # only OPENAI_BASE_URL: gpt-4o is asked for
        other = run_maps(args, env=clean_env(OPENAI_BASE_URL=server.base_url), cwd=tmp_path)
    assert other.returncode == 0, other.stderr
    summary = json.loads(other.stdout)
    assert summary["usage"]["calls"] > 0 and summary["usage"]["cost"] is None
    run = json.loads((Path(summary["run_dir"]) / "run.json").read_text())
    assert run["usage"]["cost"] is None and all(row["cost"] is None for row in run["usage_by_role"].values())
    assert {entry["model"] for entry in run["models"].values()} == {"gpt-4o"}
    assert {entry.get("served_model") for entry in run["models"].values() if "sent" in entry} == {"SmolLM2-135M-Instruct"}

    with FakeOpenAI(solve_script("gpt-4o-2024-08-06")) as server:
        snapshot = run_maps(args, env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    assert snapshot.returncode == 0, snapshot.stderr
    assert json.loads(snapshot.stdout)["usage"]["cost"] > 0


def test_max_cost_stops_at_a_served_model_without_a_price(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 6)
    answers = ProblemScript({pid: ("B" if row["question_type"] == "multi_choice" else row["answer"]) for pid, row in rows.items()})

    def served_elsewhere(request: Received) -> Reply:
        return replace(answers(request), model="SmolLM2-135M-Instruct")

    runs = tmp_path / "runs"
    with FakeOpenAI(served_elsewhere) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--concurrency", "1",
                           "--max-cost", "5", "--no-cache"], env=env, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "--max-cost cannot be kept" in result.stderr and "SmolLM2-135M-Instruct" in result.stderr
    assert "prices:" in result.stderr and "Traceback" not in result.stderr
    assert "cost unknown" in result.stdout
    eval_dir = next(runs.glob("eval-*"))
    done = [json.loads(line) for line in (eval_dir / "results.jsonl").read_text().splitlines()]
    assert len(done) == 1 and done[0]["usage"]["cost"] is None  # it stopped at the first unpriced problem
    assert json.loads((eval_dir / "summary.json").read_text())["usage"]["cost"] is None


def test_a_problem_that_made_no_call_costs_nothing_in_the_summary_as_on_the_bar(tmp_path: Path) -> None:
    """Problem 1 fails before any reply (its requests are refused); problem 2 is solved at a known
    price. Nothing was spent on problem 1: the summary's cost is the known figure, as the
    progress bar's is, never "unknown"."""
    data, rows = write_mathvista_jsonl(tmp_path / "data", 2)
    answers = {pid: ("B" if row["question_type"] == "multi_choice" else row["answer"]) for pid, row in rows.items()}
    config = tmp_path / "agents.yaml"
    config.write_text("endpoints:\n  openai:\n    max_retries: 0\n")
    with FakeOpenAI(ProblemScript(answers, fail={"1"})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--concurrency", "1",
                           "--config", str(config)], env=env, cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # problem 1 failed
    summary = json.loads(next((tmp_path / "runs").glob("eval-*/summary.json")).read_text())
    assert summary["failed"] == 1 and summary["usage"]["cost"] is not None and summary["usage"]["cost"] > 0
    assert "cost unknown" not in result.stdout
