"""`maps serve`: llama.cpp's OpenAI-compatible server on a GGUF model of your own, from the xllamacpp
wheel maps installs, through `api`'s serve_model; it says where it serves, the context each request
gets (read back from the server) and the lines that point `maps` at it, and serves until Ctrl-C."""

from __future__ import annotations

import threading
from typing import Any

import click

from maps_autogen.cli._shared import options_of, say
from maps_autogen.model.local import ModelServerOptions


@click.command(name="serve")
@options_of(ModelServerOptions)
def serve_command(**declared: Any) -> None:
    """Serve a GGUF model with llama.cpp's OpenAI-compatible server on 127.0.0.1 (Ctrl-C stops it)."""
    import httpx

    from maps_autogen.api import serve_model
    from maps_autogen.model._context import read_server_context

    options = ModelServerOptions.from_cli(declared)
    server = serve_model(options)
    try:
        with httpx.Client(trust_env=False) as http:  # asked once: no connection held while it serves
            context = read_server_context(http, server.base_url, server.model_name, {})
        room = (f"{context.tokens:,} tokens per request (said by {context.source})" if context is not None
                else "its context per request unknown")
        say(f"serving {server.model_name} at {server.base_url}: {room}; Ctrl-C stops it (log: {server.log_path})")
        say("point maps at it from another terminal (no key needed):")
        say(f"  export OPENAI_BASE_URL={server.base_url}")
        if server.supports_images:
            say(f"  maps solve --problem examples/lever/problem.yaml --model {server.model_name}")
        else:  # a text-only model: a note stands in for each image (docs/own-server.md)
            say(f"  maps solve --problem examples/lever/problem.yaml --model {server.model_name} "
                "--config examples/text-only.yaml")
        stopped = threading.Event()
        while server.is_alive():
            stopped.wait(1.0)
        server.ensure_alive()  # it died: one line naming its log
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM as Ctrl-C: the way a server is stopped
        click.echo("stopped", err=True)
    finally:
        server.stop()
