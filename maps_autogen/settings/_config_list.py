"""AG2's OAI_CONFIG_LIST as a source of endpoints, so an AG2 user's models work unchanged.

The format (as AG2's `config_list_from_json` reads it): a JSON list of entries, each with a
`model` and the keys AG2 documents for an OpenAI-style entry (`OpenAILLMConfigEntry`,
`AzureOpenAILLMConfigEntry` and the OpenAI client's own arguments). The list is named by a file
path or by an environment variable holding the JSON text or a file path.

Every key is either honoured, mapped onto an endpoint setting and recorded as sent (`MAPPED`,
`BODY_KEYS`, `HEADER_KEYS`...), or, where it cannot apply to maps, named in one warning line
(`NOT_USED`); an entry for a service that does not speak OpenAI's chat API is left out with a
warning. Entries with the same settings become one endpoint serving their models; an inline key
is registered with the redactor at once and kept out of the config (so it is never dumped or
printed). Whatever a variable named as a config list holds is never echoed in a message.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from maps_autogen._util import ConfigError, looks_like_key, names_a_credential, register_secret, secrets_written_in

logger = logging.getLogger(__name__)

MAX_LIST_BYTES = 1 << 20
ENDPOINT_PREFIX = "config_list"
FIX = "give a JSON list of {model, api_key, base_url, ...} entries (AG2's OAI_CONFIG_LIST format)"
OPENAI_STYLE = ("openai", "azure")
AZURE_KEY_VARIABLE = "AZURE_OPENAI_API_KEY"  # the variable the OpenAI SDK's Azure client reads

Check = Callable[[Any], bool]


def _number(low: float, high: float = math.inf) -> Check:
    return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and low <= v <= high


def _whole(low: int) -> Check:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


def _text(v: Any) -> bool:
    return isinstance(v, str) and bool(v.strip())


def _text_map(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, (str, int, float)) for k, x in v.items())


# entry key -> (endpoint setting, value check, what a value must be)
MAPPED: dict[str, tuple[str, Check, str]] = {
    "base_url": ("base_url", _text, "a URL"),
    "azure_endpoint": ("base_url", _text, "a URL"),
    "api_version": ("api_version", _text, "a version such as 2024-10-21"),
    "azure_deployment": ("azure_deployment", _text, "a deployment name"),
    "timeout": ("timeout_s", _number(0.001), "seconds above 0"),
    "max_retries": ("max_retries", _whole(0), "a whole number >= 0"),
    "stream": ("stream", lambda v: isinstance(v, bool), "true or false"),
    "temperature": ("temperature", _number(0, 2), "a number from 0 to 2"),
    "max_tokens": ("max_tokens", _whole(1), "a whole number >= 1"),
    "max_completion_tokens": ("max_tokens", _whole(1), "a whole number >= 1"),
    "reasoning_effort": ("reasoning_effort", _text, "a word such as low, medium or high"),
    "api_rate_limit": ("requests_per_s", _number(1e-9), "requests per second above 0"),
}
# Sent in the request body as written (OpenAI's sampling and request fields).
BODY_KEYS = frozenset({"top_p", "seed", "stop", "presence_penalty", "frequency_penalty", "user", "verbosity",
                       "logit_bias", "service_tier", "top_k", "min_p", "repetition_penalty"})
# Sent as HTTP headers or query parameters of every request.
HEADER_KEYS = frozenset({"default_headers", "extra_headers"})
HEADER_OF = {"organization": "OpenAI-Organization", "project": "OpenAI-Project"}
QUERY_KEYS = frozenset({"default_query"})
# Azure's own: with api_type openai, AG2 (the OpenAI client) does not use them either.
AZURE_ONLY = frozenset({"api_version", "azure_endpoint", "azure_deployment"})
# Read for what they say, elsewhere than the endpoint.
OWN_KEYS = frozenset({"model", "api_key", "api_type", "price", "extra_body"})
# Keys AG2 documents that cannot apply to maps, with why (named in the warning line).
NOT_USED = {
    "api_version": "used with api_type azure only",
    "azure_endpoint": "used with api_type azure only",
    "azure_deployment": "used with api_type azure only",
    "tags": "maps picks a model with --model, not by tag",
    "cache_seed": "maps has its own response cache (runs/.cache)",
    "response_format": "each step asks for the reply format it needs",
    "tools": "the team's steps call no tools",
    "tool_choice": "the team's steps call no tools",
    "functions": "the team's steps call no tools",
    "parallel_tool_calls": "the team's steps call no tools",
    "n": "each request reads one reply",
    "logprobs": "not read",
    "top_logprobs": "not read",
    "azure_ad_token": "give api_key (an Entra token expires)",
    "azure_ad_token_provider": "give api_key (a token provider is Python, not JSON)",
    "http_client": "a Python object, not JSON",
    "model_client_cls": "a Python class, not JSON",
    "voice": "not a chat setting",
    "websocket_base_url": "not a chat setting",
    "filter_func": "a Python function, not JSON",
    "allow_format_str_template": "maps fills its own prompt templates",
    "context": "maps fills its own prompt templates",
}


def read_config_list(source: str, *, base_dir: Path, env: Mapping[str, str]) -> tuple[list[dict[str, Any]], str]:
    """The entries of the list named by `source` and a description of where they came from:
    the variable `source` when it is set (its value is JSON text or a file path), else the file
    `source` (relative to `base_dir`). The variable's value is never part of a message."""
    value = env.get(source)
    if looks_like_key(source):  # a key pasted as the list's name
        register_secret(source)
        where = "named by --config-list / config_list:"
    else:
        where = f"${source}" if value is not None else source
    text: str | None = None
    if value is not None and value.strip():
        shown = value.lstrip("\ufeff \t\r\n")
        if shown[:1] in ("[", "{"):
            text = value
        elif not Path(shown.strip()).expanduser().is_file():
            raise ConfigError(
                f"config list {where} holds neither JSON nor the path of an existing file",
                fix="set it to the JSON list itself ([{...}, ...]) or to the path of an OAI_CONFIG_LIST file",
            )
        else:
            text = _read_file(Path(shown.strip()).expanduser(), f"the file {where} names")
            where = f"the file {where} names"
    else:
        path = Path(source).expanduser()
        path = path if path.is_absolute() else base_dir / path
        if not path.is_file():
            raise ConfigError(
                f"config list {where if looks_like_key(source) else path} does not exist "
                f"(and no variable {'of that name' if looks_like_key(source) else '$' + source} is set)",
                fix="give the path of an OAI_CONFIG_LIST file or the name of a variable holding it",
            )
        if not looks_like_key(source):
            where = str(path)
        text = _read_file(path, f"config list {where}")
    if len(text.encode("utf-8", errors="surrogatepass")) > MAX_LIST_BYTES:
        raise ConfigError(f"config list {where} is larger than {MAX_LIST_BYTES:,} bytes", fix=FIX)
    try:
        entries = json.loads(text.lstrip("\ufeff"))  # a byte-order mark is not part of the JSON
    except json.JSONDecodeError as error:  # (its message names a position, never the text)
        raise ConfigError(f"config list {where} is not valid JSON: {error.msg} at line {error.lineno}",
                          fix=FIX) from None
    except RecursionError:
        raise ConfigError(f"config list {where} is nested too deeply", fix=FIX) from None
    _register_secrets_in(entries)  # whatever its shape: nothing in it is ever shown
    if isinstance(entries, dict):
        raise ConfigError(f"config list {where} holds one JSON object, not a list of them",
                          fix="wrap the entry in [ ]: a config list is a JSON list of entries, even of one")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"config list {where} is not a non-empty JSON list", fix=FIX)
    for number, entry in enumerate(entries, start=1):
        _check_entry(entry, number, where)
    return entries, where


