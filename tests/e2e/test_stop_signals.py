"""SIGTERM (a batch system's time limit, `scancel`, preemption, `kill`) stops `maps` as the first
Ctrl-C does, and SIGKILL loses nothing a resume does not recover; neither leaves a process of
ours running. Each run is killed at a random point (the seed is in every failure message): after
a random number of finished problems for `maps eval` (in one process and in two worker
processes), in the middle of the chat for `maps solve`, after a random delay once its helpers
judge for `maps score`."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.common import MAPS, TEST_KEY, clean_env, critic_json, run_maps, solver_json
from tests.helpers.eval_fixtures import (
    HoldLaterProblems,
    HoldProblems,
    ProblemScript,
    alive,
    descendants,
    wait_for,
    write_custom_jsonl,
)
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply

SEED = int(os.environ.get("MAPS_KILL_SEED", random.randrange(1 << 30)))
PROBLEMS = 6


def start(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    """The real `maps` command in its own process group (as a batch job runs it)."""
    return subprocess.Popen([*MAPS, *args], env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def finish(process: subprocess.Popen[str]) -> str:
    try:
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return stderr


def eval_folder(runs: Path) -> Path | None:
    found = [path.parent for path in runs.glob("eval-*/manifest.json")]
    return found[0] if found else None


def rows_in(folder: Path | None) -> int:
    path = folder / "results.jsonl" if folder else None
    return len(path.read_bytes().splitlines()) if path and path.is_file() else 0


def killed_eval(tmp_path: Path, how: signal.Signals, workers: int, *, group: bool) -> tuple[str, int, Path, set[int]]:
    """`maps eval` killed with `how` after a random number of finished problems, then resumed to
    the end. Returns its stderr, exit code, eval folder and the processes it had started."""
    rng = random.Random(f"{SEED}:{how.name}:{workers}")
    after = rng.randrange(PROBLEMS)
    data, answers = write_custom_jsonl(tmp_path / "data", PROBLEMS)
    runs = tmp_path / "runs"
    # The first `after` problems are answered; every request of another problem waits until the
    # signal is sent: the run cannot end before it, however fast or loaded the machine.
    gate = HoldLaterProblems(ProblemScript(answers), free=after)
    with FakeOpenAI(gate) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        args = ["eval", "custom", "--data", str(data), "--runs-dir", str(runs), "--no-cache", "--quiet",
                "--concurrency", "2", "--workers", str(workers)]
        process = start(args, env, tmp_path)
        try:
            # The run has finished `after` problems (its folder written) and waits on the next.
            wait_for(lambda: eval_folder(runs) is not None and rows_in(eval_folder(runs)) >= after,
                     f"{after} finished problems (seed {SEED})")
            gate.wait_held(1)
            if workers > 1:
                wait_for(lambda: len(descendants(process.pid)) >= workers, "the worker processes")
            started = descendants(process.pid)
            (os.killpg if group else os.kill)(process.pid, how)
            gate.release()
            stderr = finish(process)
        finally:
            gate.release()
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
        folder = eval_folder(runs)
        assert folder is not None
        before = json.loads((folder / "summary.json").read_text()) if how == signal.SIGTERM else None
        if before is not None:  # what the stop wrote, before the resume rewrites it
            assert before["interrupted"] is True and before["stopped_by"] == "SIGTERM", (SEED, before)
            assert len(before["missing"]) == PROBLEMS - before["average"]["n"] - before["failed"], (SEED, before)
        resumed = run_maps(["eval", "custom", "--resume", str(folder), "--no-cache", "--quiet", "--concurrency", "2"],
                           env=env, cwd=tmp_path)
    assert resumed.returncode == 0, (SEED, resumed.stderr)
    return stderr, process.returncode, folder, started


def assert_whole(folder: Path) -> None:
    """Every problem counted once, as if the run had never been stopped."""
    rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    assert sorted(row["pid"] for row in rows) == sorted(f"p{n}" for n in range(1, PROBLEMS + 1)), SEED
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["complete"] is True and summary["average"]["n"] == PROBLEMS and summary["missing"] == [], SEED
    assert summary["average"]["correct"] == 4, SEED  # p3 and p6 are answered wrong


def assert_none_left(started: set[int]) -> None:
    wait_for(lambda: not [pid for pid in started if alive(pid)], f"the processes {sorted(started)} to end (seed {SEED})",
             timeout=30)


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_stops_an_eval_as_ctrl_c_and_the_resume_completes_it(tmp_path: Path, workers: int) -> None:
    # As Slurm does: the whole process group (parent and workers) gets SIGTERM.
    stderr, code, folder, started = killed_eval(tmp_path, signal.SIGTERM, workers, group=True)
    assert code == 143, (SEED, stderr)
    assert "Traceback" not in stderr and "error: stopped by SIGTERM" in stderr, (SEED, stderr)
    assert f"maps eval custom --resume {folder}" in stderr, (SEED, stderr)
    assert_none_left(started)
    assert_whole(folder)


@pytest.mark.parametrize("workers", [1, 2])
def test_sigkill_loses_nothing_the_resume_does_not_complete(tmp_path: Path, workers: int) -> None:
    _, code, folder, started = killed_eval(tmp_path, signal.SIGKILL, workers, group=False)
    assert code == -signal.SIGKILL
    assert_none_left(started)  # the workers die with the parent they lost
    assert_whole(folder)


def test_sigterm_to_one_worker_process_stops_the_whole_run(tmp_path: Path) -> None:
    data, answers = write_custom_jsonl(tmp_path / "data", PROBLEMS)
    gate = HoldProblems(ProblemScript(answers), hold={"p3", "p4"})  # each worker waits inside a call
    runs = tmp_path / "runs"
    with FakeOpenAI(gate) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        process = start(["eval", "custom", "--data", str(data), "--runs-dir", str(runs), "--no-cache", "--quiet",
                         "--concurrency", "2", "--workers", "2"], env, tmp_path)
        try:
            gate.wait_held("p3")
            gate.wait_held("p4")
            started = descendants(process.pid)
            workers = [pid for pid in started if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]
            assert len(workers) == 2
            os.kill(workers[0], signal.SIGTERM)
            wait_for(lambda: process.poll() is not None, "the run to stop")
            gate.release()
            stderr = finish(process)
        finally:
            gate.release()
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 143 and "Traceback" not in stderr, stderr
    assert "error: stopped by SIGTERM" in stderr and "ended (" not in stderr, stderr  # not reported as a death
    folder = eval_folder(runs)
    assert folder is not None
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["stopped_by"] == "SIGTERM" and summary["failed"] == 0
    assert sorted(summary["missing"]) == ["p3", "p4", "p5", "p6"]  # in flight or not started: pending
    assert_none_left(started)


def solve_script(hold: Any) -> Any:
    """A whole team's replies; the Solver's request waits on `hold` (the chat is then midway)."""
    def reply(request: Received) -> Reply:
        if request.role == "solver":
            hold()
            return Reply(solver_json("42"))
        if request.role == "critic":
            return Reply(critic_json(5, 5, 5, 5))
        return Reply(f"{request.role} notes")
    return reply


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_a_solve_stopped_by_a_signal(tmp_path: Path, how: signal.Signals) -> None:
    """SIGTERM: run.json is `interrupted` (never left `running`), the finished turns kept, exit 143.
    SIGKILL: nothing of ours is left running."""
    reached = threading.Event()
    released = threading.Event()

    def hold() -> None:
        reached.set()
        released.wait(120)

    runs = tmp_path / "runs"
    with FakeOpenAI(solve_script(hold)) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        process = start(["solve", "-q", "What is 6 times 7?", "--runs-dir", str(runs), "--quiet"], env, tmp_path)
        try:
            assert reached.wait(120), "the Solver was never asked"
            started = descendants(process.pid)
            os.kill(process.pid, how)
            wait_for(lambda: process.poll() is not None, "maps solve to end")
        finally:
            released.set()
        stderr = finish(process)
    run = json.loads(next(runs.glob("*/run.json")).read_text())
    assert_none_left(started)
    if how == signal.SIGKILL:
        assert process.returncode == -signal.SIGKILL
        return
    assert process.returncode == 143 and "Traceback" not in stderr, stderr
    assert "error: stopped by SIGTERM; the finished turns are saved in" in stderr
    assert run["status"] == "interrupted" and run["stop_reason"] == "interrupted", run
    transcript = next(runs.glob("*/transcript.jsonl")).read_text()
    assert '"role": "interpreter"' in transcript or '"role": "aligner"' in transcript  # the turns before the stop


def olympiad_lines(path: Path, count: int) -> Path:
    """OlympiadBench outputs whose judging needs sympy (symbolic equality, in the helpers)."""
    with open(path, "w") as handle:
        for number in range(count):
            handle.write(json.dumps({"id": number, "final_answer": [f"$\\sqrt{{{number + 2}}}\\cdot\\sqrt{{2}}$"],
                                     "answer_type": "Expression", "response": f"So the final answer is "
                                     f"$\\sqrt{{{2 * number + 4}}}$"}) + "\n")
    return path


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_a_score_stopped_by_a_signal_writes_nothing_half_and_leaves_no_helper(tmp_path: Path,
                                                                             how: signal.Signals) -> None:
    rng = random.Random(f"{SEED}:score:{how.name}")
    outputs = olympiad_lines(tmp_path / "outputs.jsonl", 2000)
    process = start(["score", "olympiadbench", str(outputs)], clean_env(), tmp_path)
    try:
        wait_for(lambda: bool(descendants(process.pid)), "a helper to judge")
        # A random point of the judging (what is asserted holds at any); from there the judging
        # cannot go on (its helper stopped) until the signal is sent.
        threading.Event().wait(rng.uniform(0, 1.5))
        started = descendants(process.pid)
        for pid in started:
            os.kill(pid, signal.SIGSTOP)
        assert process.poll() is None and not (tmp_path / "outputs.scored.jsonl").exists(), SEED
        os.kill(process.pid, how)
        for pid in started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        stderr = finish(process)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert_none_left(started)
    assert not (tmp_path / "outputs.scored.jsonl").exists(), SEED  # never a half-written file
    if how == signal.SIGTERM:
        assert sorted(path.name for path in tmp_path.iterdir()) == ["outputs.jsonl"], SEED  # nor a temporary one
        assert process.returncode == 143 and "Traceback" not in stderr, (SEED, stderr)
        assert stderr.strip().splitlines()[-1] == "stopped by SIGTERM", (SEED, stderr)
