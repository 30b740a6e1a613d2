"""What a model service's answers mean, read as the OpenAI chat API's are: which errors are
worth a retry and after how long (`Retry-After`, backoff), which are fatal (a refused key, an
unknown model, a model that takes no images: every other request would meet them too), and
what a streamed reply's chunks bring. Everything here is read from untrusted bytes: bounded,
shape-checked, made valid text. `maps_autogen.model._client` sends the requests."""

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

from maps_autogen._util import (
    FatalServiceError,
    PieceJoiner,
    ServiceError,
    may_hold_surrogates,
    read_capped,
    redact,
    valid_text,
    valid_tree,
)
from maps_autogen.model._context import context_error, exceeds_context
from maps_autogen.settings import ResolvedModel

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


# vLLM's answer to a request with more images than it was started to take (`--limit-mm-per-prompt`):
# "At most 2 image(s) may be provided in one request." (older: "... in one prompt."). With 0, the
# model takes no images at all (NO_IMAGE_INPUT).
TOO_MANY_IMAGES = re.compile(r"\bat most (\d{1,6}) images?(?:\(s\))? (?:may|can) be (?:provided|given|passed)",
                             re.IGNORECASE)


# How services refuse a request field the model does not take: OpenAI's reasoning models answer
# HTTP 400 {"error": {"message": "Unsupported parameter: 'temperature' is not supported with this
# model.", "param": "temperature", "code": "unsupported_parameter"}} (or "Unsupported value:
# 'temperature' does not support 0 with this model. Only the default (1) value is supported.",
# code unsupported_value); LiteLLM: "... does not support parameters: ['temperature'], for model=...".
UNSUPPORTED_PARAMETER = re.compile(
    r"\bunsupported (?:parameter|value)s?\s*:?\s*['\"`]([A-Za-z_][\w.]{0,63})['\"`]"
    r"|\bdoes not support (?:the )?parameters?\s*:?\s*\[?\s*['\"`]([A-Za-z_][\w.]{0,63})['\"`]",
    re.IGNORECASE,
)


def unsupported_parameter(detail: str) -> str | None:
    """The request field a service's error says the model does not take, if it says so."""
    match = UNSUPPORTED_PARAMETER.search(detail)
    return (match.group(1) or match.group(2)) if match else None


def image_limit(detail: str) -> int | None:
    """The most images per request a service's error says it takes (vLLM's wording), if it says so."""
    match = TOO_MANY_IMAGES.search(detail)
    return int(match.group(1)) if match else None


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

    def __init__(self, status: int, detail: str, *, where: str = ""):
        super().__init__(f"HTTP {status}" + (f": {detail[:ERROR_SHOWN_CHARS]}" if detail else "") + where)
        self.status = status
        self.detail = detail


def _one_line(text: Any) -> str:
    return valid_text(" ".join(str(text).split())[:ERROR_DETAIL_CHARS])


def error_message(body: Any, depth: int = 0) -> str:
    """The service's own message in a parsed error body, whichever way the service wraps it:
    OpenAI's and most servers' `{"error": {"message": ...}}`, Ollama's and TGI's `{"error":
    "..."}`, vLLM's older `{"object": "error", "message": ...}`, FastAPI's `{"detail": "..."}` or
    its list of validation problems, Anthropic's `{"type": "error", "error": {...}}`, and
    Gemini's JSON array of such objects. "" when it holds none. (It looks three levels deep at
    most: an error body is untrusted.)"""
    if depth > 2:
        return ""
    if isinstance(body, list):
        return next((message for item in body[:8] if (message := error_message(item, depth + 1))), "")
    if isinstance(body, str):
        return _one_line(body)
    if not isinstance(body, dict):
        return ""
    error = body.get("error")
    if isinstance(error, dict):
        return _one_line(error.get("message") or error.get("msg") or error.get("type") or error.get("code") or "")
    if isinstance(error, str) and error:
        return _one_line(error)
    detail = body.get("detail")
    if isinstance(detail, list):  # FastAPI's validation problems: where and what
        problems = [f"{'.'.join(str(part) for part in item.get('loc', []))}: {item.get('msg', '')}"
                    for item in detail[:3] if isinstance(item, dict)]
        return _one_line("; ".join(problems))
    if detail is not None:
        return error_message(detail, depth + 1) if isinstance(detail, dict) else _one_line(detail)
    if isinstance(body.get("message"), str) and (body.get("object") == "error" or "choices" not in body):
        return _one_line(body["message"])
    return ""


