"""Shared by the tests of tests/report/test_view_server.py and others: EventStream, get, index_rows, live_feed_url."""

from __future__ import annotations

import http.client
import json
import queue
import re
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from tests.helpers.chromium import Chromium, chromium  # noqa: F401 - chromium is a fixture

WAIT_S = 120  # generous bound for a loaded machine; nothing here asserts on time


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: str


def get(url: str, raw_path: str | None = None) -> Response:
    """GET `url`, or `raw_path` on its host exactly as written (no client-side normalising of ../)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request("GET", raw_path if raw_path is not None else parts.path + (f"?{parts.query}" if parts.query else ""))
        response = connection.getresponse()
        return Response(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode("utf-8", "replace"))
    finally:
        connection.close()


class EventStream:
    """A server-sent-events client on a background thread: `next(name)` waits for an event."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        self._connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=WAIT_S)
        self._connection.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers={"Accept": "text/event-stream"})
        self.response = self._connection.getresponse()
        assert self.response.status == 200 and self.response.getheader("Content-Type") == "text/event-stream"
        self.events: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
        self.received: list[tuple[str, dict[str, Any]]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        name, data = "message", ""
        try:
            for raw in self.response:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    data += line[6:]
                elif line == "" and data:
                    self.events.put((name, json.loads(data)))
                    name, data = "message", ""
        except (OSError, ValueError):
            pass

    def until(self, name: str, contains: str) -> str:
        """The markup of the first `name` event, received so far or later, holding `contains`."""
        deadline = time.monotonic() + WAIT_S
        while True:
            for event, data in self.received:
                if event == name and contains in data.get("html", ""):
                    return data.get("html", "")
            try:
                self.received.append(self.events.get(timeout=max(0.1, deadline - time.monotonic())))
            except queue.Empty:
                seen = [(event, data.get("html", "")[:200]) for event, data in self.received]
                raise AssertionError(f"no {name} event with {contains!r}; saw {seen}") from None

    def close(self) -> None:
        self._connection.close()


def live_feed_url(page_url: str, page_html: str) -> str:
    found = re.search(r'data-live="([^"]+)"', page_html)
    assert found, "the served page has no live feed"
    return urljoin(page_url, found.group(1).replace("&amp;", "&"))


def index_rows(page_html: str) -> dict[str, str]:
    """pid -> verdict of each row of an index page."""
    rows = re.findall(r'<tr data-key="[^"]*" data-verdict="([^"]*)".*?<a href="[^"]*">([^<]*)</a>', page_html)
    return {pid: verdict for verdict, pid in rows}
