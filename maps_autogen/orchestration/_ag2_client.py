"""The AG2 adapter: `MapsModelClient` plugs our HTTP client (`maps_autogen.model._client.ChatBackend`)
into AG2 as a custom model client, so AG2's agents make their calls through it."""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from maps_autogen.model import Completion
from maps_autogen.records import dumped


class _AG2Response:
    """The minimal response object AG2's OpenAIWrapper needs from a custom client."""

    def __init__(self, completion: Completion):
        message = SimpleNamespace(content=completion.text, function_call=None, tool_calls=None)
        self.choices = [SimpleNamespace(message=message, finish_reason=completion.finish_reason or "stop")]
        self.model = completion.model
        self.completion = completion
        self.cost = completion.cost or 0.0
        self.message_retrieval_function = None

    def __str__(self) -> str:
        """What AG2's file logger writes for the response (it logs `str(response)`): JSON."""
        completion = self.completion
        return json.dumps({"model": completion.served_model or completion.model, "text": completion.text,
                           "finish_reason": completion.finish_reason, "usage": dumped(completion.usage())},
                          ensure_ascii=False)


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
