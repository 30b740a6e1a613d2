"""A person answering a paused chat from the live page (`maps solve --human --view`): the page's
feed carries the pause, a POST with the page's token answers it, the terminal and the page can
both answer and the first wins. In process against the viewer's server and a `HumanDesk` whose
terminal is a real pipe; then the real command in a subprocess, driven from headless Chromium."""

from __future__ import annotations

import http.client
import json
import os
import queue
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from maps_autogen.orchestration._human import HumanDecision, HumanState
from maps_autogen.orchestration._human_desk import HumanDesk
from maps_autogen.report.view._server import HUMAN_BODY_BYTES, ViewServer
from tests.helpers.chromium import Chromium, chromium  # noqa: F401 - chromium is a fixture
from tests.helpers.common import MAPS, TEST_KEY, clean_env, critic_json, make_png, solver_json
from tests.helpers.fake_openai import FakeOpenAI, RoleScript
from tests.helpers.human_desk import WAIT_S, Asked, Said, post
from tests.helpers.view_fixtures import write_synthetic_eval

TITLES = {"interpreter": "Interpreter", "aligner": "Aligner", "scholar": "Scholar", "solver": "Solver",
          "critic": "Critic"}


def pause(number: int, *, ends: bool = False) -> HumanState:
    return HumanState(pause=number, after="critic", titles=TITLES, review=True, round=0, answer="A. 2 kg",
                      scores={"caption": 5, "knowledge": 2}, questions={}, next="rollback 1: ...", ends=ends,
                      steps=("interpreter", "aligner", "scholar", "solver"), backs_left=2)


def answer(server: ViewServer, number: int, line: str) -> tuple[int, dict[str, Any] | str]:
    return post(server.url + "human", json.dumps({"pause": number, "answer": line}).encode())


class Feed:
    """The solve page's live feed, read on a thread: `next_pause(waiting)` waits for a `human` event."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        self._connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=WAIT_S)
        self._connection.request("GET", parts.path + "?" + parts.query)
        self._response = self._connection.getresponse()
        self._events: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        name = ""
        try:
            for raw in self._response:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: ") and name == "human":
                    self._events.put(json.loads(line[6:]))
        except (OSError, ValueError):
            pass

    def next_pause(self, waiting: bool) -> dict[str, Any]:
        while True:
            event = self._events.get(timeout=WAIT_S)
            if event["waiting"] == waiting:
                return event

    def close(self) -> None:
        self._connection.close()


@pytest.fixture
def solve_folder(tmp_path: Path) -> Path:
    """A solve run folder still running (an eval's problem folder is one)."""
    write_synthetic_eval(tmp_path / "eval", 1)
    run_dir = tmp_path / "eval" / "problems" / "q1"
    run = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**run, "status": "running"}))
    return run_dir


class Pipe:
    """A real pipe as the desk's standard input: `reading`, its reading end as a file; `type`
    writes a line into it, `close` ends the input."""

    def __init__(self) -> None:
        read_fd, self._write_fd = os.pipe()
        self.reading = os.fdopen(read_fd, "r")
        self._open = True

    def type(self, data: bytes) -> None:
        os.write(self._write_fd, data)

    def close(self) -> None:
        if self._open:
            self._open = False
            os.close(self._write_fd)


@pytest.fixture
def terminal() -> Iterator[Pipe]:
    pipe = Pipe()
    try:
        yield pipe
    finally:
        pipe.close()
        pipe.reading.close()


