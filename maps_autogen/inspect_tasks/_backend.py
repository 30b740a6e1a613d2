"""A step's model calls through Inspect's model API: our chat is synchronous (AG2, in a
worker thread) and Inspect is async, so each request is handed to the solver's event loop and
the thread waits for its reply.

The chat runs in a thread of its own (`in_chat_thread`) with a copy of the sample's context
(Inspect's transcript, active model, limits); `asyncio.run_coroutine_threadsafe` schedules each
request with that copied context, so Inspect records every call (a ModelEvent inside a span
named for the step) in the sample's transcript.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from typing import Any, TypeVar

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    Content,
    ContentImage,
    ContentText,
    GenerateConfig,
    Model,
    ModelOutput,
    ResponseSchema,
)
from inspect_ai.util import JSONSchema, span

from maps_autogen._util import RunInterrupted, ServiceError
from maps_autogen.model import Completion, ReplyCheck, RetryNote, TokenCallback, schema_response_format
from maps_autogen.records import SentSettings
from maps_autogen.settings import ResolvedModel

T = TypeVar("T")

#: Inspect's stop reasons that mean the reply was cut short (our `finish_reason` "length").
CUT_SHORT = ("max_tokens", "model_length")
#: The span type of one step's turn in the Inspect transcript.
TURN_SPAN = "maps-step"


def chat_messages(messages: list[dict[str, Any]]) -> list[ChatMessage]:
    """OpenAI-style messages (system/user/assistant; content text, or parts of text and
    `image_url`) as Inspect chat messages."""
    converted: list[ChatMessage] = []
    for message in messages:
        role = message.get("role")
        content = _content(message.get("content"))
        if role == "system":
            converted.append(ChatMessageSystem(content=content))
        elif role == "user":
            converted.append(ChatMessageUser(content=content))
        elif role == "assistant":
            converted.append(ChatMessageAssistant(content=content))
        else:
            raise ValueError(f"a request message has the role {role!r}, which has no Inspect counterpart")
    return converted


def _content(content: Any) -> str | list[Content]:
    if isinstance(content, str):
        return content
    parts: list[Content] = []
    for part in content or []:
        if part.get("type") == "text":
            parts.append(ContentText(text=str(part.get("text", ""))))
        elif part.get("type") == "image_url":
            image = part.get("image_url") or {}
            parts.append(ContentImage(image=str(image.get("url", "")), detail=image.get("detail", "auto")))
        else:
            raise ValueError(f"a request part has the type {part.get('type')!r}, which has no Inspect counterpart")
    return parts


def generate_config(model: ResolvedModel, role: str, schema_name: str | None,
                    schema: dict[str, Any] | None) -> GenerateConfig:
    """The step's sampling settings from the team config, its JSON reply schema (JSON mode
    `schema`), the X-Maps-Role header our own client sends too, and the server's own settings
    (`extra_body`: the local model's repeat penalty)."""
    response_schema = None
    if schema is not None and model.json_mode == "schema":
        response_schema = ResponseSchema(name=schema_name or "reply", json_schema=JSONSchema.model_validate(schema),
                                         strict=True)
    return GenerateConfig(max_tokens=model.max_tokens, temperature=model.temperature, top_p=model.top_p,
                          seed=model.seed, response_schema=response_schema, extra_headers={"X-Maps-Role": role},
                          extra_body=dict(model.extra_body) or None)


def with_whole_schema(inspect_model: Model, config: GenerateConfig, schema_name: str | None,
                      schema: dict[str, Any] | None) -> GenerateConfig:
    """`config` such that the reply schema reaches the service as `maps` sends it itself
    (`client.ChatBackend`, bounds included). Inspect's OpenAI-compatible providers (`openai-api`,
    `vllm`, `ollama`, ...) leave `minimum` and `maximum` out of the response format they build
    (their `schema_exclude_fields`), so the reviewer's 1-5 scores would arrive unbounded: on
    those, when they speak the chat-completions API, the whole `response_format` also goes in
    the request's `extra_body` (added to the eval's own), which the OpenAI SDK lays over the
    body it builds. Other providers keep Inspect's own conversion (their limits are theirs)."""
    api = inspect_model.api
    if schema is None or config.response_schema is None or not hasattr(api, "schema_exclude_fields"):
        return config
    if getattr(api, "responses_api", False):  # the Responses API has no `response_format`
        return config
    merged = inspect_model._resolve_config(config)  # Inspect's own merge: the eval's extra_body kept
    whole = schema_response_format(schema_name, schema)
    return config.model_copy(update={"extra_body": {**(merged.extra_body or {}), "response_format": whole}})


def repeatable(config: GenerateConfig) -> bool:
    """Whether sending the same request again would give the same reply: greedy decoding
    (temperature 0), a fixed seed, or Inspect's response cache."""
    return config.temperature == 0 or config.seed is not None or bool(config.cache)


def sent_settings(inspect_model: Model, config: GenerateConfig) -> SentSettings:
    """What a request carried: the model's name and the settings Inspect sends, merged as its
    `generate` merges them (the model's own, then the eval's `--temperature`, `--max-tokens`...
    when it is the active model, then the step's, which win)."""
    merged = inspect_model._resolve_config(config)  # Inspect's own merge, so the record is what was sent
    sent = SentSettings(model=str(inspect_model))
    for key in ("temperature", "max_tokens", "top_p", "seed"):
        if getattr(merged, key) is not None:
            sent = sent.model_copy(update={key: getattr(merged, key)})
    if merged.response_schema is not None:
        sent = sent.model_copy(update={"response_format": "json_schema"})
    return sent


def completion_of(output: ModelOutput, *, model: str, requested: str, seconds: float, attempts: int,
                  sent: SentSettings, rejected: str | None) -> Completion:
    """Inspect's ModelOutput as our Completion of `model` (Inspect's `provider/name`): text,
    finish reason ("length" when cut short), usage, and the model the service says answered
    when it differs from the one asked for (`requested`: Inspect's model name, whose last part
    an OpenAI-compatible service is sent)."""
    usage = output.usage
    asked = (requested, requested.rsplit("/", 1)[-1])
    served = output.model if output.model and output.model not in asked else None
    return Completion(
        text=output.completion,
        model=model,
        # Inspect counts cache reads apart from input_tokens; our prompt_tokens include them.
        prompt_tokens=usage.input_tokens + (usage.input_tokens_cache_read or 0) if usage else None,
        cached_tokens=usage.input_tokens_cache_read if usage else None,
        completion_tokens=usage.output_tokens if usage else None,
        cost=usage.total_cost if usage else None,
        seconds=seconds,
        attempts=attempts,
        json_mode="schema" if sent.response_format is not None else "none",
        finish_reason="length" if output.stop_reason in CUT_SHORT else output.stop_reason,
        served_model=served,
        sent=sent,
        rejected=rejected,
    )


#: The chats' threads: as many as Inspect runs samples at once (`--max-samples`), made as needed
#: and reused (each keeps its AG2 agents); a blocked chat waits on the loop, never holds it.
_CHAT_THREADS = ThreadPoolExecutor(max_workers=1024, thread_name_prefix="maps-chat")


async def in_chat_thread(function: Callable[[], T]) -> T:
    """Run `function` in a chat thread with a copy of the caller's context (Inspect's sample,
    transcript, active model and limits), as `asyncio.to_thread` does, without its default
    executor's cap of a few threads per core on the number of samples solved at once."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(_CHAT_THREADS, context.run, function)


class SampleLoop:
    """The solver's event loop, seen from the chat's thread: runs coroutines there and waits."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.failure: BaseException | None = None  # what ended the chat (re-raised by the solver)
        self._cancelled = False
        self._lock = threading.Lock()
        self._pending: Future[Any] | None = None

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the solver's loop (with this thread's context) and return its
        result; RunInterrupted once the sample is cancelled."""
        with self._lock:
            if self._cancelled:
                coroutine.close()
                raise RunInterrupted("the sample was cancelled")
            pending: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
            self._pending = pending
        try:
            return pending.result()
        except CancelledError:
            raise RunInterrupted("the sample was cancelled") from None

    def cancel(self) -> None:
        """The sample was cancelled (a limit, Ctrl-C): the request in flight is cancelled and
        no other starts, so the chat's thread ends."""
        with self._lock:
            self._cancelled = True
            if self._pending is not None:
                self._pending.cancel()


