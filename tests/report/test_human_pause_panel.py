"""The person's pause (`maps solve --human`, terminal and live page): it shows the reviewer's scores
and its feedback on each dimension; with `human: {wait_s: N}` a pause nobody answers in N seconds
continues on its own, said on the terminal and the page (tested on an injected clock and with
`wait_s: 0`, never by sleeping); and the live page's answer is refused when its Origin is not the
page's own (beside the URL's token and the Host check)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from maps_autogen.orchestration._human import HumanState
from maps_autogen.orchestration._human_desk import HumanDesk
from maps_autogen.report.view import ViewServer
from tests.helpers.common import MAPS, TEST_KEY, clean_env, critic_json, make_png, solver_json
from tests.helpers.fake_openai import FakeOpenAI, RoleScript
from tests.helpers.human_desk import WAIT_S, Asked, Said
from tests.helpers.human_desk import post as post_body
from tests.helpers.view_fixtures import write_synthetic_eval

FEEDBACK = {"caption": "Which length is measured?", "knowledge": "Which law fixes the ratio?"}


def pause(number: int = 1) -> HumanState:
    return HumanState(pause=number, after="critic", titles={"critic": "Critic", "scholar": "Scholar"}, review=True,
                      round=0, answer="A. 2 kg", scores={"caption": 5, "knowledge": 2}, questions=FEEDBACK,
                      next="rollback 1: ...", ends=False, steps=("scholar",), backs_left=2)


class Clock:
    """An injected monotonic clock: it moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def moved(desk: HumanDesk, clock: Clock, to: float) -> None:
    """Move the clock and wake the waiting pause, so it looks at the clock again at once."""
    with desk._changed:
        clock.now = to
        desk._changed.notify_all()


def test_the_pause_shows_the_reviewers_scores_and_its_feedback_on_each_dimension() -> None:
    lines = pause().prompt_lines()
    assert "   scores: caption 5, knowledge 2" in lines
    assert "   feedback on caption: Which length is measured?" in lines
    assert "   feedback on knowledge: Which law fixes the ratio?" in lines
    assert pause().as_dict()["questions"] == FEEDBACK  # what the page lists under the scores


def test_a_pause_nobody_answers_continues_after_wait_s_on_the_terminal_and_the_page() -> None:
    said, clock = Said(), Clock()
    desk = HumanDesk(page=True, out=said, wait_s=30, clock=clock)
    asked = Asked(desk, pause(1))
    said.until("   nobody answering: the chat continues on its own after 30 s (human.wait_s)")
    assert desk.snapshot()[1]["state"]["wait_s"] == 30  # the page says so too
    moved(desk, clock, 130.0)
    decision = asked.result()
    assert (decision.kind, decision.source) == ("continue", "timeout")
    said.until("UserProxy: no answer in 30 s: the chat continues as planned")
    assert desk.snapshot()[1] == {"waiting": False, "state": None, "last": {"pause": 1, "source": "timeout",
                                                                         "line": "continue"}}
    # an answer before the deadline is taken as usual
    asked = Asked(desk, pause(2))
    said.until("pause 2")
    moved(desk, clock, clock.now + 29)
    assert desk.answer(2, "back scholar Which law?", "page") == (200, "back scholar Which law?")
    assert asked.result().source == "page"


def test_without_wait_s_a_pause_waits_for_its_answer() -> None:
    said, clock = Said(), Clock()
    desk = HumanDesk(page=True, out=said, clock=clock)
    asked = Asked(desk, pause(1))
    said.until("pause 1")
    assert desk.snapshot()[1]["state"]["wait_s"] is None
    moved(desk, clock, 10**9)  # however long: still open
    assert desk.answer(1, "stop", "page") == (200, "stop")
    assert asked.result().source == "page" and "continues on its own" not in said.getvalue()


def test_wait_s_zero_lets_maps_solve_human_go_on_by_itself(tmp_path: Path) -> None:
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump({"human": {"wait_s": 0}}))
    script = RoleScript({"solver": [solver_json("A")], "critic": [critic_json(knowledge=2, worst="knowledge",
                                                                              feedback=FEEDBACK), critic_json()]})
    reading, writing = os.pipe()  # standard input stays open and silent: only the clock can answer
    try:
        with FakeOpenAI(script) as server:
            env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
            process = subprocess.Popen([*MAPS, "solve", str(make_png(tmp_path / "f.png")), "-q", "Which mass?",
                                        "--runs-dir", str(tmp_path / "runs"), "--human", "--json"], env=env,
                                       cwd=tmp_path, stdin=reading, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True)
            os.close(reading)
            out, err = process.communicate(timeout=WAIT_S)
    finally:
        os.close(writing)
    assert process.returncode == 0, err
    summary = json.loads(out)
    assert summary["rollbacks"] == ["scholar"] and summary["stop_reason"] == "critic_passed"
    assert "   feedback on knowledge: Which law fixes the ratio?" in err
    assert err.count("UserProxy: no answer in 0 s: the chat continues as planned") == 2
    turns = [json.loads(line) for line in (Path(summary["run_dir"]) / "transcript.jsonl").read_text().splitlines()]
    assert [t["parsed"]["source"] for t in turns if t.get("step") == "user"] == ["timeout", "timeout"]


def post(url: str, line: str, *, origin: str | None, number: int = 1) -> tuple[int, Any]:
    return post_body(url, json.dumps({"pause": number, "answer": line}).encode(), origin=origin)


def test_the_page_s_answer_is_refused_from_another_origin(tmp_path: Path) -> None:
    write_synthetic_eval(tmp_path / "eval", 1)
    said = Said()
    desk = HumanDesk(page=True, out=said)
    with ViewServer(tmp_path / "eval" / "problems" / "q1", human=desk) as server:
        port = urlsplit(server.url).port
        asked = Asked(desk, pause(1))
        said.until("pause 1")
        url = server.url + "human"
        for origin in ("http://evil.example", "null", f"http://localhost:{port + 1}", f"https://127.0.0.1:{port}",
                       f"http://127.0.0.1:{port}/page", "http://attacker.127.0.0.1.nip.io"):
            status, refused = post(url, "stop", origin=origin)
            assert status == 403 and "Origin" in refused["error"], origin
        assert post(url, "back scholar Which law?", origin=f"http://127.0.0.1:{port}") == (
            200, {"ok": True, "decision": "back scholar Which law?"})  # the page's own origin (the pause stayed open)
        assert asked.result().kind == "back"
        asked = Asked(desk, pause(2))
        said.until("pause 2")
        assert post(url, "stop", origin=None, number=2) == (200, {"ok": True, "decision": "stop"})  # no browser:
        assert asked.result().kind == "stop"  # the token (and the Host) decide alone
