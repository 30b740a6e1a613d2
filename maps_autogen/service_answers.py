"""What a model service's answers mean, read as the OpenAI chat API's are: which errors are
worth a retry and after how long (`Retry-After`, backoff), which are fatal (a refused key, an
unknown model, a model that takes no images: every other request would meet them too), and
what a streamed reply's chunks bring. Everything here is read from untrusted bytes: bounded,
shape-checked, made valid text. `maps_autogen.client` sends the requests."""

from __future__ import annotations

import email.utils
import json
import math
import random
import re
import time
from collections.abc import Callable
from typing import Any

import httpx

from maps_autogen.endpoints import ResolvedModel
from maps_autogen.errors import FatalServiceError, ServiceError
from maps_autogen.limits import read_capped
from maps_autogen.redact import redact
from maps_autogen.text import PieceJoiner, may_hold_surrogates, valid_text, valid_tree

TokenCallback = Callable[[str], None]

RETRY_BASE_S = 0.5
RETRY_CAP_S = 30.0
RETRY_AFTER_CAP_S = 120.0


ERROR_BODY_BYTES = 64 * 1024
ERROR_DETAIL_CHARS = 2000  # of a service's error message, read to classify it
ERROR_SHOWN_CHARS = 300  # of it, in our one-line messages (gateways wrap the backend's message)
# How services say that a model takes no images at all, whatever the status code they send it
# with (llama.cpp without a projector: 500 "image input is not supported"; vLLM: 400 "At most 0
# image(s) may be provided in one prompt" or "... is not a multimodal model"; OpenAI: "image_url
# is only supported by certain models"; others: "model does not support images/vision"). Errors
# about one image (its format, size or URL) concern one problem only and are not matched.
NO_IMAGE_INPUT = re.compile(
    r"\bat most 0 images?\b"
    r"|\bnot an? (multi-?modal|vision)\b|\bnon-multi-?modal\b|\btext-only model\b"
    r"|\b(does not|doesn't|do not|cannot|can't|unable to) "
    r"(support|accept|handle|process|take)\s+(image|vision|multi-?modal|visual)"
    r"|\b(image|images|vision|multi-?modal)(\s+(input|inputs|content|modality|support|understanding))?\s+(is\s+|are\s+)?"
    r"(not supported|unsupported|not enabled|disabled|not available)"
    r"|\bimage_url\S* is only supported by",
    re.IGNORECASE,
)


# How services refuse one request for what it says (a content filter, a safety system, a usage
# policy): OpenAI "rejected as a result of our safety system" / "flagged as potentially violating
# our usage policy", Azure "content management policy" (code content_filter), gateways "blocked by
# content filtering". Such a refusal concerns one problem's text, however alike two messages read.
CONTENT_REFUSAL = re.compile(
    r"content[ _-]?(filter|management|policy|moderation)|safety system|\bflagged\b|usage polic|moderation"
    r"|responsible ai|blocked by",
    re.IGNORECASE,
)


def refuses_the_content(detail: str) -> bool:
    """Whether a service's error refuses one request for its content (not the model, key or service)."""
    return bool(CONTENT_REFUSAL.search(detail))


def takes_no_images(detail: str) -> bool:
    """Whether a service's error message says the model accepts no image input at all."""
    return bool(NO_IMAGE_INPUT.search(detail))


class Retryable(Exception):
    def __init__(
        self, message: str, retry_after: float | None = None, *, unreachable: bool = False, fix: str | None = None
    ):
        super().__init__(message)
        self.retry_after = retry_after
        self.unreachable = unreachable
        self.fix = fix  # what to change when the retries run out (default: check the service)


def retryable_status(status: int) -> bool:
    """Whether an HTTP status says "not now" (a timeout, a conflict, too many requests, a server
    error) rather than "not this request": worth a retry, by us and by a replica pool."""
    return status in (408, 409, 429) or status >= 500


def retry_after_seconds(response: httpx.Response | None) -> float | None:
    """Seconds from a Retry-After (or retry-after-ms) header, if the server sent one."""
    if response is None:
        return None
    headers = response.headers
    if "retry-after-ms" in headers:
        try:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = (headers.get("retry-after") or "").strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
            seconds = parsed.timestamp() - time.time()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None  # empty or unparseable ("soon"): the default backoff applies
    # NaN and infinities are as unusable as text; negative means "now".
    return max(0.0, seconds) if math.isfinite(seconds) else None


