"""`maps eval` in worker processes (eval/_processes.py): the same results, summary, transcripts
and manifest settings as one process; a stopped multi-process run resumes to the same end; a
Ctrl-C leaves no worker process alive and results.jsonl intact; a worker that dies is reported
in one line, its problem recorded failed, and it is replaced (no more than allowed); workers
solve the rows the parent read; the automatic worker count."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from maps_autogen.eval._processes import PROBLEMS_PER_PROCESS, shares, worker_count
from tests.helpers.common import MAPS, TEST_KEY, all_text_in, clean_env, run_maps, write_config
from tests.helpers.eval_cli import eval_dir_of, results, scripted_answers
from tests.helpers.eval_fixtures import (
    HoldLaterProblems,
    HoldProblems,
    ProblemScript,
    wait_for,
    write_custom_jsonl,
    write_mathvista_jsonl,
)
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply


def untimed(value: Any) -> Any:
    """`value` without its timings (`seconds` at any depth)."""
    if isinstance(value, dict):
        return {key: untimed(item) for key, item in value.items() if key != "seconds"}
    if isinstance(value, list):
        return [untimed(item) for item in value]
    return value


def eval_args(data: Path, runs: Path, *extra: str) -> list[str]:
    return ["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--no-cache", *extra]


def env_for(server: FakeOpenAI) -> dict[str, str]:
    return clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)


def script_for(rows: dict[str, Any]) -> Callable[[Received], Reply]:
    """Problem 2 rolled back once (its first review is low), problem 5 meets a service error,
    and the Scholar repeats the API key (every process must mask it)."""
    script = ProblemScript(scripted_answers(rows), critic_low={"2"}, fail={"5"})

    def reply(request: Received) -> Reply:
        answer = script(request)
        if request.role == "scholar":
            answer.content += f" (the key is {TEST_KEY})"
        return answer
    return reply


def rows_of(run_dir: Path) -> list[dict[str, Any]]:
    return [untimed(row) for row in results(run_dir)]


def unsettled(row: dict[str, Any]) -> dict[str, Any]:
    """A results row without the index of the settings it ran under."""
    return {key: value for key, value in row.items() if key != "settings"}


def verdicts(run_dir: Path) -> dict[str, Any]:
    summary = json.loads((run_dir / "summary.json").read_text())
    return untimed({key: value for key, value in summary.items() if key != "eval_id"})


def roles_of(run_dir: Path) -> dict[str, list[Any]]:
    """Each problem's transcript as the sequence of its records' (type, role or event)."""
    sequences = {}
    for transcript in sorted((run_dir / "problems").glob("*/transcript.jsonl")):
        records = [json.loads(line) for line in transcript.read_text().splitlines()]
        sequences[transcript.parent.name] = [(r.get("type"), r.get("role") or r.get("event")) for r in records]
    return sequences


def settings_of(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "manifest.json").read_text())["settings"]


def worker_pids(parent: int) -> list[int]:
    """The worker processes of `parent` (spawned children), from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:"))
        if ppid == parent and b"--multiprocessing-fork" in command and b"spawn_main" in command:
            found.append(int(entry.name))
    return found


def running(pid: int) -> bool:
    try:
        state = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("State:"))
    except (OSError, StopIteration):
        return False
    return "Z" not in state.split()[1]


