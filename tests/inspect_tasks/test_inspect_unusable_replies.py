"""Through Inspect, a reply that fails its check (an unparseable review) is asked for again only
when the same request can give another reply: never at temperature 0, with a seed, or when it
was cut at max_tokens (the same request would come back the same); with sampling that can
differ, up to the endpoint's max_retries."""

from __future__ import annotations

import asyncio
import os

import pytest

if os.environ.get("CI") != "true":  # CI installs the inspect extra (scripts/setup.sh): missing is a failure
    pytest.importorskip("inspect_ai")

from inspect_ai.model import ModelOutput, ModelUsage, get_model

from maps_autogen.inspect_tasks._backend import InspectBackend, SampleLoop
from maps_autogen.settings._endpoints import ResolvedModel

MAX_RETRIES = 3


def attempts(*, stop: str = "stop", temperature: float | None = 0.0, seed: int | None = None) -> tuple[int, int]:
    """(attempts the backend made, requests the model received) for a reply that never passes its check."""
    output = ModelOutput.from_content("mockllm/model", "not JSON", stop_reason=stop)  # type: ignore[arg-type]
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # (no tokenizer download)
    model = get_model("mockllm/model", custom_outputs=[output] * (MAX_RETRIES + 2))
    resolved = ResolvedModel(endpoint_name="inspect", kind="inspect", model="mockllm/model", base_url=None,
                             timeout_s=60, max_retries=MAX_RETRIES, json_mode="schema", stream=False,
                             temperature=temperature, max_tokens=100, seed=seed)
    received: list[int] = []

    async def solve() -> int:
        backend = InspectBackend(resolved, model, SampleLoop(asyncio.get_running_loop()))
        original = model.api.generate

        async def counted(*args: object, **kwargs: object) -> object:
            received.append(1)
            return await original(*args, **kwargs)  # type: ignore[arg-type]

        model.api.generate = counted  # type: ignore[method-assign]
        completion = await asyncio.to_thread(backend.complete, [{"role": "user", "content": "review"}], role="critic",
                                             check=lambda text: "not valid JSON")
        assert completion.rejected == "not valid JSON"
        return completion.attempts

    return asyncio.run(solve()), len(received)


def test_a_greedy_request_is_not_sent_again() -> None:
    assert attempts(temperature=0.0) == (1, 1)


def test_a_seeded_request_is_not_sent_again() -> None:
    assert attempts(temperature=0.7, seed=11) == (1, 1)


def test_a_reply_cut_at_max_tokens_is_not_sent_again() -> None:
    assert attempts(temperature=0.7, stop="max_tokens") == (1, 1)


def test_sampling_that_can_differ_is_asked_again_up_to_max_retries() -> None:
    assert attempts(temperature=0.7) == (MAX_RETRIES + 1, MAX_RETRIES + 1)
    assert attempts(temperature=None) == (MAX_RETRIES + 1, MAX_RETRIES + 1)  # the service's default sampling
