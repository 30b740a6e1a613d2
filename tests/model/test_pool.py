"""Endpoint pools: replicas of one model behind one endpoint, each request to the least busy,
an unreachable replica rested and tried again later, and the manifest counting what each served."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import httpx
import pytest

from maps_autogen._util._errors import ConfigError
from maps_autogen.eval import EvalOptions, EvalRun
from maps_autogen.model._client import ChatBackend
from maps_autogen.model._pool import PoolTransport, ReplicaPool
from maps_autogen.settings._config import load_config
from maps_autogen.settings._endpoints import resolve_models
from tests.helpers.common import TEST_KEY, write_config
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Reply


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connections are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def slow(seconds: float):
    return lambda request: Reply("ok", delay_s=seconds)


def test_requests_go_to_the_least_busy_replica_and_skip_a_dead_one(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    with FakeOpenAI(slow(0.01)) as fast, FakeOpenAI(slow(0.2)) as sluggish:
        config = write_config(tmp_path / "agents.yaml", **{"endpoints.openai.base_url": [dead, fast.base_url, sluggish.base_url]})
        model = resolve_models(load_config(config), {"OPENAI_API_KEY": TEST_KEY}).models["aligner"]
        backend = ChatBackend(model)
        errors: list[Exception] = []

        def worker() -> None:
            for _ in range(10):
                try:
                    backend.complete([{"role": "user", "content": "hi"}], role="aligner")
                except Exception as error:  # noqa: BLE001 - collected and asserted on below
                    errors.append(error)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        served = backend.pool.served()

    assert errors == []
    assert served == {dead: 0, fast.base_url: len(fast.received), sluggish.base_url: len(sluggish.received)}
    assert len(fast.received) + len(sluggish.received) == 40
    # Least in flight: the replica that answers twenty times faster takes most of the load.
    assert len(fast.received) > 2 * len(sluggish.received) > 0
    dead_replica = backend.pool.replicas[0]
    assert dead_replica.failures_in_a_row >= 1 and dead_replica.rested_until > 0


def test_a_rested_replica_is_probed_and_used_again(tmp_path: Path) -> None:
    now = [0.0]
    port = closed_port()
    revived_url = f"http://127.0.0.1:{port}/v1"
    with FakeOpenAI(slow(0.0)) as steady:
        pool = ReplicaPool([revived_url, steady.base_url], clock=lambda: now[0], rest_s=10)
        client = httpx.Client(transport=PoolTransport(pool, httpx.HTTPTransport()))
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        assert client.post(f"{revived_url}/chat/completions", json=body).status_code == 200
        assert pool.served() == {revived_url: 0, steady.base_url: 1}
        assert pool.replicas[0].rested_until == 10
        # While it rests, the idle replica gets nothing even though it has the fewest in flight.
        now[0] = 9.0
        client.post(f"{revived_url}/chat/completions", json=body)
        assert pool.served() == {revived_url: 0, steady.base_url: 2}
        with FakeOpenAI(slow(0.0), port=port) as revived:
            now[0] = 11.0
            client.post(f"{revived_url}/chat/completions", json=body)
            methods = [r.method for r in revived.received]
        assert pool.served() == {revived_url: 1, steady.base_url: 2}
        assert pool.replicas[0].failures_in_a_row == 0
        client.close()
    # The health probe reached it first, then the real request.
    assert methods == ["GET", "POST"]


def test_an_eval_records_which_replicas_served(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "data", 6)
    answers = {pid: row["answer"] for pid, row in rows.items()}
    with FakeOpenAI(ProblemScript(answers)) as one, FakeOpenAI(ProblemScript(answers)) as two:
        loaded = load_config(write_config(tmp_path / "agents.yaml", **{"endpoints.openai.base_url": [one.base_url, two.base_url]}))
        request = EvalOptions(benchmark="mathvista", data=data, concurrency=4, cache=False, runs_dir=tmp_path / "runs")
        outcome = EvalRun(request, loaded, progress=False, env={"OPENAI_API_KEY": TEST_KEY}).run()
        received = {one.base_url: len(one.received), two.base_url: len(two.received)}

    manifest = json.loads((outcome.eval_dir / "manifest.json").read_text())
    assert manifest["replicas_served"] == {"openai": received}
    assert all(count > 0 for count in received.values())
    assert manifest["models"]["solver"]["replicas"] == [one.base_url, two.base_url]
    assert outcome.summary.complete


def test_an_empty_replica_list_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="base_url"):
        load_config(write_config(tmp_path / "agents.yaml", **{"endpoints.openai.base_url": []}))
