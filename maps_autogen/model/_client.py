"""Our OpenAI-compatible HTTP client: transport, retries, `Retry-After`, deadlines, JSON modes,
SSE streaming, usage, and the replica pool hook.

`ChatBackend` is shared by every chat of a process (one HTTP connection pool per endpoint).
It is hand-written on httpx rather than built on the `openai` SDK because it takes about half
the SDK's CPU per call, or less: `perf/client_vs_sdk.py` sends the same requests with both to one
scripted service in its own process and prints each client's CPU per call (the median of 5
interleaved rounds of 300 calls). On the shared 2-core machine, ours against the SDK's: 1.14 vs
2.99 ms for a short text request, 2.38 vs 4.48 ms with a 200 KB image, 0.96 vs 3.19 ms for an
Aligner request (docs/configuration.md: why our own HTTP client).
`maps_autogen.orchestration._ag2_client` plugs it into AG2.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Protocol

import httpx

from maps_autogen._util import (
    DEFAULT_REPLY_BYTES,
    FatalServiceError,
    LineTooLong,
    RunInterrupted,
    ServiceError,
    body_limit,
    cap_reply,
    capped_lines,
    mask_credential_fields,
    mask_url_userinfo,
    may_hold_surrogates,
    read_capped,
    redact,
    utf8_chunks,
    valid_text,
    valid_tree,
)
from maps_autogen.model._cache import ResponseCache, cache_key
from maps_autogen.model._completion import Completion
from maps_autogen.model._context import ServerContext, cut_off_detail, read_server_context
from maps_autogen.model._pool import ReplicaPool, pooled_http_client, request_pacer
from maps_autogen.model._service_answers import (
    CUT_REASONS,
    ERROR_SHOWN_CHARS,
    Rejected,
    Retryable,
    StreamedReply,
    TokenCallback,
    backoff_delay,
    checked_usage,
    error_detail,
    read_completion,
    rejection_error,
    retry_after_seconds,
    retryable_status,
    stream_chunk,
    takes_no_images,
)
from maps_autogen.model._tokens import estimate_usage
from maps_autogen.records import SentSettings
from maps_autogen.settings import ResolvedModel

logger = logging.getLogger(__name__)

JSON_MODE_FALLBACK = {"schema": "object", "object": "none"}
# Checks a complete reply's text: None when it is usable, else why not (e.g. "not valid JSON").
ReplyCheck = Callable[[str], "str | None"]
# The note a retry of an unusable reply carries, from why the reply was refused: the same request
# would bring the same reply back (temperature 0, a seed, a deterministic server).
RetryNote = Callable[[str], str]


@dataclass(frozen=True)
class _Reply:
    """What one request brought back: the text and what the service said about it."""

    text: str
    model: str | None
    usage: Any  # as the service reported it (unchecked)
    finish_reason: str | None
    truncated: bool = False  # a stream stopped at the reply limit


_usage_warned: set[str] = set()  # the services whose unusable usage was told
_clients_lock = threading.Lock()
_clients: dict[tuple[float, int], httpx.Client] = {}


def shared_http_client(timeout_s: float, max_connections: int = 64) -> httpx.Client:
    """One HTTP connection pool per timeout and size per process, shared by every chat."""
    key = (timeout_s, max_connections)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = httpx.Client(
                timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
                limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            )
            _clients[key] = client
        return client


class _Cancelled(Exception):
    """The run was cancelled (Ctrl-C) while this request was in flight."""


def schema_response_format(schema_name: str | None, schema: dict[str, Any]) -> dict[str, Any]:
    """The `response_format` of a request whose reply must follow `schema` (JSON mode `schema`),
    as every request of ours carries it (the Inspect harness's included)."""
    return {"type": "json_schema", "json_schema": {"name": schema_name or "reply", "schema": schema, "strict": True}}


class JsonModeMemo:
    """The JSON mode a model's endpoint accepts, learned once (a rejected mode falls back) and
    shared by every backend that talks to that model, whatever their sampling settings."""

    def __init__(self, mode: str):
        self.mode = mode
        self._lock = threading.Lock()

    def fall_back(self, rejected: str) -> None:
        """The endpoint refused `rejected`: use the next mode, unless a concurrent request has
        already moved on from it (each refusal moves one step, from the mode it sent)."""
        with self._lock:
            if self.mode == rejected:
                self.mode = JSON_MODE_FALLBACK[rejected]


class ModelBackend(Protocol):
    """What a chat needs of the service behind one step: `ChatBackend` (our HTTP client) is one,
    the Inspect harness's backend (maps_autogen/inspect_tasks) another."""

    model: ResolvedModel  # the model as the run records it
    supports_images: bool  # False: requests carry a note in place of each image

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        role: str,
        schema_name: str | None = None,
        schema: dict[str, Any] | None = None,
        on_token: TokenCallback | None = None,
        check: ReplyCheck | None = None,
        retry_note: RetryNote | None = None,
    ) -> Completion:
        """One chat completion of OpenAI-style `messages` for step `role` (see ChatBackend.complete)."""
        ...

    def settings(self) -> SentSettings:
        """The settings every request of this backend carries (model, sampling, format)."""
        ...


