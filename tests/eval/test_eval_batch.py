"""`maps eval --batch` against the scripted server speaking the Batch API as documented
(tests/helpers/fake_batches.py): the same eval live and by batch gives the same verdicts,
transcripts and tokens, at the batch prices; batches that end early (expired, failed, cancelled
by someone else) have what they did not run sent again; error lines are the same errors as live;
a round too big for one file is split; what --batch refuses is one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.helpers.batch_eval import batch_config, calls, outcome, run_eval
from tests.helpers.common import TEST_KEY, clean_env, run_maps
from tests.helpers.eval_cli import scripted_answers
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_batches import BatchPlan, FakeBatches
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply


@pytest.fixture
def mathvista(tmp_path: Path):
    return write_mathvista_jsonl(tmp_path / "mathvista", 6)


def test_a_batch_eval_gives_what_the_live_eval_gives_at_half_the_price(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    # One rollback (pid 2): the rollback joins a later round.
    with FakeOpenAI(ProblemScript(scripted_answers(rows), critic_low={"2"})) as server:
        live, live_dir = run_eval(tmp_path / "live", server, data, batch=False)
    batches = FakeBatches()  # each batch: validating → in_progress → finalizing → completed
    with FakeOpenAI(ProblemScript(scripted_answers(rows), critic_low={"2"}), batches=batches) as server:
        batched, batch_dir = run_eval(tmp_path / "batch", server, data, batch=True)
        live_requests = [r for r in server.received if r.path.split("?")[0].endswith("/chat/completions")]
    assert live.returncode == 0 and batched.returncode == 0, batched.stderr
    assert live_dir and batch_dir
    assert not live_requests  # every call went by batch
    assert outcome(batch_dir) == outcome(live_dir)  # verdicts, transcripts, tokens: the same
    live_calls, batch_calls = calls(live_dir), calls(batch_dir)
    assert [(c["prompt_tokens"], c["completion_tokens"]) for c in batch_calls] == \
        [(c["prompt_tokens"], c["completion_tokens"]) for c in live_calls]
    sent = [c for c in batch_calls if not c["cached"]]
    assert len(sent) == len(batches.lines_run)  # each line the service ran is one recorded call
    for live_call, batch_call in zip(live_calls, batch_calls):
        assert math.isclose(batch_call["cost"], live_call["cost"] / 2, rel_tol=1e-9)  # gpt-4o's batch prices
    assert all(c["batch"] in batches.batches and (c["prompt_rate"], c["completion_rate"]) == (1.25, 5.0) for c in sent)
    summary = json.loads((batch_dir / "summary.json").read_text())
    live_summary = json.loads((live_dir / "summary.json").read_text())
    assert summary["average"] == live_summary["average"]
    assert math.isclose(summary["usage"]["cost"], live_summary["usage"]["cost"] / 2, rel_tol=1e-6)
    assert summary["usage"]["batch_calls"] == len(sent)
    tally = summary["batches"]
    assert tally["requests"] == tally["answered"] == len(batches.lines_run) and tally["resent"] == 0
    # MAPS advances one step per round: every problem's interpreter in round 1, ..., its critic in
    # round 5; pid 2's rollback re-runs its solver in round 6 (the scripted solver answers alike, so
    # the review after it is the first review's request again: answered from the cache, live too).
    assert tally["rounds"] == 6 and tally["batches"] == 6 and tally["waiting"] == 0
    first = json.loads((batch_dir / "batches" / "batch-0001.json").read_text())
    assert [cid.split("-")[0] for cid in first["custom_ids"]] == ["interpreter"] * 6
    assert first["status"] == "completed" and first["counts"] == {"total": 6, "completed": 6, "failed": 0}
    # The announcement gives the batch prices and the rounds.
    assert "estimated cost at batch prices" in batched.stderr and "rounds, each waiting for its batch" in batched.stderr
