"""The Files and Batches endpoints of an OpenAI-compatible service, as the Batch API documents
them: a JSONL input file uploaded (`POST /files`, purpose `batch`), a batch created on it
(`POST /batches`, endpoint the chat completions', window 24h), looked at (`GET /batches/{id}`;
validating → in_progress → finalizing → completed, or failed, expired, cancelling → cancelled,
with its `request_counts`), found again by its input file (`GET /batches`, paged), and its output
and error files read (`GET /files/{id}/content`, one JSON line per request: `custom_id`,
`response` {status_code, request_id, body} or `error` {code, message}).

Azure OpenAI's resource endpoints have them under `/openai/` with the `api-version` query, name
the deployment in each line's body and the chat path without `/v1`; its v1 API (`.../openai/v1`)
and gateways that implement `/v1/batches` (LiteLLM's proxy) are addressed as OpenAI is.

Everything read is untrusted: bounded, shape-checked, made valid text (`BatchState`,
`read_answers`). The transport failures worth another try (a connection, 408/409/429, 5xx) are
tried again with backoff, a bounded number of times; a refused key is fatal."""

from __future__ import annotations

import json
import logging
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from maps_autogen._util import (
    ConfigError,
    FatalServiceError,
    LineTooLong,
    RunInterrupted,
    ServiceError,
    capped_lines,
    mask_url_userinfo,
    read_capped,
    redact,
    utf8_chunks,
    valid_text,
    valid_tree,
)
from maps_autogen.model._service_answers import (
    ERROR_SHOWN_CHARS,
    backoff_delay,
    error_detail,
    retry_after_seconds,
    retryable_status,
)
from maps_autogen.records import SERVICE_STATUSES, BatchAnswer, BatchCounts, ServiceStatus
from maps_autogen.settings import ResolvedModel

logger = logging.getLogger(__name__)

COMPLETION_WINDOW = "24h"  # the only window the Batch API offers
ID_CHARS = 256  # the longest id (of a file, a batch, a request) we keep
STATE_BYTES = 1 << 20  # a batch object, or a page of them, is small
LIST_PAGES = 20  # pages of the batch list looked through for a batch of a given input file
ERRORS_KEPT = 20  # of a failed batch's errors


class Unreachable(FatalServiceError):
    """The batch API could not be reached (after the retries): fatal to a call about to be sent,
    not to a batch already at the service (it runs on; it is looked at again later)."""


@dataclass(frozen=True)
class BatchState:
    """A batch as the service last described it (read from untrusted JSON)."""

    id: str
    status: ServiceStatus
    input_file_id: str | None
    output_file_id: str | None
    error_file_id: str | None
    counts: BatchCounts | None
    errors: tuple[tuple[str, str, int | None], ...]  # a failed batch's (code, message, input line)


def _text(value: Any, limit: int = ID_CHARS) -> str | None:
    return valid_text(value[:limit]) if isinstance(value, str) and value else None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9 else 0


def batch_state(data: Any) -> BatchState:
    """A batch object's fields we use, checked: a reply that is no batch object (no id, or a
    status the Batch API does not have) is a ServiceError naming what it lacked."""
    if not isinstance(data, dict) or _text(data.get("id")) is None:
        raise ServiceError("the batch API answered with something that is not a batch object (no id)",
                           fix="check that the endpoint implements the OpenAI Batch API")
    status = data.get("status")
    if status not in SERVICE_STATUSES:
        shown = valid_text(str(status)[:40])
        raise ServiceError(f"the batch API gave batch {_text(data['id'])} the status {shown!r}, which the Batch API "
                           "does not have", fix="check that the endpoint implements the OpenAI Batch API")
    counts = data.get("request_counts")
    errors: list[tuple[str, str, int | None]] = []
    listed = data.get("errors")
    entries = listed.get("data") if isinstance(listed, dict) else None
    for entry in entries[:ERRORS_KEPT] if isinstance(entries, list) else []:
        if isinstance(entry, dict):
            line = entry.get("line")
            errors.append((_text(entry.get("code"), 80) or "", _text(entry.get("message"), ERROR_SHOWN_CHARS) or "",
                           line if isinstance(line, int) and not isinstance(line, bool) else None))
    return BatchState(
        id=_text(data["id"]) or "", status=status, input_file_id=_text(data.get("input_file_id")),
        output_file_id=_text(data.get("output_file_id")), error_file_id=_text(data.get("error_file_id")),
        counts=BatchCounts(total=_count(counts.get("total")), completed=_count(counts.get("completed")),
                           failed=_count(counts.get("failed"))) if isinstance(counts, dict) else None,
        errors=tuple(errors))


