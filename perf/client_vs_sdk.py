"""Our HTTP client (maps_autogen/model/_client.py) beside the `openai` SDK, side by side: the same
chat requests, one after another, to the same scripted service (aiohttp, in its own process, answering
at once), and the client process's CPU per call (`time.process_time`: the service's CPU is not
counted). Three requests: a short text request, one carrying a 200 KB image (a base64 data URL, as
maps sends images), and an Aligner-sized one (a few KB of text). Each figure is the median (min-max)
over `--rounds` interleaved rounds (ours, the SDK, ours, ...) of `--calls` calls each; the SDK's
client is made once, as a user of it would, and so is ours.

    .venv/bin/python perf/client_vs_sdk.py            # 300 calls per round, 5 rounds
    .venv/bin/python perf/client_vs_sdk.py --short    # seconds: small sizes, figures not meaningful
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _service import serve_until_stdin_closes, spawn_service, stop_service

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-perf-not-a-key"
REPLY = "ALIGNED: the lever balances when the torques on both sides are equal."


def _serve() -> None:
    from aiohttp import web

    async def complete(request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response({
            "id": "chatcmpl-perf", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", complete)
    serve_until_stdin_closes(app)


def _image_url(kilobytes: int) -> str:
    from PIL import Image

    side = 8
    while True:  # noise compresses badly: grow until the PNG is the size asked for
        image = Image.frombytes("RGB", (side, side), os.urandom(side * side * 3))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        if buffer.tell() >= kilobytes * 1024:
            return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
        side = int(side * 1.25) + 1


def requests() -> dict[str, list[dict[str, Any]]]:
    aligner = ("Problem: a light lever with a 2 kg mass 1 m left of the pivot; which mass 0.5 m to the right "
               "balances it?\n" + "Interpreter's caption: a horizontal bar on a triangular pivot. " * 40)
    return {
        "text request": [{"role": "user", "content": "What is 2 + 2?"}],
        "200 KB image": [{"role": "user", "content": [{"type": "text", "text": "Describe the diagram."},
                                                      {"type": "image_url", "image_url": {"url": _image_url(200)}}]}],
        "Aligner request": [{"role": "system", "content": "You align the caption with the question."},
                            {"role": "user", "content": aligner}],
    }


def ours(base_url: str) -> Callable[[list[dict[str, Any]]], str]:
    sys.path.insert(0, str(ROOT))
    from maps_autogen.model._client import ChatBackend
    from maps_autogen.settings._endpoints import ResolvedModel

    model = ResolvedModel(endpoint_name="perf", kind="openai", model="m", base_url=f"{base_url}/v1", timeout_s=30,
                          max_retries=0, json_mode="none", stream=False, temperature=0.0, max_tokens=64, api_key=KEY)
    backend = ChatBackend(model)
    return lambda messages: backend.complete(messages, role="aligner").text


def sdk(base_url: str) -> Callable[[list[dict[str, Any]]], str]:
    from openai import OpenAI

    client = OpenAI(base_url=f"{base_url}/v1", api_key=KEY, max_retries=0, timeout=30)

    def call(messages: list[dict[str, Any]]) -> str:
        reply = client.chat.completions.create(model="m", messages=messages, temperature=0.0,  # type: ignore[arg-type]
                                               max_tokens=64)
        return reply.choices[0].message.content or ""

    return call


def cpu_ms_per_call(call: Callable[[list[dict[str, Any]]], str], messages: list[dict[str, Any]], calls: int) -> float:
    assert call(messages) == REPLY  # warm: connections open, imports done
    start = time.process_time()
    for _ in range(calls):
        call(messages)
    return (time.process_time() - start) * 1000 / calls


def figure(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--short", action="store_true", help="small sizes: the script runs, figures mean nothing")
    args = parser.parse_args()
    calls, rounds = (10, 2) if args.short else (args.calls, args.rounds)
    service, base_url = spawn_service(__file__, "_serve")
    try:
        clients = {"ours": ours(base_url), "openai SDK": sdk(base_url)}
        for name, messages in requests().items():
            measured: dict[str, list[float]] = {client: [] for client in clients}
            for _ in range(rounds):
                for client, call in clients.items():
                    measured[client].append(cpu_ms_per_call(call, messages, calls))
            ratio = statistics.median(measured["openai SDK"]) / statistics.median(measured["ours"])
            size = len(json.dumps(messages)) // 1024
            print(f"{name} ({size} KB): CPU per call, ours {figure(measured['ours'])} ms, openai SDK "
                  f"{figure(measured['openai SDK'])} ms = {ratio:.2f}x (median (min-max) of {rounds} rounds of "
                  f"{calls} calls, one core, the service in its own process)", flush=True)
    finally:
        stop_service(service)


if __name__ == "__main__":
    if sys.argv[1:2] == ["_serve"]:
        _serve()
    else:
        main()
