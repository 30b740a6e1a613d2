"""A model server's context window, its context-size errors, and what cut a reply short.

The context is the most tokens one request (its prompt and its reply together) may hold, read
where the server says it. A reply cut short is said with what cut it (its max_tokens, the
context, or a model repeating itself) and the setting that changes it.

Where servers say it (their documented shapes, read from their source):
- vLLM: `max_model_len` on the model's entry of `GET /v1/models` (its `ModelCard`);
- llama.cpp's server: `default_generation_settings.n_ctx` of `GET /props` (one slot's context:
  the server's `--ctx-size` divided among its `--parallel` slots), and `meta.n_ctx` on the
  model's entry of `GET /v1/models` (the same figure, per slot).
Other services (OpenAI, gateways) say nothing there: the context is then unknown, and nothing is
fitted to it (OpenAI's own API is not asked at all, and a server that does not answer is asked
once: its first call says why). Every answer is untrusted: bounded in size, shape-checked, a whole number in range.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from typing import Any

import httpx

from maps_autogen._util import ServiceError, read_capped
from maps_autogen.settings import ResolvedModel

#: The largest answer read (a gateway's /models may list hundreds of models).
PROBE_BYTES = 4 * 1024 * 1024
PROBE_TIMEOUT_S = 5.0
#: No server holds a billion tokens per request: a larger figure is as unusable as a negative one.
MAX_CONTEXT = 100_000_000
#: The key a step's max_tokens is named by once maps fitted it to the server's context (eval/_context_fit.py).
FITTED_KEY = "--max-tokens (maps fitted every step's max_tokens to the server's context)"
#: A reply whose last REPEAT_TAIL characters compress below REPEAT_RATIO of their size is going
#: round in a loop (ordinary text compresses to a third or more; a loop to a few percent).
REPEAT_TAIL = 2000
REPEAT_RATIO = 0.08
#: Services whose answers say no context window (OpenAI's models list has none): not asked.
SILENT = frozenset({"https://api.openai.com/v1"})
#: A request header naming what a probe is for (gateways and our tests can tell it from a call).
PROBE_HEADER = "X-Maps-Probe"

#: How each server kind is started with a larger context.
RAISE_CONTEXT = {
    "vllm": "start vLLM with a larger --max-model-len",
    "llama.cpp": "start llama.cpp's server with a larger --ctx-size, which its --parallel slots share "
                 "(maps serve MODEL.gguf --ctx-size N starts one)",
}
#: The servers' own words for a request longer than the context: llama.cpp ("request (9031 tokens)
#: exceeds the available context size (4096 tokens)", type exceed_context_size_error), vLLM and
#: OpenAI ("This model's maximum context length is 4096 tokens. However, you requested ...",
#: code context_length_exceeded).
_EXCEEDED = re.compile(
    r"exceeds? the (?:available )?context (?:size|length|window)|exceed_context_size"
    r"|maximum context length is|context_length_exceeded|context (?:size|length|window) (?:exceeded|is too small)",
    re.IGNORECASE)
_LIMIT = re.compile(
    r"context (?:size|length|window) (?:is |of )?\(?(\d{1,9}) tokens|maximum context length is (\d{1,9}) tokens",
    re.IGNORECASE)


@dataclass(frozen=True)
class ServerContext:
    """What a server said of its context: the most tokens per request, where it said so, and
    which server it is (how its context is raised)."""

    tokens: int
    source: str  # e.g. "llama.cpp's GET /props, default_generation_settings.n_ctx"
    server: str  # "vllm" | "llama.cpp"

    @property
    def how_to_raise(self) -> str:
        """The server's own setting that gives requests more room."""
        return RAISE_CONTEXT.get(self.server, "give the server a larger context")

    def describe(self) -> str:
        """"a context of 4,096 tokens per request (said by llama.cpp's GET /props, ...)"."""
        return f"a context of {self.tokens:,} tokens per request (said by {self.source})"


