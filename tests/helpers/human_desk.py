"""Driving a paused chat's `HumanDesk` from a test, as the chat and the live page do: `Said`
(the desk's standard error, waited on), `Asked` (a pause asked on a thread, as the chat asks it)
and `post` (an answer to the viewer's /human, as the page sends it)."""

from __future__ import annotations

import http.client
import io
import json
import queue
import threading
from typing import Any
from urllib.parse import urlsplit

from maps_autogen.orchestration._human import HumanDecision, HumanState
from maps_autogen.orchestration._human_desk import HumanDesk

WAIT_S = 120  # a bound for a loaded machine; nothing asserts on time


class Said(io.StringIO):
    """The desk's standard error: `until(text)` waits for it to be written."""

    def __init__(self) -> None:
        super().__init__()
        self._written = threading.Condition()

    def write(self, text: str) -> int:
        with self._written:
            count = super().write(text)
            self._written.notify_all()
            return count

    def until(self, text: str) -> str:
        with self._written:
            assert self._written.wait_for(lambda: text in self.getvalue(), timeout=WAIT_S), self.getvalue()
            return self.getvalue()


class Asked:
    """`desk.ask(state)` on a thread, as the chat calls it; `result()` waits for the decision."""

    def __init__(self, desk: HumanDesk, state: HumanState):
        self._done: queue.Queue[HumanDecision] = queue.Queue()
        threading.Thread(target=lambda: self._done.put(desk.ask(state)), daemon=True).start()

    def result(self) -> HumanDecision:
        return self._done.get(timeout=WAIT_S)


def post(url: str, body: bytes, *, content_type: str = "application/json", length: str | None = None,
         origin: str | None = None) -> tuple[int, dict[str, Any] | str]:
    """POST `body` to `url` (with `length` as its Content-Length, when given, and an Origin
    header, when given): the status and the reply (parsed when it is JSON)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=WAIT_S)
    try:
        connection.putrequest("POST", parts.path)
        connection.putheader("Content-Type", content_type)
        connection.putheader("Content-Length", length if length is not None else str(len(body)))
        if origin is not None:
            connection.putheader("Origin", origin)
        connection.endheaders(body)
        response = connection.getresponse()
        data = response.read().decode()
        return response.status, json.loads(data) if response.getheader("Content-Type") == "application/json" else data
    finally:
        connection.close()
