"""One finished model call as our client returns it: the reply's text, the model that served
it, its usage and cost, and what was sent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from maps_autogen.records import CallUsage, SentSettings


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
    finish_reason: str | None = None  # "length": the reply hit max_tokens and is cut short
    served_model: str | None = None  # the model the service says answered, when it differs from `model`
    sent: SentSettings = field(default_factory=SentSettings)  # the settings read back from the request body sent
    rejected: str | None = None  # why the reply's text failed its check on the last allowed attempt
    truncated: bool = False  # the reply was longer than limits.reply_bytes and was cut
    tokens_estimated: bool = False  # the server reported no usable usage: counted by tokens.METHOD
    usage_unusable: str | None = None  # why the usage the server reported could not be used
    # what was sent when it differs from the messages asked for: a retry of an unusable reply, its note appended
    messages: list[dict[str, Any]] | None = None
    cached_tokens: int | None = None  # of prompt_tokens, read from the service's prefix cache (when it said)
    cached_rate: float | None = None  # USD per million the cached tokens were priced at (None: unpriced)
    batch: str | None = None  # the batch that answered it (maps eval --batch); None: a live call
    prompt_rate: float | None = None  # a batch call's USD per million prompt tokens (None: unpriced)
    completion_rate: float | None = None  # a batch call's USD per million completion tokens
    # seconds spent waiting for a server that answers one request at a time (maps' local one), not in `seconds`
    waited_s: float = 0.0

    def usage(self) -> CallUsage:
        """This call's usage as its transcript message records it (`truncated` and
        `usage_unusable` only when they apply)."""
        usage = CallUsage(prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens, cost=self.cost,
                          seconds=round(self.seconds, 4), attempts=self.attempts, cached=self.cached,
                          tokens_estimated=self.tokens_estimated)
        if self.cached_tokens is not None:
            usage = usage.model_copy(update={"cached_tokens": self.cached_tokens, "cached_rate": self.cached_rate})
        if self.truncated:
            usage = usage.model_copy(update={"truncated": True})
        if self.usage_unusable:
            usage = usage.model_copy(update={"usage_unusable": self.usage_unusable})
        if self.batch is not None:
            usage = usage.model_copy(update={"batch": self.batch, "prompt_rate": self.prompt_rate,
                                             "completion_rate": self.completion_rate})
        return usage
