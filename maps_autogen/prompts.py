"""Load prompt files and render their `{{name}}` variables (a missing variable is an error).

All prompt text lives in prompts/; this module only reads and fills it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from maps_autogen.config import LoadedConfig, read_yaml
from maps_autogen.errors import ConfigError
from maps_autogen.roles import Role

_VARIABLE = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")

ROLE_PROMPT_KEYS = {"system", "instruction", "revision"}
TASK_PROMPT_KEYS = {"preamble", "labels", "image_note", "no_image_note"}
REQUIRED_LABELS = {
    "question", "context", "options", "images", "caption", "alignment", "knowledge", "solution",
    "answer_format", "previous_output", "feedback",
}


def render(template: str, variables: Mapping[str, Any], *, source: str = "prompt") -> str:
    """Fill `{{name}}` placeholders; a placeholder without a value is a ConfigError."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in variables:
            raise ConfigError(f"{source}: the variable '{{{{{name}}}}}' has no value", fix="use only the documented variables")
        return str(variables[name])

    return _VARIABLE.sub(fill, template)


@dataclass(frozen=True)
class RolePrompt:
    """A role's prompt file: its system message, its instruction and its revision instruction."""

    system: str
    instruction: str
    revision: str
    source: str


@dataclass(frozen=True)
class TaskPrompt:
    """The UserProxy's task preamble, the input labels and the image notes."""

    preamble: str
    labels: dict[str, str]
    image_note: str
    no_image_note: str
    source: str


@dataclass(frozen=True)
class PromptSet:
    """Every prompt a chat needs, loaded once."""

    task: TaskPrompt
    roles: dict[Role, RolePrompt]
    manager: RolePrompt
    user_proxy: RolePrompt
    personalities: dict[str, str]  # by role name, including "manager" and "user_proxy"

    def system_message(self, role: Role) -> str:
        """A role's system message with its personality written in."""
        prompt = self.roles[role]
        return render(prompt.system, {"personality": self.personalities[role.value]}, source=prompt.source)


def _text_fields(data: Any, path: Path, required: set[str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with keys {', '.join(sorted(required))}", fix="see the default prompts/")
    unknown = sorted(set(data) - required)
    if unknown:
        raise ConfigError(f"{path}: unknown key '{unknown[0]}'", fix=f"allowed keys: {', '.join(sorted(required))}")
    missing = sorted(required - set(data))
    if missing:
        raise ConfigError(f"{path}: missing key '{missing[0]}'", fix="see the default prompts/")
    return data


def load_role_prompt(path: Path) -> RolePrompt:
    """Read one role's prompt file."""
    data = _text_fields(read_yaml(path), path, ROLE_PROMPT_KEYS)
    return RolePrompt(
        system=str(data["system"]).strip(),
        instruction=str(data["instruction"]).strip(),
        revision=str(data["revision"]).strip(),
        source=str(path),
    )


def load_task_prompt(path: Path) -> TaskPrompt:
    """Read the task preamble and labels."""
    data = _text_fields(read_yaml(path), path, TASK_PROMPT_KEYS)
    labels = data["labels"]
    if not isinstance(labels, dict):
        raise ConfigError(f"{path}: 'labels' must be a mapping", fix="see the default prompts/task.yaml")
    missing = sorted(REQUIRED_LABELS - set(labels))
    if missing:
        raise ConfigError(f"{path}: labels is missing '{missing[0]}'", fix="see the default prompts/task.yaml")
    return TaskPrompt(
        preamble=str(data["preamble"]).strip(),
        labels={str(key): str(value) for key, value in labels.items()},
        image_note=str(data["image_note"]).strip(),
        no_image_note=str(data["no_image_note"]).strip(),
        source=str(path),
    )


TEAM_MEMBERS = (*(role.value for role in Role), "manager", "user_proxy")


def load_personalities(loaded: LoadedConfig) -> dict[str, str]:
    """The personality text per role for the configured profile (big_seven, big_five, custom)."""
    settings = loaded.config.personality
    if settings.profile == "custom":
        profile = settings.custom or {}
        source = f"{loaded.path} (personality.custom)"
    else:
        path = loaded.resolve(settings.file)
        profiles = read_yaml(path)
        if not isinstance(profiles, dict) or settings.profile not in profiles:
            known = ", ".join(sorted(profiles)) if isinstance(profiles, dict) else "none"
            raise ConfigError(f"{loaded.path}: unknown personality profile '{settings.profile}'", fix=f"use one of: {known}, custom")
        profile = profiles[settings.profile]
        source = f"{path} ({settings.profile})"
    if not isinstance(profile, dict):
        raise ConfigError(f"{source}: a profile maps role names to trait descriptions", fix="see prompts/personalities.yaml")
    unknown = sorted(set(profile) - set(TEAM_MEMBERS))
    if unknown:
        raise ConfigError(f"{source}: unknown role '{unknown[0]}'", fix="use interpreter, aligner, scholar, solver, critic, manager, user_proxy")
    return {member: str(profile.get(member, "")).strip() for member in TEAM_MEMBERS}


def load_prompts(loaded: LoadedConfig) -> PromptSet:
    """Load the task prompt, every role's prompt file and the personality profile."""
    config = loaded.config
    return PromptSet(
        task=load_task_prompt(loaded.resolve(config.task_prompt)),
        roles={role: load_role_prompt(loaded.resolve(config.roles[role].prompt)) for role in Role},
        manager=load_role_prompt(loaded.resolve(config.manager_prompt)),
        user_proxy=load_role_prompt(loaded.resolve(config.user_proxy_prompt)),
        personalities=load_personalities(loaded),
    )
