"""Calls to OpenAI-compatible chat services: retries, JSON modes, streaming, usage.

`ChatBackend` is shared by every chat of a process (one HTTP connection pool per endpoint);
`MapsModelClient` plugs it into AG2 as a custom model client, so AG2's agents make their calls
through it.
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import httpx
import openai

from maps_autogen.cache import ResponseCache, cache_key
from maps_autogen.endpoints import ResolvedModel
from maps_autogen.errors import ServiceError
from maps_autogen.secrets import redact

logger = logging.getLogger(__name__)

RETRY_BASE_S = 0.5
RETRY_CAP_S = 30.0
RETRY_AFTER_CAP_S = 120.0
JSON_MODE_FALLBACK = {"schema": "object", "object": "none"}

TokenCallback = Callable[[str], None]


@dataclass(frozen=True)
class Completion:
    """One finished model call."""

    text: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost: float | None
    seconds: float
    attempts: int
    json_mode: str
    cached: bool = False

    def usage(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": self.cost,
            "seconds": round(self.seconds, 4),
            "attempts": self.attempts,
            "cached": self.cached,
        }


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


def _retry_after(response: httpx.Response | None) -> float | None:
    """Seconds from a Retry-After (or retry-after-ms) header, if the server sent one."""
    if response is None:
        return None
    headers = response.headers
    if "retry-after-ms" in headers:
        try:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def backoff_delay(attempt: int, retry_after: float | None) -> float:
    """How long to wait before retry number `attempt` (1-based): the server's Retry-After when
    given, else exponential backoff with jitter."""
    if retry_after is not None:
        return min(retry_after, RETRY_AFTER_CAP_S)
    base = min(RETRY_CAP_S, RETRY_BASE_S * 2 ** (attempt - 1))
    return base * (1 + 0.1 * random.random())


_clients_lock = threading.Lock()
_clients: dict[tuple[str, str, float, int], openai.OpenAI] = {}


def shared_openai_client(base_url: str, api_key: str, timeout_s: float, max_connections: int = 64) -> openai.OpenAI:
    """One OpenAI client (and HTTP connection pool) per endpoint per process."""
    key = (base_url, api_key, timeout_s, max_connections)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            http = httpx.Client(
                timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
                limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            )
            client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", max_retries=0, http_client=http)
            _clients[key] = client
        return client


class ChatBackend:
    """Makes chat-completion calls to one model, with bounded retries and JSON-mode fallback."""

    def __init__(
        self,
        model: ResolvedModel,
        *,
        base_url: str | None = None,
        max_connections: int = 64,
        cache: ResponseCache | None = None,
    ):
        self.model = model
        self.cache = cache
        self.base_url = base_url or model.base_url
        if not self.base_url:
            raise ValueError(f"endpoint {model.endpoint_name} has no base URL yet")
        self._client = shared_openai_client(self.base_url, model.api_key, model.timeout_s, max_connections)
        self._json_mode = model.json_mode
        self.supports_images = model.kind != "local" or bool(model.local and model.local.mmproj_path)

    def _response_format(self, schema_name: str | None, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is None or self._json_mode == "none":
            return None
        if self._json_mode == "object":
            return {"type": "json_object"}
        return {"type": "json_schema", "json_schema": {"name": schema_name or "reply", "schema": schema, "strict": True}}

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        role: str,
        schema_name: str | None = None,
        schema: dict[str, Any] | None = None,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        """One chat completion; retries timeouts, connection errors, 429, 5xx and malformed
        replies with backoff; raises ServiceError with a one-line message when it gives up.
        With a cache, an identical earlier request is answered from it (cost 0)."""
        started = time.monotonic()
        key = None
        if self.cache is not None:
            key = cache_key({
                "base_url": self.base_url, "model": self.model.model, "temperature": self.model.temperature,
                "max_tokens": self.model.max_tokens, "json_mode": self._json_mode, "schema": schema, "messages": messages,
            })
            hit = self.cache.get(key)
            if hit is not None:
                return Completion(
                    text=hit["text"], model=hit["model"] or self.model.model, prompt_tokens=hit["prompt_tokens"],
                    completion_tokens=hit["completion_tokens"], cost=0.0, seconds=time.monotonic() - started,
                    attempts=0, json_mode=self._json_mode if schema else "none", cached=True,
                )
        attempt = 0
        while True:
            attempt += 1
            response_format = self._response_format(schema_name, schema)
            try:
                text, model_name, usage = self._once(messages, role, response_format, on_token)
            except _Retryable as error:
                if attempt > self.model.max_retries:
                    raise ServiceError(
                        redact(f"{error} (gave up after {attempt} attempt{'s' if attempt > 1 else ''})"),
                        fix="check that the service is up, or raise max_retries/timeout_s in agents.yaml",
                    ) from None
                delay = backoff_delay(attempt, error.retry_after)
                logger.warning("model call failed (%s); retry %d in %.1fs", redact(str(error)), attempt, delay)
                time.sleep(delay)
                continue
            except openai.BadRequestError as error:
                if response_format is not None and self._json_mode in JSON_MODE_FALLBACK and _mentions_format(error):
                    self._json_mode = JSON_MODE_FALLBACK[self._json_mode]
                    logger.warning("endpoint rejected the JSON mode; falling back to %s", self._json_mode)
                    attempt -= 1
                    continue
                raise ServiceError(redact(f"the model service rejected the request: {_status_text(error)}"), fix="check the model name and settings in agents.yaml") from None
            except openai.AuthenticationError as error:
                raise ServiceError(redact(f"the model service refused the API key: {_status_text(error)}"), fix="check the key in the endpoint's api_key_env variable") from None
            except openai.APIStatusError as error:
                raise ServiceError(redact(f"the model service answered {_status_text(error)}"), fix="check the endpoint URL and model name") from None
            prompt_tokens = usage.get("prompt_tokens") if usage else None
            completion_tokens = usage.get("completion_tokens") if usage else None
            cost = self.model.cost(prompt_tokens or 0, completion_tokens or 0) if usage else None
            if self.cache is not None and key is not None:
                self.cache.put(key, text, model_name or self.model.model, prompt_tokens, completion_tokens)
            return Completion(
                text=text,
                model=model_name or self.model.model,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                cost=cost,
                seconds=time.monotonic() - started,
                attempts=attempt,
                json_mode=self._json_mode if response_format else "none",
            )

    def _once(
        self,
        messages: list[dict[str, Any]],
        role: str,
        response_format: dict[str, Any] | None,
        on_token: TokenCallback | None,
    ) -> tuple[str, str | None, dict[str, Any] | None]:
        params: dict[str, Any] = {"model": self.model.model, "messages": messages}
        if self.model.temperature is not None:
            params["temperature"] = self.model.temperature
        if self.model.max_tokens is not None:
            params["max_tokens"] = self.model.max_tokens
        if response_format is not None:
            params["response_format"] = response_format
        # The role travels as a header so gateways (and our tests) can attribute each request.
        params["extra_headers"] = {"X-Maps-Role": role}
        try:
            if self.model.stream:
                return self._streamed(params, on_token)
            reply = self._client.chat.completions.create(**params)
        except openai.APITimeoutError:
            raise _Retryable(f"the model service at {self.base_url} did not answer within {self.model.timeout_s:g}s") from None
        except openai.APIConnectionError:
            raise _Retryable(f"cannot reach the model service at {self.base_url}") from None
        except (openai.RateLimitError, openai.InternalServerError) as error:
            raise _Retryable(f"the model service answered {_status_text(error)}", _retry_after(error.response)) from None
        except openai.APIStatusError as error:
            if error.status_code in (408, 409) or error.status_code >= 500:
                raise _Retryable(f"the model service answered {_status_text(error)}", _retry_after(error.response)) from None
            raise
        except (json.JSONDecodeError, openai.APIResponseValidationError, UnicodeDecodeError):
            raise _Retryable("the model service sent a malformed reply (not valid JSON)") from None
        choices = getattr(reply, "choices", None)
        if not isinstance(choices, list) or not choices or choices[0].message is None or choices[0].message.content is None:
            raise _Retryable("the model service sent a reply without message content")
        usage = reply.usage.model_dump() if getattr(reply, "usage", None) is not None else None
        return choices[0].message.content, getattr(reply, "model", None), usage

    def _streamed(self, params: dict[str, Any], on_token: TokenCallback | None) -> tuple[str, str | None, dict[str, Any] | None]:
        params = {**params, "stream": True, "stream_options": {"include_usage": True}}
        pieces: list[str] = []
        usage = None
        model_name = None
        try:
            with self._client.chat.completions.create(**params) as stream:
                for chunk in stream:
                    model_name = getattr(chunk, "model", None) or model_name
                    if getattr(chunk, "usage", None) is not None:
                        usage = chunk.usage.model_dump()
                    for choice in chunk.choices or []:
                        delta = choice.delta.content if choice.delta else None
                        if delta:
                            pieces.append(delta)
                            if on_token is not None:
                                on_token(delta)
        except (json.JSONDecodeError, openai.APIResponseValidationError):
            raise _Retryable("the model service sent a malformed streamed reply") from None
        except httpx.HTTPError:
            raise _Retryable(f"the stream from {self.base_url} broke off") from None
        if not pieces:
            raise _Retryable("the model service streamed no content")
        return "".join(pieces), model_name, usage


def _status_text(error: openai.APIStatusError) -> str:
    message = ""
    try:
        body = error.response.json()
        detail = body.get("error", body) if isinstance(body, dict) else body
        message = detail.get("message", "") if isinstance(detail, dict) else str(detail)
    except Exception:  # the body is whatever the server sent; the status code is enough
        message = ""
    message = " ".join(str(message).split())[:200]
    return f"HTTP {error.status_code}" + (f": {message}" if message else "")


def _mentions_format(error: openai.BadRequestError) -> bool:
    text = _status_text(error).lower()
    return "response_format" in text or "json_schema" in text or "json schema" in text


class _AG2Response:
    """The minimal response object AG2's OpenAIWrapper needs from a custom client."""

    def __init__(self, completion: Completion):
        message = type("Message", (), {"content": completion.text, "function_call": None, "tool_calls": None})()
        self.choices = [type("Choice", (), {"message": message, "finish_reason": "stop"})()]
        self.model = completion.model
        self.completion = completion
        self.cost = completion.cost or 0.0
        self.message_retrieval_function = None


class MapsModelClient:
    """AG2 custom model client: hands the messages AG2 prepared to a `call` function."""

    def __init__(self, config: dict[str, Any], *, call: Callable[[list[dict[str, Any]]], Completion], **_: Any):
        self._call = call
        self.config = config

    def create(self, params: dict[str, Any]) -> _AG2Response:
        return _AG2Response(self._call(params["messages"]))

    def message_retrieval(self, response: _AG2Response) -> list[str]:
        return [choice.message.content for choice in response.choices]

    def cost(self, response: _AG2Response) -> float:
        return response.cost

    @staticmethod
    def get_usage(response: _AG2Response) -> dict[str, Any]:
        completion = response.completion
        return {
            "prompt_tokens": completion.prompt_tokens or 0,
            "completion_tokens": completion.completion_tokens or 0,
            "total_tokens": (completion.prompt_tokens or 0) + (completion.completion_tokens or 0),
            "cost": response.cost,
            "model": completion.model,
        }
