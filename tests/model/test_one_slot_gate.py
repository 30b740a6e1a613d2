"""A server that answers one request at a time (maps' local one: one slot) is passed one request
at a time, and the wait for it is counted apart (`Completion.waited_s`) from the call's own time:
an eval's per-problem seconds leave out the time its calls waited for other problems' (the eval's
results row says `waited_seconds`). Waits on events, never on sleeps."""

from __future__ import annotations

import threading
import time

from maps_autogen.model._client import ChatBackend
from maps_autogen.model._completion import Completion
from maps_autogen.settings._endpoints import ResolvedModel
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply


def test_a_one_slot_server_gets_one_request_at_a_time_and_the_wait_is_counted_apart() -> None:
    first_arrived, release = threading.Event(), threading.Event()
    in_flight, most = [0], [0]
    lock = threading.Lock()

    def script(request: Received) -> Reply:
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        if request.role == "first":
            first_arrived.set()
            release.wait(30)
        with lock:
            in_flight[0] -= 1
        return Reply("ok")

    with FakeOpenAI(script) as server:
        model = ResolvedModel(endpoint_name="local", kind="local", model="m", base_url=server.base_url, timeout_s=30,
                              max_retries=0, json_mode="none", stream=False, temperature=0, max_tokens=16)
        gate = threading.Semaphore(1)
        backend = ChatBackend(model, gate=gate)
        entered = threading.Event()
        original = backend._pass_gate

        def spied() -> float:
            entered.set()
            return original()

        done: dict[str, Completion] = {}
        first = threading.Thread(target=lambda: done.update(first=backend.complete([], role="first")))
        first.start()
        assert first_arrived.wait(30)  # the first request holds the slot
        backend._pass_gate = spied  # type: ignore[method-assign]
        began = time.monotonic()
        second = threading.Thread(target=lambda: done.update(second=backend.complete([], role="second")))
        second.start()
        assert entered.wait(30)  # the second waits at the gate, its request not sent
        assert [request.role for request in server.received] == ["first"]
        release.set()
        first.join(30)
        second.join(30)
        whole = time.monotonic() - began
    assert most[0] == 1  # never two requests at once
    assert done["first"].waited_s == 0.0 and done["second"].waited_s > 0
    # the second call's own time leaves its wait out: together they are its whole time
    assert done["second"].seconds + done["second"].waited_s <= whole
    assert done["second"].seconds < whole - done["second"].waited_s + 0.5


def test_without_a_gate_nothing_waits() -> None:
    with FakeOpenAI() as server:
        model = ResolvedModel(endpoint_name="openai", kind="openai", model="m", base_url=server.base_url, timeout_s=30,
                              max_retries=0, json_mode="none", stream=False, temperature=0, max_tokens=16)
        assert ChatBackend(model).complete([], role="x").waited_s == 0.0
