"""The live eval index follows results.jsonl: it lists problems/ only when a problem may have
started (the folder changed, a result came in, a folder waits for its run.json), not on every
poll of every open tab; a problem that starts is still announced on the next poll."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from maps_autogen.report.view import ViewServer
from maps_autogen.report.view import _server as server_module
from tests.helpers.view_fixtures import write_synthetic_eval


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the feed read the problems/ folder for started problems."""
    counted: list[int] = []
    real = server_module.unfinished_rows

    def counting(*args: Any, **kwargs: Any) -> Any:
        counted.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(server_module, "unfinished_rows", counting)
    return counted


def feed(server: ViewServer, polls: Iterator[bool]) -> list[bytes]:
    """What the results feed sends a page that shows every result so far, over `polls`."""
    server._ticks = lambda: polls  # type: ignore[method-assign]  # the polls, without waiting
    return list(server._results_events((server.run_dir / "results.jsonl").stat().st_size))


def test_an_eval_that_is_not_running_is_not_listed_on_every_poll(tmp_path: Path, listings: list[int]) -> None:
    eval_dir = tmp_path / "eval-idle"
    write_synthetic_eval(eval_dir, 3)
    server = ViewServer(eval_dir)
    try:
        events = feed(server, iter([False] * 200))  # 40 s of polls
    finally:
        server.close()
    assert len(listings) == 1  # once, when the feed starts; before, once a second (every 5th poll)
    assert events == []


def test_a_problem_that_starts_is_announced_on_the_next_poll(tmp_path: Path, listings: list[int]) -> None:
    eval_dir = tmp_path / "eval-live"
    write_synthetic_eval(eval_dir, 3)
    server = ViewServer(eval_dir)

    def polls() -> Iterator[bool]:
        yield from [False] * 10
        # a problem starts: its folder first, its run.json a few polls later
        started = eval_dir / "problems" / "q9"
        started.mkdir()
        yield from [False] * 7
        run = json.loads((eval_dir / "problems" / "q1" / "run.json").read_text())
        (started / "run.json").write_text(json.dumps({**run, "run_id": "q9", "pid": "q9", "status": "running",
                                                      "final_answer": None, "correct": None}))
        shutil.copytree(eval_dir / "problems" / "q1" / "images", started / "images")
        yield from [False] * 30

    try:
        events = feed(server, polls())
    finally:
        server.close()
    appended = [event for event in events if event.startswith(b"event: append")]
    assert len(appended) == 1 and b'data-key=\\"q9\\"' in appended[0]
    # the start, the new folder, then every fifth poll while it waited for its run.json
    assert len(listings) <= 4
