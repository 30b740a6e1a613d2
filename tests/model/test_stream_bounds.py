"""A streamed reply is bounded in time and size, whatever the service keeps sending:
keep-alive comments, role-only deltas and empty deltas are not progress (stream_idle_s ends
them), text past the reply limit closes the stream (the reply is cut and flagged truncated),
and the whole stream ends within stream_total_s."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from maps_autogen._util._errors import ServiceError
from maps_autogen.model._client import ChatBackend, Completion
from maps_autogen.model._service_answers import StreamedReply, stream_chunk
from maps_autogen.settings._endpoints import ResolvedModel
from tests.helpers.common import TEST_KEY, clean_env, make_png, run_maps, write_config
from tests.helpers.fake_openai import FakeOpenAI, Reply, RoleScript

START = b'data: {"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"The lever "}}]}\n\n'
ENDLESS = {
    "keep-alive comments": b": OPENROUTER PROCESSING\n\n",
    "role-only deltas": b'data: {"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}\n\n',
    "empty deltas": b'data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}\n\n',
    "chunks without choices": b'data: {"id":"x","object":"chat.completion.chunk","choices":[]}\n\n',
}
# An endless run of such chunks must end: a generous guard, far past every bound set below.
GUARD_S = 120


def backend(server: FakeOpenAI, **changes: Any) -> ChatBackend:
    settings: dict[str, Any] = dict(endpoint_name="svc", kind="openai", model="m", base_url=server.base_url,
                                    timeout_s=5, max_retries=0, json_mode="none", stream=True, temperature=0.0,
                                    max_tokens=64, stream_idle_s=1.0, stream_total_s=600.0)
    settings.update(changes)
    limit = settings.pop("max_reply_bytes", 256 * 1024)
    return ChatBackend(ResolvedModel(**settings), max_reply_bytes=limit)


def finishes(call) -> Completion | BaseException:
    """What `call()` returned or raised, waiting at most GUARD_S for it (it must end)."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(GUARD_S)
    assert outcome, f"the stream did not end within {GUARD_S}s"
    return outcome[0]


@pytest.mark.parametrize("kind", sorted(ENDLESS))
def test_what_is_not_progress_never_keeps_a_stream_alive(kind: str) -> None:
    endless = Reply(stream_bytes=[START], repeat=ENDLESS[kind], repeat_s=0.01)
    with FakeOpenAI(lambda request: endless) as server:
        outcome = finishes(lambda: backend(server).complete([{"role": "user", "content": "hi"}], role="solver"))
    assert isinstance(outcome, ServiceError), outcome
    assert "sent nothing of its streamed reply for 1s (endpoints.svc.stream_idle_s)" in str(outcome)


def test_endless_text_is_cut_at_the_reply_limit_and_the_stream_closed() -> None:
    text = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * 200 + b'"}}]}\n\n'
    with FakeOpenAI(lambda request: Reply(stream_bytes=[START], repeat=text, repeat_s=0.0)) as server:
        outcome = finishes(lambda: backend(server, max_reply_bytes=4096).complete(
            [{"role": "user", "content": "hi"}], role="solver"))
    assert isinstance(outcome, Completion), outcome
    assert outcome.truncated and outcome.usage().truncated is True
    assert 4096 <= len(outcome.text.encode()) <= 4096 + 200 + 16 and outcome.text.startswith("The lever x")


def test_endless_reasoning_is_cut_too() -> None:
    thought = b'data: {"choices":[{"index":0,"delta":{"reasoning_content":"' + b"y" * 500 + b'"}}]}\n\n'
    with FakeOpenAI(lambda request: Reply(stream_bytes=[START], repeat=thought, repeat_s=0.0)) as server:
        outcome = finishes(lambda: backend(server, max_reply_bytes=4096).complete(
            [{"role": "user", "content": "hi"}], role="solver"))
    assert isinstance(outcome, Completion) and outcome.truncated and outcome.text == "The lever "


def test_a_steady_trickle_ends_at_stream_total_s() -> None:
    piece = b'data: {"choices":[{"index":0,"delta":{"content":"y"}}]}\n\n'
    with FakeOpenAI(lambda request: Reply(stream_bytes=[START], repeat=piece, repeat_s=0.05)) as server:
        outcome = finishes(lambda: backend(server, stream_idle_s=30, stream_total_s=2).complete(
            [{"role": "user", "content": "hi"}], role="solver"))
    assert isinstance(outcome, ServiceError), outcome
    assert "did not end within 2s (endpoints.svc.stream_total_s)" in str(outcome)
    assert "raise endpoints.svc.stream_total_s" in str(outcome)


def test_progress_is_text_reasoning_a_finish_reason_or_usage() -> None:
    reply = StreamedReply(1024, None)
    for data, grows in [
        ('{"choices":[{"index":0,"delta":{"role":"assistant"}}]}', False),
        ('{"choices":[{"index":0,"delta":{"content":""}}]}', False),
        ('{"choices":[]}', False),
        ('{"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}', True),
        ('{"choices":[{"index":0,"delta":{"reasoning":"so"}}]}', True),
        ('{"choices":[{"index":0,"delta":{"content":"A"}}]}', True),
        ('{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}', True),
        ('{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}', True),
    ]:
        before = reply.progress
        reply.add(stream_chunk(data))
        assert (reply.progress > before) is grows, data
    assert reply.pieces == ["A"]


def test_the_cli_run_ends_with_the_idle_bound_named(tmp_path: Path) -> None:
    png = make_png(tmp_path / "lever.png")
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.stream": True, "endpoints.openai.stream_idle_s": 1,
                                              "endpoints.openai.timeout_s": 5, "endpoints.openai.max_retries": 0})
    endless = Reply(stream_bytes=[START], repeat=ENDLESS["role-only deltas"], repeat_s=0.01)
    with FakeOpenAI(RoleScript({"interpreter": [endless]})) as server:
        result = run_maps(["solve", str(png), "-q", "Which mass?", "--runs-dir", str(tmp_path / "runs")],
                          env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path,
                          timeout=GUARD_S)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "stream_idle_s" in result.stderr
