"""`maps eval` end to end: the real command against the scripted server (concurrent requests),
on small local data sets: accuracy, resume after kill -9, failures, cost limit, shards, cache,
baselines and ablations."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from maps_autogen.eval import ResultsLog
from tests.helpers.common import MAPS, TEST_KEY, all_text_in, clean_env, run_maps, write_config
from tests.helpers.eval_cli import eval_dir_of, results, scripted_answers
from tests.helpers.eval_fixtures import HoldLaterProblems, ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI

VOLATILE = {"seconds", "usage", "usage_by_role", "schema_version"}




def expected_accuracy(rows: dict, category: str | None = None) -> float:
    chosen = [pid for pid, row in rows.items() if category is None or row["metadata"]["category"] == category]
    return round(100.0 * sum(1 for pid in chosen if int(pid) % 4) / len(chosen), 2)






@pytest.fixture
def mathvista(tmp_path: Path):
    return write_mathvista_jsonl(tmp_path / "mathvista", 12)


def test_eval_scores_known_answers_concurrently(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    script = ProblemScript(scripted_answers(rows), critic_low={"2"}, meet=2)
    # the one-rollback budget variant (the paper's Figure 4 counts one feedback decision)
    budget = write_config(tmp_path / "budget.yaml", **{"critic.max_rollbacks": 1, "critic.final_review": False})
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--concurrency", "4",
                           "--config", str(budget)], env=env, cwd=tmp_path)
        requests = len(server.received)
    assert result.returncode == 0, result.stderr
    assert script.max_in_flight >= 2  # problems really ran at the same time
    # One rollback: the Solver re-runs and, being the last allowed rollback, the chat ends.
    assert requests == 12 * 5 + 1
    run_dir = eval_dir_of(tmp_path / "runs")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["subsets"]["general"]["accuracy"] == expected_accuracy(rows, "general-vqa")
    assert summary["subsets"]["math"]["accuracy"] == expected_accuracy(rows, "math-targeted-vqa")
    assert summary["average"]["accuracy"] == expected_accuracy(rows)
    assert summary["feedback_shares"]["solver"] == round(1 / 12, 4) and summary["feedback_shares"]["none"] == round(11 / 12, 4)
    # The end-of-run Table 1 is maps report's (one writer): accuracy with its 95% Wilson interval.
    assert "| Method | MathVista Gen. | MathVista Math | MathVista Avg. |" in result.stdout
    row = next(line for line in result.stdout.splitlines() if line.startswith("| maps ("))
    cells = [cell.strip().split(" [") for cell in row.strip().strip("|").split("|")[1:]]
    assert [accuracy for accuracy, _ in cells] == [f"{expected_accuracy(rows, 'general-vqa'):.2f}",
                                                   f"{expected_accuracy(rows, 'math-targeted-vqa'):.2f}", f"{expected_accuracy(rows):.2f}"]
    assert all(interval.endswith("]") for _, interval in cells)
    lines = results(run_dir)
    assert [line["pid"] for line in lines] == [str(n) for n in range(1, 13)]
    two = next(line for line in lines if line["pid"] == "2")
    assert two["rollbacks"] == ["solver"] and two["stop_reason"] == "rollback_limit" and two["feedback_step"] == "solver"
    three = next(line for line in lines if line["pid"] == "3")
    assert three["extraction"] == "B" and three["prediction"] == "green" and three["correct"] is True and three["gold"] == "green"
    assert all(line["usage"]["cost"] > 0 for line in lines)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["ids"] == [str(n) for n in range(1, 13)] and manifest["benchmark"] == "mathvista"
    assert manifest["versions"]["autogen"].startswith("0.14") and "config" in manifest
    problem_run = json.loads((run_dir / "problems" / "3" / "run.json").read_text())
    assert problem_run["evaluation"]["correct"] is True and problem_run["gold"] == "green"
    assert TEST_KEY not in all_text_in(run_dir)


def test_kill_9_then_resume_loses_nothing_and_duplicates_nothing(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    script = HoldLaterProblems(ProblemScript(scripted_answers(rows)), free=3)
    runs = tmp_path / "runs"
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        process = subprocess.Popen([*MAPS, "eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--concurrency", "2", "--no-cache"],
                                   env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            script.wait_held(2, timeout=180)  # three problems finished, two in flight (generous: a loaded CI machine starts Python slowly)
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            script.release()
        found = list(runs.glob("eval-*/results.jsonl"))
        finished = len(found[0].read_text().splitlines()) if found else 0
        assert finished >= 3, "the eval never got going"
        run_dir = eval_dir_of(runs)
        before = ResultsLog(run_dir / "results.jsonl").read()
        assert 3 <= len(before) < 12
        resumed = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--resume", str(run_dir), "--no-cache"], env=env, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    lines = results(run_dir)
    assert sorted(line["pid"] for line in lines) == sorted(rows)  # nothing lost, no duplicates
    assert all(line["status"] == "ok" for line in lines)
    for pid, record in before.items():  # finished problems were not re-run
        after = next(line for line in lines if line["pid"] == pid)
        assert after["seconds"] == record.seconds
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["average"]["accuracy"] == expected_accuracy(rows) and summary["complete"] is True
    assert len(json.loads((run_dir / "manifest.json").read_text())["resumed_at"]) == 1


def test_a_failing_problem_is_recorded_and_the_run_goes_on(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 0})
    runs = tmp_path / "runs"
    with FakeOpenAI(ProblemScript(scripted_answers(rows), fail={"5"})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs)], env=env, cwd=tmp_path)
        assert result.returncode == 1, result.stderr  # a failed problem makes the exit code say so
        run_dir = eval_dir_of(runs)
        lines = {line["pid"]: line for line in results(run_dir)}
        assert lines["5"]["status"] == "failed" and "HTTP 500" in lines["5"]["error"] and lines["5"]["correct"] is None
        assert all(line["status"] == "ok" for pid, line in lines.items() if pid != "5")
        assert "error: some problems failed (1)" in result.stderr and f"--resume {run_dir}" in result.stderr
        # The same server, its outage over (another URL would be another setting of the run).
        server.script = ProblemScript(scripted_answers(rows))
        sent = len(server.received)
        # The manifest remembers where the data came from: --data is not needed to resume.
        resumed = run_maps(["eval", "mathvista", "--runs-dir", str(runs), "--resume", str(run_dir)], env=env, cwd=tmp_path)
        retried = {r.role for r in server.received[sent:]}
        assert len(server.received) - sent == 5  # only the failed problem ran again
    assert resumed.returncode == 0 and retried == {"interpreter", "aligner", "scholar", "solver", "critic"}
    lines = results(run_dir)
    assert len(lines) == 12 and all(line["status"] == "ok" for line in lines)


def test_max_cost_stops_cleanly_and_resume_carries_on(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    runs = tmp_path / "runs"
    with FakeOpenAI(ProblemScript(scripted_answers(rows))) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        first = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--concurrency", "1", "--max-cost", "0.02", "--no-cache"], env=env, cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        assert "--max-cost reached" in first.stdout
        run_dir = eval_dir_of(runs)
        partial = results(run_dir)
        spent = sum(line["usage"]["cost"] for line in partial)
        assert 0 < len(partial) < 12 and spent >= 0.02
        assert spent - partial[-1]["usage"]["cost"] < 0.02  # it stopped at the first problem past the limit
        second = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--resume", str(run_dir), "--no-cache"], env=env, cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert sorted(line["pid"] for line in results(run_dir)) == sorted(rows)


def test_max_cost_needs_known_prices(tmp_path: Path, mathvista) -> None:
    data, _ = mathvista
    env = clean_env(OPENAI_BASE_URL="http://127.0.0.1:9/v1", OPENAI_API_KEY=TEST_KEY)
    result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--model", "mystery-model", "--max-cost", "1"], env=env, cwd=tmp_path)
    assert result.returncode == 2 and "needs the price of mystery-model" in result.stderr and "Traceback" not in result.stderr


def _comparable(lines: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in line.items() if k not in VOLATILE} for line in lines), key=lambda line: line["pid"])


def test_sharded_runs_merge_to_the_same_results_as_one_run(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    with FakeOpenAI(ProblemScript(scripted_answers(rows), critic_low={"6"})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        whole = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "whole"), "--no-cache"], env=env, cwd=tmp_path)
        assert whole.returncode == 0, whole.stderr
        for shard in ("1/3", "2/3", "3/3"):
            server.script = ProblemScript(scripted_answers(rows), critic_low={"6"})  # fresh "first review" state
            part = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / f"shard{shard[0]}"), "--shard", shard, "--no-cache"], env=env, cwd=tmp_path)
            assert part.returncode == 0, part.stderr
        shard_dirs = [eval_dir_of(tmp_path / f"shard{n}") for n in (1, 2, 3)]
        shard_ids = [json.loads((d / "manifest.json").read_text())["ids"] for d in shard_dirs]
        assert sorted(sum(shard_ids, [])) == sorted(rows) and all(len(ids) == 4 for ids in shard_ids)
        merged = run_maps(["merge", *map(str, shard_dirs), "--out", str(tmp_path / "merged")], env=clean_env(), cwd=tmp_path)
        assert merged.returncode == 0, merged.stderr
        # The merged folder's settings cover every shard's problems: resuming it finds nothing
        # changed and nothing to run.
        sent = len(server.received)
        resumed = run_maps(["eval", "mathvista", "--resume", str(tmp_path / "merged")], env=env, cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        assert len(server.received) == sent
    whole_dir = eval_dir_of(tmp_path / "whole")
    assert _comparable(results(tmp_path / "merged")) == _comparable(results(whole_dir))
    assert [line["pid"] for line in results(tmp_path / "merged")] == [line["pid"] for line in results(whole_dir)]
    merged_summary = json.loads((tmp_path / "merged" / "summary.json").read_text())
    whole_summary = json.loads((whole_dir / "summary.json").read_text())
    assert merged_summary["subsets"] == whole_summary["subsets"] and merged_summary["feedback_shares"] == whole_summary["feedback_shares"]
    assert (tmp_path / "merged" / "problems" / "6" / "transcript.jsonl").is_file()


def test_cache_serves_repeated_requests_but_never_a_rolled_back_step(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    runs = tmp_path / "runs"
    # --limit 2 spreads over the subsets: the middle problem of each, pids 7 (general) and 8 (math).
    script = ProblemScript(scripted_answers(rows), critic_low={"8"})
    # the one-rollback budget variant: the chat ends after the re-run Solver
    write_config(tmp_path / "agents.yaml", **{"critic.max_rollbacks": 1, "critic.final_review": False})
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        first = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--limit", "2"], env=env, cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        solver_requests = [r for r in server.received if r.role == "solver" and "[q:8]" in r.user_text()]
        # The re-run Solver got a different request (its previous answer and the feedback) and a fresh reply.
        assert len(solver_requests) == 2 and solver_requests[0].user_text() != solver_requests[1].user_text()
        count = len(server.received)
        second = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--limit", "2"], env=env, cwd=tmp_path)
        assert second.returncode == 0 and len(server.received) == count  # everything came from the cache
        server.script = ProblemScript(scripted_answers(rows), critic_low={"8"})  # the same replies as the first run
        third = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--limit", "2", "--no-cache"], env=env, cwd=tmp_path)
        assert third.returncode == 0 and len(server.received) == 2 * count
    newest = sorted(runs.glob("eval-*"))
    cached = [line for d in newest for line in results(d)]
    assert any(line["usage"]["cost"] == 0 for line in cached)


@pytest.mark.parametrize("method", ["direct", "cot"])
def test_single_call_baselines(tmp_path: Path, mathvista, method: str) -> None:
    data, rows = mathvista
    with FakeOpenAI(ProblemScript(scripted_answers(rows))) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--method", method], env=env, cwd=tmp_path)
        assert [r.role for r in server.received] == [method] * 12
        assert all(len(r.image_urls()) == 1 for r in server.received)
        assert all("starts with 'The answer is'" in r.user_text() for r in server.received)
    assert result.returncode == 0, result.stderr
    summary = json.loads((eval_dir_of(tmp_path / "runs") / "summary.json").read_text())
    assert summary["average"]["accuracy"] == expected_accuracy(rows) and summary["method"] == method
    assert f"| {method} (gpt-4o) |" in result.stdout


def test_ablations(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    with FakeOpenAI(ProblemScript(scripted_answers(rows))) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "a"), "--limit", "2", "--without", "critic"], env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        # Two problems, no Critic: each runs the four steps once (the two may interleave).
        assert sorted(r.role for r in server.received) == sorted(["interpreter", "aligner", "scholar", "solver"] * 2)
        server.received.clear()
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "b"), "--limit", "1", "--without", "interpreter"], env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert [r.role for r in server.received] == ["aligner", "scholar", "solver", "critic"]
        assert all(not r.image_urls() for r in server.received)  # the paper's ablation: without the Interpreter no step sees the image
    summary = json.loads((eval_dir_of(tmp_path / "b") / "summary.json").read_text())
    assert summary["without"] == ["interpreter"] and "maps w/o interpreter" in result.stdout
    manifest = json.loads((eval_dir_of(tmp_path / "b") / "manifest.json").read_text())
    assert manifest["images_dropped"] == ["interpreter"] and manifest["settings"]["images"]["to_next_step"] is False


def test_sampling_is_seeded_and_recorded(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    with FakeOpenAI(ProblemScript(scripted_answers(rows))) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        for folder in ("s1", "s2"):
            result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / folder), "--sample", "3", "--sample-seed", "7", "--subset", "math"], env=env, cwd=tmp_path)
            assert result.returncode == 0, result.stderr
    manifests = [json.loads((eval_dir_of(tmp_path / f) / "manifest.json").read_text()) for f in ("s1", "s2")]
    assert manifests[0]["ids"] == manifests[1]["ids"] and len(manifests[0]["ids"]) == 3
    assert manifests[0]["sampled"]["math"]["seed"] == 7 and manifests[0]["sampled"]["math"]["ids"] == manifests[0]["ids"]
    assert all(int(pid) % 2 == 0 for pid in manifests[0]["ids"])  # math problems are the even pids


def test_bad_eval_input(tmp_path: Path) -> None:
    env = clean_env(OPENAI_API_KEY=TEST_KEY)
    missing = run_maps(["eval", "mathvista", "--data", str(tmp_path / "nope.jsonl")], env=env, cwd=tmp_path)
    assert missing.returncode == 2 and "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    shard = run_maps(["eval", "mathvista", "--data", str(tmp_path / "nope.jsonl"), "--shard", "5/4"], env=env, cwd=tmp_path)
    assert shard.returncode == 2 and "--shard" in shard.stderr
    subset = run_maps(["eval", "mathvista", "--subset", "chemistry", "--data", str(tmp_path)], env=env, cwd=tmp_path)
    assert subset.returncode == 2 and "no subset 'chemistry'" in subset.stderr
