"""The per-problem work `maps` no longer does (issues 27 and 47: CPU per problem): AG2 builds no
event objects for the output stream it would print them to, the package version is read once,
our JSON files are written by the C encoder, one top-level key per line, and turn.json is made
only for a call still under way after TURN_FILE_AFTER_S (a call that ends sooner makes no file)."""

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


def test_the_package_version_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: reads.append(name) or real(name))
    version.package_version.cache_clear()
    first, second = version.package_version(), version.package_version()
    assert first == second and reads == ["maps-autogen"]


def test_json_files_have_one_top_level_key_per_line(tmp_path: Path) -> None:
    data = {"run_id": "r1", "config": {"critic": {"threshold": 4}, "steps": ["a", "b"]}, "note": "é \u2028 \"q\"",
            "seconds": 1.5, "empty": {}}
    write_json_atomic(tmp_path / "run.json", data)
    text = (tmp_path / "run.json").read_text(encoding="utf-8")
    assert json.loads(text) == data
    lines = text.split("\n")[:-1]  # (splitlines would also split at the U+2028 inside a value)
    assert lines[0] == "{" and lines[-1] == "}" and len(lines) == len(data) + 2
    assert lines[2] == '  "config": {"critic": {"threshold": 4}, "steps": ["a", "b"]},'
    assert json_text([1, 2]) == "[1, 2]\n" and json.loads(json_text({})) == {}


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
        "schema_version": 1, "role": "scholar", "agent": "Scholar", "round": 1, "revision": False,
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
    finished.clear()
    later.run(finished.set)  # once its queue was empty: it wakes again
    assert finished.wait(10)
