"""Resolve which service and model each role talks to: OpenAI, a compatible server, or the
embedded local model."""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from maps_autogen._util import MASK, ConfigError, mask_url_userinfo, register_secret, register_url_secrets, shown_value
from maps_autogen.settings._config import (
    EVERY_STEP_FLAGS,
    CriticConfig,
    LoadedConfig,
    LocalEndpoint,
    ModelChoice,
    OpenAIEndpoint,
    PriceConfig,
    TokenPrices,
    defaults_dir,
)
from maps_autogen.settings._config_list import ENDPOINT_PREFIX
from maps_autogen.settings._dotenv import BASE_URL_VARIABLES, dotenv_path, from_dotenv

OPENAI_URL = "https://api.openai.com/v1"
CHAT_PATH = "/chat/completions"
# A dated snapshot of a priced model: gpt-4o-2024-08-06 (OpenAI's usual), gpt-4-0613 (older).
_SNAPSHOT_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{4})$")


def service_url(url: str) -> str:
    """A base URL as the client wants it: without a trailing slash, a trailing
    `/chat/completions` (a full endpoint URL is a common way to write it) or a query (kept
    apart: `url_query`)."""
    url = url.strip().split("#", 1)[0].split("?", 1)[0].rstrip("/")
    if url.endswith(CHAT_PATH):
        url = url[: -len(CHAT_PATH)].rstrip("/")
    return url


def url_query(url: str) -> dict[str, str]:
    """The query parameters written into a base URL (`...?api-version=2024-10-21`), which every
    request carries."""
    query = url.strip().split("#", 1)[0].partition("?")[2]
    return dict(urllib.parse.parse_qsl(query, keep_blank_values=True))


