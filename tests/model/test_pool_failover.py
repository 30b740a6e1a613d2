"""Replica pools under failure: a replica that answers "not now" (5xx, 429, 408), times out or
resets the connection is rested and the request goes to another one; a request's own fault
(400) rests nothing; when every replica rests a request waits for the first to wake (Ctrl-C
ends the wait). The choice itself is a pure function of the replicas' load, rests and the time."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from maps_autogen._util._errors import RunInterrupted
from maps_autogen.eval import EvalOptions, EvalRun
from maps_autogen.model import _pool as pool_module
from maps_autogen.model._pool import PoolTransport, Replica, ReplicaPool, pick, rest_seconds
from maps_autogen.settings._config import load_config
from tests.helpers.common import TEST_KEY, write_config
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Reply

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
OK = {"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}


# --- the pure choice ---------------------------------------------------------------------------

def test_a_resting_replica_is_skipped_even_when_it_is_the_least_busy() -> None:
    idle, busy = Replica("a", rested_until=50.0), Replica("b", in_flight=5)
    assert pick([idle, busy], now=10.0) == (busy, 10.0)
    # Its rest over, it is the least busy again.
    assert pick([idle, busy], now=50.0) == (idle, 50.0)


def test_a_replica_on_trial_takes_no_second_request_while_another_is_ready() -> None:
    trial, other = Replica("a", probing=True, failures_in_a_row=1), Replica("b", in_flight=3)
    assert pick([trial, other], now=0.0) == (other, 0.0)


def test_when_every_replica_rests_the_one_that_wakes_first_is_waited_for() -> None:
    late, early = Replica("a", rested_until=30.0), Replica("b", rested_until=20.0, in_flight=2)
    assert pick([late, early], now=10.0) == (early, 20.0)


def test_replicas_the_request_failed_on_are_avoided_unless_they_are_all() -> None:
    a, b = Replica("a"), Replica("b", in_flight=4)
    assert pick([a, b], now=0.0, avoid=[a]) == (b, 0.0)
    assert pick([a, b], now=0.0, avoid=[a, b]) == (a, 0.0)


def test_rests_grow_with_failures_in_a_row_honour_retry_after_and_are_capped() -> None:
    assert [rest_seconds(n, None, 5.0, 120.0) for n in (1, 2, 3, 6)] == [5.0, 10.0, 20.0, 120.0]
    assert rest_seconds(1, 30.0, 5.0, 120.0) == 30.0  # the replica asked for longer
    assert rest_seconds(2, 0.0, 5.0, 120.0) == 10.0  # "retry now" from a failing replica: still rested
    assert rest_seconds(1, 3600.0, 5.0, 120.0) == 120.0


def test_a_success_ends_the_rest_and_resets_the_count() -> None:
    now = [100.0]
    pool = ReplicaPool(["http://a/v1", "http://b/v1"], clock=lambda: now[0], rest_s=5.0)
    a, b = pool.replicas
    for expected_rest in (5.0, 10.0):
        now[0] = max(now[0], a.rested_until)  # its rest is over: on trial, and refused again
        replica, _ = pool.choose(exclude=[b])
        assert replica is a
        pool.finished(a, "refused")
        assert a.rested_until == now[0] + expected_rest
    now[0] = a.rested_until
    replica, probe = pool.choose(exclude=[b])
    assert replica is a and a.probing and not probe  # on trial; a refusal needs no health probe
    pool.finished(a, "served")
    assert (a.failures_in_a_row, a.rested_until, a.probing, a.served) == (0, 0.0, False, 1)


# --- waiting when every replica rests ----------------------------------------------------------

class FakeWait(threading.Event):
    """A cancel event whose waits move a fake clock instead of sleeping (and say what they waited)."""

    def __init__(self, now: list[float], interrupt: bool = False):
        super().__init__()
        self.now, self.interrupt = now, interrupt
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None and timeout > 0  # never a wait without an end, never a spin
        self.waits.append(timeout)
        if self.interrupt:
            self.set()
            return True
        self.now[0] += timeout
        return False


def resting_pool(cancel: threading.Event, now: list[float]) -> ReplicaPool:
    pool = ReplicaPool(["http://a/v1", "http://b/v1"], clock=lambda: now[0], cancel=cancel, rest_s=5.0)
    for replica, retry_after in zip(pool.replicas, (40.0, 25.0)):
        pool.choose(exclude=[r for r in pool.replicas if r is not replica])
        pool.finished(replica, "refused", retry_after)
    return pool


def test_a_request_waits_for_the_replica_that_wakes_first() -> None:
    now = [0.0]
    cancel = FakeWait(now)
    pool = resting_pool(cancel, now)
    replica, _ = pool.choose()
    assert replica is pool.replicas[1] and cancel.waits == [25.0] and now[0] == 25.0


def test_an_interrupted_run_stops_the_wait() -> None:
    now = [0.0]
    cancel = FakeWait(now, interrupt=True)
    pool = resting_pool(cancel, now)
    with pytest.raises(RunInterrupted):
        pool.choose()
    assert cancel.waits == [25.0] and now[0] == 0.0
    assert [r.in_flight for r in pool.replicas] == [0, 0]


# --- the transport: what rests a replica -------------------------------------------------------

def mock_pool(answer: Callable[[str], httpx.Response], now: list[float]) -> tuple[ReplicaPool, httpx.Client, list[str]]:
    """A pool over replicas a, b (and c) answered in-process by `answer(host)`; the hosts asked, in order."""
    asked: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.host)
        return answer(request.url.host)

    pool = ReplicaPool(["http://a/v1", "http://b/v1", "http://c/v1"], clock=lambda: now[0], rest_s=5.0)
    return pool, httpx.Client(transport=PoolTransport(pool, httpx.MockTransport(handle))), asked


def test_a_refusal_rests_the_replica_and_the_request_goes_to_another_at_once() -> None:
    now = [0.0]
    statuses = {"a": 503, "b": 429, "c": 200}
    pool, http, asked = mock_pool(
        lambda host: httpx.Response(statuses[host], json=OK, headers={"Retry-After": "30"} if host == "b" else {}), now
    )
    assert http.post("http://a/v1/chat/completions", json=BODY).status_code == 200
    a, b, c = pool.replicas
    assert asked == ["a", "b", "c"]
    assert (a.rested_until, b.rested_until, c.rested_until) == (5.0, 30.0, 0.0)  # b's Retry-After honoured
    assert pool.served() == {"http://a/v1": 0, "http://b/v1": 0, "http://c/v1": 1}
    # While they rest, every request goes to c, though it is the one that served.
    for _ in range(3):
        assert http.post("http://a/v1/chat/completions", json=BODY).status_code == 200
    assert asked[3:] == ["c", "c", "c"] and [r.in_flight for r in pool.replicas] == [0, 0, 0]


def test_when_every_replica_refuses_the_client_gets_the_refusal_and_its_retry_waits() -> None:
    now = [0.0]
    pool, http, asked = mock_pool(lambda host: httpx.Response(503, json={"error": {"message": "overloaded"}}), now)
    response = http.post("http://a/v1/chat/completions", json=BODY)
    assert response.status_code == 503 and "overloaded" in response.text  # the client reads why
    assert sorted(asked) == ["a", "b", "c"] and all(r.rested_until == 5.0 for r in pool.replicas)


def test_a_request_s_own_fault_rests_nothing() -> None:
    now = [0.0]
    pool, http, asked = mock_pool(lambda host: httpx.Response(400, json={"error": {"message": "bad"}}), now)
    for _ in range(3):
        assert http.post("http://a/v1/chat/completions", json=BODY).status_code == 400
    assert asked == ["a", "b", "c"]  # one request each: none was re-sent elsewhere
    assert all(r.rested_until == 0.0 and r.failures_in_a_row == 0 for r in pool.replicas)


@pytest.mark.parametrize("error", [httpx.ReadTimeout("slow"), httpx.RemoteProtocolError("reset")])
def test_a_timeout_or_reset_rests_the_replica_and_the_retry_goes_elsewhere(error: Exception) -> None:
    now = [0.0]

    def answer(host: str) -> httpx.Response:
        if host == "a":
            raise error
        return httpx.Response(200, json=OK)

    pool, http, asked = mock_pool(answer, now)
    with pytest.raises(type(error)):  # it may have been processed: the client's retry decides
        http.post("http://a/v1/chat/completions", json=BODY)
    assert pool.replicas[0].rested_until == 5.0 and pool.replicas[0].in_flight == 0
    assert http.post("http://a/v1/chat/completions", json=BODY).status_code == 200
    assert asked == ["a", "b"]


# --- an eval with a replica that always answers 503 --------------------------------------------

@pytest.mark.parametrize("healthy", [1, 2])
def test_an_eval_completes_around_a_replica_that_always_answers_503(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, healthy: int
) -> None:
    # Rests long enough that the failing replica's only requests are those sent before its first
    # 503 came back (at most one per problem in flight), however slow the machine. Every step's
    # backend shares the endpoint's pool, so they all learn it from that one 503.
    monkeypatch.setattr(pool_module, "REST_S", 3600.0)
    concurrency = 4
    data, rows = write_mathvista_jsonl(tmp_path / "data", 6)
    answers = {pid: row["answer"] for pid, row in rows.items()}
    # Retry-After: 0, so a client that retries on the same replica wastes no time doing it.
    with FakeOpenAI(lambda request: Reply(status=503, headers={"Retry-After": "0"})) as failing, \
            FakeOpenAI(ProblemScript(answers)) as one, FakeOpenAI(ProblemScript(answers)) as two:
        urls = [failing.base_url, one.base_url, two.base_url][: healthy + 1]
        loaded = load_config(write_config(tmp_path / "agents.yaml", **{"endpoints.openai.base_url": urls}))
        request = EvalOptions(benchmark="mathvista", data=data, concurrency=concurrency, cache=False,
                              runs_dir=tmp_path / "runs")
        outcome = EvalRun(request, loaded, progress=False, env={"OPENAI_API_KEY": TEST_KEY}).run()
        received = {one.base_url: len(one.received), two.base_url: len(two.received)}
        refused = len(failing.received)

    results = [json.loads(line) for line in (outcome.eval_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(row["pid"] for row in results) == sorted(answers)
    assert [row["status"] for row in results if row["status"] == "failed"] == []
    assert all(row["correct"] is True for row in results)
    assert outcome.summary.complete
    assert 1 <= refused <= concurrency
    manifest = json.loads((outcome.eval_dir / "manifest.json").read_text())
    assert manifest["replicas_served"] == {
        "openai": {failing.base_url: 0, **{url: received[url] for url in urls[1:]}}
    }
