"""Every figure on a page comes from the records the Manager and the summary used: the rollback
after a review names the step the Manager sent back (not the reviewer's own pick), a live run's
outcome counts the calls its usage table shows, the live page says who is thinking during a
call, an eval index never shows "unknown" for a problem still in flight under a summary that
counts only finished ones, and the embedded model costs $0, said as free."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from maps_autogen.records._schema import SCHEMA_VERSION
from maps_autogen.report.view import ViewServer
from maps_autogen.settings._endpoints import ResolvedModel
from tests.helpers.chromium import Chromium, chromium  # noqa: F401 - chromium is a fixture
from tests.helpers.common import MAPS, TEST_KEY, clean_env, critic_json, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply, RoleScript
from tests.helpers.view_fixtures import write_synthetic_eval

WAIT_S = 120  # a bound for a loaded machine; nothing asserts on time


def page_of(url: str) -> str:
    """The page at `url`; "" while the run has not started (the server's 503: reload in a moment)."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return str(response.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        if error.code == 503:
            return ""
        raise


def test_the_rollback_names_the_step_the_manager_sent_back(tmp_path: Path) -> None:
    # The reviewer names `caption` as worst while scoring it 5; alignment scored 2: the Manager
    # sends the Aligner back (the lowest score), and the page must say so.
    review = json.dumps({"scores": {"caption": 5, "alignment": 2, "knowledge": 5, "solution": 5}, "need_feedback": True,
                         "worst_step": "caption", "feedback": {"alignment": "Which label is which?"}})
    script = RoleScript({"solver": [solver_json("A")], "critic": [review, critic_json()]})
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        solved = run_maps(["solve", "-q", "Which?", "-o", "x", "-o", "y", "--runs-dir", str(tmp_path / "runs"), "--json"],
                          env=env, cwd=tmp_path)
    assert solved.returncode == 0, solved.stderr
    run_dir = json.loads(solved.stdout)["run_dir"]
    assert json.loads((Path(run_dir) / "run.json").read_text())["rollbacks"][0]["step"] == "aligner"
    html = Path(run_maps(["view", run_dir], env=clean_env(), cwd=tmp_path).stdout.strip()).read_text()
    captions = re.findall(r"<caption>Critic(?:'|&#39;)s scores(.*?)</caption>", html)  # the possessive, escaped
    assert captions == ["", ""]  # what came of a review is the record after it, never recomputed from its scores
    (rollback,) = re.findall(r'<div class="event rollback"[^>]*>.*?</div>', html)
    assert 'data-by="critic" data-step="aligner"' in rollback and "caption" not in rollback.split("step back")[0]
    assert '<span class="sender">the Critic</span> sent the <span class="step">aligner</span> step back' in rollback


def test_a_live_solve_says_who_is_thinking_and_counts_the_calls_its_table_shows(tmp_path: Path) -> None:
    gate = threading.Event()
    replies = RoleScript({"solver": [solver_json("12")], "critic": [critic_json(None, 5, 5, 5)]})

    def script(request: Received) -> Reply:
        if request.role == "critic":
            gate.wait(WAIT_S)  # the review call stays under way while the test reads the page
        return replies(request)

    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        process = subprocess.Popen([*MAPS, "solve", "-q", "What is 3 times 4?", "--runs-dir", str(tmp_path / "runs"),
                                    "--view", "--json"], env=env, cwd=tmp_path, text=True, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            url = None
            for line in process.stderr:  # type: ignore[union-attr]
                if found := re.search(r"watch live: (http://127\.0\.0\.1:\d+/[\w-]+/)", line):
                    url = found.group(1)
                    break
            assert url is not None, "no viewer URL printed"
            deadline = time.monotonic() + WAIT_S
            while "Critic is thinking" not in (page := page_of(url)):
                assert time.monotonic() < deadline and process.poll() is None, "the review's call never showed"
                time.sleep(0.1)
            calls = re.search(r"<dt>usage</dt><dd>(\d+) calls so far,", page)
            table = [int(n) for n in re.findall(r"<tr><td>\w+</td><td>[^<]*</td><td class=num>(\d+)</td>", page)]
            assert calls is not None and int(calls.group(1)) == sum(table) > 0, (calls, table)
        finally:
            gate.set()
            out, err = process.communicate(timeout=WAIT_S)
    assert process.returncode == 0, err
    run_dir = Path(json.loads(out)["run_dir"])
    assert not (run_dir / "turn.json").exists()  # nothing is under way once the run ended


@pytest.mark.browser
def test_the_browser_shows_the_thinking_marker_until_the_turn_ends(tmp_path: Path, chromium: Chromium) -> None:
    eval_dir = tmp_path / "eval-z"
    write_synthetic_eval(eval_dir, 5)
    run_dir = eval_dir / "problems" / "q5"
    transcript = run_dir / "transcript.jsonl"
    records = transcript.read_text().splitlines(keepends=True)
    transcript.write_text("".join(records[:3]))  # task, Interpreter, Aligner: the Scholar's call is under way
    run = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**run, "status": "running", "usage": None, "usage_by_role": {}}))
    started = (datetime.now(UTC) - timedelta(seconds=90)).isoformat(timespec="milliseconds")
    (run_dir / "turn.json").write_text(json.dumps({"schema_version": SCHEMA_VERSION, "role": "scholar", "agent": "Scholar",
                                                   "started_at": started, "messages": 3}))
    with ViewServer(run_dir) as server:
        tab = chromium.open(server.url)
        marker = "document.getElementById('thinking')"
        tab.js(f"new Promise(done => {{ const wait = () => /Scholar is thinking… \\d+ s/.test({marker}.textContent) "
               "? done() : setTimeout(wait, 50); wait(); })")
        assert int(re.search(r"(\d+) s", tab.js(f"{marker}.textContent")).group(1)) >= 90
        # Two calls so far, as the usage table shows them.
        assert "2 calls so far" in tab.js("document.getElementById('outcome').textContent")
        tab.js("new Promise(done => { const wait = () => document.getElementById('live-status').textContent"
               ".endsWith('on') ? done() : setTimeout(wait, 50); wait(); })")
        with open(transcript, "a") as handle:
            handle.write(records[3])  # the Scholar's reply ends its turn
        tab.js(f"new Promise(done => {{ const wait = () => {marker}.hidden ? done() : setTimeout(wait, 50); wait(); }})")
        assert "3 calls so far" in tab.js("document.getElementById('outcome').textContent")
        assert tab.console_errors() == []
        assert tab.js("window.__violations") == []


