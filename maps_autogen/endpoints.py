"""Resolve which service and model each role talks to: OpenAI, a compatible server, or the
embedded local model."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from maps_autogen.config import LoadedConfig, LocalEndpoint, ModelChoice, OpenAIEndpoint, PriceConfig, defaults_dir
from maps_autogen.errors import ConfigError
from maps_autogen.redact import register_secret

OPENAI_URL = "https://api.openai.com/v1"
EMBEDDED_MODEL_LABEL = "SmolLM2-135M-Instruct (embedded)"


@dataclass(frozen=True)
class ResolvedModel:
    """A concrete model on a concrete endpoint. `api_key` is never serialised or printed."""

    endpoint_name: str
    kind: str  # "openai" | "local"
    model: str
    base_url: str | None  # None for a local endpoint until its server starts
    timeout_s: float
    max_retries: int
    json_mode: str
    stream: bool
    temperature: float | None
    max_tokens: int | None
    price: PriceConfig | None = None
    local: LocalEndpoint | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)  # server-specific sampling settings
    api_key: str = field(default="", repr=False)
    base_urls: tuple[str, ...] = ()  # every replica when the endpoint lists several (base_url is the first)
    stream_idle_s: float = 60.0  # a streamed reply's longest wait for its next chunk
    max_tokens_key: str = "model.max_tokens"  # the config key (and file) that sets max_tokens, for messages

    def describe(self) -> dict[str, Any]:
        """What a transcript records about this model (no secrets)."""
        described = {
            "endpoint": self.endpoint_name,
            "kind": self.kind,
            "model": self.model,
            "base_url": self.base_url,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "json_mode": self.json_mode,
        }
        if len(self.base_urls) > 1:
            described["replicas"] = list(self.base_urls)
        return described

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """USD for a call, when the model's price is known."""
        if self.price is None:
            return None
        return (prompt_tokens * self.price.prompt_per_million + completion_tokens * self.price.completion_per_million) / 1e6


@dataclass(frozen=True)
class Resolution:
    """The model of every role, plus the one-line announcement of how it was chosen."""

    models: dict[str, ResolvedModel]
    announcement: str

    @property
    def uses_local(self) -> bool:
        return any(model.kind == "local" for model in self.models.values())


def _first_of_kind(loaded: LoadedConfig, kind: str) -> str | None:
    return next((name for name, ep in loaded.config.endpoints.items() if ep.kind == kind), None)


def _auto_endpoint(loaded: LoadedConfig, choice: ModelChoice, env: Mapping[str, str]) -> tuple[str, str]:
    """(endpoint name, why) for `endpoint: auto`. The embedded model is chosen only when nothing
    was asked for: a named model without a usable service is an error, never a substitution."""
    openai_name = _first_of_kind(loaded, "openai")
    key_env = "OPENAI_API_KEY"  # the variable the message names: the endpoint's own when it has one
    if openai_name:
        endpoint = loaded.config.endpoints[openai_name]
        assert isinstance(endpoint, OpenAIEndpoint)
        if endpoint.api_key_env and env.get(endpoint.api_key_env):
            return openai_name, f"{endpoint.api_key_env} is set"
        if endpoint.base_url is None and env.get("OPENAI_BASE_URL"):
            return openai_name, "OPENAI_BASE_URL is set"
        if endpoint.api_key_env is None:
            return openai_name, "its endpoint needs no key"
        key_env = endpoint.api_key_env
    if choice.name is not None:
        raise ConfigError(
            f"model '{choice.name}' was asked for, but {key_env} is not set, so no service can serve it",
            fix=f"export {key_env}=... (or put it in .env), set OPENAI_BASE_URL for a server without a key, or pass --model local for the embedded model",
        )
    local_name = _first_of_kind(loaded, "local")
    if local_name:
        return local_name, "no API key is set"
    raise ConfigError(
        f"no model is available: {key_env} is not set and {loaded.path} declares no local endpoint",
        fix=f"set {key_env} (or put it in .env), or pass --model",
    )