class InspectBackend:
    """One step's model calls through Inspect's `Model` (see `client.ModelBackend`)."""

    def __init__(self, model: ResolvedModel, inspect_model: Model, sample: SampleLoop):
        self.model = model
        self.supports_images = model.vision
        self._inspect = inspect_model
        self._sample = sample

    def settings(self) -> SentSettings:
        """The settings every request of this step carries."""
        return sent_settings(self._inspect, generate_config(self.model, "", None, None))

    async def _turn(self, role: str, messages: list[ChatMessage], config: GenerateConfig,
                    check: ReplyCheck | None) -> tuple[ModelOutput, int, str | None]:
        """One step's turn, in a span named for the step: the reply, the attempts it took and why
        its text was rejected (None: usable). A reply that fails `check` is asked for again, up
        to the endpoint's max_retries, only when the same request can give another reply: never
        when it was cut at max_tokens (the same request is cut the same way) nor when the request
        is `repeatable` (temperature 0, a seed, Inspect's cache): such a reply stands, rejected."""
        attempt = 0
        again = not repeatable(self._inspect._resolve_config(config))
        async with span(role, type=TURN_SPAN):
            while True:
                attempt += 1
                output = await self._inspect.generate(messages, config=config)
                rejected = check(output.completion) if check is not None and not output.error else None
                if (rejected is None or output.stop_reason in CUT_SHORT or not again
                        or attempt > self.model.max_retries):
                    return output, attempt, rejected

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        role: str,
        schema_name: str | None = None,
        schema: dict[str, Any] | None = None,
        on_token: TokenCallback | None = None,
        check: ReplyCheck | None = None,
        retry_note: RetryNote | None = None,  # unused: Inspect never re-sends a repeatable request
    ) -> Completion:
        """One reply through Inspect (its retries, limits, cache and log apply). A failure
        Inspect gives up on (or a limit it enforces) ends the chat as a service error; the
        solver re-raises the original."""
        started = time.monotonic()
        config = with_whole_schema(self._inspect, generate_config(self.model, role, schema_name, schema), schema_name,
                                   schema)
        sent = sent_settings(self._inspect, config)
        try:
            output, attempts, rejected = self._sample.run(self._turn(role, chat_messages(messages), config, check))
        except RunInterrupted:
            raise
        except Exception as failure:  # noqa: BLE001 - any failure is handed back to Inspect by the solver, as raised
            self._sample.failure = failure
            raise ServiceError(f"the {role} request failed: {failure.__class__.__name__}: {failure}") from None
        if output.error:
            raise ServiceError(f"the {role} request failed: {output.error}")
        return completion_of(output, model=self.model.model, requested=self._inspect.name,
                             seconds=time.monotonic() - started,
                             attempts=attempts, sent=sent, rejected=rejected)
