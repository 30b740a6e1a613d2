"""The command line's overrides applied to loaded settings (--model, --threshold,
--max-rollbacks and the sampling settings sent with every step), and the effective settings as
`maps config` prints them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import yaml

from maps_autogen._util import UsageError
from maps_autogen.settings._config import (
    EVERY_STEP_FLAGS,
    LoadedConfig,
    check_threshold,
    parse_config,
    register_written_secrets,
)
from maps_autogen.settings._team import StepModel


def with_overrides(
    loaded: LoadedConfig,
    *,
    model: str | None = None,
    threshold: float | None = None,
    max_rollbacks: int | None = None,
    every_step: Mapping[str, Any] | None = None,
) -> LoadedConfig:
    """Apply command-line overrides; `model` is NAME or ENDPOINT:NAME and applies to every step;
    `every_step` the sampling settings given (--temperature, --top-p, --seed, --max-tokens:
    `EVERY_STEP_FLAGS`' keys), sent with every step's request."""
    config = loaded.config
    data = config.model_dump(mode="python")
    register_written_secrets(model)  # a key pasted as --model is never printed
    if model is not None:
        # ENDPOINT:NAME when the prefix is a declared endpoint; otherwise the whole text is the
        # model name (model names such as "llama3:8b" contain colons).
        prefix, sep, rest = model.partition(":")
        endpoint, name = (prefix, rest) if sep and prefix in config.endpoints else ("", model)
        if model in config.endpoints:  # "--model local": that endpoint with its default model
            endpoint, name = model, ""
        choice = {**data["model"], "name": name or None}
        if endpoint:
            choice["endpoint"] = endpoint
        data["model"] = choice
    if threshold is not None:
        data["critic"]["threshold"] = threshold
    if max_rollbacks is not None:
        data["critic"]["max_rollbacks"] = max_rollbacks
    sampling = {key: value for key, value in (every_step or {}).items() if value is not None}
    unknown = sorted(set(sampling) - set(EVERY_STEP_FLAGS))
    if unknown:
        raise UsageError(f"unknown sampling setting(s): {', '.join(unknown)}",
                         fix=f"use: {', '.join(EVERY_STEP_FLAGS)}")
    data["every_step"] = {**data["every_step"], **sampling}
    team = loaded.team
    if model is not None:  # --model applies to every step; a step keeps its own sampling settings
        steps = tuple(step.model_copy(update={"model": _sampling_only(step.model)}) for step in team.config.steps)
        team = replace(team, config=team.config.model_copy(update={"steps": steps}))
    origins = dict(loaded.origins)
    origins.update(
        {
            key: flag
            for key, flag, given in (
                ("model", "--model", model),
                ("critic", "--threshold/--max-rollbacks", threshold if threshold is not None else max_rollbacks),
                ("every_step", "/".join(EVERY_STEP_FLAGS[key] for key in sampling), sampling or None),
            )
            if given is not None
        }
    )
    overridden = loaded.model_copy(update={"config": parse_config(data, loaded.path), "team": team, "origins": origins})
    check_threshold(overridden)
    return overridden


def _sampling_only(model: StepModel | None) -> StepModel | None:
    """A step's own model without its endpoint and name (what `--model` replaces): the
    sampling settings it writes (temperature, max_tokens, top_p, seed), or None when it writes none."""
    kept = (model.model_fields_set if model is not None else set()) & {"temperature", "max_tokens", "top_p", "seed"}
    return StepModel(**{key: getattr(model, key) for key in kept}) if model is not None and kept else None


def render_effective(loaded: LoadedConfig) -> str:
    """The effective configuration as YAML (what `maps config` prints): every key, each
    top-level one under a comment saying where its value came from; the team is the team that
    runs, as its file (or agents.yaml) writes it, whichever file or built-in team it came from.
    It holds no secrets: keys are named by their variables, and a config list's inline keys are
    never part of it."""
    data = loaded.config.model_dump(mode="json")
    data["team"] = loaded.team.config.model_dump(mode="json", exclude_unset=True)
    team_origin = loaded.origins.get("team", "built-in defaults")
    if not loaded.team.key or loaded.team.source != loaded.path:  # a team file, or the built-in default team
        team_origin += f" (written in {loaded.team.source})"
    lines = [f"# The effective configuration: {loaded.path} merged onto the built-in defaults."]
    for key, value in data.items():
        origin = team_origin if key == "team" else loaded.origins.get(key, "built-in defaults")
        lines.append(f"\n# {key}: from {origin}")
        lines.append(yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True, width=200).rstrip())
    return "\n".join(lines)
