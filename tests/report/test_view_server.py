"""`maps view --serve` / `maps eval --view`: the live viewer over a run folder.

The main test runs the real `maps eval --view` against the scripted server, holding chosen
problems back so that the run is provably still going while the test reads pages and live
feeds through the viewer's URL (printed by the command). The others drive the server in
process, and one watches a page in headless Chromium while turns are appended to its transcript.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from maps_autogen.report.view import ViewServer
from maps_autogen.report.view._render import page_key
from tests.helpers.chromium import Chromium, chromium  # noqa: F401 - chromium is a fixture
from tests.helpers.common import MAPS, TEST_KEY, clean_env, critic_json, run_maps, solver_json
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply, RoleScript
from tests.helpers.view_fixtures import write_synthetic_eval
from tests.helpers.view_server import WAIT_S, EventStream, get, index_rows, live_feed_url


class GatedScript:
    """The eval's scripted answers, but problems named in `gates` wait until their gate opens
    (the Interpreter answers at once, so a gated problem shows its first turn while it waits)."""

    def __init__(self, inner: ProblemScript, gates: dict[str, threading.Event]):
        self.inner, self.gates = inner, gates

    def __call__(self, request: Received) -> Reply:
        gate = self.gates.get(self.inner._pid(request) or "")
        if gate is not None and request.role != "interpreter":
            gate.wait(WAIT_S)
        return self.inner(request)


def read_url_from(process: subprocess.Popen[str]) -> tuple[str, str]:
    """The viewer URL `maps eval/solve --view` prints on stderr, and the line it is on."""
    for line in process.stderr:  # type: ignore[union-attr]
        found = re.search(r"watch live: (http://127\.0\.0\.1:\d+/[\w-]+/)", line)
        if found:
            return found.group(1), line
    raise AssertionError(f"no viewer URL printed; exit code {process.wait()}")


def test_eval_view_serves_the_run_live_while_it_writes(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 4)
    answers = {pid: row["answer"] if row["question_type"] != "multi_choice" else "B" for pid, row in rows.items()}
    gates = {"3": threading.Event(), "4": threading.Event()}  # problem 3 runs while we look; 4 keeps the run going after it
    script = GatedScript(ProblemScript(answers, critic_low={"3": "knowledge"}), gates)
    runs = tmp_path / "runs"
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        process = subprocess.Popen([*MAPS, "eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--concurrency", "1",
                                    "--no-cache", "--quiet", "--view"], env=env, cwd=tmp_path, text=True,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        streams: list[EventStream] = []
        try:
            url, _ = read_url_from(process)
            assert TEST_KEY not in url
            # Problems 1 and 2 finish; problem 3 has started and waits for its first reply.
            deadline = time.monotonic() + WAIT_S
            while index_rows(get(url).body).get("3") != "unfinished":
                assert time.monotonic() < deadline and process.poll() is None, "problem 3 never showed up as unfinished"
                time.sleep(0.1)
            index = get(url)
            assert index.status == 200 and "connect-src 'self'" in index.headers["content-security-policy"]
            assert index_rows(index.body) == {"1": "correct", "2": "correct", "3": "unfinished"}
            results_feed = EventStream(live_feed_url(url, index.body))
            problem_url = urljoin(url, f"problems/{page_key('3')}.html")
            problem = get(problem_url)
            # Only the Aligner's request waits: the page shows the turns so far.
            assert problem.status == 200 and 'data-role="interpreter"' in problem.body and 'data-role="aligner"' not in problem.body
            transcript_feed = EventStream(live_feed_url(problem_url, problem.body))
            streams += [results_feed, transcript_feed]

            # Refused while the run goes on: no token, a wrong one, paths out of the run folder.
            origin = url[: url.index("/", len("http://"))]
            token = urlsplit(url).path.strip("/")
            assert get(origin + "/").status == 403 and get(origin + "/manifest.json").status == 403
            assert get(origin + "/" + "x" * len(token) + "/").status == 403
            for path in ("files/../manifest.json", "files/%2e%2e/%2e%2e/mathvista/testmini.jsonl", "../" + token + "/index.html",
                         "files/problems/../../../../etc/passwd"):
                refused = get(url, raw_path=f"/{token}/{path}")
                assert refused.status == 403 and "manifest" not in refused.body, path

            gates["3"].set()
            # New turns arrive on the problem's feed as they are written, scores and the rollback included.
            assert "turn 3 · round 0" in transcript_feed.until("append", 'data-role="aligner"')  # the header names the step; the meta no dimension
            scores = transcript_feed.until("append", 'class="scores"')
            assert 'data-dimension="knowledge">2</td>' in scores
            rollback = scores if 'data-event="rollback"' in scores else transcript_feed.until("append", 'data-event="rollback"')
            assert '<span class="sender">the Critic</span> sent the <span class="step">scholar</span> step back' in rollback
            assert "Sent to the scholar step by the Critic:" in rollback and "question about knowledge?" in rollback
            assert 'class="pill warn revision"' in transcript_feed.until("append", "revision")
            # The outcome is replaced while the chat goes on (its calls so far) and once it ended:
            # the one that ends it carries the stop reason (on a loaded machine the earlier ones come first).
            outcome = transcript_feed.until("replace", 'class="pill stop-reason">critic_passed')
            assert 'id="outcome"' in outcome and "has not finished" not in outcome
            # The finished problem reaches the open index's feed, and a fresh index lists it.
            row = results_feed.until("append", ">3</a>")
            assert 'data-verdict="correct"' in row and 'data-rollbacks="scholar"' in row
            assert "100.00% (3/3)" in results_feed.until("replace", 'id="summary"')
            assert index_rows(get(url).body)["3"] == "correct"
        finally:
            for stream in streams:
                stream.close()
            for gate in gates.values():
                gate.set()
            out, err = process.communicate(timeout=WAIT_S)
    assert process.returncode == 0, err
    assert "4 scored, 0 failed" in out


# ----- the server in process -----------------------------------------------------------------


@pytest.fixture
def served_eval(tmp_path: Path) -> Iterator[tuple[ViewServer, Path]]:
    eval_dir = tmp_path / "eval-x"
    write_synthetic_eval(eval_dir, 6)
    (tmp_path / "secret.png").write_bytes(b"\x89PNG\r\n\x1a\nnot for the viewer")
    os.symlink(tmp_path / "secret.png", eval_dir / "problems" / "q1" / "images" / "out.png")
    with ViewServer(eval_dir) as server:
        yield server, eval_dir


def test_pages_images_and_refusals(served_eval: tuple[ViewServer, Path]) -> None:
    server, eval_dir = served_eval
    index = get(server.url)
    assert index.status == 200 and set(index_rows(index.body)) == {f"q{n}" for n in range(1, 7)}
    assert "gpt-4o (openai)" in index.body and '{"endpoint"' not in index.body  # models by name
    problem = get(urljoin(server.url, f"problems/{page_key('q5')}.html"))
    assert problem.status == 200 and problem.body.count('class="card turn') == 7
    image = re.search(r'<img src="([^"]+)"', problem.body).group(1)
    assert image == "../files/problems/q5/images/image-1.png"
    fetched = get(urljoin(problem_url := urljoin(server.url, f"problems/{page_key('q5')}.html"), image))
    assert fetched.status == 200 and fetched.headers["content-type"] == "image/png" and fetched.headers["x-content-type-options"] == "nosniff"
    assert problem_url.startswith(server.url)
    token = server.token
    refused = {
        "no token": "/index.html", "wrong token": "/not-the-token/index.html",
        "dot-dot": f"/{token}/files/../manifest.json", "encoded dot-dot": f"/{token}/files/problems/%2e%2e/%2e%2e/..%2fsecret.png",
        "absolute": f"/{token}/files//etc/passwd", "encoded absolute": f"/{token}/files/%2fetc%2fpasswd",
        "symlink out": f"/{token}/files/problems/q1/images/out.png",
    }
    for name, path in refused.items():
        assert get(server.url, raw_path=path).status == 403, name
    assert get(server.url, raw_path=f"/{token}/files/manifest.json").status == 404  # inside, but not an image
    assert get(server.url, raw_path=f"/{token}/problems/nope-0.html").status == 404


def test_results_feed_adds_new_rows_and_reloads_after_compaction(served_eval: tuple[ViewServer, Path]) -> None:
    server, eval_dir = served_eval
    index = get(server.url)
    feed = EventStream(live_feed_url(server.url, index.body))
    try:
        results = eval_dir / "results.jsonl"
        lines = results.read_text().splitlines()
        row = {**json.loads(lines[0]), "pid": "late <b>7</b>", "subset": "physics", "run_dir": "problems/late"}
        with open(results, "a") as handle:
            handle.write(json.dumps(row) + "\n" + '{"pid": "torn')  # a line still being written is not read yet
        appended = feed.until("append", "late")
        assert "late &lt;b&gt;7&lt;/b&gt;" in appended and 'data-subset="physics"' in appended and "torn" not in appended
        assert "physics" in feed.until("replace", 'id="summary"')
        results.write_text("\n".join(lines) + "\n")  # rewritten as a whole (os.replace-style: shorter)
        feed.until("reload", "")
    finally:
        feed.close()


@pytest.mark.browser
def test_browser_page_shows_turns_as_they_are_written(tmp_path: Path, chromium: Chromium) -> None:
    eval_dir = tmp_path / "eval-y"
    write_synthetic_eval(eval_dir, 5)  # problem q5 rolls back to the Scholar
    run_dir = eval_dir / "problems" / "q5"
    transcript = run_dir / "transcript.jsonl"
    records = transcript.read_text().splitlines(keepends=True)
    transcript.write_text("".join(records[:3]))  # the chat so far: task, Interpreter, Aligner
    run = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**run, "status": "running"}))
    with ViewServer(run_dir) as server:  # a problem folder is a solve run folder
        tab = chromium.open(server.url)
        roles = "Array.from(document.querySelectorAll('article.turn')).map(a => a.dataset.role)"
        assert tab.js(roles) == ["user_proxy", "interpreter", "aligner"]
        tab.js("new Promise(done => { const wait = () => document.getElementById('live-status').textContent.endsWith('on') ? done() : setTimeout(wait, 50); wait(); })")
        with open(transcript, "a") as handle:
            handle.writelines(records[3:])
        (run_dir / "run.json").write_text(json.dumps({**run, "status": "finished"}))
        tab.js("new Promise(done => { const wait = () => document.querySelector('.event.stop') && !document.getElementById('outcome')"
               ".textContent.includes('has not finished') ? done() : setTimeout(wait, 50); wait(); })")
        seen = tab.js("""({roles: %s, scores: document.querySelectorAll('table.scores').length,
          question: document.querySelector('.event.rollback [data-part=feedback]').textContent,
          numbers: Array.from(document.querySelectorAll('article.turn .meta')).map(m => m.textContent.split(' · ')[0]),
          images: Array.from(document.images).map(i => i.naturalWidth)})""" % roles)  # noqa: UP031 - braces are JS
        assert seen["roles"] == ["user_proxy", "interpreter", "aligner", "scholar", "solver", "critic", "scholar"]
        assert seen["scores"] == 1 and seen["question"] == "Feedback: What about the knowledge?"
        assert seen["numbers"] == [f"turn {n}" for n in range(1, 8)]  # numbering carries on across the live batches
        assert seen["images"] == [64]
        assert tab.console_errors() == []
        assert tab.js("window.__violations") == []


def test_solve_view_serves_the_chat_while_it_runs(tmp_path: Path) -> None:
    gate = threading.Event()
    replies = RoleScript({"aligner": ["ALIGNED"], "scholar": ["KNOW"], "solver": [solver_json("12")], "critic": [critic_json(None, 5, 5, 5)]})

    def script(request: Received) -> Reply:
        if request.role == "critic":
            gate.wait(WAIT_S)  # the chat waits for its review while we look
        return replies(request)

    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        process = subprocess.Popen([*MAPS, "solve", "-q", "What is 3 times 4?", "--runs-dir", str(tmp_path / "runs"), "--view", "--json"],
                                   env=env, cwd=tmp_path, text=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            url, announcement = read_url_from(process)
            deadline = time.monotonic() + WAIT_S
            while 'data-role="solver"' not in (page := get(url)).body:
                assert time.monotonic() < deadline and process.poll() is None, "the Solver's turn never showed"
                time.sleep(0.1)
            assert "the run has not finished" in page.body and 'data-role="critic"' not in page.body
            feed = EventStream(live_feed_url(url, page.body))
            gate.set()
            assert 'data-dimension="solution">5</td>' in feed.until("append", 'data-role="critic"')
            feed.close()
        finally:
            gate.set()
            out, err = process.communicate(timeout=WAIT_S)
    assert process.returncode == 0, err
    outcome = json.loads(out)  # stdout stays one JSON object: the URL went to stderr
    assert outcome["final_answer"] == "12" and f"maps view {outcome['run_dir']} --serve" in announcement


def test_view_serve_command(tmp_path: Path) -> None:
    eval_dir = tmp_path / "eval-cli"
    write_synthetic_eval(eval_dir, 2)
    process = subprocess.Popen([*MAPS, "view", str(eval_dir), "--serve"], env=clean_env(), cwd=tmp_path, text=True,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        url = process.stdout.readline().strip()  # type: ignore[union-attr]
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/[\w-]{20,}/", url), url
        assert set(index_rows(get(url).body)) == {"q1", "q2"}
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=WAIT_S)
    assert process.returncode == 0 and "stopped" in err
    bad = run_maps(["view", str(tmp_path / "missing"), "--serve"], env=clean_env(), cwd=tmp_path, timeout=WAIT_S)
    assert bad.returncode == 2 and bad.stderr.startswith("error: run folder") and len(bad.stderr.strip().splitlines()) == 1


def test_feeds_refuse_what_they_cannot_follow(served_eval: tuple[ViewServer, Path]) -> None:
    server, _ = served_eval
    assert get(server.url + "events/transcript?problem=nope-0").status == 404  # no such problem
    assert get(server.url + "events/transcript?problem=../../x").status == 404
    assert get(server.url + "events/nothing").status == 404
    assert get(server.url + "events/transcript").status == 404  # an eval has no transcript of its own