def test_two_worker_processes_record_what_one_process_records_and_a_stopped_run_resumes_alike(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 8)
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 0})
    with FakeOpenAI(script_for(rows)) as server:
        one = run_maps(eval_args(data, tmp_path / "one", "--concurrency", "4", "--workers", "1"),
                       env=env_for(server), cwd=tmp_path)
        server.script = script_for(rows)
        two = run_maps(eval_args(data, tmp_path / "two", "--concurrency", "4", "--workers", "2"),
                       env=env_for(server), cwd=tmp_path)
        # Stopped by the cost cap after its first problems, then resumed.
        server.script = script_for(rows)
        stopped = run_maps(eval_args(data, tmp_path / "stopped", "--concurrency", "2", "--workers", "2",
                                     "--max-cost", "0.000001"), env=env_for(server), cwd=tmp_path)
        stopped_dir = eval_dir_of(tmp_path / "stopped")
        before = {row["pid"] for row in results(stopped_dir)}
        resumed = run_maps(eval_args(data, tmp_path / "stopped", "--resume", str(stopped_dir), "--concurrency", "2",
                                     "--max-cost", "100"), env=env_for(server), cwd=tmp_path)
        # Stopped by a service failure every problem meets (the children cancel theirs), then resumed.
        # Its workers' warnings (a retry, whose error repeats the key) reach the parent's stderr, masked.
        server.script = lambda request: Reply(f"outage for key {TEST_KEY}", status=500)
        retrying = write_config(tmp_path / "retry.yaml", **{"endpoints.openai.max_retries": 1})
        halted = run_maps(eval_args(data, tmp_path / "halted", "--concurrency", "2", "--workers", "2",
                                    "--config", str(retrying)), env=env_for(server), cwd=tmp_path)
        halted_dir = eval_dir_of(tmp_path / "halted")
        at_halt = results(halted_dir)
        server.script = script_for(rows)
        # (switching back to max_retries 0, which changes what is sent: --allow-change, recorded)
        carried_on = run_maps(eval_args(data, tmp_path / "halted", "--resume", str(halted_dir), "--concurrency", "2",
                                        "--allow-change"), env=env_for(server), cwd=tmp_path)
    assert one.returncode == 1 and two.returncode == 1, two.stderr  # problem 5 failed (a service error)
    assert "running in" not in one.stderr and "running in 2 worker processes (2, 2 problems in flight each)" in two.stderr
    assert "Traceback" not in two.stderr and "worker process" not in two.stderr.replace("running in 2 worker", "")
    first, second = eval_dir_of(tmp_path / "one"), eval_dir_of(tmp_path / "two")
    assert rows_of(first) == rows_of(second)
    statuses = {row["pid"]: (row["status"], row["rollbacks"]) for row in rows_of(second)}
    assert statuses["5"][0] == "failed" and statuses["2"] == ("ok", ["solver"]) and len(statuses) == 8
    assert verdicts(first) == verdicts(second)
    assert roles_of(first) == roles_of(second) and len(roles_of(second)) == 8
    assert settings_of(first) == settings_of(second)
    assert stopped.returncode == 0 and "stopped: --max-cost reached" in stopped.stdout, stopped.stderr
    assert 1 <= len(before) < 8  # part-way: the rest left for --resume
    assert resumed.returncode == 1 and "Traceback" not in resumed.stderr, resumed.stderr
    assert rows_of(stopped_dir) == rows_of(first)
    assert roles_of(stopped_dir) == roles_of(first) and settings_of(stopped_dir) == settings_of(first)
    assert {k: v for k, v in verdicts(stopped_dir).items() if k != "stopped_for_cost"} == \
        {k: v for k, v in verdicts(first).items() if k != "stopped_for_cost"}
    assert halted.returncode == 1 and "error: stopped early: two problems in a row failed" in halted.stderr, halted.stderr
    assert "WARNING: model call failed" in halted.stderr and TEST_KEY not in halted.stderr
    assert 1 <= len(at_halt) <= 2 and all(row["status"] == "failed" for row in at_halt)  # the rest left pending
    assert carried_on.returncode == 1, carried_on.stderr
    assert [unsettled(row) for row in rows_of(halted_dir)] == [unsettled(row) for row in rows_of(first)]
    changes = json.loads((halted_dir / "manifest.json").read_text())["changes"]
    steps = json.loads((halted_dir / "manifest.json").read_text())["team"]["steps"]
    assert changes[-1]["differences"] == [f"models.{step}.endpoint.max_retries" for step in steps]
    assert verdicts(halted_dir) == verdicts(first) and roles_of(halted_dir) == roles_of(first)
    for run_dir in (first, second, stopped_dir, halted_dir):
        assert TEST_KEY not in all_text_in(run_dir)


