"""What a batch's answers mean, read from untrusted bytes as the live replies they stand for
(model/_batch_backend.py's `reply_of`, model/_batch_api.py's readers), and the ledger's rule of
which custom id an ask takes (model/_batch_ledger.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from maps_autogen._util import FatalServiceError, ServiceError
from maps_autogen.model._batch_api import answer_of, batch_state
from maps_autogen.model._batch_backend import reply_of
from maps_autogen.model._batch_ledger import Ledger, key_of, make_custom_id, request_key
from maps_autogen.model._service_answers import Rejected, Retryable, rejection_error
from maps_autogen.records import BatchAnswer, BatchRecord
from maps_autogen.settings import ResolvedModel

MODEL = ResolvedModel(endpoint_name="openai", kind="openai", model="gpt-4o", base_url="http://127.0.0.1:1/v1",
                      timeout_s=10, max_retries=1, json_mode="schema", stream=False, temperature=0.0, max_tokens=10)


def completion(text: str = "42") -> dict:
    return {"id": "c", "object": "chat.completion", "model": "gpt-4o-2024-08-06",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}


def test_an_output_line_is_the_reply_received_live() -> None:
    line = {"id": "batch_req_1", "custom_id": "solver-k-0",
            "response": {"status_code": 200, "request_id": "req_1", "body": completion()}, "error": None}
    answer = answer_of(line)
    assert answer is not None and answer.status_code == 200 and answer.request_id == "req_1"
    assert reply_of(answer) == ("42", "gpt-4o-2024-08-06", completion()["usage"], "stop")


@pytest.mark.parametrize(("status", "message", "live"), [
    (401, "Incorrect API key provided", "the model service refused the API key: HTTP 401"),
    (404, "The model gpt-5 does not exist", "the model service has no such model or URL: HTTP 404"),
    (400, "This model's maximum context length is 128000 tokens", "the request is longer than the model's context"),
    (400, "Invalid value for 'response_format'", "the model service rejected the request: HTTP 400"),
    (500, "image input is not supported", "the model gpt-4o does not accept images"),  # llama.cpp's, as a 500
])
def test_an_error_line_is_the_error_received_live(status: int, message: str, live: str) -> None:
    answer = answer_of({"custom_id": "x-k-0", "response": {"status_code": status, "body": {"error": {
        "message": message}}}, "error": None})
    assert answer is not None
    with pytest.raises(Rejected) as rejected:
        reply_of(answer)
    error = rejection_error(rejected.value, MODEL)
    assert str(error).startswith(live) and isinstance(error, FatalServiceError) == (status != 400)


@pytest.mark.parametrize("line", [
    {"custom_id": "x-k-0", "response": {"status_code": 429, "body": {"error": {"message": "Rate limit"}}}},
    {"custom_id": "x-k-0", "response": {"status_code": 503, "body": "overloaded"}},
    {"custom_id": "x-k-0", "response": None, "error": {"code": "request_timeout", "message": "timed out"}},
    # An error inside an HTTP 200 (OpenRouter's shape), read as read_completion reads it live.
    {"custom_id": "x-k-0", "response": {"status_code": 200, "body": {"error": {"message": "upstream", "code": 502}}}},
    {"custom_id": "x-k-0", "response": {"status_code": 200, "body": {"choices": []}}},
])
def test_what_is_worth_another_try_is_tried_again(line: dict) -> None:
    answer = answer_of(line)
    assert answer is not None
    with pytest.raises(Retryable):
        reply_of(answer)


@pytest.mark.parametrize("data", [None, [], "batch", {"status": "completed"}, {"id": "b", "status": "done"},
                                  {"id": ["b"], "status": "completed"}])
def test_what_is_no_batch_object_is_one_line(data: object) -> None:
    with pytest.raises(ServiceError) as error:
        batch_state(data)
    assert "\n" not in str(error.value) and "batch" in str(error.value)


def test_a_batch_object_is_read_bounded() -> None:
    state = batch_state({"id": "b" * 10_000, "status": "failed", "request_counts": {"total": -3, "completed": True},
                         "errors": {"data": [{"code": "x" * 500, "message": "m" * 5_000, "line": 2}] * 100}})
    assert len(state.id) == 256 and state.counts is not None and state.counts.total == 0
    assert len(state.errors) == 20 and len(state.errors[0][0]) == 80 and state.errors[0][2] == 2


@pytest.mark.parametrize("line", [None, 3, [], {}, {"custom_id": ""}, {"custom_id": 7, "response": {}}])
def test_a_line_that_names_no_request_is_no_answer(line: object) -> None:
    assert answer_of(line) is None


def test_an_ask_takes_a_reply_then_a_running_batch_then_a_new_id(tmp_path: Path) -> None:
    key = request_key("http://s/v1", "/v1/chat/completions", {"model": "m", "messages": []})
    ids = [make_custom_id("Solver Step", key, n) for n in range(4)]
    assert ids[0] == f"solver_step-{key}-0" and key_of(ids[3]) == key
    ledger = Ledger(tmp_path)
    ended = BatchRecord(number=1, round=1, endpoint="openai", model="m", service="s", custom_ids=ids[:2],
                        batch_id="b1", status="completed", answers_read=True)
    running = BatchRecord(number=2, round=2, endpoint="openai", model="m", service="s", custom_ids=ids[2:3],
                          batch_id="b2", status="in_progress")
    ledger.write(ended)
    ledger.write(running)
    # ids[0] was answered with an error (not read back: sent again), ids[1] with a reply.
    ledger.store_answers(1, [BatchAnswer(custom_id=ids[0], status_code=500, body={"error": {"message": "x"}}),
                             BatchAnswer(custom_id=ids[1], status_code=200, body=completion())])
    resumed = Ledger(tmp_path)  # read back from the folder
    assert resumed.has_reply(key)
    first = resumed.claim("solver", key)
    assert (first.kind, first.custom_id) == ("answered", ids[1])
    second = resumed.claim("solver", key)
    assert (second.kind, second.custom_id, second.number) == ("waiting", ids[2], 2)
    third = resumed.claim("solver", key)
    assert (third.kind, third.custom_id) == ("new", make_custom_id("solver", key, 3))  # never an id sent before
    assert not resumed.has_reply(key) and resumed.replayed == 1
