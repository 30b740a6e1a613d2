"""Opening a step's model backend: the HTTP client over its endpoint (its replica pool, the
embedded model's server started on first use), without AG2 or a team. A team opens one per
distinct model and sampling settings (solving.assemble_team); `maps score --llm-extract`
borrows one step's alone (`step_backend`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace

from maps_autogen._util import register_secret
from maps_autogen.model._cache import ResponseCache
from maps_autogen.model._client import ChatBackend, JsonModeMemo
from maps_autogen.model._pool import ReplicaPool
from maps_autogen.settings import LoadedConfig, ResolvedModel, resolve_models

#: Held while backends are opened: the embedded model's server starts once per process.
backend_lock = threading.Lock()
#: maps' local server answers one request at a time (one slot): its requests pass one gate, by URL.
_gates: dict[str, threading.Semaphore] = {}


def open_backend(model: ResolvedModel, *, loaded: LoadedConfig, cache: ResponseCache | None, max_connections: int,
                 cancel: threading.Event, json_mode: JsonModeMemo, pool: ReplicaPool | None) -> ChatBackend:
    """The backend of one resolved model (call it holding `backend_lock`)."""
    health_check: Callable[[], None] | None = None
    gate: threading.Semaphore | None = None
    if model.kind == "local":
        from maps_autogen.model.local import settings_from_endpoint, shared_local_server

        # Started on first use, shared by the whole process, stopped at exit (and on Ctrl-C).
        # One model name end to end: the server registers the name the requests send and the run records.
        server = shared_local_server(
            settings_from_endpoint(model.local, base_dir=loaded.base_dir, model_name=model.model)
        )
        register_secret(server.api_key)
        model = replace(model, base_url=server.base_url, api_key=server.api_key)
        health_check, pool = server.ensure_alive, None
        gate = _gates.setdefault(server.base_url, threading.Semaphore(1))
    return ChatBackend(
        model,
        cache=cache,
        max_connections=max_connections,
        health_check=health_check,
        cancel=cancel,
        max_reply_bytes=loaded.config.limits.reply_bytes,
        json_mode=json_mode,
        pool=pool,
        gate=gate,
    )


def step_backend(loaded: LoadedConfig, step: str, env: Mapping[str, str] | None = None) -> ChatBackend:
    """One step's backend alone, its model resolved and opened as a team's would be (`maps score
    --llm-extract` borrows the final step's): no prompts loaded, no agents, no other backend opened."""
    model = resolve_models(loaded, os.environ if env is None else env).models[step]
    cancel = threading.Event()
    pool = ReplicaPool(model.base_urls, cancel=cancel) if len(model.base_urls) > 1 else None
    with backend_lock:
        return open_backend(model, loaded=loaded, cache=None, max_connections=64, cancel=cancel,
                            json_mode=JsonModeMemo(model.json_mode), pool=pool)


__all__ = ["backend_lock", "open_backend", "step_backend"]