def answer_of(data: Any) -> BatchAnswer | None:
    """One line of an output or error file as its answer; None when it names no request."""
    if not isinstance(data, dict):
        return None
    custom_id = _text(data.get("custom_id"))
    if custom_id is None:
        return None
    response, error = data.get("response"), data.get("error")
    answer = BatchAnswer(custom_id=custom_id)
    if isinstance(response, dict):
        status = response.get("status_code")
        answer = answer.model_copy(update={
            "status_code": status if isinstance(status, int) and not isinstance(status, bool) else None,
            "body": valid_tree(response.get("body")), "request_id": _text(response.get("request_id"))})
    if isinstance(error, dict):
        answer = answer.model_copy(update={"error_code": _text(error.get("code"), 80) or "",
                                           "error_message": _text(error.get("message"), ERROR_SHOWN_CHARS) or ""})
    return answer


class BatchService:
    """The batch API of the service behind one endpoint (its base URL, key, headers, query)."""

    def __init__(self, model: ResolvedModel, http: httpx.Client, cancel: Any, *, extra_headers: dict[str, str]):
        self.model = model
        self._http = http
        self._cancel = cancel
        base = (model.base_url or "").rstrip("/")
        self.azure = model.api_type == "azure"
        # Azure's resource endpoint keeps files and batches under /openai/, with the api-version.
        self._root = f"{base}/openai" if self.azure and not base.endswith("/openai/v1") else base
        self._query = dict(model.query)
        if self.azure and model.api_version and not base.endswith("/openai/v1"):
            self._query["api-version"] = model.api_version
        self._headers = {**model.request_headers(), **extra_headers}
        self.shown = mask_url_userinfo(base)  # how messages name the service
        # What each line of an input file names: Azure's chat path has no /v1.
        self.line_url = "/chat/completions" if self.azure else "/v1/chat/completions"

    def _url(self, path: str, **params: str) -> str:
        query = {**self._query, **params}
        return f"{self._root}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")

    def line_model(self) -> str:
        """The model each line's body names: the deployment, on Azure (its batch deployment)."""
        return (self.model.azure_deployment or self.model.model) if self.azure else self.model.model

    # ----- the endpoints ------------------------------------------------------------------
    def probe(self) -> None:
        """Whether the service has a batch API, before any call: a 404 is one line naming the
        endpoint (exit 2); a refused key is fatal."""
        response = self._send("GET", self._url("/batches", limit="1"), what="list batches", probe=True)
        self._json(response, "the batch list")

    def upload(self, data: bytes, name: str) -> str:
        """Upload one batch input file; its id."""
        response = self._send("POST", self._url("/files"), what="upload a batch input file",
                              files={"file": (name, data, "application/jsonl")}, data={"purpose": "batch"})
        body = self._json(response, "the uploaded file")
        file_id = _text(body.get("id")) if isinstance(body, dict) else None
        if file_id is None:
            raise ServiceError(f"the batch API at {self.shown} answered an upload without a file id",
                               fix="check that the endpoint implements the OpenAI Files API")
        return file_id

    def create(self, input_file_id: str, metadata: dict[str, str]) -> BatchState:
        """Create a batch on an uploaded input file."""
        endpoint = self.line_url
        response = self._send("POST", self._url("/batches"), what="create a batch",
                              json={"input_file_id": input_file_id, "endpoint": endpoint,
                                    "completion_window": COMPLETION_WINDOW, "metadata": metadata})
        return batch_state(self._json(response, "the created batch"))

    def retrieve(self, batch_id: str) -> BatchState:
        """The batch as the service describes it now."""
        quoted = urllib.parse.quote(batch_id, safe="")
        return batch_state(self._json(self._send("GET", self._url(f"/batches/{quoted}"), what="look at a batch"),
                                      f"batch {batch_id}"))

    def find(self, input_file_id: str) -> BatchState | None:
        """The batch created on `input_file_id`, if the service lists one (a run stopped
        between creating it and writing its id down): the newest batches, page by page."""
        after: str | None = None
        for _ in range(LIST_PAGES):
            params = {"limit": "100", **({"after": after} if after else {})}
            page = self._json(self._send("GET", self._url("/batches", **params), what="list batches"), "the batch list")
            entries = page.get("data") if isinstance(page, dict) else None
            if not isinstance(entries, list) or not entries:
                return None
            for entry in entries:
                if isinstance(entry, dict) and entry.get("input_file_id") == input_file_id:
                    return batch_state(entry)
            last = entries[-1].get("id") if isinstance(entries[-1], dict) else None
            if not (isinstance(page, dict) and page.get("has_more")) or not isinstance(last, str):
                return None
            after = last
        return None

    def answers(self, file_id: str, line_bytes: int) -> Iterator[BatchAnswer]:
        """The answers in an output or error file, read line by line (each line bounded by
        `line_bytes`; a line that is no answer is skipped and said once)."""
        quoted = urllib.parse.quote(file_id, safe="")
        skipped = 0
        with self._stream("GET", self._url(f"/files/{quoted}/content"), what="read a batch's results") as response:
            lines = capped_lines(utf8_chunks(response.iter_bytes()), line_bytes)
            while True:
                try:
                    line = next(lines, None)
                except LineTooLong as error:
                    raise ServiceError(f"the batch results of file {file_id} at {self.shown} have {error}",
                                       fix="raise limits.reply_bytes in agents.yaml if such replies are expected") \
                        from None
                except httpx.HTTPError as error:
                    raise ServiceError(f"reading the batch results of file {file_id} at {self.shown} failed: "
                                       f"{error.__class__.__name__}", fix="check that the service is up; "
                                       "--resume reads them again") from None
                if line is None:
                    break
                if not line.strip():
                    continue
                try:
                    answer = answer_of(json.loads(line))
                except (ValueError, RecursionError):
                    answer = None
                if answer is None:
                    skipped += 1
                    continue
                yield answer
        if skipped:
            logger.warning("%d line(s) of the batch results file %s at %s were not answers and were skipped",
                           skipped, file_id, self.shown)

    # ----- transport ----------------------------------------------------------------------
    def _send(self, method: str, url: str, *, what: str, probe: bool = False, stream: bool = False,
              **request: Any) -> httpx.Response:
        """One request, tried again on transport failures and "not now" statuses (bounded);
        `stream`: its body is left unread (the caller closes it)."""
        attempt = 0
        while True:
            attempt += 1
            if self._cancel.is_set():
                raise RunInterrupted("the run was interrupted")
            retry_after: float | None = None
            try:
                response = self._http.send(self._http.build_request(method, url, headers=self._headers, **request),
                                           stream=stream)
            except (httpx.TimeoutException, httpx.TransportError) as error:
                failure = f"cannot reach the batch API at {self.shown} to {what} ({error.__class__.__name__})"
                if attempt > self.model.max_retries:
                    raise Unreachable(failure, fix="check that the service is up; --resume carries on") from None
            else:
                if response.status_code < 300:
                    return response
                try:
                    if not retryable_status(response.status_code) or attempt > self.model.max_retries:
                        raise self._refused(response, what, probe)
                    retry_after = retry_after_seconds(response)
                finally:
                    response.close()
                failure = f"the batch API at {self.shown} answered HTTP {response.status_code} to {what}"
            delay = backoff_delay(attempt, retry_after)
            logger.warning("%s; retry %d in %.1fs", redact(failure), attempt, delay)
            if self._cancel.wait(delay):
                raise RunInterrupted("the run was interrupted")

    def _stream(self, method: str, url: str, *, what: str) -> _Opened:
        """A streamed GET (a results file, read line by line), its status checked as `_send` does."""
        return _Opened(self._send(method, url, what=what, stream=True))

    def _refused(self, response: httpx.Response, what: str, probe: bool) -> Exception:
        status = response.status_code
        detail = redact(error_detail(response))[:ERROR_SHOWN_CHARS]
        said = f"HTTP {status}" + (f": {detail}" if detail else "")
        where = f"endpoint '{self.model.endpoint_name}' ({self.shown})"
        if status in (401, 403):
            return FatalServiceError(f"the batch API at {self.shown} refused the API key ({said})", cause=said,
                                     fix=f"check the key in the api_key_env variable of {where} and its permissions")
        if probe and status in (404, 405):
            path = "/openai/batches" if self._root.endswith("/openai") else "/batches"
            return ConfigError(f"{where} has no batch API: GET {path} answered {said}",
                               fix="drop --batch, or point the endpoint at a service that implements the OpenAI "
                                   "Batch API (OpenAI, Azure OpenAI, a LiteLLM proxy; docs/batch.md)")
        return ServiceError(f"the batch API at {self.shown} refused to {what}: {said}", cause=said,
                            fix=f"check the settings of {where} in agents.yaml (docs/batch.md)")

    def _json(self, response: httpx.Response, what: str) -> Any:
        raw = read_capped(response.iter_bytes(), STATE_BYTES)
        if raw is None:
            raise ServiceError(f"the batch API at {self.shown} sent {what} over {STATE_BYTES:,} bytes",
                               fix="check that the endpoint implements the OpenAI Batch API")
        try:
            return valid_tree(json.loads(raw))
        except (ValueError, RecursionError):
            raise ServiceError(f"the batch API at {self.shown} sent {what} that is not JSON",
                               fix="check that the endpoint implements the OpenAI Batch API") from None


class _Opened:
    """A response used as a context manager (closed at the end)."""

    def __init__(self, response: httpx.Response):
        self.response = response

    def __enter__(self) -> httpx.Response:
        return self.response

    def __exit__(self, *exc: Any) -> None:
        self.response.close()
