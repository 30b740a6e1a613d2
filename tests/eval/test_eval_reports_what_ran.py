"""A run reports exactly what ran (`maps eval`): an incomplete or unparseable reply is never
scored ok nor cached, --resume keeps to the run's models, fatal service errors stop the run,
Ctrl-C and concurrent resumes leave every problem solved once, bad rows stop before anything."""

from __future__ import annotations

import json
import signal
import socket
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

from tests.helpers.common import MAPS, TEST_KEY, clean_env, run_maps, write_config
from tests.helpers.eval_cli import eval_dir_of, results, scripted_answers
from tests.helpers.eval_fixtures import HoldLaterProblems, ProblemScript, write_mathvista_jsonl
from tests.helpers.eval_fixtures import wait_for as _wait_for
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply


@pytest.fixture
def mathvista(tmp_path: Path):
    return write_mathvista_jsonl(tmp_path / "mathvista", 12)


@pytest.fixture
def two(tmp_path: Path):
    """Problem 1 (general) and problem 2 (math): `--limit 1` runs problem 1."""
    return write_mathvista_jsonl(tmp_path / "two", 2)


class Faulty(ProblemScript):
    """ProblemScript, except that `faults[(pid, role)]` replies (in order) come first."""

    def __init__(self, answers: dict[str, str], faults: dict[tuple[str, str], list[Reply]], **kwargs):
        super().__init__(answers, **kwargs)
        self.faults = faults

    def _reply(self, request: Received) -> Reply:
        queue = self.faults.get((self._pid(request) or "", request.role or ""))
        if queue:
            with self.lock:
                return queue.pop(0)
        return super()._reply(request)


def eval_args(data: Path, runs: Path, *extra: str) -> list[str]:
    return ["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), *extra]


def env_for(server: FakeOpenAI) -> dict[str, str]:
    return clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)


def cached_texts(runs: Path) -> list[str]:
    with sqlite3.connect(runs / ".cache" / "responses.sqlite") as db:
        return [row[0] for row in db.execute("SELECT text FROM accepted_replies")]


def test_a_truncated_stream_is_not_scored_not_cached_and_resume_redoes_it(tmp_path: Path, two) -> None:
    data, rows = two
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.stream": True, "endpoints.openai.max_retries": 0})
    runs = tmp_path / "runs"
    cut = Reply('{"process": {"Phase 1": "frame"}, "final_answer": "2"}', cut_after=2)
    renamed = Reply("scholar notes for [q:2]", model="gpt-4o-2024-08-06")  # the service names its snapshot
    long = Reply("aligner notes for [q:2], going on and on", finish_reason="length")
    faults = {("1", "solver"): [cut], ("2", "scholar"): [renamed], ("2", "aligner"): [long]}
    with FakeOpenAI(Faulty(scripted_answers(rows), faults)) as server:
        first = run_maps(eval_args(data, runs), env=env_for(server), cwd=tmp_path)
        assert first.returncode == 1, first.stderr
        run_dir = eval_dir_of(runs)
        one = {line["pid"]: line for line in results(run_dir)}["1"]
        assert one["status"] == "failed" and "incomplete" in one["error"] and one["correct"] is None
        assert not any('"Phase 1": "frame"}, "' in text or text.startswith('{"process"') and "final_answer" not in text
                       for text in cached_texts(runs))
        assert len(cached_texts(runs)) == 5 + 3  # problem 2 whole, problem 1 up to its Solver
        before = len(server.received)
        resumed = run_maps(eval_args(data, runs, "--resume", str(run_dir)), env=env_for(server), cwd=tmp_path)
        again = [r.role for r in server.received[before:]]
    assert resumed.returncode == 0, resumed.stderr
    # Only the failed problem ran again; its first three steps came from the cache.
    assert again == ["solver", "critic"]
    assert all(line["status"] == "ok" for line in results(run_dir))
    one, two = ({line["pid"]: line for line in results(run_dir)}[pid] for pid in ("1", "2"))
    assert two["models"]["scholar"]["served_model"] == "gpt-4o-2024-08-06" and two["models"]["scholar"]["model"] == "gpt-4o"
    assert two["max_tokens_reached"] == ["aligner"] and one["max_tokens_reached"] == []
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["served_models"] == {"scholar": ["gpt-4o-2024-08-06"]}
    # Written before any call: what the requests carry, never labelled as sent.
    assert "sent" not in manifest["models"]["solver"] and manifest["models"]["solver"]["request_settings"]["model"] == "gpt-4o"


