"""A replica pool in front of llama.cpp's real server (tests/helpers/real_servers.py), beside a replica
whose port has nothing listening and one that answers every request 503 (the scripted
server): the pool's re-addressing (URL and Host), its streamed-body release and its
accounting, against a server we did not write. Text-only and short, as in
tests/e2e/test_real_servers.py; in CI a missing server fails the test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from maps_autogen.eval import EvalOptions, EvalRun
from maps_autogen.model import _pool as pool_module
from maps_autogen.settings._config import load_config
from tests.helpers.common import TEST_KEY
from tests.helpers.eval_tasks import OB_IMAGES, ob_row, write_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Reply
from tests.helpers.real_server_config import server_config
from tests.helpers.real_servers import ALIAS, free_port, llama_server

pytestmark = [pytest.mark.local, pytest.mark.real_server]


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with llama_server(tmp_path_factory.mktemp("llama") / "llama.log") as url:
        yield url


def test_an_eval_is_served_by_the_real_replica_after_the_others_are_rested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, llama: str
) -> None:
    # Rested for the whole run after their first failure, so each failing replica sees exactly
    # one request, however slow the machine.
    monkeypatch.setattr(pool_module, "REST_S", 3600.0)
    data = tmp_path / "olympiad"
    write_jsonl(data / "OE_MM_physics_en_COMP.jsonl", [
        ob_row(3001, ["$3$"], "Numerical", subject="Physics", widths=(None,), question="A block moves 6 m in 2 s. Find its speed in m/s."),
        ob_row(3002, ["$4$"], "Numerical", subject="Physics", widths=(None,), question="A 2 kg mass feels 8 N. Find its acceleration in m/s^2."),
    ], OB_IMAGES)
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with FakeOpenAI(lambda request: Reply(status=503, headers={"Retry-After": "0"})) as refusing:
        # The dead replica first: every request is first addressed to it and re-addressed by
        # the pool; streamed, so the real server's chunked body passes through the pool's release.
        urls = [dead, refusing.base_url, llama]
        loaded = load_config(server_config(tmp_path, urls, **{"endpoints.openai.stream": True}))  # type: ignore[arg-type]
        request = EvalOptions(benchmark="olympiadbench", subsets=("PECO",), data=data, method="direct",
                              concurrency=1, workers=1, cache=False, runs_dir=tmp_path / "runs")
        outcome = EvalRun(request, loaded, progress=False, env={"OPENAI_API_KEY": TEST_KEY}).run()
        refused = len(refusing.received)

    rows = [json.loads(line) for line in (outcome.eval_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(row["pid"] for row in rows) == ["3001", "3002"]
    assert all(row["status"] == "ok" and row["usage"]["completion_tokens"] > 0 for row in rows)
    assert {row["models"]["direct"]["model"] for row in rows} == {ALIAS}
    assert outcome.summary.complete
    assert refused == 1  # refused the first request, then rested: never asked again
    manifest = json.loads((outcome.eval_dir / "manifest.json").read_text())
    # One call a problem, each served by the real server, none by the others.
    assert manifest["replicas_served"] == {"openai": {dead: 0, refusing.base_url: 0, llama: len(rows)}}