def exceeds_context(detail: str) -> bool:
    """Whether a service's error says the request is longer than the model's context."""
    return bool(_EXCEEDED.search(detail))


def context_in_error(detail: str) -> int | None:
    """The context size a context-size error names, when it names one."""
    match = _LIMIT.search(detail)
    if match is None:
        return None
    value = int(match.group(1) or match.group(2))
    return value if 0 < value <= MAX_CONTEXT else None


def context_error(cause: str, detail: str, model: ResolvedModel) -> ServiceError:
    """The one-line error for a request the service refused as longer than the model's context:
    the context (as the error or the server said it), the step's reply budget and the key that
    sets it, and the two ways out: smaller budgets (--max-tokens) or a larger context."""
    tokens = context_in_error(detail) or model.context_tokens
    context = f"the model's context ({tokens:,} tokens)" if tokens else "the model's context"
    budget = (f"this step's replies may take {model.max_tokens:,} tokens ({model.max_tokens_key})"
              if model.max_tokens is not None else "this step's replies have no max_tokens")
    raise_it = model.context_raise or ("give the server a larger context (llama.cpp's server: --ctx-size; vLLM: "
                                       "--max-model-len)")
    return ServiceError(
        f"the request is longer than {context}: {cause}",
        cause=cause,
        fix=f"{budget}: pass --max-tokens N for smaller replies, which later steps' requests hold, or {raise_it}",
    )


def repeating(text: str) -> bool:
    """Whether a reply ends going round in a loop (the same words again and again): its tail
    compresses to almost nothing. Linear in the tail, which is bounded."""
    tail = text[-REPEAT_TAIL:].encode("utf-8", errors="replace")
    return len(tail) >= REPEAT_TAIL // 2 and len(zlib.compress(tail)) < REPEAT_RATIO * len(tail)


def cut_off_detail(who: str, model: ResolvedModel, cap: int | None, prompt_tokens: int | None,
                   reply_tokens: int | None, text: str) -> str:
    """Why a reply ended with finish_reason "length" and what gives a longer one, `who` naming the
    step ("the Solver's"): a reply stopped below its cap ran out of the model's context (llama.cpp's
    server stops there), not of max_tokens; one going round in a loop would not end with more
    room; one at a cap maps fitted to the server's context needs a larger context; else the key
    that sets the step's max_tokens. `reply_tokens` as the server reported them (None: unknown)."""
    field = model.max_tokens_field
    at_cap = f"{field} ({cap})" if cap is not None else field
    raise_context = model.context_raise or ("give the server a larger context (llama.cpp's server: --ctx-size; "
                                            "vLLM: --max-model-len)")
    if cap is not None and reply_tokens is not None and reply_tokens < cap:
        context = (f"the server's {model.context_tokens:,}-token context" if model.context_tokens
                   else "the model's context")
        used = (f"{prompt_tokens:,} prompt and {reply_tokens:,} reply tokens" if prompt_tokens is not None
                else f"{reply_tokens:,} reply tokens")
        return (f"{who} reply was cut off after {reply_tokens:,} tokens, below its {at_cap}: {context} was full "
                f"({used}); {raise_context}, or pass --max-tokens N for shorter replies, which later requests hold")
    if repeating(text):
        return (f"{who} reply was cut off at {at_cap} while repeating itself: a larger {field} would not end it "
                "(a lower temperature, a repeat penalty or a larger model might)")
    if model.max_tokens_key == FITTED_KEY:
        return (f"{who} reply was cut off at {at_cap}, the cap maps fitted to the server's context: "
                f"{raise_context} for longer replies")
    return f"{who} reply was cut off at {at_cap}; raise {model.max_tokens_key} for longer replies"