def error_status(body: Any) -> int | None:
    """The HTTP status an error body names (`error.code` or `error.status` as a number: OpenRouter
    and vLLM send the status there even inside an HTTP 200 or a stream), if any."""
    if isinstance(body, list):  # (Gemini's array: its first error that names one)
        return next((status for item in body[:8] if isinstance(item, dict)
                     and (status := error_status(item)) is not None), None)
    if not isinstance(body, dict):
        return None
    error = body.get("error") if isinstance(body.get("error"), dict) else body
    for name in ("code", "status"):
        value = error.get(name) if isinstance(error, dict) else None
        if isinstance(value, str) and value.isdigit() and len(value) == 3:
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    return None


def body_error(body: Any) -> str | None:
    """The service's message when a reply body (an HTTP 200's, or a streamed chunk) is an error
    rather than a completion: it carries an error object and no choices to read (OpenRouter's
    error in a 200, vLLM's and LiteLLM's `data: {"error": ...}` in a stream), or its choices end
    with finish_reason "error" (OpenRouter's mid-stream failure); None when it is not one."""
    if isinstance(body, list):  # a JSON array is never a completion: Gemini's list of errors
        return error_message(body) or "an error (a JSON array)"
    if not isinstance(body, dict):
        return None
    choices = body.get("choices")
    listed = choices if isinstance(choices, list) else []
    has_choices = bool(listed)
    failed = any(isinstance(choice, dict) and choice.get("finish_reason") == "error" for choice in listed)
    errored = body.get("error") is not None or body.get("object") == "error" or "detail" in body
    if failed or (errored and not has_choices):
        return error_message(body) or "an error without a message"
    return None


def service_failure(status: int | None, message: str, what: str) -> Exception:
    """The exception for an error a service sent inside a reply (`what` says where): a status
    retrying will not fix (or a message naming a model that takes no images, or too many) is
    `Rejected`; anything else, a status that says "not now" or none at all, is `Retryable`."""
    if takes_no_images(message) or image_limit(message) is not None:
        return Rejected(status or 400, message, where=f" ({what})")
    if status is not None and not retryable_status(status) and status >= 400:
        return Rejected(status, message, where=f" ({what})")
    shown = f"HTTP {status}: " if status is not None else ""
    return Retryable(f"the model service sent an error {what}: {shown}{message[:ERROR_SHOWN_CHARS]}")


def error_detail(response: httpx.Response) -> str:
    """The service's own error message, shortened to one line: from its JSON error body in any
    of the shapes `error_message` reads, else the body's text (not an HTML page)."""
    try:
        raw = read_capped(response.iter_bytes(), ERROR_BODY_BYTES) or b""  # an error page is not worth megabytes
    except httpx.HTTPError:
        return ""
    try:
        return error_message(json.loads(raw))
    except (ValueError, RecursionError):
        text = raw.decode("utf-8", errors="replace").strip()
        return "" if text.startswith("<") else _one_line(text)


def rejection_error(error: Rejected, model: ResolvedModel) -> ServiceError:
    """The one-line error for a status that retrying will not fix. Errors every other request
    would meet too (key, permission, unknown model or URL, no image input) are fatal."""
    cause = redact(str(error))
    where = f"endpoint '{model.endpoint_name}'"
    limit = image_limit(error.detail)
    if limit:  # vLLM started with --limit-mm-per-prompt lower than a problem's images
        return FatalServiceError(
            f"the model service takes at most {limit} image{'s' if limit > 1 else ''} per request: {cause}",
            cause=cause,
            fix=f"start vLLM with --limit-mm-per-prompt '{{\"image\": N}}' for N images or more, or set "
                f"max_images: {limit} on {where} in agents.yaml (each request then carries at most {limit}, a note "
                "standing in for each other image)",
        )
    if 300 <= error.status < 400:
        return FatalServiceError(
            f"the model service answered with a redirect (HTTP {error.status}) {error.detail[:ERROR_SHOWN_CHARS]}",
            cause=cause,
            fix=f"set the base_url of {where} to the address it points to (maps follows no redirect: it would "
                "carry the key elsewhere)",
        )
    if takes_no_images(error.detail):  # whatever the status: llama.cpp sends it as a 500
        return FatalServiceError(
            f"the model {model.model} does not accept images: {cause}",
            cause=cause,
            fix=f"declare vision: false on {where} in agents.yaml to withhold its images, or use a vision model",
        )
    refused = unsupported_parameter(error.detail) if 400 <= error.status < 500 else None
    if refused is not None:
        return _refused_parameter(refused, cause, model, where)
    if exceeds_context(error.detail):  # not the name or the key: the request outgrew the model's context
        return context_error(cause, error.detail, model)
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