def env_base_url(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(URL, variable) of the server the environment names, if any; both variables set to
    different servers is an error naming both."""
    named = {variable: service_url(env[variable]) for variable in BASE_URL_VARIABLES if env.get(variable, "").strip()}
    if len(set(named.values())) > 1:
        first, second = BASE_URL_VARIABLES
        raise ConfigError(f"{first} ({named[first]}) and {second} ({named[second]}) name different servers",
                          fix=f"unset one of them (maps reads both; {second} is the older name)")
    if not named:
        return None
    variable = next(iter(named))
    return named[variable], variable


def price_of(served: str | None, prices: Mapping[str, PriceConfig]) -> PriceConfig | None:
    """The price of the model a service says it served: its exact name under `prices`, else
    that name without a dated-snapshot suffix (gpt-4o-2024-08-06 is priced as gpt-4o). A reply
    naming no model, or a name not priced, has no price: its cost is unknown, never guessed
    from the name that was asked for."""
    if not served:
        return None
    if served in prices:
        return prices[served]
    undated = _SNAPSHOT_SUFFIX.sub("", served)
    return prices.get(undated) if undated != served else None
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
    prices: Mapping[str, PriceConfig] = field(default_factory=dict)  # the price table, applied to the served name
    vision: bool = True  # False: a text-only model; its requests carry a note in place of each image
    local: LocalEndpoint | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)  # server-specific sampling settings
    api_key: str = field(default="", repr=False)
    base_urls: tuple[str, ...] = ()  # every replica when the endpoint lists several (base_url is the first)
    stream_idle_s: float = 60.0  # a streamed reply's longest wait for more of its reply
    stream_total_s: float = 3600.0  # a streamed reply, whole
    max_tokens_key: str = "model.max_tokens"  # the config key (and file) that sets max_tokens, for messages
    # The setting (config key and file, or flag) that puts each other request field it sends into the
    # request (temperature, top_p, seed, reasoning_effort, extra_body's), for messages naming it.
    sent_by: Mapping[str, str] = field(default_factory=dict)
    api_type: str = "openai"  # "azure": an api-key header, and Azure's deployment URL unless base_url is its v1 API
    api_version: str | None = None
    azure_deployment: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)  # more headers on every request
    query: Mapping[str, str] = field(default_factory=dict)  # query parameters of every request
    max_tokens_field: str = "max_tokens"  # the body field the token cap goes under
    reasoning_effort: str | None = None
    requests_per_s: float | None = None
    max_images: int | None = None  # the most images one request may carry
    top_p: float | None = None  # None: not sent
    seed: int | None = None  # None: not sent
    prompt_layout: str = "paper"  # "paper" | "shared_prefix" (role_inputs.build_request)
    batch_poll_s: float = 60.0  # maps eval --batch: the longest wait between two looks at a batch
    batch_max_requests: int = 50_000  # requests one batch input file may carry
    batch_max_bytes: int = 200_000_000  # bytes one batch input file may have
    # What the server said of its context (the most tokens one request holds) and how it is raised:
    # learnt before the first call (eval/_context_fit.py), None when the server says nothing.
    context_tokens: int | None = None
    context_raise: str | None = None

    @property
    def shown_base_url(self) -> str | None:
        """The base URL as a run records and prints it: user information masked."""
        return mask_url_userinfo(self.base_url) if self.base_url else self.base_url

    @property
    def shown_replicas(self) -> list[str]:
        """Every replica's base URL as a run records it (user information masked)."""
        return [mask_url_userinfo(url) for url in self.base_urls]

    def images_carried(self, count: int) -> int:
        """How many of a problem's `count` images one request to this model carries: none on a
        text-only model, at most `max_images` (vLLM's --limit-mm-per-prompt); a note stands in
        for each of the others."""
        if not self.vision:
            return 0
        return count if self.max_images is None else min(count, self.max_images)

    def images_withheld_because(self) -> str:
        """Why a request to this model carries fewer images than the problem has."""
        if not self.vision:
            return "the model is text-only (vision: false)"
        return f"endpoint '{self.endpoint_name}' takes at most {self.max_images} per request (max_images)"

    def chat_url(self, base_url: str) -> str:
        """The URL a chat request to `base_url` goes to: `<base_url>/chat/completions`, or for an
        Azure resource endpoint its deployment URL; with the endpoint's query parameters (and
        Azure's api-version)."""
        path = f"{base_url.rstrip('/')}{CHAT_PATH}"
        query = dict(self.query)
        if self.api_type == "azure":
            # A deployment URL written whole (.../openai/deployments/NAME) is used as it is.
            if not base_url.rstrip("/").endswith("/openai/v1") and "/openai/deployments/" not in base_url:
                deployment = urllib.parse.quote(self.azure_deployment or self.model, safe="")
                path = f"{base_url.rstrip('/')}/openai/deployments/{deployment}{CHAT_PATH}"
            if self.api_version:
                query["api-version"] = self.api_version
        return f"{path}?{urllib.parse.urlencode(query)}" if query else path

    def request_headers(self) -> dict[str, str]:
        """The headers of every request: the endpoint's own, then the key (Azure: `api-key`;
        otherwise `Authorization: Bearer`)."""
        headers = dict(self.headers)
        if self.api_key:
            if self.api_type == "azure":
                headers["api-key"] = self.api_key
            else:
                headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def shown_headers(self) -> dict[str, str]:
        """The headers a run records as sent beyond the default Bearer key: the endpoint's own
        and Azure's api-key, each secret value (a key, a registered secret, a header named like
        a credential) masked."""
        shown = {name: shown_value(name, value) for name, value in self.headers.items()}
        if self.api_key and self.api_type == "azure":
            shown["api-key"] = MASK
        return shown

    def shown_query(self, url: str) -> dict[str, str]:
        """The query parameters of a request URL as a run records them (secret-looking ones masked)."""
        query = urllib.parse.urlsplit(url).query
        return {name: shown_value(name, value) for name, value in urllib.parse.parse_qsl(query, keep_blank_values=True)}


    @property
    def price(self) -> PriceConfig | None:
        """The price of the requested model, should the service serve it under that name."""
        return price_of(self.model, self.prices)

    def prices_of(self, served: str | None, *, batch: bool = False) -> TokenPrices | None:
        """The prices of a call answered as model `served` (`price_of`): its live prices, or
        with `batch` its batch API's (None when the table gives none: never the live price)."""
        price = price_of(served, self.prices)
        return price.batch if batch and price is not None else price

    def cost(self, prompt_tokens: int, completion_tokens: int, served: str | None,
             cached_tokens: int = 0, *, batch: bool = False) -> float | None:
        """USD for a call the service answered as model `served`, when that model's price is
        known (`prices_of`; `batch`: a call answered through the batch API, at its prices); None
        otherwise. `cached_tokens` (of `prompt_tokens`) cost the model's cached-input price
        (`cached_rate`). A model on this machine (an endpoint of kind `local`, the embedded
        model) costs nothing: $0, never an unknown price."""
        if self.kind == "local":
            return 0.0
        price = self.prices_of(served, batch=batch)
        if price is None:
            return None
        return ((prompt_tokens - cached_tokens) * price.prompt_per_million + cached_tokens * price.cached_rate()
                + completion_tokens * price.completion_per_million) / 1e6

    def cached_rate(self, served: str | None, *, batch: bool = False) -> float | None:
        """USD per million cached prompt tokens of a call answered as `served`: its cached-input
        price, its prompt price when the table has none, 0 on this machine, None when unpriced."""
        if self.kind == "local":
            return 0.0
        price = self.prices_of(served, batch=batch)
        return None if price is None else price.cached_rate()


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
    if choice.name is not None:  # an endpoint that lists the named model serves it
        listing = next(
            (
                name
                for name, ep in loaded.config.endpoints.items()
                if isinstance(ep, OpenAIEndpoint) and choice.name in ep.models
            ),
            None,
        )
        if listing is not None:
            return listing, f"it lists {choice.name}"
    openai_name = _first_of_kind(loaded, "openai")
    key_env = "OPENAI_API_KEY"  # the variable the message names: the endpoint's own when it has one
    from_env = env_base_url(env)
    if openai_name:
        endpoint = loaded.config.endpoints[openai_name]
        assert isinstance(endpoint, OpenAIEndpoint)
        if openai_name in loaded.endpoint_keys:
            return openai_name, "its key is in the config list"
        if endpoint.api_key_env and env.get(endpoint.api_key_env):
            return openai_name, f"{endpoint.api_key_env} is set"
        if endpoint.base_url is None and from_env:
            return openai_name, f"{from_env[1]} is set"
        if endpoint.api_key_env is None:
            return openai_name, "its endpoint needs no key"
        key_env = endpoint.api_key_env
    if choice.name is not None:
        raise ConfigError(
            f"model '{choice.name}' was asked for, but {key_env} is not set, so no service can serve it",
            fix=f"export {key_env}=... (or put it in .env), set OPENAI_BASE_URL for a server without a key, or "
                "pass --model local for the embedded model",
        )
    local_name = _first_of_kind(loaded, "local")
    if local_name:
        return local_name, "no API key is set"
    raise ConfigError(
        f"no model is available: {key_env} is not set and {loaded.path} declares no local endpoint",
        fix=f"set {key_env} (or put it in .env), or pass --model",
    )


def _endpoint_key(loaded: LoadedConfig, role: str) -> str:
    """Where `role`'s endpoint is chosen, for messages: its step's own model, else the top-level one."""
    team = loaded.team
    index = team.config.names.index(role)
    own = team.config.steps[index].model
    if own is not None and "endpoint" in own.model_fields_set:
        return f"{team.source}: {team.where(f'steps[{index}].model.endpoint')}"
    return f"{loaded.path}: model.endpoint"


def _variables_read(loaded: LoadedConfig, model: ResolvedModel, env: Mapping[str, str]) -> list[str]:
    """The environment variables `model` was resolved from: its base URL's, its key's, and the
    config list's that declared its endpoint."""
    endpoint = loaded.config.endpoints.get(model.endpoint_name)
    if not isinstance(endpoint, OpenAIEndpoint):
        return []
    read = []
    if endpoint.base_url is None:
        named = env_base_url(env)
        read += [named[1]] if named else []
    if endpoint.api_key_env and model.api_key and model.endpoint_name not in loaded.endpoint_keys:
        read.append(endpoint.api_key_env)
    source = loaded.config.config_list
    if model.endpoint_name.startswith(ENDPOINT_PREFIX) and source:
        read.append(source)
    return read


def _resolve_one(
    loaded: LoadedConfig, choice: ModelChoice, env: Mapping[str, str], role: str
) -> tuple[ResolvedModel, str]:
    config = loaded.config
    why = "chosen in the config or with --model"
    name = choice.endpoint
    if name == "auto":
        name, why = _auto_endpoint(loaded, choice, env)
    if name not in config.endpoints:
        known = ", ".join(sorted(config.endpoints))
        raise ConfigError(
            f"{_endpoint_key(loaded, role)} '{name}' is not declared under endpoints in {loaded.path}",
            fix=f"use one of: {known}, auto",
        )
    endpoint = config.endpoints[name]
    common: dict[str, Any] = dict(
        endpoint_name=name,
        timeout_s=endpoint.timeout_s,
        stream_idle_s=endpoint.stream_idle_s,
        stream_total_s=endpoint.stream_total_s,
        max_retries=endpoint.max_retries,
        json_mode=endpoint.json_mode,
        stream=endpoint.stream,
        prompt_layout=endpoint.prompt_layout,
        temperature=choice.temperature,
        max_tokens=choice.max_tokens,
        top_p=choice.top_p,
        seed=choice.seed,
    )
    if isinstance(endpoint, LocalEndpoint):
        model_name = (
            choice.name or (endpoint.model_path and os.path.basename(endpoint.model_path)) or EMBEDDED_MODEL_LABEL
        )
        common["max_tokens"] = min(choice.max_tokens or endpoint.max_tokens, endpoint.max_tokens)
        return ResolvedModel(kind="local", model=model_name, base_url=None, local=endpoint, vision=endpoint.sees_images,
                             extra_body={"repeat_penalty": endpoint.repeat_penalty}, **common), why
    assert isinstance(endpoint, OpenAIEndpoint)
    replicas = tuple(service_url(url) for url in endpoint.base_url) if isinstance(endpoint.base_url, list) else ()
    from_env = env_base_url(env)
    named = endpoint.base_url if isinstance(endpoint.base_url, str) else None  # (a list: its replicas)
    first = endpoint.base_url[0] if isinstance(endpoint.base_url, list) else named
    written = first or (from_env and from_env[0]) or OPENAI_URL
    base_url = replicas[0] if replicas else service_url(written)
    for url in (written, base_url, *replicas):
        register_url_secrets(url)  # user:password@host, ?api-key=...: masked wherever, however encoded
    # Query parameters written into the base URL go on every request, with the endpoint's own.
    query = {**url_query(written), **endpoint.query}
    # A server named by OPENAI_BASE_URL (or OPENAI_API_BASE) without a key (a local vLLM) is used without one.
    keyless = endpoint.base_url is None and from_env is not None
    api_key = loaded.endpoint_keys.get(name, "")
    if endpoint.api_key_env and not api_key:
        api_key = env.get(endpoint.api_key_env, "")
        if not api_key and not keyless:
            raise ConfigError(
                f"endpoint '{name}' needs an API key in ${endpoint.api_key_env}, which is not set",
                fix=f"export {endpoint.api_key_env}=... or put it in .env",
            )
        if api_key:
            register_secret(api_key)
    model_name = choice.name or endpoint.default_model
    # An endpoint's own sampling settings (a config list entry's) are what its requests carry,
    # unless every step's are given (every_step:, or --temperature / --max-tokens for this run).
    every = config.every_step
    if endpoint.temperature is not None and every.temperature is None:
        common["temperature"] = endpoint.temperature
    if endpoint.max_tokens is not None and every.max_tokens is None:
        common["max_tokens"] = endpoint.max_tokens
    return ResolvedModel(
        kind="openai",
        model=model_name,
        base_url=base_url,
        prices=dict(config.prices),
        api_key=api_key,
        base_urls=replicas,
        vision=endpoint.vision,
        extra_body=dict(endpoint.extra_body),
        api_type=endpoint.api_type,
        api_version=endpoint.api_version,
        azure_deployment=endpoint.azure_deployment,
        headers=dict(endpoint.headers),
        query=query,
        max_tokens_field=endpoint.max_tokens_field,
        reasoning_effort=endpoint.reasoning_effort,
        requests_per_s=endpoint.requests_per_s,
        max_images=endpoint.max_images,
        batch_poll_s=endpoint.batch_poll_s,
        batch_max_requests=endpoint.batch_max_requests,
        batch_max_bytes=endpoint.batch_max_bytes,
        **common,
    ), why


def resolve_models(loaded: LoadedConfig, env: Mapping[str, str] | None = None) -> Resolution:
    """Resolve every role's model; raise ConfigError naming what is missing."""
    env = os.environ if env is None else env
    models: dict[str, ResolvedModel] = {}
    reasons: dict[str, str] = {}
    read: list[str] = []
    for role in loaded.team.config.names:
        resolved, why = _resolve_one(loaded, loaded.model_for(role), env, role)
        models[role] = replace(resolved, max_tokens_key=max_tokens_key(loaded, role, resolved),
                               sent_by=_sent_by(loaded, role, resolved))
        reasons[resolved.endpoint_name] = why
        read += _variables_read(loaded, resolved, env)
    return Resolution(models=models, announcement=_announce(models, reasons) + _from_dotenv(read, env))


def _from_dotenv(read: list[str], env: Mapping[str, str]) -> str:
    """What the announcement says of the variables a `.env` gave (_dotenv.py): which, and that
    a `.env` gives keys and endpoints only."""
    given = from_dotenv(read, env)
    path = dotenv_path()
    if not given or path is None:
        return ""
    return f"; {', '.join(given)} from {path} (a .env gives keys and endpoints only)"


def max_tokens_key(loaded: LoadedConfig, role: str, model: ResolvedModel) -> str:
    """Where the `max_tokens` of `role`'s requests is set: its step's own model, the top-level
    model, or (when it caps them) the local endpoint (`model`'s endpoint); with the file, for
    messages (a reply cut at its cap names it)."""
    team = loaded.team
    endpoint = loaded.config.endpoints.get(model.endpoint_name)
    choice = loaded.model_for(role)
    if isinstance(endpoint, LocalEndpoint) and (choice.max_tokens is None or endpoint.max_tokens < choice.max_tokens):
        return f"endpoints.{model.endpoint_name}.max_tokens in {_editable(loaded.path)}"
    if loaded.config.every_step.max_tokens is not None:  # every step's, over its own
        flag = EVERY_STEP_FLAGS["max_tokens"]
        if flag in loaded.origins.get("every_step", "").split("/"):
            return flag
        return f"every_step.max_tokens in {_editable(loaded.path)}"
    if isinstance(endpoint, OpenAIEndpoint) and endpoint.max_tokens is not None:
        if model.endpoint_name in loaded.endpoint_keys or model.endpoint_name.startswith(ENDPOINT_PREFIX):
            return f"{model.max_tokens_field} of the config list's entry for {model.model}"
        return f"endpoints.{model.endpoint_name}.max_tokens in {_editable(loaded.path)}"
    index = team.config.names.index(role)
    own = team.config.steps[index].model
    if own is not None and "max_tokens" in own.model_fields_set:
        return f"{team.where(f'steps[{index}].model.max_tokens')} in {_editable(team.source)}"
    return f"model.max_tokens in {_editable(loaded.path)}"


def _sent_by(loaded: LoadedConfig, role: str, model: ResolvedModel) -> dict[str, str]:
    """Where each request field `role`'s requests carry besides the messages and the token cap is
    set: the sampling settings (every_step: or its flag, the endpoint's own, the step's own model,
    the top-level model), the endpoint's reasoning_effort and extra_body fields."""
    endpoint = loaded.config.endpoints.get(model.endpoint_name)
    if not isinstance(endpoint, OpenAIEndpoint):
        return {}
    config_list = model.endpoint_name in loaded.endpoint_keys or model.endpoint_name.startswith(ENDPOINT_PREFIX)

    def on_endpoint(key: str) -> str:
        return (f"{key} of the config list's entry for {model.model}" if config_list
                else f"endpoints.{model.endpoint_name}.{key} in {_editable(loaded.path)}")

    index = loaded.team.config.names.index(role)
    own = loaded.team.config.steps[index].model
    every = loaded.config.every_step.given()
    found: dict[str, str] = {}
    for name in ("temperature", "top_p", "seed"):
        if getattr(model, name) is None:
            continue
        flag = EVERY_STEP_FLAGS[name]
        if name in every:
            given = flag in loaded.origins.get("every_step", "").split("/")
            found[name] = flag if given else f"every_step.{name} in {_editable(loaded.path)}"
        elif name == "temperature" and endpoint.temperature is not None:
            found[name] = on_endpoint(name)
        elif own is not None and name in own.model_fields_set:
            found[name] = f"{loaded.team.where(f'steps[{index}].model.{name}')} in {_editable(loaded.team.source)}"
        else:
            found[name] = f"model.{name} in {_editable(loaded.path)}"
    if model.reasoning_effort is not None:
        found["reasoning_effort"] = on_endpoint("reasoning_effort")
    for key in model.extra_body:
        found[key] = on_endpoint(f"extra_body.{key}")
    return found


def _editable(path: Path) -> str:
    """A config file as the user can change it: a built-in one is changed in a copy."""
    return (
        f"a copy of the built-in {path.name} (in your folder or --config)"
        if path.is_relative_to(defaults_dir())
        else str(path)
    )


def _announce(models: dict[str, ResolvedModel], reasons: dict[str, str]) -> str:
    distinct = {(m.endpoint_name, m.kind, m.model, mask_url_userinfo(", ".join(m.base_urls) or m.base_url or ""))
                for m in models.values()}
    parts = []
    for endpoint_name, kind, model, base_url in sorted(distinct, key=str):
        if kind == "local" and model == EMBEDDED_MODEL_LABEL:
            parts.append(
                f"using the embedded model {model} ({reasons[endpoint_name]}): a 135M text-only model for trying "
                "the tool, not for answers; for a real model set OPENAI_API_KEY, or OPENAI_BASE_URL for a server "
                "of your own, and --model NAME"
            )
        elif kind == "local":
            parts.append(
                f"using the offline model {model} ({reasons[endpoint_name]}); for a service set OPENAI_API_KEY "
                "or OPENAI_BASE_URL and --model NAME"
            )
        else:
            parts.append(f"using {model} at {base_url} ({reasons[endpoint_name]})")
    return "; ".join(parts)


def step_lines(resolution: Resolution) -> list[str]:
    """One line per step (what `maps config` prints): its endpoint, model and where it is
    served, and the sampling settings its requests carry (those set)."""
    lines = []
    for role, model in resolution.models.items():
        where = ", ".join(model.base_urls) or model.base_url or "started by maps"
        sampling = {"temperature": model.temperature, "top_p": model.top_p, "seed": model.seed,
                    "max_tokens": model.max_tokens}
        settings = " ".join(f"{key}={value}" for key, value in sampling.items() if value is not None)
        line = f"{role}: {model.model} on endpoint {model.endpoint_name} ({where})"
        lines.append(f"{line}; {settings}" if settings else line)
    return lines


def embedded_team_setting(loaded: LoadedConfig, resolution: Resolution) -> tuple[LoadedConfig, str | None]:
    """The review loop a local endpoint brings (its `max_rollbacks` and `final_review`), applied
    when that one endpoint serves every step and `critic` keeps its built-in values (no file
    changed them, no flag set them); with the line that announces it (None: nothing changed).
    A critic setting of the user's always wins."""
    served = {model.endpoint_name for model in resolution.models.values()}
    endpoint = loaded.config.endpoints.get(next(iter(served))) if len(served) == 1 else None
    critic = loaded.config.critic
    # A critic section that keeps every built-in value (a copy of the default agents.yaml) sets nothing.
    chosen = critic != CriticConfig() or loaded.origins.get("critic", "").startswith("--")
    if not isinstance(endpoint, LocalEndpoint) or chosen:
        return loaded, None
    changes: dict[str, Any] = {}
    if endpoint.max_rollbacks is not None and endpoint.max_rollbacks != critic.max_rollbacks:
        changes["max_rollbacks"] = endpoint.max_rollbacks
    if endpoint.final_review is not None and endpoint.final_review != critic.final_review:
        changes["final_review"] = endpoint.final_review
    if not changes:
        return loaded, None
    name = next(iter(served))
    updated = critic.model_copy(update=changes)
    config = loaded.config.model_copy(update={"critic": updated})
    origins = {**loaded.origins, "critic": f"endpoints.{name} (the team setting for this model)"}
    rollbacks = updated.max_rollbacks
    note = (
        f"team setting for this model: at most {rollbacks} rollback{'s' if rollbacks != 1 else ''}"
        f"{', no final review' if not updated.final_review else ''} (endpoints.{name}.max_rollbacks/final_review "
        "set it; a critic: value other than the built-in one, or --max-rollbacks, overrides it)"
    )
    return loaded.model_copy(update={"config": config, "origins": origins}), note