def _whole(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_CONTEXT:
        return None
    return value


def _entry(body: Any, model: str) -> dict[str, Any] | None:
    """The model's entry of a /v1/models answer: the one whose id (or alias) is `model`, else the
    only one (llama.cpp's server serves one model, whatever name a request gives)."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    entries = [entry for entry in data[:1000] if isinstance(entry, dict)]
    for entry in entries:
        aliases = entry.get("aliases")
        named = aliases[:100] if isinstance(aliases, list) else []
        if entry.get("id") == model or model in named:
            return entry
    return entries[0] if len(entries) == 1 else None


def context_in_models(body: Any, model: str) -> ServerContext | None:
    """The context a `GET /v1/models` answer gives for `model`: vLLM's `max_model_len`, or
    llama.cpp's `meta.n_ctx`; None when it gives none."""
    entry = _entry(body, model)
    if entry is None:
        return None
    tokens = _whole(entry.get("max_model_len"))
    if tokens is not None:
        return ServerContext(tokens, "vLLM's max_model_len in GET /v1/models", "vllm")
    meta = entry.get("meta")
    tokens = _whole(meta.get("n_ctx")) if isinstance(meta, dict) else None
    if tokens is not None:
        return ServerContext(tokens, "llama.cpp's meta.n_ctx in GET /v1/models", "llama.cpp")
    return None


def context_in_props(body: Any) -> ServerContext | None:
    """The context llama.cpp's `GET /props` gives: one slot's, `default_generation_settings.n_ctx`
    (older servers: a top-level `n_ctx`); None when it gives none."""
    if not isinstance(body, dict):
        return None
    settings = body.get("default_generation_settings")
    tokens = _whole(settings.get("n_ctx")) if isinstance(settings, dict) else None
    if tokens is not None:
        return ServerContext(tokens, "llama.cpp's GET /props, default_generation_settings.n_ctx", "llama.cpp")
    tokens = _whole(body.get("n_ctx"))
    if tokens is not None:
        return ServerContext(tokens, "llama.cpp's GET /props, n_ctx", "llama.cpp")
    return None


class _Unreachable(Exception):
    """The server did not answer at all (no connection, no answer in time)."""


def _get_json(http: httpx.Client, url: str, headers: dict[str, str]) -> Any:
    """A GET's JSON answer (bounded), or None for anything else: an error status, a redirect (never
    followed: the key would go elsewhere), a body that is not JSON; _Unreachable when the server
    did not answer at all."""
    try:
        with http.stream("GET", url, headers=headers, timeout=PROBE_TIMEOUT_S) as response:
            if response.status_code != 200:
                return None
            raw = read_capped(response.iter_bytes(), PROBE_BYTES)
    except httpx.HTTPError as error:
        if isinstance(error, (httpx.TransportError, httpx.TimeoutException)):
            raise _Unreachable() from None
        return None
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def read_server_context(http: httpx.Client, base_url: str, model: str,
                        headers: dict[str, str]) -> ServerContext | None:
    """What the server at `base_url` (its OpenAI-compatible root, e.g. http://host:8080/v1) says
    of `model`'s context now: `GET <base_url>/models` (vLLM; llama.cpp), then llama.cpp's
    `GET <root>/props` (root: `base_url` without its /v1); None when neither says. Asked anew for
    every run (a server restarted with another context is read as it is), each answer bounded,
    none followed elsewhere."""
    if base_url.rstrip("/") in SILENT:
        return None
    asked = {**headers, PROBE_HEADER: "context"}
    base = base_url.rstrip("/")
    try:
        found = context_in_models(_get_json(http, f"{base}/models", asked), model)
        if found is None or found.server != "vllm":
            root = base[: -len("/v1")] if base.endswith("/v1") else base
            found = context_in_props(_get_json(http, f"{root}/props", asked)) or found
    except _Unreachable:  # nothing answers (or not in time): the first call says why, not this
        return None
    return found


__all__ = ["FITTED_KEY", "PROBE_HEADER", "ServerContext", "context_error", "context_in_error", "context_in_models",
           "context_in_props", "cut_off_detail", "exceeds_context", "read_server_context", "repeating"]
