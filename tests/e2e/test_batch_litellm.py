"""`maps eval --batch` through a real LiteLLM proxy (no database) in front of the scripted server
speaking the Batch API: the proxy routes /v1/files and /v1/batches to the model's deployment by
the `x-litellm-model` header our client sends, and hands back ids that carry that routing
(file-<base64>, batch_<base64>), which our records keep as the proxy gave them. The eval ends as
the same eval run live on the scripted server; a batch that expires has what it did not run sent
again through the proxy; a run killed while its batch is being created finds it again through
the proxy's batch list."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.batch_eval import batch_config, outcome
from tests.helpers.common import MAPS, clean_env, run_maps
from tests.helpers.eval_cli import scripted_answers
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_batches import BatchPlan, FakeBatches
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.real_servers import ALIAS, MASTER_KEY, free_port, litellm_proxy

pytestmark = [pytest.mark.real_server]


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeOpenAI, str]]:
    """One scripted server and one LiteLLM proxy in front of it for the module (a proxy takes most
    of a minute to start); each test gives the server its script and its batch service."""
    folder = tmp_path_factory.mktemp("proxy")
    with FakeOpenAI() as server, litellm_proxy(server.base_url, f"http://127.0.0.1:{free_port()}/v1", folder) as proxy:
        yield server, proxy


def _serve(server: FakeOpenAI, script: ProblemScript, batches: FakeBatches) -> None:
    server.script = script
    server.batches = batches
    batches.server = server


def _eval(folder: Path, proxy: str, data: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    folder.mkdir(parents=True, exist_ok=True)
    config = batch_config(folder)
    env = clean_env(OPENAI_BASE_URL=proxy, OPENAI_API_KEY=MASTER_KEY)
    result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(folder / "runs"), "--config",
                       str(config), "--model", ALIAS, *extra], env=env, cwd=folder, timeout=600)
    return result, next((folder / "runs").glob("eval-*"))


def test_a_batch_eval_through_a_litellm_proxy_ends_as_the_live_one(tmp_path: Path, proxied) -> None:
    server, proxy = proxied
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 4)
    # The first batch expires with one line run: the other three go again, through the proxy too.
    batches = FakeBatches([BatchPlan(states=["validating", "in_progress"], end="expired", ran=1), BatchPlan()])
    _serve(server, ProblemScript(scripted_answers(rows), critic_low={"2"}), batches)
    before = len(server.received)
    batched, batch_dir = _eval(tmp_path / "batch", proxy, data, "--batch")
    chats_by_batch = [r for r in server.received[before:] if r.path.endswith("/chat/completions")]
    # The same eval live, straight to the scripted server (the proxy passes on no X-Maps-Role header,
    # which the script answers by; a batch line's role is in its custom id, which the proxy keeps).
    server.script = ProblemScript(scripted_answers(rows), critic_low={"2"})  # the same answers, afresh
    live, live_dir = _eval(tmp_path / "live", server.base_url, data)
    assert batched.returncode == 0, batched.stderr
    assert live.returncode == 0, live.stderr
    assert not chats_by_batch and len(batches.order) >= 6  # every call went by batch, through the proxy
    assert outcome(batch_dir) == outcome(live_dir)
    first = json.loads((batch_dir / "batches" / "batch-0001.json").read_text())
    # The proxy's own ids (the routing to its deployment encoded in them), as it gave them.
    assert first["batch_id"].startswith("batch_") and first["batch_id"] != batches.order[0]
    assert first["status"] == "expired" and first["counts"] == {"total": 4, "completed": 1, "failed": 3}
    summary = json.loads((batch_dir / "summary.json").read_text())["batches"]
    assert summary["resent"] == 3 and summary["unanswered"] == {"expired": 1}


def test_a_batch_eval_killed_while_the_proxy_creates_its_batch_finds_it_again(tmp_path: Path, proxied) -> None:
    server, proxy = proxied
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    creating = threading.Event()
    batches = FakeBatches(hold_create=creating)
    _serve(server, ProblemScript(scripted_answers(rows)), batches)
    folder = tmp_path / "batch"
    folder.mkdir()
    config = batch_config(folder)
    env = clean_env(OPENAI_BASE_URL=proxy, OPENAI_API_KEY=MASTER_KEY)
    process = subprocess.Popen([*MAPS, "eval", "mathvista", "--data", str(data), "--runs-dir", str(folder / "runs"),
                                "--config", str(config), "--model", ALIAS, "--batch", "--quiet"], env=env,
                               cwd=folder, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        batches.wait_for(lambda: batches.creating == 1)
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    creating.set()
    batches.wait_for(lambda: len(batches.order) == 1)
    eval_dir = next((folder / "runs").glob("eval-*"))
    resumed = run_maps(["eval", "mathvista", "--resume", str(eval_dir), "--config", str(config), "--model",
                        ALIAS, "--batch"], env=env, cwd=folder, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    lines = [line for batch_id in batches.order for line in batches.batches[batch_id].lines]
    assert len(lines) == 2 * 5 and len({json.dumps(line["body"], sort_keys=True) for line in lines}) == 2 * 5
    record = json.loads((eval_dir / "batches" / "batch-0001.json").read_text())
    assert record["status"] == "completed" and record["batch_id"].startswith("batch_")