def test_the_eval_index_shows_no_unknown_cost_for_a_problem_in_flight(tmp_path: Path) -> None:
    eval_dir = tmp_path / "eval-w"
    write_synthetic_eval(eval_dir, 4)
    manifest = json.loads((eval_dir / "manifest.json").read_text())
    (eval_dir / "manifest.json").write_text(json.dumps({**manifest, "ids": [*manifest["ids"], "q9"]}))
    (eval_dir / "problems" / "q9").mkdir()
    (eval_dir / "problems" / "q9" / "run.json").write_text(json.dumps(
        {"schema_version": SCHEMA_VERSION, "kind": "solve", "status": "running", "pid": "q9", "subset": "math"}))
    with ViewServer(eval_dir) as server:
        page = page_of(server.url)
    row = re.search(r'<tr data-key="q9".*?</tr>', page)
    assert row is not None and "unknown" not in row.group(0) and "<td class=num>–</td>" in row.group(0)
    assert re.search(r"<dt>cost</dt><dd>\$\d+\.\d{4} \(the 4 finished problems\)</dd>", page), page


def test_the_embedded_model_costs_nothing_and_the_page_says_so(tmp_path: Path) -> None:
    local = ResolvedModel(endpoint_name="local", kind="local", model="SmolLM2", base_url=None, timeout_s=1,
                          max_retries=0, json_mode="schema", stream=False, temperature=None, max_tokens=None)
    assert local.cost(1000, 200, "SmolLM2") == 0.0 and local.cost(1000, 200, None) == 0.0
    remote = ResolvedModel(endpoint_name="openai", kind="openai", model="x", base_url="http://h/v1", timeout_s=1,
                           max_retries=0, json_mode="schema", stream=False, temperature=None, max_tokens=None)
    assert remote.cost(1000, 200, "x") is None  # a model without a price stays unknown
    eval_dir = tmp_path / "eval-l"
    write_synthetic_eval(eval_dir, 2)
    manifest = json.loads((eval_dir / "manifest.json").read_text())
    local_models = {role: {**model, "kind": "local", "endpoint": "local"} for role, model in manifest["models"].items()}
    (eval_dir / "manifest.json").write_text(json.dumps({**manifest, "models": local_models}))
    run = json.loads((eval_dir / "problems" / "q1" / "run.json").read_text())
    (eval_dir / "problems" / "q1" / "run.json").write_text(json.dumps({**run, "models": local_models}))
    with ViewServer(eval_dir) as server:
        index = page_of(server.url)
        problem = page_of(server.url + "problems/q1.html")
    assert "(free: a model on this machine)</dd>" in index
    assert "(free: a model on this machine)</td>" in problem


def test_the_index_histogram_counts_a_failed_problem_as_no_usable_review(tmp_path: Path) -> None:
    eval_dir = tmp_path / "eval-h"
    write_synthetic_eval(eval_dir, 17)  # q17 failed before any review
    with ViewServer(eval_dir) as server:
        page = page_of(server.url)
    failed = re.search(r'<tr data-key="q17"[^>]*>', page)
    assert failed is not None and 'data-feedback="no usable review"' in failed.group(0)
    assert '<tr data-target="no usable review">' in page and "never a pass" in page