def _read_file(path: Path, what: str) -> str:
    try:
        if path.stat().st_size > MAX_LIST_BYTES:
            raise ConfigError(f"{what} is larger than {MAX_LIST_BYTES:,} bytes", fix=FIX)
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {what}: {error.__class__.__name__}", fix=FIX) from None


def _register_secrets_in(data: Any) -> None:
    """Every secret in the parsed list, registered with the redactor: each entry's api_key and
    every other text value of an entry key named like a credential (azure_ad_token), and what
    `redact.secrets_written_in` finds (key-shaped strings, every URL's user information and
    credential query parameters, credential headers, query parameters and extra_body fields)."""
    entries = data if isinstance(data, list) else [data]
    for entry in entries:
        if isinstance(entry, dict):
            for name, value in entry.items():
                if isinstance(name, str) and isinstance(value, str) and (name == "api_key" or names_a_credential(name)):
                    register_secret(value)
    for found in secrets_written_in(data):
        register_secret(found)


def _check_entry(entry: Any, number: int, where: str) -> None:
    here = f"config list {where}, entry {number}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{here} is not a JSON object", fix=FIX)
    if not isinstance(entry.get("model"), str) or not entry["model"].strip():
        raise ConfigError(f"{here} has no model name", fix=FIX)
    api_type = entry.get("api_type")
    if api_type is not None and not isinstance(api_type, str):
        raise ConfigError(f"{here}: api_type must be a string", fix=FIX)
    key = entry.get("api_key")
    if key is not None and not isinstance(key, str):
        raise ConfigError(f"{here}: api_key must be a string", fix=FIX)
    for name, value in entry.items():
        if value is None:
            continue
        if name in MAPPED and not MAPPED[name][1](value):
            raise ConfigError(f"{here}: {name} must be {MAPPED[name][2]}", fix=FIX)
        if name in (*HEADER_KEYS, *QUERY_KEYS) and not _text_map(value):
            raise ConfigError(f"{here}: {name} must map names to text", fix=FIX)
        if name in HEADER_OF and not _text(value):
            raise ConfigError(f"{here}: {name} must be a string", fix=FIX)
        if name == "extra_body" and not isinstance(value, dict):
            raise ConfigError(f"{here}: extra_body must be a JSON object", fix=FIX)
    url = entry.get("azure_endpoint") or entry.get("base_url")
    if isinstance(url, str) and looks_like_key(url):
        raise ConfigError(f"{here}: base_url holds what looks like an API key, not a URL",
                          fix="put the key under api_key and the service's address under base_url")
    if api_type == "azure" and entry.get("api_version") is None and not (
            isinstance(url, str) and url.strip().rstrip("/").endswith("/openai/v1")):
        raise ConfigError(f"{here}: api_type azure needs api_version (e.g. 2024-10-21) for a resource endpoint",
                          fix="add api_version, or give base_url https://RESOURCE.openai.azure.com/openai/v1 "
                              "(Azure's v1 API)")
    price = entry.get("price")
    if price is not None and not (
        isinstance(price, list) and len(price) == 2 and all(_number(0)(p) for p in price)
    ):
        raise ConfigError(
            f"{here}: price must be [prompt, completion] USD per 1,000 tokens", fix='e.g. "price": [0.0025, 0.01]'
        )