def test_the_page_shows_the_pause_and_answers_it_with_its_token(solve_folder: Path) -> None:
    said = Said()
    desk = HumanDesk(page=True, out=said)
    with ViewServer(solve_folder, human=desk) as server:
        feed = Feed(server.url + "events/transcript?offset=0")
        assert feed.next_pause(False) == {"waiting": False, "state": None, "last": None}
        asked = Asked(desk, pause(1))
        shown = feed.next_pause(True)["state"]
        assert shown["pause"] == 1 and shown["after_title"] == "Critic" and shown["answer"] == "A. 2 kg"
        assert [step["name"] for step in shown["steps"]] == ["interpreter", "aligner", "scholar", "solver"]
        # Refusals: the pause stays open through each of them.
        wrong = server.url.replace(server.token, "x" * len(server.token)) + "human"
        assert post(wrong, b'{"pause": 1, "answer": ""}')[0] == 403
        assert post(server.url + "human", b'{"pause": 1, "answer": ""}', content_type="text/plain")[0] == 415
        assert post(server.url + "human", b"{}", length=str(HUMAN_BODY_BYTES + 1))[0] == 413
        assert post(server.url + "human", b"[1, 2]")[0] == 400
        assert post(server.url + "human", b"[" * HUMAN_BODY_BYTES)[0] == 400  # nested past Python's limit
        assert post(server.url + "human", b'{"pause": 1, "answer": "\xff"}')[0] == 400  # not UTF-8
        assert post(server.url + "human", b'{"pause": "1", "answer": ""}')[0] == 400
        assert answer(server, 1, "back critic Why so low?") == (400, {
            "error": "the Critic cannot be sent back here (only a working step that has run); "
                     "back STEP QUESTION (STEP: interpreter, aligner, scholar, solver)"})
        assert answer(server, 7, "stop")[0] == 409  # not the pause the chat waits at
        assert answer(server, 1, "back scholar Which law\x1b[2J applies?") == (
            200, {"ok": True, "decision": "back scholar Which law [2J applies?"})
        decision = asked.result()
        assert (decision.kind, decision.step, decision.text, decision.source) == (
            "back", "scholar", "Which law [2J applies?", "page")
        assert answer(server, 1, "") == (409, {"error": "pause 1 is not waiting for an answer (answered from the page)"})
        assert feed.next_pause(False)["last"] == {"pause": 1, "source": "page", "line": "back scholar Which law [2J applies?"}
        assert "UserProxy: answered on the page: back scholar Which law [2J applies?" in said.getvalue()
        feed.close()
    with ViewServer(solve_folder) as plain:  # no chat waits on a person behind this server
        assert post(plain.url + "human", b'{"pause": 1, "answer": ""}')[0] == 404


def test_terminal_and_page_both_answer_and_the_first_wins(solve_folder: Path, terminal: Pipe) -> None:
    said = Said()
    desk = HumanDesk(terminal=terminal.reading, page=True, out=said)
    with ViewServer(solve_folder, human=desk) as server:
        # Pause 1: the terminal first; the page is told it came late.
        asked = Asked(desk, pause(1))
        said.until("pause 1")
        terminal.type(b"back aligner Where is the pivot?\n")
        assert asked.result() == HumanDecision("back", "aligner", "Where is the pivot?",
                                               said="back aligner Where is the pivot?", source="terminal")
        assert answer(server, 1, "stop") == (409, {
            "error": "pause 1 is not waiting for an answer (answered from the terminal)"})
        # Pause 2: the page first; the line typed afterwards is not used for pause 3.
        asked = Asked(desk, pause(2))
        said.until("pause 2")
        assert answer(server, 2, "Use SI units")[0] == 200
        assert asked.result().source == "page"
        terminal.type(b"stop\n")
        said.until("that line came after the pause was answered on the page; it was not used")
        asked = Asked(desk, pause(3))
        said.until("pause 3")
        assert answer(server, 3, "")[0] == 200
        assert asked.result() == HumanDecision(said="", source="page")
        # The terminal's input ends: the page still answers (the chat does not go on by itself).
        asked = Asked(desk, pause(4, ends=True))
        said.until("pause 4")
        terminal.close()
        said.until("standard input has ended: answer on the live page")
        assert answer(server, 4, "stop")[0] == 200
        assert asked.result().kind == "stop"


def test_without_a_page_the_end_of_input_continues(terminal: Pipe) -> None:
    said = Said()
    desk = HumanDesk(terminal=terminal.reading, out=said)
    terminal.type(b"back nowhere x\n" + "\u00e9".encode() * 9000 + b"\nstop\n")  # 18,000 bytes: past the line bound
    first = Asked(desk, pause(1))
    assert first.result().kind == "stop"
    out = said.getvalue()
    assert "not taken: 'nowhere' is not a step of this team" in out and "not taken: the line is longer than" in out
    terminal.close()
    assert Asked(desk, pause(2)).result() == HumanDecision(source="end_of_input")
    assert "standard input has ended: the chat continues at every pause" in said.getvalue()