def backoff_delay(attempt: int, retry_after: float | None) -> float:
    """How long to wait before retry number `attempt` (1-based): the server's Retry-After when
    given, else exponential backoff with jitter."""
    if retry_after is not None:
        return min(retry_after, RETRY_AFTER_CAP_S)
    base = min(RETRY_CAP_S, RETRY_BASE_S * 2.0 ** (attempt - 1))
    return base * (1 + 0.1 * random.random())


class Rejected(Exception):
    """The service answered with a status that retrying will not fix."""

    def __init__(self, status: int, detail: str):
        super().__init__(f"HTTP {status}" + (f": {detail[:ERROR_SHOWN_CHARS]}" if detail else ""))
        self.status = status
        self.detail = detail


def error_detail(response: httpx.Response) -> str:
    """The service's own error message, shortened to one line."""
    try:
        # an error page is not worth megabytes
        body = json.loads(read_capped(response.iter_bytes(), ERROR_BODY_BYTES) or b"")
        detail = body.get("error", body) if isinstance(body, dict) else body
        message = detail.get("message", "") if isinstance(detail, dict) else str(detail)
    except (ValueError, RecursionError, httpx.HTTPError):
        message = ""
    return valid_text(" ".join(str(message).split())[:ERROR_DETAIL_CHARS])


def rejection_error(error: Rejected, model: ResolvedModel) -> ServiceError:
    """The one-line error for a status that retrying will not fix. Errors every other request
    would meet too (key, permission, unknown model or URL, no image input) are fatal."""
    cause = redact(str(error))
    where = f"endpoint '{model.endpoint_name}'"
    if takes_no_images(error.detail):  # whatever the status: llama.cpp sends it as a 500
        return FatalServiceError(
            f"the model {model.model} does not accept images: {cause}",
            cause=cause,
            fix=f"declare vision: false on {where} in agents.yaml to withhold its images, or use a vision model",
        )
    if error.status in (401, 403):
        return FatalServiceError(f"the model service refused the API key: {cause}", cause=cause,
                                 fix=f"check the key in the api_key_env variable of {where} and its permissions")
    if error.status == 404:
        return FatalServiceError(f"the model service has no such model or URL: {cause}", cause=cause,
                                 fix=f"check the model name '{model.model}' and the base_url of {where}")
    return ServiceError(
        f"the model service rejected the request: {cause}",
        cause=cause,
        fix=f"check the model name '{model.model}', the API key and the settings of {where} in agents.yaml",
    )


def stream_chunk(data: str) -> Any:
    """One `data:` line of a streamed reply, parsed (lone surrogates made valid outside the
    choices, whose pieces are joined first)."""
    malformed = Retryable("the model service sent a malformed streamed reply")
    try:
        chunk = json.loads(data)
    except (ValueError, RecursionError):
        raise malformed from None
    # Untrusted shape: an object whose choices (if any) are objects with an object delta.
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    if not isinstance(chunk, dict) or not isinstance(choices or [], list) or not all(
            isinstance(choice, dict) and isinstance(choice.get("delta") or {}, dict) for choice in choices or []):
        raise malformed
    if may_hold_surrogates(data):
        chunk = {**valid_tree({k: v for k, v in chunk.items() if k != "choices"}), "choices": choices}
    return chunk


class StreamedReply:
    """What a streamed reply brought so far: its pieces of text (up to the reply limit: past it
    the rest is read but dropped), model, usage and finish reason."""

    def __init__(self, limit: int, on_token: TokenCallback | None) -> None:
        self.limit = limit
        self.on_token = on_token
        self.pieces: list[str] = []
        self.received = 0  # bytes kept
        self.usage: Any = None
        self.model_name: Any = None
        self.finish_reason: str | None = None
        self.joiner = PieceJoiner()  # an emoji split across two pieces (as \ud83d, \ude00) is joined

    def add(self, chunk: Any) -> None:
        """Take in one parsed chunk."""
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model_name = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = (choice.get("delta") or {}).get("content")
            if isinstance(delta, str):
                delta = self.joiner.feed(delta)
            self._keep(delta)
            if isinstance(choice.get("finish_reason"), str):
                self.finish_reason = valid_text(choice["finish_reason"])

    def end(self) -> None:
        """The stream ended: half a surrogate pair with nothing after it becomes U+FFFD."""
        self._keep(self.joiner.flush())

    def _keep(self, piece: Any) -> None:
        if piece and self.received <= self.limit:
            self.received += len(piece.encode("utf-8", errors="surrogatepass"))
            self.pieces.append(piece)
            if self.on_token is not None:
                self.on_token(piece)