def _refused_parameter(name: str, cause: str, model: ResolvedModel, where: str) -> ServiceError:
    """A field the model does not take (every request of this step would carry it): named with
    the setting that sends it and how to leave it out, never blamed on the model name or key."""
    def said(by: str = "") -> str:
        return f"the model service does not take '{name}'{by} in {model.model}'s requests: {cause}"

    if name == model.max_tokens_field:
        other = "max_tokens" if name == "max_completion_tokens" else "max_completion_tokens"
        return FatalServiceError(said(), cause=cause, fix=f"set max_tokens_field: {other} on {where} in agents.yaml "
                                                          "(reasoning models take max_completion_tokens)")
    setting = model.sent_by.get(name)
    if setting is None:
        return FatalServiceError(said(), cause=cause,
                                 fix=f"leave '{name}' out of the settings of {where} in agents.yaml")
    key, _, place = setting.partition(" in ")
    if key.startswith("--"):
        fix = f"drop {key}: no request then carries {name}"
    elif place:
        fix = f"set {key}: null in {place}: no request then carries {name}"
    else:
        fix = f"leave out {setting}: no request then carries {name}"
    return FatalServiceError(said(f" (sent by {key})"), cause=cause, fix=fix)


IN_STREAM = "in its streamed reply"


def stream_chunk(data: str, event: str = "") -> Any:
    """One `data:` line of a streamed reply, parsed (lone surrogates made valid outside the
    choices, whose pieces are joined first). An error the service sends in the stream (an
    `event: error`, or a chunk that is an error: `body_error`) raises as `service_failure`."""
    malformed = Retryable("the model service sent a malformed streamed reply")
    try:
        chunk = json.loads(data)
    except (ValueError, RecursionError):
        if event == "error":
            raise service_failure(None, _one_line(data), IN_STREAM) from None
        raise malformed from None
    failure = body_error(chunk)
    if failure is not None or event == "error":
        raise service_failure(error_status(chunk), failure or error_message(chunk) or "an error event", IN_STREAM)
    # Untrusted shape: an object whose choices (if any) are objects with an object delta.
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    if not isinstance(chunk, dict) or not isinstance(choices or [], list) or not all(
            isinstance(choice, dict) and isinstance(choice.get("delta") or {}, dict) for choice in choices or []):
        raise malformed
    if may_hold_surrogates(data):
        chunk = {**valid_tree({k: v for k, v in chunk.items() if k != "choices"}), "choices": choices}
    return chunk


# Where reasoning models stream their thinking before the reply (vLLM since late 2025, OpenRouter,
# Ollama: reasoning; older vLLM, llama.cpp, DeepSeek: reasoning_content): not part of the reply, but progress.
REASONING_FIELDS = ("reasoning_content", "reasoning")


TEXT_PARTS = ("text", "output_text", None)  # the parts of a content list that are text


def content_text(content: Any) -> str | None:
    """A message's (or a delta's) content as text: a string as it is, a list of parts (as some
    servers send it) joined from its text parts; None when it holds no text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part if isinstance(part, str) else part.get("text") for part in content
                 if isinstance(part, str) or (isinstance(part, dict) and part.get("type") in TEXT_PARTS)]
        joined = [text for text in texts if isinstance(text, str)]
        return "".join(joined) if joined else None
    return None


class StreamedReply:
    """What a streamed reply brought so far: its pieces of text (up to the reply limit: past it
    the reply is `over_limit` and its reader stops), model, usage and finish reason, and how much
    it has progressed (text and reasoning received, a finish reason, usage: keep-alives, role-only
    and empty deltas are not progress)."""

    def __init__(self, limit: int, on_token: TokenCallback | None) -> None:
        self.limit = limit
        self.on_token = on_token
        self.pieces: list[str] = []
        self.received = 0  # bytes kept
        self.reasoning = 0  # bytes of reasoning received (not kept)
        self.progress = 0  # grows with every chunk that brings something
        self.usage: Any = None
        self.model_name: Any = None
        self.finish_reason: str | None = None
        self.joiner = PieceJoiner()  # an emoji split across two pieces (as \ud83d, \ude00) is joined

    @property
    def over_limit(self) -> bool:
        """More text (or reasoning, at 4 times the limit) arrived than a reply may hold."""
        return self.received > self.limit or self.reasoning > 4 * self.limit

    def add(self, chunk: Any) -> None:
        """Take in one parsed chunk."""
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model_name = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
            self.progress += 1
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text = content_text(delta.get("content"))
            if text:
                text = self.joiner.feed(text)
            self._keep(text)
            for name in REASONING_FIELDS:
                thought = delta.get(name)
                if isinstance(thought, str) and thought:
                    self.reasoning += len(thought)
                    self.progress += len(thought)
            if isinstance(choice.get("finish_reason"), str):
                self.finish_reason = valid_text(choice["finish_reason"])
                self.progress += 1

    def end(self) -> None:
        """The stream ended: half a surrogate pair with nothing after it becomes U+FFFD."""
        self._keep(self.joiner.flush())

    def _keep(self, piece: Any) -> None:
        if piece and self.received <= self.limit:
            size = len(piece.encode("utf-8", errors="surrogatepass"))
            self.received += size
            self.progress += size
            self.pieces.append(piece)
            if self.on_token is not None:
                self.on_token(piece)


# No single request reads or writes a billion tokens: a count past it is as impossible as a negative one.
MAX_USAGE_TOKENS = 10**9
USAGE_FIELDS = ("prompt_tokens", "completion_tokens")


def _described(value: Any) -> str:
    """An impossible usage value described without printing what could be huge or hostile."""
    if value is None:
        return "missing"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"a {type(value).__name__}"
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if value < 0:
        return "negative"
    if value > MAX_USAGE_TOKENS:
        return f"over {MAX_USAGE_TOKENS:,}"
    return "not a whole number"


def _token_count(value: Any) -> int | None:
    """`value` as a token count: a whole number from 0 to MAX_USAGE_TOKENS (2.0 is 2), else None."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_USAGE_TOKENS:
        return None
    return value


