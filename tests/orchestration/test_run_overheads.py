"""What a problem does besides its model calls: AG2 builds no event objects for an output stream
nobody reads, a run records the installed version, a run's JSON file says exactly what it was
given (what these cost beside the same work done the expensive way: perf/adversarial.py and
perf/cpu_per_problem.py print it), and turn.json is made only for a call still under way after
TURN_FILE_AFTER_S (a call that ends sooner makes no file)."""

from __future__ import annotations

import importlib.metadata
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import maps_autogen._util._version as version
import maps_autogen.orchestration._chat as chat
import maps_autogen.orchestration._transcript as transcript
from maps_autogen._util._artifacts import json_text, write_json_atomic
from maps_autogen._util._errors import DiskFullError
from maps_autogen.orchestration._transcript import Later, RunWriter
from maps_autogen.records._chat_records import MessageRecord, StopEvent, TurnStartRecord
from maps_autogen.records._schema import SCHEMA_VERSION
from tests.helpers.common import REPO, clean_env, critic_json, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, RoleScript


def test_a_chat_builds_no_event_for_agents_output_stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[Any] = []
    printed: list[Any] = []
    monkeypatch.setattr(chat._SilentStream, "send", lambda self, message: sent.append(message))
    monkeypatch.setattr(chat._SilentStream, "print", lambda self, *objects, **_: printed.append(objects))
    script = RoleScript({"solver": [solver_json("B")], "critic": [critic_json(3, 5, 5, 5, worst="caption"),
                                                                  critic_json()]}, default="notes")
    with FakeOpenAI(script) as server:
        result = run_maps(["solve", "--problem", str(REPO / "examples/lever/problem.yaml"), "--json",
                           "--runs-dir", str(tmp_path / "runs")],
                          env=clean_env(OPENAI_API_KEY="sk-test-overheads", OPENAI_BASE_URL=server.base_url),
                          cwd=tmp_path)
        calls = len(server.received)
    assert result.returncode == 0, result.stderr
    assert calls >= 6  # a whole chat with a rollback ran in this process
    # Every agent is silent: AG2 made no event for any message or speaker turn; only the chat's
    # end is announced (by the Manager, whatever its setting).
    assert [type(event).__name__ for event in sent] == ["TerminationEvent"] and printed == []


def test_the_version_a_run_records_is_the_installed_one() -> None:
    # (what recording it in every problem's run.json costs: perf/adversarial.py prints it)
    assert version.package_version() == importlib.metadata.version("maps-autogen")


def test_a_json_file_says_exactly_what_it_was_given(tmp_path: Path) -> None:
    data = {"run_id": "r1", "config": {"critic": {"threshold": 4}, "steps": ["a", "b"]},
            "note": "é \u2028 \u2029 \"q\" \\ </script> 𝛼", "seconds": 1.5, "empty": {}, "none": None, "list": [],
            "big": 2**70, "flag": False}
    write_json_atomic(tmp_path / "run.json", data)
    written = (tmp_path / "run.json").read_bytes()
    assert json.loads(written.decode("utf-8")) == data and written.endswith(b"\n")
    for value in ([1, 2], {}, "text", None, 3.5, {"nested": {"deep": [{"x": 1}]}}):
        assert json.loads(json_text(value)) == value
    assert json.loads(json_text({"path": Path("a/b")})) == {"path": "a/b"}  # what JSON cannot hold: its text



class ByHand(Later):
    """A `Later` whose actions run when the test says (the delay has passed)."""

    def __init__(self) -> None:
        super().__init__(0.0)
        self.waiting: list[Callable[[], None]] = []

    def run(self, action: Callable[[], None]) -> None:
        self.waiting.append(action)

    def delay_passes(self) -> None:
        actions, self.waiting = self.waiting, []
        for action in actions:
            action()


def _turn(role: str) -> TurnStartRecord:
    return TurnStartRecord(role=role, agent=role.title(), round=1)


def _message(role: str) -> MessageRecord:
    return MessageRecord(agent=role.title(), role=role, round=1, content=f"{role} notes")


def test_turn_json_is_made_only_for_a_call_still_under_way_after_a_moment(tmp_path: Path) -> None:
    later = ByHand()
    writer = RunWriter(tmp_path, later=later)
    turn_file = tmp_path / "turn.json"
    writer.start_turn(_turn("interpreter"))
    writer.append(_message("interpreter"))  # the call ended before the delay passed
    later.delay_passes()
    assert not turn_file.exists()
    writer.start_turn(_turn("aligner"))
    writer.start_turn(_turn("scholar"))  # (a turn that starts supersedes the one before)
    later.delay_passes()  # the Scholar's call is still under way
    assert json.loads(turn_file.read_text()) | {"started_at": "-"} == {
        "schema_version": SCHEMA_VERSION, "role": "scholar", "agent": "Scholar", "round": 1, "revision": False,
        "started_at": "-", "messages": 1}
    writer.append(_message("scholar"))
    writer.start_turn(_turn("solver"))
    writer.close()  # the run ends: nothing is under way, and nothing is written after
    later.delay_passes()
    assert not turn_file.exists() and [json.loads(line)["role"] for line in
                                       (tmp_path / "transcript.jsonl").read_text().splitlines()] == [
        "interpreter", "scholar"]


def test_a_turn_json_that_cannot_be_written_fails_the_chats_next_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    later = ByHand()
    writer = RunWriter(tmp_path, later=later)

    def full(path: Path, record: Any) -> None:
        raise DiskFullError(f"no space left to write in {path.parent}")

    monkeypatch.setattr(transcript, "write_record", full)
    writer.start_turn(_turn("solver"))
    later.delay_passes()  # in the background: nothing raised there
    with pytest.raises(DiskFullError, match="no space left"):
        writer.append(StopEvent(stop_reason="error"))
    writer.close()


def test_later_runs_each_action_after_its_delay_in_order() -> None:
    later = Later(0.01)
    done: list[int] = []
    finished = threading.Event()
    for number in range(3):
        later.run(lambda number=number: done.append(number))
    later.run(finished.set)
    assert finished.wait(10) and done == [0, 1, 2]
    assert _ended(later)  # nothing left to do: its thread ended (it never outlives its runs)
    finished.clear()
    later.run(finished.set)  # once its queue was empty: it starts again
    assert finished.wait(10)


def test_the_later_thread_ends_with_its_run_and_writes_nothing_after_close(tmp_path: Path) -> None:
    later = Later(0.01)
    writer = RunWriter(tmp_path, later=later)
    writer.start_turn(_turn("solver"))
    writer.close()  # the turn it would write is no longer under way, whenever its delay passes
    assert _ended(later) and not (tmp_path / "turn.json").exists()  # (the writer's action ran first)


def _ended(later: Later) -> bool:
    """Give `later` one more action and say whether the thread that ran it ended afterwards."""
    ran_on: list[threading.Thread] = []
    finished = threading.Event()
    later.run(lambda: (ran_on.append(threading.current_thread()), finished.set()))
    assert finished.wait(10)
    ran_on[0].join(10)
    return not ran_on[0].is_alive()
