"""AG2's OAI_CONFIG_LIST as a source of endpoints, so an AG2 user's models work unchanged.

The format (as AG2's `config_list_from_json` reads it): a JSON list of entries, each with a
`model` and optionally `api_key`, `base_url`, `api_type`, `tags` and `price` (USD per 1,000
prompt and completion tokens). The list is named by a file path or by an environment variable
holding the JSON text or a file path. Entries sharing a base URL and key become one endpoint
serving their models; an inline key is registered with the redactor at once and kept out of the
config (so it is never dumped or printed).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from maps_autogen.errors import ConfigError
from maps_autogen.redact import register_secret

MAX_LIST_BYTES = 1 << 20
ENDPOINT_PREFIX = "config_list"
# Keys an entry may carry: what maps uses, and `tags` (AG2's filter labels; maps filters by --model).
KNOWN_KEYS = frozenset({"model", "api_key", "base_url", "api_type", "tags", "price"})
FIX = "give a JSON list of {model, api_key, base_url} entries (AG2's OAI_CONFIG_LIST format)"


def read_config_list(source: str, *, base_dir: Path, env: Mapping[str, str]) -> tuple[list[dict[str, Any]], str]:
    """The entries of the list named by `source` and a description of where they came from:
    the variable `source` when it is set (its value is JSON text or a file path), else the file
    `source` (relative to `base_dir`)."""
    text: str | None = None
    where = source
    value = env.get(source)
    if value is not None and value.lstrip().startswith("["):
        text, where = value, f"${source}"
    else:
        path = Path(value if value is not None else source).expanduser()
        path = path if path.is_absolute() else base_dir / path
        where = f"{path}" if value is None else f"{path} (from ${source})"
        try:
            if path.stat().st_size > MAX_LIST_BYTES:
                raise ConfigError(f"config list {where} is larger than {MAX_LIST_BYTES:,} bytes", fix=FIX)
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(
                f"config list {where} does not exist (and no variable ${source} is set)",
                fix="give the path of an OAI_CONFIG_LIST file or the name of a variable holding it",
            ) from None
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"cannot read config list {where}: {error.__class__.__name__}", fix=FIX) from None
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"config list {where} is not valid JSON: {error.msg} at line {error.lineno}", fix=FIX
        ) from None
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"config list {where} is not a non-empty JSON list", fix=FIX)
    for number, entry in enumerate(entries, start=1):
        _check_entry(entry, number, where)
    return entries, where


def _check_entry(entry: Any, number: int, where: str) -> None:
    here = f"config list {where}, entry {number}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{here} is not a JSON object", fix=FIX)
    unknown = sorted(set(entry) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"{here}: key '{unknown[0]}' is not understood by maps",
            fix=f"remove it; maps reads {', '.join(sorted(KNOWN_KEYS))}",
        )
    if not isinstance(entry.get("model"), str) or not entry["model"]:
        raise ConfigError(f"{here} has no model name", fix=FIX)
    for key in ("api_key", "base_url"):
        if entry.get(key) is not None and not isinstance(entry[key], str):
            raise ConfigError(f"{here}: {key} must be a string", fix=FIX)
    if entry.get("api_type", "openai") != "openai":
        raise ConfigError(
            f"{here}: api_type '{entry['api_type']}' is not supported (maps speaks the OpenAI chat-completions API)",
            fix="use an OpenAI-compatible base_url for that model (a gateway such as LiteLLM serves most providers)",
        )
    price = entry.get("price")
    if price is not None and not (
        isinstance(price, list)
        and len(price) == 2
        and all(isinstance(p, (int, float)) and not isinstance(p, bool) and p >= 0 for p in price)
    ):
        raise ConfigError(
            f"{here}: price must be [prompt, completion] USD per 1,000 tokens", fix='e.g. "price": [0.0025, 0.01]'
        )


def inline_keys(source: str, *, base_dir: Path, env: Mapping[str, str]) -> list[str]:
    """The keys written inline in the list `source` names, read leniently (for masking only: a
    list that cannot be read gives none here; the commands that use it report why)."""
    try:
        entries, _ = read_config_list(source, base_dir=base_dir, env=env)
    except ConfigError:
        return []
    return [entry["api_key"] for entry in entries if isinstance(entry.get("api_key"), str) and entry["api_key"]]


def add_config_list(
    data: dict[str, Any], source: str, *, base_dir: Path, env: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """`data` (agents.yaml, merged) with the list's endpoints first under `endpoints` (so
    `endpoint: auto` picks them) and its prices added; and the inline keys by endpoint name."""
    entries, _ = read_config_list(source, base_dir=base_dir, env=env)
    groups: dict[tuple[str | None, str | None], list[dict[str, Any]]] = {}
    for entry in entries:
        groups.setdefault((entry.get("base_url"), entry.get("api_key")), []).append(entry)
    endpoints: dict[str, Any] = {}
    keys: dict[str, str] = {}
    prices: dict[str, Any] = {}
    for number, ((base_url, api_key), members) in enumerate(groups.items(), start=1):
        name = ENDPOINT_PREFIX if len(groups) == 1 else f"{ENDPOINT_PREFIX}_{number}"
        models = list(dict.fromkeys(entry["model"] for entry in members))
        endpoints[name] = {
            "kind": "openai",
            "base_url": base_url,
            # No inline key: the OpenAI default variable, as AG2 (the OpenAI SDK) reads it.
            "api_key_env": None if api_key else "OPENAI_API_KEY",
            "default_model": models[0],
            "models": models,
        }
        if api_key:
            register_secret(api_key)
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