def _resolve_one(loaded: LoadedConfig, choice: ModelChoice, env: Mapping[str, str]) -> tuple[ResolvedModel, str]:
    config = loaded.config
    why = "chosen in the config or with --model"
    name = choice.endpoint
    if name == "auto":
        name, why = _auto_endpoint(loaded, choice, env)
    if name not in config.endpoints:
        known = ", ".join(sorted(config.endpoints))
        raise ConfigError(f"{loaded.path}: model.endpoint '{name}' is not declared under endpoints", fix=f"use one of: {known}, auto")
    endpoint = config.endpoints[name]
    common = dict(
        endpoint_name=name,
        timeout_s=endpoint.timeout_s,
        stream_idle_s=endpoint.stream_idle_s,
        max_retries=endpoint.max_retries,
        json_mode=endpoint.json_mode,
        stream=endpoint.stream,
        temperature=choice.temperature,
        max_tokens=choice.max_tokens,
    )
    if isinstance(endpoint, LocalEndpoint):
        model_name = choice.name or (endpoint.model_path and os.path.basename(endpoint.model_path)) or EMBEDDED_MODEL_LABEL
        common["max_tokens"] = min(choice.max_tokens or endpoint.max_tokens, endpoint.max_tokens)
        return ResolvedModel(kind="local", model=model_name, base_url=None, local=endpoint,
                             extra_body={"repeat_penalty": endpoint.repeat_penalty}, **common), why
    assert isinstance(endpoint, OpenAIEndpoint)
    replicas = tuple(url.rstrip("/") for url in endpoint.base_url) if isinstance(endpoint.base_url, list) else ()
    base_url = (replicas[0] if replicas else endpoint.base_url) or env.get("OPENAI_BASE_URL") or OPENAI_URL
    # A server named by OPENAI_BASE_URL without a key (a local vLLM) is used without one.
    keyless = endpoint.base_url is None and bool(env.get("OPENAI_BASE_URL"))
    api_key = ""
    if endpoint.api_key_env:
        api_key = env.get(endpoint.api_key_env, "")
        if not api_key and not keyless:
            raise ConfigError(
                f"endpoint '{name}' needs an API key in ${endpoint.api_key_env}, which is not set",
                fix=f"export {endpoint.api_key_env}=... or put it in .env",
            )
        if api_key:
            register_secret(api_key)
    model_name = choice.name or endpoint.default_model
    price = config.prices.get(model_name)
    return ResolvedModel(kind="openai", model=model_name, base_url=base_url.rstrip("/"), price=price, api_key=api_key,
                         base_urls=replicas, **common), why


def resolve_models(loaded: LoadedConfig, env: Mapping[str, str] | None = None) -> Resolution:
    """Resolve every role's model; raise ConfigError naming what is missing."""
    env = os.environ if env is None else env
    models: dict[str, ResolvedModel] = {}
    reasons: dict[str, str] = {}
    for role in loaded.team.config.names:
        resolved, why = _resolve_one(loaded, loaded.model_for(role), env)
        models[role] = replace(resolved, max_tokens_key=_max_tokens_key(loaded, role, resolved))
        reasons[resolved.endpoint_name] = why
    return Resolution(models=models, announcement=_announce(models, reasons))


def _max_tokens_key(loaded: LoadedConfig, role: str, model: ResolvedModel) -> str:
    """Where the `max_tokens` of `role`'s requests is set: its step's own model, the top-level
    model, or (when it caps them) the local endpoint; with the file, for messages."""
    team = loaded.team
    endpoint = loaded.config.endpoints.get(model.endpoint_name)
    choice = loaded.model_for(role)
    if isinstance(endpoint, LocalEndpoint) and (choice.max_tokens is None or endpoint.max_tokens < choice.max_tokens):
        return f"endpoints.{model.endpoint_name}.max_tokens in {_editable(loaded.path)}"
    index = team.config.names.index(role)
    if team.config.steps[index].model is not None:
        return f"{team.where(f'steps[{index}].model.max_tokens')} in {_editable(team.source)}"
    return f"model.max_tokens in {_editable(loaded.path)}"


def _editable(path: Path) -> str:
    """A config file as the user can change it: a built-in one is changed in a copy."""
    return f"a copy of the built-in {path.name} (in your folder or --config)" if path.is_relative_to(defaults_dir()) else str(path)


def _announce(models: dict[str, ResolvedModel], reasons: dict[str, str]) -> str:
    distinct = {(m.endpoint_name, m.kind, m.model, ", ".join(m.base_urls) or m.base_url) for m in models.values()}
    parts = []
    for endpoint_name, kind, model, base_url in sorted(distinct, key=str):
        if kind == "local":
            parts.append(
                f"using the embedded offline model {model} ({reasons[endpoint_name]}): demonstration quality only; "
                "for real results set OPENAI_API_KEY or pass --model / --config"
            )
        else:
            parts.append(f"using {model} at {base_url} ({reasons[endpoint_name]})")
    return "; ".join(parts)