class ChatBackend:
    """Makes chat-completion calls to one model, with bounded retries and JSON-mode fallback.

    Requests go straight over a shared httpx pool: the OpenAI-compatible chat API is a single
    POST, and skipping an SDK's typed request transforms keeps the CPU cost per call low when
    dozens of chats run at once.

    A reply counts only when it is complete (a stream ends with a finish reason and `[DONE]`)
    and, when the caller gives a check, passes it; only such replies are cached.
    """

    def __init__(
        self,
        model: ResolvedModel,
        *,
        base_url: str | None = None,
        max_connections: int = 64,
        cache: ResponseCache | None = None,
        health_check: Callable[[], None] | None = None,
        cancel: threading.Event | None = None,
        max_reply_bytes: int = DEFAULT_REPLY_BYTES,
        json_mode: JsonModeMemo | None = None,
        pool: ReplicaPool | None = None,
        gate: threading.Semaphore | None = None,
    ):
        self.model = model
        # A server that answers one request at a time (maps' local one): requests pass it one by
        # one, and the wait for it is counted apart from the call's time (Completion.waited_s).
        self._gate = gate
        self.cache = cache
        self.max_reply_bytes = max_reply_bytes
        # Called when the service cannot be reached: the embedded server raises its own clear
        # error (it died, and why) instead of a generic connection failure.
        self._health_check = health_check
        # Set on Ctrl-C: no new request starts and retries stop waiting.
        self._cancel = cancel or threading.Event()
        self.base_url = base_url or model.base_url
        if not self.base_url:
            raise ValueError(f"endpoint {model.endpoint_name} has no base URL yet")
        self._url = model.chat_url(self.base_url)
        self._shown_url = mask_url_userinfo(self.base_url)  # how messages name the service
        # Several replicas of the model: a pool spreads the requests over them (_pool.py). It is
        # the endpoint's, given when other backends share it (they learn together which
        # replica fails), else this backend's own.
        if len(model.base_urls) > 1 and not base_url:
            self.pool: ReplicaPool | None = pool or ReplicaPool(model.base_urls, cancel=self._cancel)
        else:
            self.pool = None
        if self.pool is not None:
            self._http = pooled_http_client(self.pool, model.timeout_s, max_connections)
        else:
            self._http = shared_http_client(model.timeout_s, max_connections)
        self._headers = model.request_headers()
        # What a run records of the request beyond its body (secrets masked), once.
        self._sent_extra: dict[str, Any] = {}
        if model.shown_headers():
            self._sent_extra["headers"] = model.shown_headers()
        if model.shown_query(self._url):
            self._sent_extra["query"] = model.shown_query(self._url)
        if self._url.split("?", 1)[0] != f"{self.base_url.rstrip('/')}/chat/completions":
            self._sent_extra["url"] = mask_url_userinfo(self._url.split("?", 1)[0])
        self._pacer = (request_pacer(model.endpoint_name, self._url, model.requests_per_s)
                       if model.requests_per_s else None)
        self._json = json_mode or JsonModeMemo(model.json_mode)
        self.supports_images = model.vision  # False: requests carry a note in place of each image

    def _response_format(self, schema_name: str | None, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is None or self._json.mode == "none":
            return None
        if self._json.mode == "object":
            return {"type": "json_object"}
        return schema_response_format(schema_name, schema)

    def request_body(
        self, messages: list[dict[str, Any]], response_format: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The JSON body of a chat request: the one place the sampling settings go on the wire."""
        body: dict[str, Any] = {"model": self.model.model, "messages": messages}
        if self.model.temperature is not None:
            body["temperature"] = self.model.temperature
        if self.model.max_tokens is not None:
            body[self.model.max_tokens_field] = self.model.max_tokens  # max_completion_tokens for reasoning models
        if self.model.reasoning_effort is not None:
            body["reasoning_effort"] = self.model.reasoning_effort
        if self.model.top_p is not None:
            body["top_p"] = self.model.top_p
        if self.model.seed is not None:
            body["seed"] = self.model.seed
        if response_format is not None:
            body["response_format"] = response_format
        body.update(self.model.extra_body)
        if self.model.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def sent_settings(self, body: dict[str, Any]) -> SentSettings:
        """What a run records about a request: every setting of its body except the messages,
        and the headers, query and URL it went with when they are not the default (secrets
        masked)."""
        settings = {
            key: value for key, value in body.items() if key not in ("messages", "response_format", "stream_options")
        }
        if "response_format" in body:
            settings["response_format"] = body["response_format"]["type"]
        # Read back from the body as it goes on the wire: what was sent, never what was configured
        # (an extra_body field named like a credential masked).
        return SentSettings.model_validate({**mask_credential_fields(settings), **self._sent_extra})

    def settings(self) -> SentSettings:
        """The settings this backend sends with every request (model, sampling, format)."""
        return self.sent_settings(self.request_body([]))

    def server_context(self) -> ServerContext | None:
        """What the server says of this model's context window (model/_context.py: vLLM's and
        llama.cpp's own answers), asked now; None when it says nothing."""
        assert self.base_url is not None  # checked when the backend was made
        return read_server_context(shared_http_client(self.model.timeout_s), self.base_url, self.model.model,
                                   self._headers)

    def _cache_key(self, body: dict[str, Any]) -> str:
        # Everything that shapes the reply: the URL and the whole body (model, every sampling
        # setting, the response format with its schema, the messages with their images).
        # Streaming is only how the reply travels.
        shaping = {key: value for key, value in body.items() if key not in ("stream", "stream_options")}
        # The headers that are not credentials may shape the reply too (a gateway's routing).
        headers = self._sent_extra.get("headers") or {}
        return cache_key({"url": self._url, "body": shaping, **({"headers": headers} if headers else {})})

    def _from_cache(
        self, key: str, body: dict[str, Any], check: ReplyCheck | None, started: float
    ) -> Completion | None:
        if self.cache is None:
            return None
        hit = self.cache.get(key)
        if hit is None:
            return None
        if check is not None and check(hit.text) is not None:
            self.cache.delete(key)  # an entry that no longer passes is never served again
            return None
        counts, _ = checked_usage({"prompt_tokens": hit.prompt_tokens, "completion_tokens": hit.completion_tokens})
        return Completion(
            text=hit.text, model=self.model.model, prompt_tokens=counts["prompt_tokens"] if counts else None,
            completion_tokens=counts["completion_tokens"] if counts else None, cost=0.0,
            seconds=time.monotonic() - started,
            attempts=0, json_mode=self._json.mode if "response_format" in body else "none", cached=True,
            finish_reason=hit.finish_reason, served_model=_differing(hit.model, self.model.model),
            sent=self.sent_settings(body),
        )

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        role: str,
        schema_name: str | None = None,
        schema: dict[str, Any] | None = None,
        on_token: TokenCallback | None = None,
        check: ReplyCheck | None = None,
        retry_note: RetryNote | None = None,
    ) -> Completion:
        """One chat completion; retries timeouts, connection errors, 408/409/429, 5xx, malformed
        or incomplete replies, errors the service sends inside a reply (unless their status says
        retrying will not help) and replies failing `check` (unless cut at the token cap or by a
        content filter: the same request meets the same cut), with backoff; never another 4xx;
        raises ServiceError with a one-line message when it gives up (FatalServiceError when
        every request would fail). With a cache, an identical earlier accepted request is
        answered from it (cost 0). When the last allowed attempt still fails `check`, its reply
        is returned with `rejected` set (and is not cached), so the caller can record it as such.
        A retry of a reply failing `check` is never the same request: it carries one more user
        message, `retry_note(why)` (the latest reason only), and the Completion's `messages` say
        what was sent."""
        started = time.monotonic()
        waited = 0.0
        asked = messages
        response_format = self._response_format(schema_name, schema)
        body = self.request_body(messages, response_format)
        key = self._cache_key(body) if self.cache is not None else None
        if key is not None:
            hit = self._from_cache(key, body, check, started)
            if hit is not None:
                return hit
        attempt = 0
        while True:
            attempt += 1
            if self._cancel.is_set():
                raise RunInterrupted("the run was interrupted")
            if self._pacer is not None:
                self._pacer.wait(self._cancel)
            try:
                waited += self._pass_gate()
                try:
                    reply = self._once(body, role, on_token)
                finally:
                    if self._gate is not None:
                        self._gate.release()
                text, truncated = cap_reply(reply.text, self.max_reply_bytes)
                truncated = truncated or reply.truncated
                rejected = check(text) if check is not None else None
                # A reply cut at the token cap (or by a filter) comes back cut from the same request: never re-sent.
                retry = reply.finish_reason not in CUT_REASONS and attempt <= self.model.max_retries
                if rejected is not None and retry:
                    if retry_note is not None:  # sent again changed, saying what was wrong
                        messages = [*asked, {"role": "user", "content": retry_note(rejected)}]
                        body = self.request_body(messages, response_format)
                        key = self._cache_key(body) if key is not None else None
                    raise Retryable(f"the model's reply is unusable: {rejected}")
            except _Cancelled:
                raise RunInterrupted("the run was interrupted") from None
            except Retryable as error:
                self._wait_to_retry(error, attempt)
                continue
            except Rejected as error:
                mentions_format = any(
                    word in error.detail.lower() for word in ("response_format", "json_schema", "json schema")
                )
                sent_mode = {"json_schema": "schema", "json_object": "object"}.get(
                    (response_format or {}).get("type", ""), "none"
                )
                if error.status == 400 and sent_mode in JSON_MODE_FALLBACK and mentions_format:
                    self._json.fall_back(sent_mode)
                    logger.warning("endpoint rejected the JSON mode; falling back to %s", self._json.mode)
                    response_format = self._response_format(schema_name, schema)
                    body = self.request_body(messages, response_format)
                    key = self._cache_key(body) if key is not None else None  # the key of what is sent now
                    attempt -= 1
                    continue
                raise rejection_error(error, self.model) from None
            completion = self._completed(reply, text, truncated, rejected, messages, body, key, response_format,
                                         attempt, started + waited, role)
            if waited:
                completion = replace(completion, waited_s=round(waited, 4))
            return completion if messages is asked else replace(completion, messages=messages)

    def _completed(self, reply: _Reply, text: str, truncated: bool, rejected: str | None,
                   messages: list[dict[str, Any]], body: dict[str, Any], key: str | None,
                   response_format: dict[str, Any] | None, attempt: int, started: float, role: str) -> Completion:
        """The Completion of an accepted reply: its usage checked (an impossible one is replaced by
        our estimate, and said so), its cost, and the cache entry of a complete reply."""
        counts, unusable = checked_usage(reply.usage)
        if unusable is not None and self._shown_url not in _usage_warned:  # once per service and process
            _usage_warned.add(self._shown_url)
            logger.warning("the model service at %s reported unusable usage (%s): its tokens are estimated",
                           self._shown_url, unusable)
        if reply.finish_reason == "length":
            logger.info("%s", cut_off_detail(f"the {role}'s", self.model, self.model.max_tokens,
                                             counts["prompt_tokens"] if counts else None,
                                             counts["completion_tokens"] if counts else None, text))
        # A truncated or rejected reply is never cached; one cut at the cap (or by a filter) is, with
        # its finish reason (the same request meets the same cut); with the tokens the server
        # reported, never our estimate.
        if self.cache is not None and key is not None and rejected is None and not truncated:
            self.cache.put(key, text, reply.model or self.model.model,
                           counts["prompt_tokens"] if counts else None, counts["completion_tokens"] if counts else None,
                           reply.finish_reason)
        # A server that reports no usable usage (some local servers, some streams, an impossible
        # count) still gets a cost estimate: the tokens are counted our way (tokens.METHOD).
        tokens_estimated = counts is None
        if counts is None:
            estimated = estimate_usage(messages, text)
            counts = {"prompt_tokens": estimated["prompt_tokens"], "completion_tokens": estimated["completion_tokens"]}
        cached_tokens = counts.get("cached_tokens")
        cost = self.model.cost(counts["prompt_tokens"], counts["completion_tokens"], served=reply.model,
                               cached_tokens=cached_tokens or 0)
        return Completion(
            text=text,
            model=self.model.model,
            prompt_tokens=counts["prompt_tokens"],
            completion_tokens=counts["completion_tokens"],
            cost=cost,
            seconds=time.monotonic() - started,
            attempts=attempt,
            json_mode=self._json.mode if response_format else "none",
            finish_reason=reply.finish_reason,
            served_model=_differing(reply.model, self.model.model),
            sent=self.sent_settings(body),
            rejected=rejected,
            truncated=truncated,
            tokens_estimated=tokens_estimated,
            usage_unusable=unusable,
            cached_tokens=cached_tokens,
            cached_rate=self.model.cached_rate(reply.model) if cached_tokens else None,
        )

    def _pass_gate(self) -> float:
        """Wait for the server's one slot (when it has one), checking for Ctrl-C: the seconds waited."""
        if self._gate is None:
            return 0.0
        began = time.monotonic()
        while not self._gate.acquire(timeout=0.2):
            if self._cancel.is_set():
                raise RunInterrupted("the run was interrupted")
        return time.monotonic() - began

    def _wait_to_retry(self, error: Retryable, attempt: int) -> None:
        """Wait before the attempt after `attempt`; raise ServiceError (FatalServiceError when the
        service cannot be reached) once `attempt` was the last allowed, RunInterrupted when the
        run is interrupted while waiting."""
        if error.unreachable and self._health_check is not None:
            self._health_check()
        setting = f"endpoints.{self.model.endpoint_name}"
        if attempt > self.model.max_retries:
            # A service that cannot be reached at all fails every other request too.
            failure = FatalServiceError if error.unreachable else ServiceError
            raise failure(
                redact(f"{error} (gave up after {attempt} attempt{'s' if attempt > 1 else ''})"),
                fix=error.fix or f"check that the service is up, or raise {setting}.max_retries in agents.yaml",
                cause=redact(str(error)),
            ) from None
        delay = backoff_delay(attempt, error.retry_after)
        logger.warning("model call failed (%s); retry %d in %.1fs", redact(str(error)), attempt, delay)
        if self._cancel.wait(delay):
            raise RunInterrupted("the run was interrupted") from None

    def _once(self, body: dict[str, Any], role: str, on_token: TokenCallback | None) -> _Reply:
        # The role travels as a header so gateways (and our tests) can attribute each request.
        headers = {**self._headers, "X-Maps-Role": role}
        setting = f"endpoints.{self.model.endpoint_name}"
        if self.model.stream:
            # A stream is bounded by the wait for progress (more of the reply) and as a whole:
            # a slow server that keeps sending finishes however long the reply, up to stream_total_s.
            idle = self.model.stream_idle_s
            too_slow = (
                f"the model service at {self._shown_url} sent nothing of its streamed reply for {idle:g}s "
                f"({setting}.stream_idle_s)"
            )
            fix = f"raise {setting}.stream_idle_s in agents.yaml, or check that the service is up"
            timeout = httpx.Timeout(self.model.timeout_s, connect=min(10.0, self.model.timeout_s), read=idle)
        else:
            # timeout_s bounds every read and the whole request: a service that trickles a
            # byte every few seconds still ends within the deadline.
            too_slow = (
                f"the model service at {self._shown_url} did not answer within {self.model.timeout_s:g}s "
                f"({setting}.timeout_s)"
            )
            fix = (
                f"raise {setting}.timeout_s in agents.yaml (or set stream: true there), or check that the service is up"
            )
            timeout = None
        deadline = time.monotonic() + self.model.timeout_s
        try:
            with self._http.stream("POST", self._url, json=body, headers=headers,
                                   timeout=httpx.USE_CLIENT_DEFAULT if timeout is None else timeout) as response:
                self._check_status(response)
                if self.model.stream:
                    return self._read_stream(response, on_token, Retryable(too_slow, fix=fix))
                raw = read_capped(
                    self._before_deadline(response.iter_bytes(), deadline, Retryable(too_slow, fix=fix)),
                    body_limit(self.max_reply_bytes),
                )
                if raw is None:
                    raise ServiceError(
                        f"the model service at {self._shown_url} sent a reply body over "
                        f"{body_limit(self.max_reply_bytes):,} bytes",
                        fix="raise limits.reply_bytes in agents.yaml if such replies are expected",
                    )
        except httpx.TimeoutException:
            raise Retryable(too_slow, fix=fix) from None
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
            if self._cancel.is_set():
                raise _Cancelled() from None
            raise Retryable(f"cannot reach the model service at {self._shown_url}", unreachable=True) from None
        except httpx.HTTPError as error:
            raise Retryable(f"the request to {self._shown_url} failed: {error.__class__.__name__}") from None
        try:
            reply = json.loads(raw)
            if may_hold_surrogates(raw):  # a lone \udcff in the reply: made valid here, once
                reply = valid_tree(reply)
        except (ValueError, RecursionError):
            raise Retryable("the model service sent a malformed reply (not a chat completion in JSON)") from None
        return _Reply(*read_completion(reply))

    def _before_deadline(self, chunks: Iterator[bytes], deadline: float, late: Retryable) -> Iterator[bytes]:
        """The body's chunks, stopping with the retryable error `late` once the deadline passes."""
        for chunk in chunks:
            self._check_deadline(deadline, late)
            yield chunk

    def _check_deadline(self, deadline: float, late: Retryable) -> None:
        if self._cancel.is_set():
            raise _Cancelled()
        if time.monotonic() > deadline:
            raise late

    @staticmethod
    def _check_status(response: httpx.Response) -> None:
        status = response.status_code
        if 300 <= status < 400:  # never followed: the request (and its key) would go elsewhere
            location = valid_text(" ".join(response.headers.get("location", "").split()))[:ERROR_SHOWN_CHARS]
            raise Rejected(status, f"to {location or 'an address it did not give'}")
        if status < 400:
            return
        detail = error_detail(response)
        message = f"HTTP {status}" + (f": {detail[:ERROR_SHOWN_CHARS]}" if detail else "")
        if takes_no_images(detail):  # no retry changes the model, whatever the status says
            raise Rejected(status, detail)
        if retryable_status(status):
            raise Retryable(f"the model service answered {message}", retry_after_seconds(response))
        raise Rejected(status, detail)

    def _read_stream(self, response: httpx.Response, on_token: TokenCallback | None, idle: Retryable) -> _Reply:
        """The text, model, usage and finish reason of a streamed reply. Bounded three ways: each
        wait for progress (text, reasoning, a finish reason or usage: keep-alive comments,
        role-only and empty deltas are not progress) by stream_idle_s, the whole stream by
        stream_total_s, and its text by the reply limit (past it the stream is closed and the
        reply is truncated). An `error` event or an error chunk is the service's failure."""
        reply = StreamedReply(self.max_reply_bytes, on_token)
        done = False
        # Decoded incrementally, whatever charset the headers claim: a character whose UTF-8
        # bytes span two network chunks is decoded whole.
        lines = capped_lines(utf8_chunks(response.iter_bytes()), body_limit(self.max_reply_bytes))
        now = time.monotonic()
        progress_by = now + self.model.stream_idle_s
        total = self.model.stream_total_s
        whole_by = now + total
        setting = f"endpoints.{self.model.endpoint_name}"
        too_long = Retryable(
            f"the model service's streamed reply did not end within {total:g}s ({setting}.stream_total_s)",
            fix=f"raise {setting}.stream_total_s in agents.yaml for such long replies")
        event = ""
        while True:
            try:
                line = next(lines, None)
            except LineTooLong as error:
                raise Retryable(f"the model service sent {error} in its streamed reply") from None
            if line is None:
                break
            self._check_deadline(progress_by, idle)
            self._check_deadline(whole_by, too_long)
            if line.startswith("event:"):
                event = line[6:].strip()
                continue
            if not line.startswith("data:"):
                if not line:
                    event = ""  # an event ends at a blank line
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                done = True
                break
            before = reply.progress
            reply.add(stream_chunk(data, event))
            if reply.progress > before:
                progress_by = time.monotonic() + self.model.stream_idle_s
            if reply.over_limit:  # the rest is not read: the reply is cut here
                reply.end()
                return _Reply("".join(reply.pieces), reply.model_name, None, reply.finish_reason, truncated=True)
        reply.end()
        if not done or reply.finish_reason is None:
            # A stream cut off cleanly looks like a short reply: only the end markers tell.
            missing = " and ".join(
                part
                for part, absent in (("a finish reason", reply.finish_reason is None), ("[DONE]", not done))
                if absent
            )
            raise Retryable(f"the model service's streamed reply ended without {missing} (incomplete)")
        if not reply.pieces and reply.finish_reason not in CUT_REASONS:
            raise Retryable("the model service streamed no content")
        return _Reply("".join(reply.pieces), reply.model_name, reply.usage, reply.finish_reason)


def _differing(reported: str | None, requested: str) -> str | None:
    """The model name the service reported, when it is not the one requested."""
    return reported if reported and reported != requested else None
