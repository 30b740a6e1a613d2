"""The per-problem work `maps` no longer does (issue 27: CPU per problem): AG2 builds no event
objects for the output stream it would print them to, the package version is read once, and
our JSON files are written by the C encoder, one top-level key per line."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pytest

import maps_autogen._util._version as version
import maps_autogen.orchestration._chat as chat
from maps_autogen._util._artifacts import json_text, write_json_atomic
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