def run_held(tmp_path: Path, problems: int, act: Callable[[subprocess.Popen[str], list[int], Path], None],
             free: int = 2) -> tuple[subprocess.Popen[str], str, list[int], Path]:
    """`maps eval` in two worker processes (one problem in flight each), in its own process
    group; once the first `free` problems are done and each worker waits inside a model call,
    `act(process, its worker pids, runs folder)`; then the held calls go on. Returns the
    process, its stderr, its worker pids and the runs folder."""
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", problems)
    runs = tmp_path / "runs"
    gate = HoldLaterProblems(ProblemScript(scripted_answers(rows)), free=free)
    with FakeOpenAI(gate) as server:
        process = subprocess.Popen([*MAPS, *eval_args(data, runs, "--concurrency", "2", "--workers", "2", "--quiet")],
                                   env=env_for(server), cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            gate.wait_held(2)
            children = worker_pids(process.pid)
            assert len(children) == 2
            act(process, children, runs)
            gate.release()
            _, stderr = process.communicate(timeout=120)
        finally:
            gate.release()
            if process.poll() is None:
                process.kill()
    return process, stderr, children, runs


def interrupt(process: subprocess.Popen[str], children: list[int], runs: Path) -> None:
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
    wait_for(lambda: process.poll() is not None or any(runs.glob("eval-*/summary.json")), "the summary")


def test_ctrl_c_reaches_only_the_parent_and_leaves_no_worker_process(tmp_path: Path) -> None:
    process, stderr, children, runs = run_held(tmp_path, 8, interrupt)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "worker process" not in stderr, stderr
    assert f"maps eval mathvista --resume {eval_dir_of(runs)}" in stderr
    assert not [pid for pid in children if running(pid)]  # reaped before the parent ended
    recorded = results(eval_dir_of(runs))
    assert len(recorded) == 2 and all(row["status"] == "ok" for row in recorded)  # the problems in flight are not counted
    summary = json.loads((eval_dir_of(runs) / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["average"]["n"] == 2


def test_ctrl_c_before_any_problem_finished_writes_an_empty_summary(tmp_path: Path) -> None:
    process, stderr, children, runs = run_held(tmp_path, 4, interrupt, free=0)
    assert process.returncode == 130 and "Traceback" not in stderr, stderr
    assert not [pid for pid in children if running(pid)]
    summary = json.loads((eval_dir_of(runs) / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["average"]["n"] == 0 and summary["failed"] == 0


def test_ctrl_c_while_the_workers_start_stops_the_run_cleanly(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 4)
    runs = tmp_path / "runs"
    gate = HoldLaterProblems(ProblemScript(scripted_answers(rows)), free=0)  # the run cannot end before the Ctrl-C
    with FakeOpenAI(gate) as server:
        process = subprocess.Popen([*MAPS, *eval_args(data, runs, "--concurrency", "2", "--workers", "2")],
                                   env=env_for(server), cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            assert process.stderr is not None
            announced = next((line for line in iter(process.stderr.readline, "") if "worker processes" in line), None)
            assert announced, "no worker processes announced"
            wait_for(lambda: len(worker_pids(process.pid)) == 2, "both workers")
            children = worker_pids(process.pid)
            os.killpg(process.pid, signal.SIGINT)  # while they import and load: nothing sent yet
            _, stderr = process.communicate(timeout=60)
        finally:
            gate.release()
            if process.poll() is None:
                process.kill()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr and "worker process" not in stderr, stderr
    assert not [pid for pid in set(children) if running(pid)]
    assert json.loads((eval_dir_of(runs) / "summary.json").read_text())["interrupted"] is True


def test_a_worker_that_dies_is_reported_in_one_line_recorded_failed_and_replaced(tmp_path: Path) -> None:
    replacements: list[int] = []

    def kill_one(process: subprocess.Popen[str], children: list[int], runs: Path) -> None:
        os.kill(children[0], signal.SIGKILL)
        wait_for(lambda: not running(children[0]), "the worker to die")
        wait_for(lambda: len([pid for pid in worker_pids(process.pid) if running(pid)]) == 2, "a new worker")
        replacements.extend(set(worker_pids(process.pid)) - set(children))

    process, stderr, children, runs = run_held(tmp_path, 6, kill_one)
    assert process.returncode == 1 and "Traceback" not in stderr, stderr
    died = [line for line in stderr.splitlines() if "ended (exit code -9)" in line]
    assert len(died) == 1 and "--resume runs them again; a new worker process takes its place" in died[0], stderr
    assert len(replacements) == 1 and replacements[0] not in children
    recorded = results(eval_dir_of(runs))
    failed = [row for row in recorded if row["status"] == "failed"]
    assert len(recorded) == 6 and len(failed) == 1  # the other worker and the new one solved the rest
    assert "the worker process solving it ended (exit code -9)" in failed[0]["error"]
    summary = json.loads((eval_dir_of(runs) / "summary.json").read_text())
    assert summary["workers_replaced"] == 1 and summary["failed"] == 1 and summary["missing"] == []
    assert json.loads((eval_dir_of(runs) / "manifest.json").read_text())["workers_replaced"] == 1


def test_workers_replaced_no_more_than_allowed_stop_the_run_with_the_rest_pending(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """With no replacement left, once every worker has died the run stops as on a fatal error:
    the problems in flight recorded failed, the others pending (not failed, not wrong)."""
    import threading

    from maps_autogen.api import _api as api
    from maps_autogen.eval import _processes as processes

    monkeypatch.setattr(processes, "REPLACEMENTS_PER_WORKER", 0)
    data, answers = write_custom_jsonl(tmp_path / "data", 6)
    gate = HoldProblems(ProblemScript(answers), hold={"p1", "p2"})
    outcome: list[Any] = []
    with FakeOpenAI(gate) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        run = threading.Thread(target=lambda: outcome.append(api.evaluate(
            "custom", data=data, runs_dir=tmp_path / "runs", cache=False, concurrency=2, workers=2)))
        run.start()
        try:
            gate.wait_held("p1")
            gate.wait_held("p2")
            workers = worker_pids(os.getpid())
            assert len(workers) == 2
            for pid in workers:
                os.kill(pid, signal.SIGKILL)
            run.join(120)
        finally:
            gate.release()
            run.join(120)
    assert outcome, "the run did not end"
    result = outcome[0]
    assert isinstance(result.fatal, processes.WorkersGone) and "every worker process has ended, 0 of them replaced" in str(
        result.fatal)
    assert result.summary.failed == 2 and result.summary.missing == ["p3", "p4", "p5", "p6"]
    assert result.summary.workers_replaced == 0 and not worker_pids(os.getpid())


def test_worker_processes_solve_the_rows_the_parent_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A change to the data file after the parent read it (a newer revision on the hub) never
    reaches the workers: they are sent the parent's rows, never read the data set."""
    from maps_autogen.api import _api as api

    data, answers = write_custom_jsonl(tmp_path / "data", 4)
    original = data.read_text()

    def edit(line: str) -> None:
        if "worker processes" in line:  # after the parent read the rows, before any worker starts
            data.write_text(original.replace("times 3", "times 5 EDITED").replace('"answer": ', '"answer": 1'))

    with FakeOpenAI(ProblemScript(answers)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        outcome = api.evaluate("custom", data=data, runs_dir=tmp_path / "runs", cache=False, concurrency=2, workers=2,
                               announce=edit)
        asked = "\n".join(request.user_text() for request in server.received)
    assert data.read_text() != original  # edited while the run went on
    assert "EDITED" not in asked and "[q:p1] What is 1 times 3?" in asked
    assert {row["pid"]: row["gold"] for row in results(outcome.eval_dir)} == {f"p{n}": str(n * 3) for n in range(1, 5)}
    assert outcome.summary.average.correct == 3  # p3 answered wrong, as scored against the rows read


@pytest.mark.parametrize(("requested", "concurrency", "problems", "cores", "local", "expected"), [
    (None, 8, 1000, 2, False, 1),  # one core keeps up
    (None, PROBLEMS_PER_PROCESS, 1000, 2, False, 1),
    (None, PROBLEMS_PER_PROCESS + 1, 1000, 2, False, 2),
    (None, 2 * PROBLEMS_PER_PROCESS, 1000, 2, False, 2),
    (None, 8 * PROBLEMS_PER_PROCESS, 1000, 2, False, 2),  # at most one per core
    (None, 8 * PROBLEMS_PER_PROCESS, 1000, 16, False, 8),
    (None, 8 * PROBLEMS_PER_PROCESS, 3 * PROBLEMS_PER_PROCESS, 16, False, 3),  # one per full share of problems left
    (None, 2 * PROBLEMS_PER_PROCESS, PROBLEMS_PER_PROCESS + 10, 8, False, 1),  # too few to pay for a start
    (None, 8 * PROBLEMS_PER_PROCESS, 1000, 16, True, 1),  # the embedded model: one process
    (3, 8, 1000, 2, False, 3),  # --workers overrides
    (4, 2, 1000, 2, False, 2),  # never more processes than problems in flight
    (4, 8, 3, 2, False, 3),  # nor than problems left to run
    (4, 8, 0, 2, False, 1),  # nothing left: no worker process
])
def test_the_worker_count(requested: int | None, concurrency: int, problems: int, cores: int, local: bool,
                          expected: int) -> None:
    assert worker_count(requested, concurrency=concurrency, problems=problems, cores=cores, local=local) == expected


def test_the_problems_in_flight_are_split_without_exceeding_the_concurrency() -> None:
    assert shares(5, 2) == [3, 2] and shares(128, 3) == [43, 43, 42] and sum(shares(7, 7)) == 7


def test_workers_on_the_embedded_model_are_refused_before_anything_runs(tmp_path: Path) -> None:
    data, _ = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    result = run_maps(eval_args(data, tmp_path / "runs", "--model", "local", "--workers", "2"), env=clean_env(),
                      cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "error: --workers 2 cannot run the embedded model" in result.stderr
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").glob("eval-*"))


def test_a_second_ctrl_c_runs_the_exit_hooks_before_it_exits(tmp_path: Path) -> None:
    """The hook a multi-process eval registers to kill and reap its workers (ProcessWorkers.kill)."""
    marker = tmp_path / "hook-ran"
    script = (
        "import os, signal, pathlib\n"
        "from maps_autogen._util._interrupts import exit_on_second_interrupt, on_exit_now\n"
        f"on_exit_now(lambda: pathlib.Path({str(marker)!r}).write_text('killed'))\n"
        "exit_on_second_interrupt()\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "signal.pause()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130 and "interrupted again: exiting now" in done.stderr, done.stderr
    assert marker.read_text() == "killed"


def test_the_cores_counted_are_at_most_a_slurm_tasks_cpus() -> None:
    """A Slurm task's CPUs bound the worker processes even where the node's task plugin leaves
    every core visible to the job (task/none)."""
    from maps_autogen.eval._processes import available_cores

    everything = len(os.sched_getaffinity(0))
    assert available_cores({}) == everything
    assert available_cores({"SLURM_CPUS_PER_TASK": "1"}) == 1
    assert available_cores({"SLURM_CPUS_PER_TASK": str(everything + 8)}) == everything
    assert available_cores({"SLURM_CPUS_PER_TASK": "nonsense"}) == everything
