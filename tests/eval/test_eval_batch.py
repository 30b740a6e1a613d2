"""`maps eval --batch` against the scripted server speaking the Batch API as documented
(tests/helpers/fake_batches.py): the same eval live and by batch gives the same verdicts,
transcripts and tokens, at the batch prices; batches that end early (expired, failed, cancelled
by someone else) have what they did not run sent again; error lines are the same errors as live;
a round too big for one file is split; what --batch refuses is one line."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import threading
from pathlib import Path

import pytest

from tests.helpers.batch_eval import batch_config, calls, outcome, run_eval
from tests.helpers.common import TEST_KEY, api_service, clean_env, run_maps
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
    # The announcement gives the batch prices and the rounds; the progress bar the round, its batches'
    # own counts and the wait.
    assert "estimated cost at batch prices" in batched.stderr and "5 to 20 rounds, each waiting" in batched.stderr
    assert re.search(r"acc 83\.3% · cost \$[\d.]+ · cached 0% of prompt · round 6: 1 batch\(es\) completed, 1/1 "
                     r"done, 0 failed, waited \d+s", batched.stderr), batched.stderr


def _ids(batches: FakeBatches, number: int) -> list[str]:
    return [line["custom_id"] for line in batches.batches[batches.order[number]].lines]


@pytest.mark.parametrize("ran", [0, 4])
def test_an_expired_batch_has_what_it_did_not_run_sent_again(tmp_path: Path, mathvista, ran: int) -> None:
    data, rows = mathvista
    with FakeOpenAI(ProblemScript(scripted_answers(rows))) as server:
        _, live_dir = run_eval(tmp_path / "live", server, data, batch=False)
    # The first batch expires: nothing of it answered, or its first four lines.
    batches = FakeBatches([BatchPlan(states=["validating", "in_progress"], end="expired", ran=ran), BatchPlan()])
    with FakeOpenAI(ProblemScript(scripted_answers(rows)), batches=batches) as server:
        result, batch_dir = run_eval(tmp_path / "batch", server, data, batch=True)
    assert result.returncode == 0, result.stderr
    assert live_dir and batch_dir and outcome(batch_dir) == outcome(live_dir)
    first, again = _ids(batches, 0), _ids(batches, 1)
    # What the first batch did not run goes again in the next round, under a new custom id (with
    # the next calls of the problems it did run).
    assert [cid for cid in again if cid.startswith("interpreter")] == [cid.removesuffix("-0") + "-1"
                                                                        for cid in first[ran:]]
    assert len(batches.lines_run) == 6 * 5  # every call ran once at the service
    summary = json.loads((batch_dir / "summary.json").read_text())["batches"]
    assert summary["resent"] == 6 - ran and summary["unanswered"] == {"expired": 1} and summary["rounds"] == 6
    assert summary["requests"] == 30 + 6 - ran and summary["answered"] == 30
    record = json.loads((batch_dir / "batches" / "batch-0001.json").read_text())
    assert record["status"] == "expired" and record["answers_read"] is True
    assert json.loads((batch_dir / "batches" / "batch-0002.json").read_text())["resent"] == 6 - ran


class _Failing:
    """The problem script, except: pid 3's solver gets a 400 (a request the model refuses), pid
    4's aligner a 503 the first time (then its answer), each live as in a batch's error file."""

    def __init__(self, script: ProblemScript):
        self.script = script
        self.seen: set[str] = set()

    def __call__(self, request: Received) -> Reply:
        pid = self.script._pid(request)
        if (pid, request.role) == ("3", "solver"):
            return Reply("This model's maximum context length is 128000 tokens", status=400)
        if (pid, request.role) == ("4", "aligner") and "4" not in self.seen:
            self.seen.add("4")
            return Reply("The server is overloaded", status=503)
        return self.script(request)


def test_error_lines_are_the_same_errors_as_live(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    with FakeOpenAI(_Failing(ProblemScript(scripted_answers(rows)))) as server:
        live, live_dir = run_eval(tmp_path / "live", server, data, batch=False)
    batches = FakeBatches()
    with FakeOpenAI(_Failing(ProblemScript(scripted_answers(rows))), batches=batches) as server:
        batched, batch_dir = run_eval(tmp_path / "batch", server, data, batch=True)
    assert live.returncode == batched.returncode == 1  # a problem failed
    assert live_dir and batch_dir

    def where_run(folder: str, run_dir: Path) -> object:  # an error names the agents.yaml of its run's folder
        return json.loads(json.dumps(outcome(run_dir)).replace(str(tmp_path / folder), "<run folder>"))

    assert where_run("batch", batch_dir) == where_run("live", live_dir)
    failed = next(row for row in map(json.loads, (batch_dir / "results.jsonl").read_text().splitlines())
                  if row["pid"] == "3")
    assert failed["status"] == "failed" and "longer than the model's context (128,000 tokens): HTTP 400: This model's " \
        "maximum context" in failed["error"]
    errors = [json.loads(line) for batch in batches.batches.values() if batch.error_file_id
              for line in batches.files[batch.error_file_id].decode().splitlines()]
    assert sorted(line["response"]["status_code"] for line in errors) == [400, 503]
    # The 503 was tried again in the next round (as live, after its backoff), and answered.
    aligner = [c for c in calls(batch_dir) if c.get("attempts") == 2]
    assert len(aligner) == 1


def test_a_refused_key_in_the_error_file_stops_the_eval_as_live(tmp_path: Path, mathvista) -> None:
    data, _ = mathvista
    refuse = lambda request: Reply("Incorrect API key provided: sk-test...", status=401)  # noqa: E731
    with FakeOpenAI(refuse) as server:
        live, _ = run_eval(tmp_path / "live", server, data, batch=False)
    with FakeOpenAI(refuse, batches=FakeBatches()) as server:
        batched, batch_dir = run_eval(tmp_path / "batch", server, data, batch=True)
    assert live.returncode == batched.returncode == 1
    said = "the model service refused the API key: HTTP 401: Incorrect API key provided"
    assert said in live.stderr and said in batched.stderr and "stopped early" in batched.stderr
    assert batch_dir and json.loads((batch_dir / "summary.json").read_text())["batches"]["rounds"] == 1


def test_a_batch_cancelled_by_someone_else_has_what_it_did_not_run_sent_again(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    with FakeOpenAI(ProblemScript(scripted_answers(rows))) as server:
        _, live_dir = run_eval(tmp_path / "live", server, data, batch=False)
    never = threading.Event()  # the first batch runs until someone cancels it (two of its lines done)
    batches = FakeBatches([BatchPlan(states=["validating", "in_progress"], ran=2, hold=never), BatchPlan()])

    def someone_cancels() -> None:
        batches.wait_for(lambda: bool(batches.order) and batches.batches[batches.order[0]].looks >= 2)
        batches.cancel(batches.order[0])

    canceller = threading.Thread(target=someone_cancels, daemon=True)
    canceller.start()
    with FakeOpenAI(ProblemScript(scripted_answers(rows)), batches=batches) as server:
        result, batch_dir = run_eval(tmp_path / "batch", server, data, batch=True)
    canceller.join(10)
    assert result.returncode == 0, result.stderr
    assert live_dir and batch_dir and outcome(batch_dir) == outcome(live_dir)
    # The two answered problems' next calls go in the same round as the four sent again.
    again = [cid.removesuffix("-0") + "-1" for cid in _ids(batches, 0)[2:]]
    assert sorted(cid for cid in _ids(batches, 1) if cid.startswith("interpreter")) == sorted(again)
    summary = json.loads((batch_dir / "summary.json").read_text())["batches"]
    assert summary["unanswered"] == {"cancelled": 1} and summary["resent"] == 4


def test_a_failed_batch_is_answered_as_its_error_received_live(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    # The service refuses the first batch as a whole for a limit: its calls are tried again, as a
    # 429 received live is; the second refuses a model: every call fails, the run stops.
    limit = {"code": "token_limit_exceeded", "message": "Enqueued token limit reached for gpt-4o", "line": None}
    batches = FakeBatches([BatchPlan(states=["validating"], end="failed", errors=[limit]), BatchPlan()])
    with FakeOpenAI(ProblemScript(scripted_answers(rows)), batches=batches) as server:
        result, batch_dir = run_eval(tmp_path / "retried", server, data, batch=True)
    assert result.returncode == 0, result.stderr
    assert batch_dir and all(c["attempts"] == 2 for c in calls(batch_dir) if c["batch"] == batches.order[1])
    summary = json.loads((batch_dir / "summary.json").read_text())["batches"]
    assert summary["unanswered"] == {"failed": 1} and summary["rounds"] == 6
    record = json.loads((batch_dir / "batches" / "batch-0001.json").read_text())
    assert record["errors"] == ["token_limit_exceeded: Enqueued token limit reached for gpt-4o"]
    unknown = {"code": "model_not_found", "message": "The model gpt-4o does not exist for batch", "line": None}
    with FakeOpenAI(ProblemScript(scripted_answers(rows)),
                    batches=FakeBatches([BatchPlan(states=[], end="failed", errors=[unknown])])) as server:
        stopped, _ = run_eval(tmp_path / "stopped", server, data, batch=True)
    assert stopped.returncode == 1 and "no such model or URL: HTTP 404: The model gpt-4o does not exist" in \
        stopped.stderr


def test_a_round_over_the_file_limits_is_split(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    batches = FakeBatches()
    with FakeOpenAI(ProblemScript(scripted_answers(rows)), batches=batches) as server:
        folder = tmp_path / "split"
        folder.mkdir()
        config = batch_config(folder, **{"endpoints.openai.batch_max_requests": 4})
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(folder / "runs"), "--config",
                           str(config), "--batch"], env=env, cwd=folder, timeout=300)
    assert result.returncode == 0, result.stderr
    sizes = [len(batch.lines) for batch in (batches.batches[batch_id] for batch_id in batches.order)]
    assert sizes[:2] == [4, 2] and max(sizes) == 4 and sum(sizes) == 6 * 5  # the first round's six in two files
    records = [json.loads(path.read_text()) for path in
               sorted(next((folder / "runs").glob("eval-*")).glob("batches/batch-*[0-9].json"))]
    # (A problem goes on as soon as its own batch has ended: the next round need not wait for the
    # other file of the round before.)
    assert [record["round"] for record in records][:2] == [1, 1] and records[-1]["round"] >= 5


def test_an_endpoint_without_a_batch_api_is_named_before_any_call(tmp_path: Path, mathvista) -> None:
    data, _ = mathvista
    with FakeOpenAI() as server:  # answers 404 to /v1/batches, as a server without a batch API does
        result, eval_dir = run_eval(tmp_path, server, data, batch=True)
        chats = [r for r in server.received if r.path.endswith("/chat/completions")]
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"endpoint 'openai' ({server.base_url}) has no batch API: GET /batches answered HTTP 404" in result.stderr
    assert "drop --batch" in result.stderr
    assert eval_dir is None and not chats  # nothing written, nothing called


@pytest.mark.parametrize("args", [["solve", "-q", "What is 2+2?", "--batch"],
                                  ["eval", "mathvista", "--batch", "--workers", "2"],
                                  ["eval", "mathvista", "--batch", "--model", "local"],
                                  ["eval", "mathvista", "--batch", "--human"]])
def test_what_batch_refuses_is_one_line(tmp_path: Path, mathvista, args: list[str]) -> None:
    data, _ = mathvista
    with FakeOpenAI(batches=FakeBatches()) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        extra = ["--data", str(data), "--runs-dir", str(tmp_path / "runs")] if args[0] == "eval" else []
        result = run_maps([*args, *extra], env=env, cwd=tmp_path)
        sent = list(server.received)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    assert not sent and not (tmp_path / "runs").exists()


def test_batch_from_the_python_api_and_the_environment(tmp_path: Path, mathvista, monkeypatch) -> None:
    import maps_autogen

    data, rows = mathvista
    folder = tmp_path / "api"
    folder.mkdir()
    config = batch_config(folder)
    batches = FakeBatches()
    with api_service(monkeypatch, folder, ProblemScript(scripted_answers(rows)), batches=batches) as server:
        outcome_api = maps_autogen.evaluate("mathvista", data=data, config=config, runs_dir=folder / "runs",
                                            batch=True)
        chats = [r for r in server.received if r.path.endswith("/chat/completions")]
    assert outcome_api.summary.batches is not None and outcome_api.summary.batches.rounds == 5 and not chats
    batches = FakeBatches()
    with FakeOpenAI(ProblemScript(scripted_answers(rows)), batches=batches) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY, MAPS_EVAL_BATCH="1")
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "env"), "--config",
                           str(config), "--limit", "2"], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(batches.lines_run) == 2 * 5  # MAPS_EVAL_BATCH=1 is --batch


def test_the_report_says_which_calls_went_by_batch(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    with FakeOpenAI(ProblemScript(scripted_answers(rows)), batches=FakeBatches()) as server:
        _, batch_dir = run_eval(tmp_path / "batch", server, data, batch=True)
        _, live_dir = run_eval(tmp_path / "live", server, data, batch=False)
    assert batch_dir and live_dir
    result = run_maps(["report", str(batch_dir), str(live_dir), "--out", str(tmp_path / "report")], env=clean_env(),
                      cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    tokens = (tmp_path / "report" / "tokens.md").read_text().splitlines()
    batched = [line for line in tokens if "(all calls by batch, at batch prices)" in line]
    assert len(batched) == 1 and len([line for line in tokens if line.startswith("| maps")]) == 2
    usage = (tmp_path / "report" / "usage.md").read_text()
    assert usage.count("(all calls by batch, at batch prices)") == 5  # each step's row of the batch run


def test_a_resume_without_batch_says_its_batches_still_run(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    never = threading.Event()
    batches = FakeBatches([BatchPlan(states=["validating"], hold=never)])
    with FakeOpenAI(ProblemScript(scripted_answers(rows)), batches=batches) as server:
        folder = tmp_path / "run"
        folder.mkdir()
        config = batch_config(folder)
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        # Ctrl-C once the batch was looked at (its id is written down before the first look).
        stopper = threading.Thread(target=lambda: (batches.wait_for(
            lambda: bool(batches.order) and batches.batches[batches.order[0]].looks >= 1),
            os.kill(os.getpid(), signal.SIGINT)), daemon=True)
        stopper.start()
        stopped = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(folder / "runs"), "--config",
                            str(config), "--batch"], env=env, cwd=folder, timeout=300)
        assert stopped.returncode == 130, stopped.stderr
        eval_dir = next((folder / "runs").glob("eval-*"))
        live = run_maps(["eval", "mathvista", "--resume", str(eval_dir), "--config", str(config)], env=env,
                        cwd=folder, timeout=300)
    assert live.returncode == 0, live.stderr
    said = "1 batch(es) of this eval still run at the service (6 requests): without --batch their calls are sent " \
           "again live and paid twice; resume with --batch to use them"
    assert said in live.stderr


def test_a_batch_api_down_for_a_while_is_looked_at_again(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    batches = FakeBatches()
    batches.fail_looks = 3  # the first three looks at a batch answer 503
    with FakeOpenAI(ProblemScript(scripted_answers(rows)), batches=batches) as server:
        folder = tmp_path / "run"
        folder.mkdir()
        config = batch_config(folder, **{"endpoints.openai.max_retries": 1})
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(folder / "runs"), "--config",
                           str(config), "--batch", "--limit", "2"], env=env, cwd=folder, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "could not look at batch" in result.stderr and batches.fail_looks == 0
    assert len(batches.lines_run) == 2 * 5 and len(batches.order) == 5  # nothing sent again for it


def test_azure_batch_deployments_are_addressed_as_azure_documents(tmp_path: Path, mathvista) -> None:
    data, rows = mathvista
    batches = FakeBatches()
    with FakeOpenAI(ProblemScript(scripted_answers(rows)), batches=batches) as server:
        folder = tmp_path / "azure"
        folder.mkdir()
        resource = server.base_url.removesuffix("/v1")  # https://RESOURCE.openai.azure.com, as Azure's endpoint
        config = batch_config(folder, **{"endpoints.openai.api_type": "azure", "endpoints.openai.base_url": resource,
                                         "endpoints.openai.api_version": "2024-10-21",
                                         "endpoints.openai.azure_deployment": "gpt-4o-global-batch"})
        env = clean_env(OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(folder / "runs"), "--config",
                           str(config), "--batch", "--limit", "2"], env=env, cwd=folder, timeout=300)
    assert result.returncode == 0, result.stderr
    paths = {(method, path.split("?")[0].rsplit("/", 1)[0] if "/batches/" in path else path.split("?")[0])
             for method, path, _ in batches.requests}
    assert ("POST", "/openai/files") in paths and ("POST", "/openai/batches") in paths
    assert ("GET", "/openai/batches") in paths  # each look at a batch
    assert all("api-version=2024-10-21" in path and headers.get("api-key") == TEST_KEY
               and "authorization" not in headers for _, path, headers in batches.requests)
    lines = [line for batch_id in batches.order for line in batches.batches[batch_id].lines]
    # Azure's batch input: the chat path without /v1, the batch deployment named in each body.
    assert {line["url"] for line in lines} == {"/chat/completions"}
    assert {line["body"]["model"] for line in lines} == {"gpt-4o-global-batch"}
    assert {batch.endpoint for batch in batches.batches.values()} == {"/chat/completions"}
    sent = calls(next((folder / "runs").glob("eval-*")))
    assert len(sent) == 2 * 5 and all(call["batch"] for call in sent)


def test_a_renamed_team_goes_by_batch_under_its_own_names(tmp_path: Path, mathvista) -> None:
    import yaml

    from tests.helpers.renamed_team import NEW_NAMES, write_renamed_team

    data, rows = mathvista
    old_names = {new: old for old, new in NEW_NAMES.items()}
    script = ProblemScript(scripted_answers(rows))

    def renamed(request: Received) -> Reply:  # the script answers each renamed step as its original
        request.headers["x-maps-role"] = old_names.get(request.role or "", request.role or "")
        return script(request)

    config = write_renamed_team(tmp_path)
    settings = yaml.safe_load(config.read_text())
    settings["endpoints"]["openai"]["batch_poll_s"] = 0.05
    config.write_text(yaml.safe_dump(settings, sort_keys=False))
    batches = FakeBatches()
    with FakeOpenAI(renamed, batches=batches) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--config",
                           str(config), "--batch"], env=env, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    rounds = [{cid.split("-")[0] for cid in _ids(batches, number)} for number in range(len(batches.order))]
    assert rounds == [{"describer"}, {"fuser"}, {"expert"}, {"reasoner"}, {"judge"}]
    eval_dir = next((tmp_path / "runs").glob("eval-*"))
    summary = json.loads((eval_dir / "summary.json").read_text())
    assert summary["average"]["accuracy"] == round(100 * 5 / 6, 2) and summary["usage"]["batch_calls"] == 30
    report = run_maps(["report", str(eval_dir), "--out", str(tmp_path / "report")], env=clean_env(), cwd=tmp_path)
    assert report.returncode == 0 and "reasoner" in (tmp_path / "report" / "usage.md").read_text()
    assert "(all calls by batch, at batch prices)" in (tmp_path / "report" / "usage.md").read_text()
