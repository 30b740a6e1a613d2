"""The OpenAI Files and Batches endpoints on the scripted server (tests/helpers/fake_openai.py),
as the Batch API documents them: `POST /v1/files` (multipart, purpose `batch`), `POST /v1/batches`
(endpoint, completion_window 24h, metadata), `GET /v1/batches/{id}` (validating → in_progress →
finalizing → completed, or failed, expired, cancelling → cancelled, with `request_counts`),
`GET /v1/batches` (newest first, `after`, `has_more`), `POST /v1/batches/{id}/cancel` and
`GET /v1/files/{id}/content` (the output and error files: one line per request, `custom_id`,
`response` {status_code, request_id, body} or `error` {code, message}).

Each batch's lines are answered by the server's own script, as the same request sent live would
be (its role from the custom id, as live requests carry it in a header), when the batch ends.
How each batch moves is its `BatchPlan` (taken in creation order): the statuses each look at it
shows, where it ends, how many of its lines it ran before an early end, and an event it waits on
at its last status (the tests that kill a run while it waits, then resume it)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from tests.helpers.fake_openai import Received, Reply, _completion

if TYPE_CHECKING:
    from http.server import BaseHTTPRequestHandler

    from tests.helpers.fake_openai import FakeOpenAI

EXPIRED = {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}
CANCELLED = {"code": "batch_cancelled", "message": "This request was not executed because the batch was cancelled."}


@dataclass
class BatchPlan:
    """How one batch moves: `states` shown by successive looks before it ends (it stays at the
    last one until `hold` is set, when given), then `end`; an `expired` or `cancelled` batch ran
    its first `ran` lines; a `failed` one has `errors` (its errors.data) and ran none."""

    states: list[str] = field(default_factory=lambda: ["validating", "in_progress", "finalizing"])
    end: str = "completed"
    ran: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    hold: threading.Event | None = None


@dataclass
class FakeBatch:
    id: str
    input_file_id: str
    endpoint: str
    metadata: dict[str, str]
    lines: list[dict[str, Any]]
    plan: BatchPlan
    headers: dict[str, str]
    created_at: int
    looks: int = 0
    status: str = "validating"
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0

    def object(self) -> dict[str, Any]:
        ended = self.status in ("completed", "failed", "expired", "cancelled")
        return {
            "id": self.id, "object": "batch", "endpoint": self.endpoint, "input_file_id": self.input_file_id,
            "completion_window": "24h", "status": self.status, "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id, "created_at": self.created_at, "in_progress_at": self.created_at,
            "expires_at": self.created_at + 86400, "completed_at": self.created_at if self.status == "completed" else None,
            "errors": {"object": "list", "data": self.plan.errors} if self.status == "failed" else None,
            "request_counts": {"total": len(self.lines), "completed": self.completed if ended else 0,
                               "failed": self.failed if ended else 0},
            "metadata": self.metadata,
        }


def role_of(custom_id: str) -> str:
    """The step a custom id of ours names (`<step>-<key>-<n>`)."""
    return custom_id.rsplit("-", 2)[0]


class FakeBatches:
    """The Files and Batches endpoints of one scripted server (`FakeOpenAI(..., batches=...)`);
    `plans` gives each new batch its plan (a list: in order, the last repeating)."""

    def __init__(self, plans: list[BatchPlan] | Callable[[int], BatchPlan] | None = None, *,
                 require_key: str | None = None, hold_create: threading.Event | None = None):
        self.plans = plans or [BatchPlan()]
        self.require_key = require_key
        # Set: each batch creation waits for it (a run killed while its batch is being created).
        self.hold_create = hold_create
        self.creating = 0  # creations waiting on hold_create
        self.fail_looks = 0  # this many of the next looks at a batch answer 503 (the batch API down a while)
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # (method, path and query, headers) of each
        self.files: dict[str, bytes] = {}
        self.purposes: dict[str, str] = {}
        self.batches: dict[str, FakeBatch] = {}
        self.order: list[str] = []  # batch ids, oldest first
        self.lines_run: list[Received] = []  # every line the batches ran, as the request it stands for
        self.changed = threading.Condition()
        self.server: FakeOpenAI | None = None
        self._ids = 0

    # ----- what tests wait on ---------------------------------------------------------------
    def wait_for(self, predicate: Callable[[], bool], timeout: float = 120) -> None:
        with self.changed:
            assert self.changed.wait_for(predicate, timeout), "the scripted batch service never got there"

    def custom_ids(self) -> list[str]:
        """Every custom id the service was sent, in order (a request sent twice shows twice)."""
        with self.changed:
            return [line["custom_id"] for batch_id in self.order for line in self.batches[batch_id].lines]

    def cancel(self, batch_id: str) -> None:
        """Someone cancels the batch (the dashboard, another script)."""
        with self.changed:
            batch = self.batches[batch_id]
            batch.plan = BatchPlan(states=["cancelling"], end="cancelled", ran=batch.plan.ran)
            batch.looks = 0
            batch.status = "cancelling"
            self.changed.notify_all()

    # ----- the endpoints ------------------------------------------------------------------
    def _next_id(self, prefix: str) -> str:
        """An id shaped as OpenAI's are (file-..., batch_...)."""
        self._ids += 1
        return f"{prefix}{'_' if prefix == 'batch' else '-'}{self._ids:05d}"

    def _plan(self, number: int) -> BatchPlan:
        if callable(self.plans):
            return self.plans(number)
        return self.plans[min(number, len(self.plans) - 1)]

    def handles(self, handler: BaseHTTPRequestHandler, method: str) -> bool:
        """Answer the request if it is one of ours (True), else leave it to the chat endpoint."""
        path = urlsplit(handler.path).path.rstrip("/")
        if not re.search(r"/(files|batches)(/|$)", path):
            return False
        with self.changed:
            self.requests.append((method, handler.path, {k.lower(): v for k, v in handler.headers.items()}))
        if self.require_key and handler.headers.get("authorization") != f"Bearer {self.require_key}":
            _send(handler, 401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                           "code": "invalid_api_key"}})
            return True
        query = dict(parse_qsl(urlsplit(handler.path).query))
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if method == "POST" else b""
        if self.hold_create is not None and method == "POST" and path.endswith("/batches"):
            with self.changed:
                self.creating += 1
                self.changed.notify_all()
            self.hold_create.wait(120)
        with self.changed:
            status, payload = self._answer(method, path, query, raw, handler)
            self.changed.notify_all()
        if isinstance(payload, bytes):
            _send_bytes(handler, status, payload)
        else:
            _send(handler, status, payload)
        return True

    def _answer(self, method: str, path: str, query: dict[str, str], raw: bytes,
                handler: BaseHTTPRequestHandler) -> tuple[int, Any]:
        if method == "POST" and path.endswith("/files"):
            fields = _multipart(handler.headers.get("content-type", ""), raw)
            if "file" not in fields or fields.get("purpose") != b"batch":
                return 400, {"error": {"message": "a file with purpose batch is required"}}
            file_id = self._next_id("file")
            self.files[file_id] = fields["file"]
            self.purposes[file_id] = "batch"
            return 200, {"id": file_id, "object": "file", "bytes": len(fields["file"]), "created_at": int(time.time()),
                         "filename": "input.jsonl", "purpose": "batch", "status": "processed"}
        if method == "POST" and path.endswith("/batches"):
            request = json.loads(raw or b"{}")
            file_id = request.get("input_file_id")
            if file_id not in self.files:
                return 404, {"error": {"message": f"No such File object: {file_id}"}}
            if request.get("completion_window") != "24h" or request.get("endpoint") not in (
                    "/v1/chat/completions", "/chat/completions"):
                return 400, {"error": {"message": "endpoint or completion_window not supported"}}
            lines = [json.loads(line) for line in self.files[file_id].decode().splitlines() if line.strip()]
            ids = [line["custom_id"] for line in lines]
            if len(set(ids)) != len(ids):
                return 400, {"error": {"message": "custom_id values must be unique within a batch"}}
            batch = FakeBatch(self._next_id("batch"), file_id, request["endpoint"], request.get("metadata") or {},
                              lines, self._plan(len(self.order)), {k.lower(): v for k, v in handler.headers.items()},
                              int(time.time()))
            self.batches[batch.id] = batch
            self.order.append(batch.id)
            return 200, batch.object()
        match = re.search(r"/batches/([^/]+)(/cancel)?$", path)
        if match and match.group(2) and method == "POST":
            self.cancel(match.group(1))
            return 200, self.batches[match.group(1)].object()
        if match and method == "GET" and self.fail_looks > 0:
            self.fail_looks -= 1
            return 503, {"error": {"message": "The batch API is temporarily unavailable"}}
        if match and method == "GET":
            batch = self.batches.get(match.group(1))
            if batch is None:
                return 404, {"error": {"message": "No such batch"}}
            self._advance(batch)
            return 200, batch.object()
        if method == "GET" and path.endswith("/batches"):
            newest = [self.batches[batch_id] for batch_id in reversed(self.order)]
            if "after" in query:
                at = next((i for i, b in enumerate(newest) if b.id == query["after"]), len(newest))
                newest = newest[at + 1:]
            limit = int(query.get("limit", 20))
            page = newest[:limit]
            return 200, {"object": "list", "data": [b.object() for b in page], "has_more": len(newest) > limit,
                         "first_id": page[0].id if page else None, "last_id": page[-1].id if page else None}
        match = re.search(r"/files/([^/]+)/content$", path)
        if match and method == "GET" and match.group(1) in self.files:
            return 200, self.files[match.group(1)]
        return 404, {"error": {"message": "not found"}}

    def _advance(self, batch: FakeBatch) -> None:
        """One look: the next scripted status, or the end (held at the last status until released)."""
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return
        plan = batch.plan
        if batch.looks < len(plan.states):
            batch.status = plan.states[batch.looks]
            batch.looks += 1
            return
        if plan.hold is not None and not plan.hold.is_set():
            return
        self._end(batch)

    def _end(self, batch: FakeBatch) -> None:
        plan = batch.plan
        batch.status = plan.end
        if plan.end == "failed":
            return
        ran = len(batch.lines) if plan.end == "completed" else plan.ran
        output, errors = [], []
        for number, line in enumerate(batch.lines):
            request_id = f"req_{batch.id}_{number}"
            if number >= ran:
                error = EXPIRED if plan.end == "expired" else CANCELLED
                errors.append({"id": f"batch_req_{number}", "custom_id": line["custom_id"], "response": None,
                               "error": error})
                continue
            status, body = self._run(line, batch)
            entry = {"id": f"batch_req_{number}", "custom_id": line["custom_id"],
                     "response": {"status_code": status, "request_id": request_id, "body": body}, "error": None}
            (output if status == 200 else errors).append(entry)
        batch.completed, batch.failed = len(output), len(errors)
        if output:
            batch.output_file_id = self._next_id("file")
            self.files[batch.output_file_id] = "".join(json.dumps(entry) + "\n" for entry in output).encode()
        if errors:
            batch.error_file_id = self._next_id("file")
            self.files[batch.error_file_id] = "".join(json.dumps(entry) + "\n" for entry in errors).encode()

    def _run(self, line: dict[str, Any], batch: FakeBatch) -> tuple[int, Any]:
        """A line answered as the same request sent live (the role from its custom id)."""
        assert self.server is not None
        headers = {**batch.headers, "x-maps-role": role_of(line["custom_id"])}
        request = Received(headers, line["body"], time.time(), "POST", path=line["url"])
        self.lines_run.append(request)
        reply: Reply = self.server.script(request)
        if reply.raw_body is not None:
            try:
                return reply.status, json.loads(reply.raw_body)
            except ValueError:
                return reply.status, {"error": {"message": reply.raw_body.decode(errors="replace")}}
        if reply.status != 200:
            return reply.status, {"error": {"message": reply.content or "scripted failure", "type": "fake"}}
        return 200, _completion(line["body"], reply)


def _multipart(content_type: str, raw: bytes) -> dict[str, bytes]:
    """The fields of a multipart/form-data body (name → value)."""
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if not match:
        return {}
    fields = {}
    for part in raw.split(b"--" + match.group(1).encode()):
        head, _, value = part.partition(b"\r\n\r\n")
        name = re.search(rb'name="([^"]+)"', head)
        if name:
            fields[name.group(1).decode()] = value.removesuffix(b"\r\n")
    return fields


def _send(handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
    _send_bytes(handler, status, json.dumps(payload).encode(), "application/json")


def _send_bytes(handler: BaseHTTPRequestHandler, status: int, payload: bytes,
                content_type: str = "application/octet-stream") -> None:
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)
    except (BrokenPipeError, ConnectionResetError):
        pass
