"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions API with scripted
replies, and records every request it receives (headers and JSON body)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Reply:
    """What the server answers to one request."""

    content: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    raw_body: bytes | None = None  # sent as-is (e.g. malformed JSON)
    usage: bool = True
    finish_reason: str = "stop"
    model: str | None = None  # the model name the reply claims (default: the one requested)
    cut_after: int | None = None  # stream only this many pieces, then end cleanly with no finish reason or [DONE]
    trickle_s: float = 0.0  # pause between pieces (streamed) or body bytes (not streamed)
    # A streamed reply as raw bytes, each item written (and flushed) as its own HTTP chunk: the
    # exact bytes a server sends, e.g. a character's UTF-8 bytes split across two chunks.
    stream_bytes: list[bytes] | None = None
    # After stream_bytes, this chunk again and again (every repeat_s) until the client hangs up:
    # a stream that never ends (keep-alives, role-only or empty deltas, endless content).
    repeat: bytes | None = None
    repeat_s: float = 0.0
    usage_body: Any = None  # the reply's `usage` as given (e.g. impossible counts), instead of a computed one


@dataclass
class Received:
    headers: dict[str, str]
    body: dict[str, Any]
    at: float
    method: str = "POST"
    path: str = ""  # the request's path and query, as sent

    @property
    def query(self) -> dict[str, str]:
        """The request's query parameters."""
        from urllib.parse import parse_qsl, urlsplit

        return dict(parse_qsl(urlsplit(self.path).query, keep_blank_values=True))

    @property
    def role(self) -> str | None:
        return self.headers.get("x-maps-role")

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", [])

    def user_text(self) -> str:
        """The text of the user message(s), image parts left out."""
        texts = []
        for message in self.messages:
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
            else:
                texts.extend(part.get("text", "") for part in content if part.get("type") == "text")
        return "\n".join(texts)

    def image_urls(self) -> list[str]:
        urls = []
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, list):
                urls.extend(part["image_url"]["url"] for part in content if part.get("type") == "image_url")
        return urls


Script = Callable[[Received], Reply]


