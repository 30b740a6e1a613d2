"""`maps serve`'s options (and `maps_autogen.serve_model`'s), declared once (settings/_options.py says
what is made from them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from maps_autogen.settings import LocalEndpoint, Options, argument, bounds, option


@dataclass(frozen=True, kw_only=True)
class ModelServerOptions(Options):
    """What `maps serve` starts: llama.cpp's OpenAI-compatible server, from the xllamacpp wheel maps
    installs (no build needed), on a GGUF model file of your own, on 127.0.0.1."""

    model: Path = argument("A GGUF model file.", kind="path")
    port: int = option(8080, "--port", "Port on 127.0.0.1 (0: any free port).", kind="whole", low=0, high=65535)
    ctx_size: int = option(
        8192, "--ctx-size", "Context in tokens, shared by the --parallel slots: each request holds ctx-size / "
        "parallel (prompt and reply; at most what the model was trained with).", kind="whole",
        **bounds(LocalEndpoint, "n_ctx"))
    parallel: int = option(1, "--parallel", "Requests served at once (slots).", kind="whole", low=1, high=64)
    alias: str | None = option(
        None, "--alias", "The model name requests use (default: the file's name without .gguf).", kind="text")
    mmproj: Path | None = option(
        None, "--mmproj", "The model's image projector (mmproj-*.gguf): requests may then carry images.",
        kind="path")
    threads: int | None = option(
        None, "--threads", "CPU threads (default: the usable cores minus one, at most 8).", kind="whole",
        **bounds(LocalEndpoint, "n_threads"))