def inline_keys(source: str, *, base_dir: Path, env: Mapping[str, str]) -> list[str]:
    """The keys written inline in the list `source` names, read leniently (for masking only: a
    list that cannot be read gives none here, though every key it holds is registered while it
    is read; the commands that use it report why)."""
    try:
        entries, _ = read_config_list(source, base_dir=base_dir, env=env)
    except ConfigError:
        return []
    return [entry["api_key"] for entry in entries if isinstance(entry.get("api_key"), str) and entry["api_key"]]


def _endpoint_settings(entry: dict[str, Any], unused: dict[str, list[int]], number: int) -> dict[str, Any]:
    """What an entry says about its endpoint, as agents.yaml endpoint keys (without the model)."""
    settings: dict[str, Any] = {"kind": "openai", "api_type": entry.get("api_type") or "openai"}
    headers: dict[str, str] = {}
    query: dict[str, str] = {}
    body: dict[str, Any] = {}
    for name, value in entry.items():
        if value is None or name in OWN_KEYS:
            continue
        if name in AZURE_ONLY and settings["api_type"] != "azure":
            unused.setdefault(name, []).append(number)
        elif name in MAPPED:
            settings[MAPPED[name][0]] = value
        elif name in BODY_KEYS:
            body[name] = value
        elif name in HEADER_KEYS:
            headers.update({k: str(v) for k, v in value.items()})
        elif name in HEADER_OF:
            headers[HEADER_OF[name]] = value
        elif name in QUERY_KEYS:
            query.update({k: str(v) for k, v in value.items()})
        else:
            unused.setdefault(name, []).append(number)
    if entry.get("max_completion_tokens") is not None:
        settings["max_tokens_field"] = "max_completion_tokens"
    if settings["api_type"] == "azure" and entry.get("azure_endpoint") is not None:
        settings["base_url"] = entry["azure_endpoint"]  # AG2 (the OpenAI SDK) prefers it to base_url
    if isinstance(settings.get("base_url"), str) and not settings["base_url"].startswith(("http://", "https://")):
        settings["base_url"] = f"http://{settings['base_url']}"  # as AG2 reads a URL without a scheme
    body.update(entry.get("extra_body") or {})
    if headers:
        settings["headers"] = headers
    if query:
        settings["query"] = query
    if body:
        settings["extra_body"] = body
    return settings


