"""A headless Chromium driven over the DevTools protocol on a pipe, for the viewer's browser
tests and perf/viewer_load.py (no driver download, no websocket library)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.real_servers import bound_popen, stop_bound

BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--remote-debugging-pipe", "--window-size=1280,900"]

# Installed before any of the page's code: records CSP violations and alerts without touching the page.
WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", function (e) { window.__violations.push(e.violatedDirective); });
window.alert = window.confirm = window.prompt = function () { window.__pwned = "dialog"; };
"""


def find_chromium() -> str | None:
    for name in (os.environ.get("MAPS_CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class Chromium:
    """A headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
    Chromium reads commands on fd 3 and answers on fd 4, each message a NUL-terminated JSON
    object), so no port, no websocket library and no driver download."""

    def __init__(self, binary: str, profile: Path):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire_pipes() -> None:  # in the child: the pipe ends become fds 3 and 4, inheritable
            read_end, write_end = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self._log = open(profile.parent / "chromium.log", "wb")  # closed in close(); Chromium is chatty on stderr
        # Bound to this process (tests/helpers/real_servers.py): a killed test run leaves no browser behind.
        self.process = bound_popen(
            [binary, *BROWSER_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=wire_pipes, close_fds=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        while chunk := os.read(self._from_browser, 1 << 16):
            buffer += chunk
            *complete, buffer = buffer.split(b"\0")
            for message in complete:
                self._messages.put(json.loads(message))
        self._messages.put(None)

    def _next_message(self, deadline: float) -> dict[str, Any]:
        message = self._messages.get(timeout=max(0.1, deadline - time.monotonic()))
        if message is None:
            raise RuntimeError("Chromium closed the DevTools pipe")
        return message

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None, timeout: float = 30) -> dict[str, Any]:
        self._next_id += 1
        command: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            command["sessionId"] = session
        os.write(self._to_browser, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            message = self._next_message(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]
            self.events.append(message)

    def wait_for(self, method: str, session: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events:
                if event.get("method") == method and event.get("sessionId") == session:
                    self.events.remove(event)
                    return event
            self.events.append(self._next_message(deadline))

    def open(self, page: Path | str) -> Tab:
        """A new tab showing `page` (a file, or a URL), once its load event fired."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.call(f"{domain}.enable", session=session)
        self.call("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH}, session=session)
        self.call("Page.navigate", {"url": page if isinstance(page, str) else page.resolve().as_uri()}, session=session)
        self.wait_for("Page.loadEventFired", session)
        return Tab(self, session)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, queue.Empty, OSError):  # it may be gone already
            self.call("Browser.close", timeout=10)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            stop_bound(self.process)
        os.close(self._to_browser)
        self._log.close()


@dataclass
class Tab:
    browser: Chromium
    session: str

    def js(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able values only)."""
        result = self.browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, session=self.session)
        if "exceptionDetails" in result:
            raise AssertionError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        size = self.browser.call("Page.getLayoutMetrics", session=self.session)["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 12000), "scale": 1}
        shot = self.browser.call("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True}, session=self.session)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def page_events(self, method: str) -> list[dict[str, Any]]:
        return [event for event in self.browser.events if event.get("method") == method and event.get("sessionId") == self.session]

    def console_errors(self) -> list[str]:
        """Errors the page reported: uncaught exceptions, console.error, and browser log errors
        (a blocked resource, a CSP violation)."""
        errors = [str(event["params"]["exceptionDetails"]) for event in self.page_events("Runtime.exceptionThrown")]
        errors += [str(event["params"]["args"]) for event in self.page_events("Runtime.consoleAPICalled") if event["params"]["type"] in ("error", "assert")]
        errors += [f'{event["params"]["entry"]["text"]} {event["params"]["entry"].get("url", "")}' for event in self.page_events("Log.entryAdded") if event["params"]["entry"]["level"] == "error"]
        return errors


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    """One browser per test module. Without Chromium the browser tests skip on a workstation
    and fail in CI (CI=true), where scripts/setup_browser.sh has installed it."""
    binary = find_chromium()
    if binary is None:
        reason = "no Chromium binary found (install it with scripts/setup_browser.sh, or set MAPS_CHROMIUM)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    browser = Chromium(binary, tmp_path_factory.mktemp("chromium") / "profile")
    try:
        yield browser
    finally:
        browser.close()