def checked_usage(usage: Any) -> tuple[dict[str, int] | None, str | None]:
    """A reply's reported usage checked like every other field: its prompt and completion token
    counts when both are whole numbers from 0 to MAX_USAGE_TOKENS (None, None when it reported
    none), with `cached_tokens` when the service said how many prompt tokens it had cached (a
    whole number from 0 to prompt_tokens); else (None, why it is unusable), and the caller
    estimates the tokens instead."""
    if usage is None:
        return None, None
    if not isinstance(usage, dict):
        return None, f"usage is {_described(usage)}, not an object"
    counts: dict[str, int] = {}
    for name in USAGE_FIELDS:
        value = _token_count(usage.get(name))
        if value is None:
            return None, f"{name} is {_described(usage.get(name))}"
        counts[name] = value
    # The prompt tokens the service read from its prefix cache (OpenAI, vLLM, llama.cpp's server
    # and LiteLLM all say it as prompt_tokens_details.cached_tokens), part of prompt_tokens.
    details = usage.get("prompt_tokens_details")
    if details is not None:
        if not isinstance(details, dict):
            return None, f"prompt_tokens_details is {_described(details)}, not an object"
        reported = details.get("cached_tokens")
        if reported is not None:
            cached = _token_count(reported)
            if cached is None:
                return None, f"cached_tokens is {_described(reported)}"
            if cached > counts["prompt_tokens"]:
                return None, "cached_tokens is more than prompt_tokens"
            counts["cached_tokens"] = cached
    return counts, None


def read_completion(reply: Any) -> tuple[str, str | None, Any, str | None]:
    """The text, model, usage (unchecked) and finish reason of a parsed (non-streamed) chat
    completion. An error inside it (`body_error`) raises as `service_failure`; a reply cut at
    the token cap or stopped by a content filter before any text is an empty text with that
    finish reason; anything else that is not a completion with text is a retryable failure
    saying what it lacked."""
    failure = body_error(reply)
    if failure is not None:
        raise service_failure(error_status(reply), failure, "in an HTTP 200 reply")
    try:
        choice = reply["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise Retryable("the model service sent a malformed reply (not a chat completion in JSON)") from None
    finish_reason = choice.get("finish_reason") if isinstance(choice, dict) else None
    finish_reason = valid_text(finish_reason) if isinstance(finish_reason, str) else None
    text = content_text(message.get("content")) if isinstance(message, dict) else None
    if text is None and finish_reason in CUT_REASONS:
        text = ""  # a reasoning model that spent its budget thinking, or a filtered reply: named, not retried
    if text is None:
        refusal = message.get("refusal") if isinstance(message, dict) else None
        said = f" (the model refused: {_one_line(refusal)[:ERROR_SHOWN_CHARS]})" if isinstance(refusal, str) else (
            f" (finish_reason {finish_reason})" if finish_reason else "")
        raise Retryable(f"the model service sent a reply without message content{said}")
    model = reply.get("model")
    return text, model if isinstance(model, str) else None, reply.get("usage"), finish_reason


# Finish reasons that mean the reply was stopped before it was complete, by something the same
# request meets again: the token cap, or the service's content filter. Never re-sent unchanged.
CUT_REASONS = ("length", "content_filter")