class RoleScript:
    """Replies per role (from the X-Maps-Role header), in order; the last one repeats."""

    def __init__(self, replies: dict[str, list[Reply | str]], default: str = "ok"):
        self._replies = {role: [r if isinstance(r, Reply) else Reply(r) for r in items] for role, items in replies.items()}
        self._default = default
        self._lock = threading.Lock()

    def __call__(self, request: Received) -> Reply:
        with self._lock:
            queue = self._replies.get(request.role or "", [])
            if not queue:
                return Reply(self._default)
            return queue.pop(0) if len(queue) > 1 else queue[0]


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    prompt_tokens = len(json.dumps(body.get("messages", []))) // 4
    completion_tokens = max(1, len(reply.content) // 4)
    cap = body.get("max_completion_tokens") or body.get("max_tokens")
    if reply.finish_reason == "length" and isinstance(cap, int):
        completion_tokens = cap  # a reply cut at its cap wrote exactly that many tokens, as real servers report
    result: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model or body.get("model", "fake-model"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content}, "finish_reason": reply.finish_reason}],
    }
    if reply.usage_body is not None:
        result["usage"] = reply.usage_body
    elif reply.usage:
        result["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}
    return result


class _Server(ThreadingHTTPServer):
    # Many concurrent clients connect at once in the eval and throughput runs.
    request_queue_size = 512
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A handler's exception (a client that hung up mid-reply, as a cancelled stream does) is
        kept in `handler_errors`, not printed: the `maps` command runs in this process and its
        stderr, which tests read, would otherwise catch this thread's traceback."""
        import sys
        import traceback

        self.handler_errors.append("".join(traceback.format_exception(*sys.exc_info())))

    handler_errors: list[str]

    def server_activate(self) -> None:
        self.handler_errors = []
        super().server_activate()


class FakeOpenAI:
    """Start with `with FakeOpenAI(script) as server:`; `server.base_url` ends in /v1."""

    def __init__(self, script: Script | None = None, port: int = 0, batches: Any = None, *,
                 models: list[dict[str, Any]] | None = None, props: dict[str, Any] | None = None):
        self.script: Script = script or (lambda request: Reply("ok"))
        # The Files and Batches endpoints (tests/helpers/fake_batches.py's FakeBatches); None: 404, as a
        # server without a batch API answers.
        self.batches = batches
        if batches is not None:
            batches.server = self
        self.received: list[Received] = []
        # What `maps` asks before its first call (an X-Maps-Probe header: a server's context) is
        # kept apart from `received`, which holds the calls. `models`: the entries GET /models
        # lists (vLLM's and llama.cpp's shapes tell the context); `props`: llama.cpp's GET /props.
        self.probes: list[Received] = []
        models_body = {"object": "list", "data": models if models is not None else [{"id": "fake-model", "object": "model"}]}
        self.stopping = threading.Event()  # set on exit: endless replies end
        self.healthy: Callable[[], bool] = lambda: True  # what GET /health answers (200, or 503 while False)
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes; without this, Nagle's algorithm and
            # delayed ACKs add ~40 ms to every reply.
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                if outer.batches is not None and outer.batches.handles(self, "GET"):
                    return
                # GET /models answers as OpenAI-compatible servers do (a replica pool's health probe).
                request = Received({k.lower(): v for k, v in self.headers.items()}, {}, time.time(), "GET", self.path)
                with outer._lock:
                    (outer.probes if "x-maps-probe" in request.headers else outer.received).append(request)
                if self.path.split("?", 1)[0].rstrip("/") == "/health":  # vLLM's health check, at the root
                    self._send(200 if outer.healthy() else 503, b"", {})
                elif self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps(models_body).encode(), {})
                elif self.path.rstrip("/").endswith("/props") and props is not None:
                    self._send(200, json.dumps(props).encode(), {})
                else:
                    self._send(404, b'{"error": {"message": "not found"}}', {})

            def do_POST(self) -> None:
                if outer.batches is not None and outer.batches.handles(self, "POST"):
                    return
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                request = Received({k.lower(): v for k, v in self.headers.items()}, body, time.time(), path=self.path)
                with outer._lock:
                    outer.received.append(request)
                if not self.path.split("?", 1)[0].rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}', {})
                    return
                reply = outer.script(request)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.raw_body is not None:
                    self._send(reply.status, reply.raw_body, reply.headers)
                elif reply.status != 200:
                    payload = json.dumps({"error": {"message": reply.content or "scripted failure", "type": "fake"}}).encode()
                    self._send(reply.status, payload, reply.headers)
                elif body.get("stream") and (reply.stream_bytes is not None or reply.repeat is not None):
                    self._stream_raw(reply.stream_bytes or [], reply.repeat, reply.repeat_s)
                elif body.get("stream"):
                    self._stream(body, reply)
                else:
                    self._send(200, json.dumps(_completion(body, reply)).encode(), reply.headers, trickle_s=reply.trickle_s)

            def _send(self, status: int, payload: bytes, headers: dict[str, str], trickle_s: float = 0.0) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    if not trickle_s:
                        self.wfile.write(payload)
                        return
                    for start in range(0, len(payload), 16):  # a slow service: a few bytes at a time
                        self.wfile.write(payload[start : start + 16])
                        self.wfile.flush()
                        time.sleep(trickle_s)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _stream_raw(self, chunks: list[bytes], repeat: bytes | None = None, repeat_s: float = 0.0) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for chunk in chunks:
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                        self.wfile.flush()
                    while repeat is not None and not outer.stopping.is_set():  # until the client hangs up
                        self.wfile.write(f"{len(repeat):x}\r\n".encode() + repeat + b"\r\n")
                        self.wfile.flush()
                        outer.stopping.wait(repeat_s)
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _stream(self, body: dict[str, Any], reply: Reply) -> None:
                full = _completion(body, reply)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                words = [reply.content[i : i + 8] for i in range(0, len(reply.content), 8)] or [""]

                def event(data: dict[str, Any] | str) -> None:
                    text = data if isinstance(data, str) else json.dumps(data)
                    chunk = f"data: {text}\n\n".encode()
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")

                base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": full["created"], "model": full["model"]}
                try:
                    for number, piece in enumerate(words):
                        if reply.cut_after is not None and number >= reply.cut_after:
                            self.wfile.write(b"0\r\n\r\n")  # a clean end of the body, mid-reply
                            return
                        event({**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
                        if reply.trickle_s:
                            self.wfile.flush()
                            time.sleep(reply.trickle_s)
                    event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]})
                    if reply.usage and (body.get("stream_options") or {}).get("include_usage"):
                        event({**base, "choices": [], "usage": full["usage"]})
                    event("[DONE]")
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = _Server(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def roles(self) -> list[str | None]:
        with self._lock:
            return [request.role for request in self.received]

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "servers"


def recorded(name: str) -> Reply:
    """A service's reply kept in tests/fixtures/servers/NAME.json, replayed with its status, its
    headers and its exact body (a streamed one, `"stream": true`, as one HTTP chunk per event).
    Recorded from a real server by `python -m tests.helpers.real_servers`, or written from the shape
    the service's documentation or source gives (its `source` says which)."""
    kept = json.loads((FIXTURES / f"{name}.json").read_text())
    body = kept["body"].encode()
    if kept.get("stream"):
        events = [event + b"\n\n" for event in body.split(b"\n\n") if event]
        return Reply(stream_bytes=events)
    return Reply(status=kept["status"], raw_body=body, headers=dict(kept.get("headers", {})))