def test_the_cache_keeps_only_accepted_replies_evicts_bad_ones_and_keys_on_each_roles_settings(tmp_path: Path, two) -> None:
    data, rows = two
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 0})
    runs = tmp_path / "runs"
    faults = {("1", "solver"): [Reply("I think it is two, but I will not say it in JSON.")]}
    with FakeOpenAI(Faulty(scripted_answers(rows), faults)) as server:
        first = run_maps(eval_args(data, runs, "--limit", "1"), env=env_for(server), cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        assert not any("not say it in JSON" in text for text in cached_texts(runs))
        assert results(eval_dir_of(runs))[0]["solver_parsed"] is False  # the fallback is visible in the results
        before = len(server.received)
        second = run_maps(eval_args(data, runs, "--limit", "1"), env=env_for(server), cwd=tmp_path)
        assert second.returncode == 0, second.stderr
        assert [r.role for r in server.received[before:]] == ["solver", "critic"]  # the unparsed reply was not served
        # Damage the cached Solver reply: the next run must not serve it, and must drop it.
        with sqlite3.connect(runs / ".cache" / "responses.sqlite") as db:
            assert db.execute("UPDATE accepted_replies SET text = 'garbage' WHERE text LIKE '%final_answer%'").rowcount == 1
        before = len(server.received)
        third = run_maps(eval_args(data, runs, "--limit", "1"), env=env_for(server), cwd=tmp_path)
        asked = [r.role for r in server.received[before:]]
        assert third.returncode == 0, third.stderr
        assert asked == ["solver"]  # evicted and asked again; the Critic's request is unchanged and cached
        assert "garbage" not in cached_texts(runs)
        # Another sampling setting for one role is another request: only that role is asked again.
        write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 0,
                                                   "team.steps.4.model": {"endpoint": "auto", "temperature": 0.7}})
        before = len(server.received)
        fourth = run_maps(eval_args(data, runs, "--limit", "1"), env=env_for(server), cwd=tmp_path)
        asked = [(r.role, r.body["temperature"]) for r in server.received[before:]]
    assert fourth.returncode == 0, fourth.stderr
    assert asked == [("critic", 0.7)]
    assert all(results(run_dir)[0]["status"] == "ok" for run_dir in runs.glob("eval-*"))


def test_resume_with_another_model_or_method_is_refused_unless_allowed(tmp_path: Path, two) -> None:
    data, rows = two
    runs = tmp_path / "runs"
    with FakeOpenAI(ProblemScript(scripted_answers(rows), fail={"2"})) as server:
        write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 0})
        first = run_maps(eval_args(data, runs), env=env_for(server), cwd=tmp_path)
        assert first.returncode == 1
        run_dir = eval_dir_of(runs)
        count = len(server.received)
        other_model = run_maps(eval_args(data, runs, "--resume", str(run_dir), "--model", "gpt-4o-mini"), env=env_for(server), cwd=tmp_path)
        other_method = run_maps(eval_args(data, runs, "--resume", str(run_dir), "--method", "cot"), env=env_for(server), cwd=tmp_path)
        assert len(server.received) == count  # nothing was sent
        server.script = ProblemScript(scripted_answers(rows))
        allowed = run_maps(eval_args(data, runs, "--resume", str(run_dir), "--model", "gpt-4o-mini", "--allow-model-change"),
                           env=env_for(server), cwd=tmp_path)
        resent = {r.body["model"] for r in server.received[count:]}
    assert other_model.returncode == 2 and "models.*.model gpt-4o → gpt-4o-mini (5 roles)" in other_model.stderr
    assert "--allow-change" in other_model.stderr
    assert other_method.returncode == 2 and "method maps → cot" in other_method.stderr
    assert allowed.returncode == 0, allowed.stderr
    assert resent == {"gpt-4o-mini"}
    manifest = json.loads((run_dir / "manifest.json").read_text())
    (change,) = manifest["changes"]
    assert change["from"]["models.solver.model"] == "gpt-4o" and change["to"]["models.solver.model"] == "gpt-4o-mini"
    assert manifest["models"]["solver"]["model"] == "gpt-4o-mini"
    assert {line["pid"]: line["models"]["solver"]["model"] for line in results(run_dir)} == {"1": "gpt-4o", "2": "gpt-4o-mini"}


@pytest.mark.parametrize("status, message, expected", [
    (401, "Incorrect API key provided", "refused the API key"),
    (404, "The model `gpt-4o` does not exist", "no such model or URL"),
    (400, "Invalid content type. image_url is only supported by certain models.", "does not accept images"),
])
def test_a_fatal_service_error_stops_the_eval_at_once(tmp_path: Path, mathvista, status: int, message: str, expected: str) -> None:
    data, _ = mathvista
    runs = tmp_path / "runs"
    with FakeOpenAI(lambda request: Reply(message, status=status)) as server:
        result = run_maps(eval_args(data, runs, "--concurrency", "2"), env=env_for(server), cwd=tmp_path)
        sent = len(server.received)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and expected in errors[0] and "--resume" in errors[0], result.stderr
    assert sent <= 2  # one per problem in flight, not one per problem of the data set
    run_dir = eval_dir_of(runs)
    recorded = results(run_dir)
    assert 1 <= len(recorded) <= 2 and all(line["status"] == "failed" for line in recorded)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] is False and expected in summary["stopped_by"]