@pytest.mark.browser
def test_a_person_steers_maps_solve_from_the_live_page(tmp_path: Path, chromium: Chromium) -> None:
    png = make_png(tmp_path / "lever.png")
    script = RoleScript({"interpreter": ["CAPTION"], "aligner": ["ALIGNED v1", "ALIGNED v2"], "scholar": ["KNOW"],
                         "solver": [solver_json("A"), solver_json("B")],
                         "critic": [critic_json(5, 5, 2, 5, worst="knowledge"), critic_json()]})
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        process = subprocess.Popen(
            [*MAPS, "solve", str(png), "-q", "Which mass?", "-o", "2 kg", "-o", "4 kg", "--runs-dir",
             str(tmp_path / "runs"), "--human", "--view", "--json"],
            env=env, cwd=tmp_path, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in process.stderr], daemon=True).start()  # type: ignore[union-attr]
        stderr: list[str] = []
        try:
            while not (found := re.search(r"watch live: (http://127\.0\.0\.1:\d+/[\w-]+/)", line := lines.get(timeout=WAIT_S))):
                stderr.append(line)
            tab = chromium.open(found.group(1))
            wait = ("new Promise(done => { const look = () => { const p = document.getElementById('human-turn');"
                    " p && !p.hidden && p.textContent.includes(%s) ? done(true) : setTimeout(look, 50); }; look(); })")
            tab.js(wait % json.dumps("Pause 1"))
            shown = tab.js("document.getElementById('human-turn').textContent")
            assert "If you continue: rollback 1: the Critic sends the Scholar back" in shown
            assert "Answer so far: A. 2 kg" in shown and "Feedback on knowledge: question about knowledge?" in shown
            tab.js("document.querySelector('[data-human=step]').value = 'aligner';"
                   "document.querySelector('[data-human=question]').value = 'Is the pivot <b>in</b> the middle?';"
                   "document.querySelector('[data-human=back]').click()")
            tab.js(wait % json.dumps("Pause 2"))
            assert tab.js("document.querySelectorAll('[data-human=note]').length") == 0  # nothing follows: no note
            tab.js("document.querySelector('[data-human=continue]').click()")
            out, _ = process.communicate(timeout=WAIT_S)
            assert tab.js("document.querySelectorAll('#human-turn b').length") == 0  # shown as text, never markup
            assert tab.console_errors() == [] and tab.js("window.__violations") == []
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        aligner = [request.user_text() for request in server.received if request.role == "aligner"]
    while not lines.empty():
        stderr.append(lines.get())
    assert process.returncode == 0, "".join(stderr)
    summary = json.loads(out)
    assert summary["stop_reason"] == "critic_passed" and summary["rollbacks"] == ["aligner"]
    assert "## The user's question about your previous answer\nIs the pivot <b>in</b> the middle?" in aligner[1]
    assert "UserProxy: answered on the page: back aligner Is the pivot <b>in</b> the middle?" in "".join(stderr)
    run_dir = Path(summary["run_dir"])
    turns = [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]
    assert [(t["content"], t["parsed"]["source"]) for t in turns if t.get("step") == "user"] == [
        ("back aligner Is the pivot <b>in</b> the middle?", "page"), ("continue", "page")]



def test_two_answers_at_once_the_first_wins() -> None:
    said = Said()
    desk = HumanDesk(page=True, out=said)
    asked = Asked(desk, pause(1))
    said.until("pause 1")
    # Holding the desk's lock keeps the waiting chat from taking the first answer before the
    # second comes in: the second finds the pause answered all the same.
    with desk._changed:
        assert desk.answer(1, "stop", "page") == (200, "stop")
        assert desk.answer(1, "back scholar Why?", "terminal") == (
            409, "pause 1 is not waiting for an answer (answered from the page)")
    assert asked.result().kind == "stop"
