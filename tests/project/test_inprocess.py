"""`run_maps` runs the command in the test process as a fresh process would: exactly the given
environment, and afterwards nothing of the run is left in the test process."""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path

import pytest

from maps_autogen._util import _redact as redact
from maps_autogen.model import _client as client
from tests.helpers.common import TEST_KEY, clean_env, critic_json, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, RoleScript


def test_a_run_sees_only_its_environment_and_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-of-the-test-process-0123456789")  # not in the run's env: it must not see it
    before = (dict(os.environ), os.getcwd(), {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)},
              logging.getLogger().handlers[:], set(redact._secrets), dict(client._clients))
    script = RoleScript({"aligner": ["ALIGNED"], "scholar": ["KNOW"], "solver": [solver_json("12")], "critic": [critic_json(None, 5, 5, 5)]})
    with FakeOpenAI(script) as server:
        args = ["solve", "-q", "What is 3 times 4?", "--runs-dir", str(tmp_path / "runs"), "--json"]
        without_key = run_maps(args, env=clean_env(OPENAI_BASE_URL=server.base_url), cwd=tmp_path)
        sent_without = [request.headers.get("authorization") for request in server.received]
        del server.received[:]
        script = RoleScript({"aligner": ["ALIGNED"], "scholar": ["KNOW"], "solver": [solver_json("12")], "critic": [critic_json(None, 5, 5, 5)]})
        server.script = script
        solved = run_maps([*args, "--view"], env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
        sent_with = {request.headers.get("authorization") for request in server.received}
    assert without_key.returncode == 0 and sent_without and not any(sent and "sk-of-the-test-process" in sent for sent in sent_without)
    assert solved.returncode == 0 and '"final_answer": "12"' in solved.stdout, solved.stderr
    assert sent_with == {f"Bearer {TEST_KEY}"}
    assert "watch live: http://127.0.0.1:" in solved.stderr
    after = (dict(os.environ), os.getcwd(), {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)},
             logging.getLogger().handlers[:], set(redact._secrets), dict(client._clients))
    assert after == before  # environment, directory, signal handlers, logging, secrets, HTTP pools
    assert not [thread.name for thread in threading.enumerate() if thread.name == "maps-view"]  # the --view server stopped
