"""`maps eval` says what it will call and bill before its first model call: the model and
endpoint of every step, the number of problems and a cost range from our token accounting
(eval/_estimate.py), or why the cost is unknown."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.helpers.common import TEST_KEY, clean_env, run_maps, write_config
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Reply

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
    # maps report: usage per report row, never averaged across methods; two runs of one benchmark
    # are two rows (told apart by their folders), each with its own cache share
    out = tmp_path / "report"
    report = run_maps(["report", str(first), str(again), str(direct), "--out", str(out)], env=clean_env(), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    usage = json.loads((out / "report.json").read_text())["usage_by_role"]
    fresh, cached = f"maps (gpt-4o; run {first.name})", f"maps (gpt-4o; run {again.name})"
    assert set(usage) == {fresh, cached, "direct (gpt-4o)"}
    assert set(usage["direct (gpt-4o)"]) == {"direct"} and "direct" not in usage[fresh]
    assert usage[fresh]["solver"]["calls"] == 1 and usage[fresh]["solver"]["cached_calls"] == 0
    assert usage[cached]["solver"]["calls"] == 1 and usage[cached]["solver"]["cached_calls"] == 1
    table = (out / "usage.md").read_text()
    assert f"| {cached} | solver | 1.00 | 1.00 |" in table and "| direct (gpt-4o) | direct | 1.00 |" in table


def test_the_cost_range_follows_its_stated_formula(tmp_path: Path) -> None:
    from maps_autogen.eval._estimate import TYPICAL_SHARE, cost_range, pass_calls
    from maps_autogen.orchestration._solving import assemble_team
    from maps_autogen.problem._problem import Problem
    from maps_autogen.problem._tasks import EvalItem
    from maps_autogen.settings._config import load_config

    problem = Problem(question="Which mass balances the lever? " * 20, options=("2 kg", "4 kg"))
    items = [EvalItem(pid=str(n), subset="s", load_problem=lambda: problem, record={}, gold="A") for n in range(3)]
    env = {"OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}

    def team_with(rollbacks: int):
        return assemble_team(load_config(write_config(tmp_path / f"r{rollbacks}.yaml", **{"critic.max_rollbacks": rollbacks})), env)

    team = team_with(0)
    # one call for a baseline: its prompt counted from the text, its reply at 25% / 100% of max_tokens
    (call,) = pass_calls(team, problem, method="direct", without=frozenset())
    price, cap = call.model.price, call.model.max_tokens
    assert price is not None and cap is not None and call.prompt_tokens > 100
    low, high = cost_range(team, items, method="direct", without=frozenset())  # type: ignore[misc]
    def usd(completion: int) -> float:
        return 3 * (call.prompt_tokens * price.prompt_per_million + completion * price.completion_per_million) / 1e6
    assert (round(low, 9), round(high, 9)) == (round(usd(int(cap * TYPICAL_SHARE)), 9), round(usd(cap), 9))
    # the team: a step's prompt holds the outputs it reads; each rollback adds a whole pass to the high end
    calls = pass_calls(team, problem, method="maps", without=frozenset())
    assert [c.role for c in calls] == ["aligner", "scholar", "solver", "critic"]  # no images: no interpreter
    assert next(c for c in calls if c.role == "critic").reads == ("aligner", "scholar", "solver")
    low0, high0 = cost_range(team, items, method="maps", without=frozenset())  # type: ignore[misc]
    low3, high3 = cost_range(team_with(3), items, method="maps", without=frozenset())  # type: ignore[misc]
    assert low0 == low3 and round(high3, 9) == round(4 * high0, 9) and low0 < high0


def test_on_the_embedded_model_the_cost_is_free_and_the_time_is_said_before_the_first_call(tmp_path: Path) -> None:
    """What `maps eval` prints on the embedded model (no key): not "cost: unknown", and a time from
    its measured speed, one call at a time (its server has one slot, whatever --concurrency says)."""
    from maps_autogen.eval._estimate import announcement
    from maps_autogen.orchestration._solving import Team
    from maps_autogen.orchestration._time import EMBEDDED_SECONDS_PER_CALL
    from maps_autogen.problem._problem import Problem
    from maps_autogen.problem._tasks import EvalItem
    from maps_autogen.settings import embedded_team_setting, load_prompts, resolve_models
    from maps_autogen.settings._config import load_config

    loaded = load_config(None, tmp_path)
    resolution = resolve_models(loaded, {})  # no key: every step on the embedded model
    loaded, _ = embedded_team_setting(loaded, resolution)  # its loop: one rollback, no final review
    team = Team(loaded=loaded, prompts=load_prompts(loaded), resolution=resolution, backends={})  # no server started
    problem = Problem(question="Which mass balances the lever?", options=("2 kg", "4 kg"))
    items = [EvalItem(pid=str(n), subset="s", load_problem=lambda: problem, record={}, gold="A") for n in range(4)]
    said = announcement(team, items, method="maps", without=frozenset(), concurrency=8).splitlines()
    assert "cost: free (the model runs on this machine)" in said and not any("unknown" in line for line in said)
    # no image: aligner, scholar, solver, critic; then one rollback re-running the three
    assert "per problem: 4 to 8 calls" in "\n".join(said)
    low, high = 4 * 4 * EMBEDDED_SECONDS_PER_CALL / 60, 4 * 8 * EMBEDDED_SECONDS_PER_CALL / 60
    assert (f"estimated time: {low:.1f} min to {high:.1f} min (~12 s per call on 2 cores, measured; one call at a "
            "time: the embedded server answers one request at a time)") in said


def test_the_time_and_the_calls_follow_their_stated_formula(tmp_path: Path) -> None:
    from maps_autogen.eval._estimate import TYPICAL_SHARE, announcement, bounds, pass_calls
    from maps_autogen.orchestration._solving import assemble_team
    from maps_autogen.problem._problem import Problem
    from maps_autogen.problem._tasks import EvalItem
    from maps_autogen.settings._config import load_config

    problem = Problem(question="Which mass balances the lever?", options=("2 kg", "4 kg"))
    items = [EvalItem(pid=str(n), subset="s", load_problem=lambda: problem, record={}, gold="A") for n in range(10)]
    env = {"OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    team = assemble_team(load_config(write_config(tmp_path / "agents.yaml", **{"critic.max_rollbacks": 2})), env)
    calls = pass_calls(team, problem, method="maps", without=frozenset())
    caps = [call.model.max_tokens or 0 for call in calls]
    found = bounds(team, items, method="maps", without=frozenset())
    assert not isinstance(found, str)
    assert found.calls == (len(calls), 3 * len(calls))  # one pass; three passes (two rollbacks)
    assert found.completion_tokens == (sum(int(cap * TYPICAL_SHARE) for cap in caps), 3 * sum(caps))
    assert [round(s, 6) for s in found.seconds] == [round(t / 50, 6) for t in found.completion_tokens]  # 50 tokens/s
    said = announcement(team, items, method="maps", without=frozenset(), concurrency=4)
    longest = 10 * found.seconds[1] / 4  # ten problems, four in flight
    assert f"to {longest / 60:.1f} min (4 problems in flight, replies at 50 tokens/s per request: an assumed speed" in said


def test_a_dry_run_says_what_the_run_would_do_and_calls_and_writes_nothing(tmp_path: Path) -> None:
    data, _ = write_mathvista_jsonl(tmp_path / "mathvista", 3)
    with FakeOpenAI() as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--dry-run"],
                          env=env, cwd=tmp_path)
        assert server.received == []  # not one call
    assert result.returncode == 0, result.stderr
    assert result.stdout == "dry run: 3 problem(s) would run; nothing was called or written\n"
    for said in ("maps eval: 3 problem(s), method maps", "per problem: ", "estimated cost: $", "estimated time: "):
        assert said in result.stderr
    assert not (tmp_path / "runs").exists()
    quiet = run_maps(["eval", "mathvista", "--data", str(data), "--dry-run", "--quiet"], env=clean_env(), cwd=tmp_path)
    assert quiet.returncode == 2 and "drop --quiet" in quiet.stderr


def test_without_the_reviewer_no_rollback_is_counted(tmp_path: Path) -> None:
    from maps_autogen.eval._estimate import announcement, bounds
    from maps_autogen.orchestration._solving import assemble_team
    from maps_autogen.problem._problem import Problem
    from maps_autogen.problem._tasks import EvalItem
    from maps_autogen.settings._config import load_config

    problem = Problem(question="Which mass balances the lever?", options=("2 kg", "4 kg"))
    items = [EvalItem(pid="1", subset="s", load_problem=lambda: problem, record={}, gold="A")]
    env = {"OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    team = assemble_team(load_config(None, tmp_path), env)
    found = bounds(team, items, method="maps", without=frozenset({"critic"}))
    assert not isinstance(found, str) and found.calls == (3, 3)  # aligner, scholar, solver: once each
    said = announcement(team, items, method="maps", without=frozenset({"critic"}))
    assert "per problem: 3 to 3 calls" in said and "0 rollback(s)" in said
