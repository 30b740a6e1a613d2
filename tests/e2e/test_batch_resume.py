"""`maps eval --batch` stopped while it waits (SIGKILL, SIGTERM as Slurm's time limit sends it,
or killed while its batch is being created), then `--resume`: the batches already sent are
picked up where they are at the service, the answers already received are read back, and no
request is sent twice; the eval ends as the same eval run live does. Real processes, each kill
synchronised on the scripted batch service's state, never on a sleep."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from tests.helpers.batch_eval import batch_config, outcome, run_eval
from tests.helpers.common import MAPS, TEST_KEY, clean_env, run_maps
from tests.helpers.eval_cli import scripted_answers
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_batches import BatchPlan, FakeBatches
from tests.helpers.fake_openai import FakeOpenAI


def _start(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([*MAPS, *args], env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _sent_once(batches: FakeBatches) -> None:
    """No request reached the service twice: every line's body, and every custom id, once."""
    lines = [line for batch_id in batches.order for line in batches.batches[batch_id].lines]
    bodies = [json.dumps(line["body"], sort_keys=True) for line in lines]
    assert len(set(bodies)) == len(bodies) and len({line["custom_id"] for line in lines}) == len(lines)


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_batch_eval_killed_while_it_waits_resumes_without_sending_anything_twice(tmp_path: Path,
                                                                                     how: signal.Signals) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 6)
    with FakeOpenAI(ProblemScript(scripted_answers(rows))) as server:
        _, live_dir = run_eval(tmp_path / "live", server, data, batch=False)
    held = threading.Event()  # round 3's batch runs on at the service until the run is gone
    batches = FakeBatches([BatchPlan(), BatchPlan(), BatchPlan(states=["validating", "in_progress"], hold=held),
                           BatchPlan()])
    folder = tmp_path / "batch"
    folder.mkdir()
    config = batch_config(folder)
    with FakeOpenAI(ProblemScript(scripted_answers(rows)), batches=batches) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        process = _start(["eval", "mathvista", "--data", str(data), "--runs-dir", str(folder / "runs"), "--config",
                          str(config), "--batch", "--quiet"], env, folder)
        try:
            batches.wait_for(lambda: len(batches.order) == 3 and batches.batches[batches.order[2]].looks >= 2)
            os.killpg(process.pid, how)
            _, stderr = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        assert process.returncode == (-signal.SIGKILL if how == signal.SIGKILL else 143), stderr
        eval_dir = next((folder / "runs").glob("eval-*"))
        record = json.loads((eval_dir / "batches" / "batch-0003.json").read_text())
        # Written before the wait: the batch's id and its status as last seen.
        assert record["batch_id"] == batches.order[2] and record["status"] in ("validating", "in_progress")
        if how == signal.SIGTERM:
            assert "Traceback" not in stderr and "stopped by SIGTERM" in stderr
            summary = json.loads((eval_dir / "summary.json").read_text())
            assert summary["interrupted"] is True and summary["batches"]["waiting"] == 1
        sent_before = len(batches.lines_run)
        held.set()  # the batch finishes at the service while nothing of ours runs
        resumed = run_maps(["eval", "mathvista", "--resume", str(eval_dir), "--config", str(config), "--batch"],
                           env=env, cwd=folder, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "picked up 1 batch(es) still at the service (6 requests)" in resumed.stdout + resumed.stderr
    _sent_once(batches)
    assert len(batches.order) == 5 and len(batches.lines_run) == 6 * 5 and sent_before == 6 * 2
    assert live_dir and outcome(eval_dir) == outcome(live_dir)
    summary = json.loads((eval_dir / "summary.json").read_text())
    assert summary["complete"] is True and summary["batches"]["rounds"] == 5 and summary["batches"]["waiting"] == 0
    assert summary["usage"]["batch_calls"] == 30  # each call's cost counted once: the answers read back included


def test_a_batch_eval_killed_while_its_batch_is_created_finds_it_again(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 3)
    creating = threading.Event()
    batches = FakeBatches(hold_create=creating)
    folder = tmp_path / "batch"
    folder.mkdir()
    config = batch_config(folder)
    with FakeOpenAI(ProblemScript(scripted_answers(rows)), batches=batches) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        process = _start(["eval", "mathvista", "--data", str(data), "--runs-dir", str(folder / "runs"), "--config",
                          str(config), "--batch", "--quiet"], env, folder)
        try:
            batches.wait_for(lambda: batches.creating == 1)  # uploaded, its creation under way
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        eval_dir = next((folder / "runs").glob("eval-*"))
        record = json.loads((eval_dir / "batches" / "batch-0001.json").read_text())
        assert record["status"] == "uploaded" and "batch_id" not in record and record["input_file_id"]
        creating.set()  # the service creates the batch after all: the run never learnt its id
        batches.wait_for(lambda: len(batches.order) == 1)
        resumed = run_maps(["eval", "mathvista", "--resume", str(eval_dir), "--config", str(config), "--batch"],
                           env=env, cwd=folder, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    _sent_once(batches)
    assert len(batches.lines_run) == 3 * 5
    record = json.loads((eval_dir / "batches" / "batch-0001.json").read_text())
    assert record["batch_id"] == batches.order[0] and record["status"] == "completed"  # found by its input file
