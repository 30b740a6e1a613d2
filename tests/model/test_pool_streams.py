"""A replica's streamed reply that the reader stops reading early (at `[DONE]`, before the
body's end) is counted as served, as llama.cpp's real server showed (tests/model/test_pool_real_server.py)."""

from __future__ import annotations

import httpx

from maps_autogen.model._pool import PoolTransport, ReplicaPool


def test_a_stream_read_up_to_its_done_line_counts_as_served() -> None:
    body = b'data: {"choices": []}\n\ndata: [DONE]\n\n'

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=httpx.ByteStream(body), headers={"content-type": "text/event-stream"})

    pool = ReplicaPool(["http://a/v1", "http://b/v1"])
    with httpx.Client(transport=PoolTransport(pool, httpx.MockTransport(handle))) as http:
        with http.stream("POST", "http://a/v1/chat/completions", json={}) as response:
            for line in response.iter_lines():
                if line == "data: [DONE]":
                    break  # as the chat client does
    assert pool.served() == {"http://a/v1": 1, "http://b/v1": 0}
    assert [r.in_flight for r in pool.replicas] == [0, 0]