def _warning(where: str, unused: dict[str, list[int]], left_out: list[str]) -> str | None:
    """The one line naming every key maps does not use, and every entry left out."""
    parts = []
    for name, numbers in unused.items():
        why = NOT_USED.get(name, "not a key maps knows, so not sent")
        listed = ", ".join(str(n) for n in numbers)
        parts.append(f"{name} (entr{'y' if len(numbers) == 1 else 'ies'} {listed}: {why})")
    text = ""
    if parts:
        text = f"not used by maps: {'; '.join(parts)}"
    if left_out:
        text += ("; " if text else "") + "; ".join(left_out)
    return f"config list {where}: {text}" if text else None


_warned: set[str] = set()


def add_config_list(
    data: dict[str, Any], source: str, *, base_dir: Path, env: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """`data` (agents.yaml, merged) with the list's endpoints first under `endpoints` (so
    `endpoint: auto` picks them) and its prices added; and the inline keys by endpoint name.
    Keys maps does not use and entries for other APIs are named in one warning line."""
    entries, where = read_config_list(source, base_dir=base_dir, env=env)
    unused: dict[str, list[int]] = {}
    left_out: list[str] = []
    groups: dict[str, tuple[dict[str, Any], str | None, list[dict[str, Any]]]] = {}
    for number, entry in enumerate(entries, start=1):
        api_type = entry.get("api_type") or "openai"
        if api_type not in OPENAI_STYLE:
            left_out.append(
                f"entry {number} ({entry['model']}) left out: api_type '{api_type}' is not OpenAI's chat API (give "
                "that service's OpenAI-compatible base_url with api_type openai, or a gateway's such as LiteLLM's)"
            )
            continue
        settings = _endpoint_settings(entry, unused, number)
        key = entry.get("api_key") or None
        group = json.dumps([settings, key], sort_keys=True, default=str)
        groups.setdefault(group, (settings, key, []))[2].append(entry)
    if not groups:
        raise ConfigError(f"config list {where} has no entry for an OpenAI-style API (api_type openai or azure): "
                          f"{'; '.join(left_out)}", fix="give the services' OpenAI-compatible base_url")
    warning = _warning(where, unused, left_out)
    if warning is not None and warning not in _warned:
        _warned.add(warning)
        logger.warning("%s", warning)
    endpoints: dict[str, Any] = {}
    keys: dict[str, str] = {}
    prices: dict[str, Any] = {}
    for number, (settings, api_key, members) in enumerate(groups.values(), start=1):
        name = ENDPOINT_PREFIX if len(groups) == 1 else f"{ENDPOINT_PREFIX}_{number}"
        models = list(dict.fromkeys(entry["model"] for entry in members))
        endpoints[name] = {
            **settings,
            # No inline key: the variable the OpenAI SDK reads, as AG2 does through it.
            "api_key_env": None if api_key else (
                AZURE_KEY_VARIABLE if settings["api_type"] == "azure" else "OPENAI_API_KEY"),
            "default_model": models[0],
            "models": models,
        }
        if api_key:
            keys[name] = api_key
        for entry in members:
            if entry.get("price") is not None:
                prompt, completion = entry["price"]
                prices.setdefault(
                    entry["model"], {"prompt_per_million": prompt * 1000, "completion_per_million": completion * 1000}
                )
    taken = sorted(set(endpoints) & set(data.get("endpoints") or {}))
    if taken:
        raise ConfigError(f"endpoint '{taken[0]}' is declared in the config and also made from the config list",
                          fix=f"rename that endpoint (names starting with {ENDPOINT_PREFIX} are the config list's)")
    merged = dict(data)
    merged["endpoints"] = {**endpoints, **(data.get("endpoints") or {})}
    merged["prices"] = {**(data.get("prices") or {}), **prices}
    return merged, keys