def test_an_unreachable_service_stops_the_eval_instead_of_failing_every_problem(tmp_path: Path, mathvista) -> None:
    data, _ = mathvista
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 0})
    with socket.socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = clean_env(OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1", OPENAI_API_KEY=TEST_KEY)
    result = run_maps(eval_args(data, tmp_path / "runs", "--concurrency", "1"), env=env, cwd=tmp_path)
    assert result.returncode == 1 and "error: stopped early: cannot reach the model service" in result.stderr
    recorded = results(eval_dir_of(tmp_path / "runs"))
    assert len(recorded) == 1 and recorded[0]["status"] == "failed"  # the other 11 stay pending for --resume


def test_ctrl_c_in_eval_cancels_in_flight_problems_and_writes_the_summary(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    runs = tmp_path / "runs"
    gate = HoldLaterProblems(ProblemScript(scripted_answers(rows)))
    with FakeOpenAI(gate) as server:
        process = subprocess.Popen([*MAPS, *eval_args(data, runs, "--concurrency", "2", "--no-cache", "--quiet")], env=env_for(server),
                                   cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            gate.wait_held(2)  # two problems finished, two in flight, each inside a model call
            at_interrupt = len(server.received)
            process.send_signal(signal.SIGINT)
            # The summary is written after the interrupt cancelled the team: only then do the
            # held calls return, so a chat that went on would send its next call now.
            _wait_for(lambda: process.poll() is not None or any(runs.glob("eval-*/summary.json")), "the summary after Ctrl-C")
            gate.release()
            stdout, stderr = process.communicate(timeout=60)
            after = len(server.received) - at_interrupt
        finally:
            gate.release()
            if process.poll() is None:
                process.kill()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and f"maps eval mathvista --resume {eval_dir_of(runs)}" in stderr
    # The chats in flight stopped at their next model call instead of running to their end.
    assert after <= 2
    run_dir = eval_dir_of(runs)
    recorded = results(run_dir)
    assert recorded and all(line["status"] == "ok" for line in recorded)  # partial work is not counted
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["average"]["n"] == len(recorded) < 12


def test_two_concurrent_resumes_one_is_refused_and_each_problem_is_solved_once(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    runs = tmp_path / "runs"
    with FakeOpenAI(ProblemScript(scripted_answers(rows))) as server:
        # A run that stopped after its first problem (--max-cost), then a stale lock of a dead process.
        first = run_maps(eval_args(data, runs, "--concurrency", "1", "--max-cost", "0.000001", "--no-cache"), env=env_for(server), cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        run_dir = eval_dir_of(runs)
        (run_dir / ".lock").write_text("999999\n")
        gate = threading.Event()  # holds the first resume's requests until the second has tried
        script = ProblemScript(scripted_answers(rows))
        server.script = lambda request: script(request) if gate.wait(60) else Reply("gate never opened", status=500)
        owner = subprocess.Popen([*MAPS, *eval_args(data, runs, "--resume", str(run_dir), "--concurrency", "2", "--no-cache", "--quiet")],
                                 env=env_for(server), cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_for(lambda: (run_dir / ".lock").read_text().strip() == str(owner.pid), "the resume to take the lock")
        second = run_maps(eval_args(data, runs, "--resume", str(run_dir), "--no-cache"), env=env_for(server), cwd=tmp_path)
        gate.set()
        _, owner_err = owner.communicate(timeout=120)
        aligners = [script._pid(r) for r in server.received if r.role == "aligner"]
    assert second.returncode == 2 and "Traceback" not in second.stderr
    assert f"is being written by another maps process (pid {owner.pid})" in second.stderr
    assert owner.returncode == 0, owner_err
    assert sorted(aligners, key=int) == sorted(rows, key=int)  # every problem solved exactly once over both runs
    assert len(results(run_dir)) == 12 and all(line["status"] == "ok" for line in results(run_dir))


def test_bad_dataset_rows_are_reported_before_anything_runs(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    lines = data.read_bytes().splitlines()
    duplicate = json.loads(lines[2])
    duplicate["pid"] = "2"
    no_type = json.loads(lines[3])
    del no_type["question_type"]
    no_category = json.loads(lines[4])
    no_category["metadata"].pop("category")
    lines[2] = json.dumps(duplicate).encode()
    lines[3] = json.dumps(no_type).encode()
    lines[4] = json.dumps(no_category).encode()
    lines[5] = lines[5].replace(b"What is shown", b"What is \xff shown")
    data.write_bytes(b"\n".join(lines) + b"\n")
    runs = tmp_path / "runs"
    result = run_maps(eval_args(data, runs), env=clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL="http://127.0.0.1:9/v1"), cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        f"error: {data} line 3: row repeats pid '2' of {data} line 2",
        f"error: {data} line 4: row has no 'question_type'",
        f"error: {data} line 5: row has no 'metadata.category'",
        f"error: {data} line 6: row has text that is not valid UTF-8 (fix or remove the 4 bad rows; nothing was run)",
    ]
    assert not runs.exists()
