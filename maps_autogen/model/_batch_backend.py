"""A step's backend when `maps eval --batch` sends its calls through the service's batch API: the
same `ChatBackend` (request bodies, JSON modes, checks and their retries, the cache, usage), whose
one transport step, sending a request and reading its reply, is handed to the batch broker
(model/_batch_broker.py) instead of an HTTP POST. A line of the batch's output or error file is
read as the same reply received live: a 200's body as a chat completion (an error inside it
included), another status as that status answered live (a refused key is fatal, a 400 names the
fix, a 429 or a 5xx is tried again: in the next round), a request the batch could not run in
time as a timeout. The call records the batch that answered it and is priced at the model's
batch prices (`prices.<model>.batch`; none: its cost is unknown)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from maps_autogen.model._batch_broker import BatchBroker, Group
from maps_autogen.model._client import ChatBackend, ReplyCheck, _Reply
from maps_autogen.model._completion import Completion
from maps_autogen.model._service_answers import (
    ERROR_SHOWN_CHARS,
    Rejected,
    Retryable,
    TokenCallback,
    error_message,
    read_completion,
    retryable_status,
    takes_no_images,
)
from maps_autogen.records import BatchAnswer


@dataclass(frozen=True)
class _BatchReply(_Reply):
    """A reply read from a batch's results: which batch it came in."""

    batch: str | None = None


def reply_of(answer: BatchAnswer) -> tuple[str, str | None, Any, str | None]:
    """A batch answer read as the live reply it stands for (`read_completion`'s text, model,
    usage and finish reason), or the exception the same answer live would have raised."""
    status = answer.status_code
    if status is None:  # the batch did not run it (request_timeout, or what the service said)
        said = ": ".join(part for part in (answer.error_code, answer.error_message) if part)
        raise Retryable(f"the batch did not run the request ({said or 'no reason given'})")
    if status >= 300:
        detail = error_message(answer.body)
        if status < 400 or takes_no_images(detail) or not retryable_status(status):
            raise Rejected(status, detail)
        raise Retryable(f"the model service answered HTTP {status}" + (
            f": {detail[:ERROR_SHOWN_CHARS]}" if detail else ""))
    return read_completion(answer.body)


class BatchBackend(ChatBackend):
    """`backend`'s model, cache, JSON mode and cancel event, its calls answered by `broker`."""

    def __init__(self, backend: ChatBackend, broker: BatchBroker):
        # The same cancel event and JSON-mode memo as the backend it stands for (shared with its model's).
        super().__init__(backend.model, base_url=backend.model.base_url, cache=backend.cache,
                         cancel=backend._cancel, max_reply_bytes=backend.max_reply_bytes, json_mode=backend._json)
        self._pacer = None  # a round is one request per call, whatever requests_per_s says
        self._broker = broker
        self.group: Group = broker.group_for(self.model)

    def request_body(self, messages: list[dict[str, Any]],
                     response_format: dict[str, Any] | None = None) -> dict[str, Any]:
        """The live body, unstreamed (a batch streams nothing), naming Azure's batch deployment."""
        body = super().request_body(messages, response_format)
        body.pop("stream", None)
        body.pop("stream_options", None)
        if self.group.service.azure:
            body["model"] = self.group.line_model
        return body

    def _from_cache(self, key: str, body: dict[str, Any], check: ReplyCheck | None,
                    started: float) -> Completion | None:
        if self._broker.holds(self.group, body):  # answered in an earlier invocation: read back, counted once
            return None
        return super()._from_cache(key, body, check, started)

    def _once(self, body: dict[str, Any], role: str, on_token: TokenCallback | None) -> _Reply:
        answer, batch = self._broker.ask(self.group, body, role)  # RunInterrupted once the run is stopped
        text, model, usage, finish_reason = reply_of(answer)
        return _BatchReply(text, model, usage, finish_reason, batch=batch)

    def _completed(self, reply: _Reply, text: str, truncated: bool, rejected: str | None,
                   messages: list[dict[str, Any]], body: dict[str, Any], key: str | None,
                   response_format: dict[str, Any] | None, attempt: int, started: float, role: str) -> Completion:
        completion = super()._completed(reply, text, truncated, rejected, messages, body, key, response_format,
                                        attempt, started, role)
        if not isinstance(reply, _BatchReply):
            return completion
        price = self.model.prices_of(reply.model, batch=True)
        cost = self.model.cost(completion.prompt_tokens or 0, completion.completion_tokens or 0, served=reply.model,
                               cached_tokens=completion.cached_tokens or 0, batch=True)
        return replace(completion, cost=cost, batch=reply.batch or "",
                       prompt_rate=price.prompt_per_million if price else None,
                       completion_rate=price.completion_per_million if price else None,
                       cached_rate=self.model.cached_rate(reply.model, batch=True)
                       if completion.cached_tokens else None)
