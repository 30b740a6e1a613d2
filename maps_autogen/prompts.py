"""Load prompt files and render their `{{name}}` variables (a missing variable is an error).

All prompt text lives in prompts/; this module only reads and fills it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maps_autogen.config import LoadedConfig, read_yaml
from maps_autogen.errors import ConfigError

_VARIABLE = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")

ROLE_PROMPT_KEYS = {"system", "instruction", "revision"}
TASK_PROMPT_KEYS = {"preamble", "labels", "image_note", "no_image_note", "step_label"}
REQUIRED_LABELS = {"question", "context", "options", "images", "answer_format", "previous_output", "feedback",
                   "user_question", "user_notes"}


def render(template: str, variables: Mapping[str, Any], *, source: str = "prompt") -> str:
    """Fill `{{name}}` placeholders; a placeholder without a value is a ConfigError."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in variables:
            raise ConfigError(
                f"{source}: the variable '{{{{{name}}}}}' has no value", fix="use only the documented variables"
            )
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
    step_label: str  # the heading of a step's output when the step declares no label
    source: str


@dataclass(frozen=True)
class PromptSet:
    """Every prompt a chat needs, loaded once."""

    task: TaskPrompt
    roles: dict[str, RolePrompt]  # by step name
    manager: RolePrompt
    user_proxy: RolePrompt
    personalities: dict[str, str]  # by step name, plus "manager" and "user_proxy" (may be empty)
    labels: dict[str, str]  # problem-field labels and each step's output heading, by name
    feedback_templates: dict[str, str]  # by step name: what the reviewer's question about it looks for ("" none)

    def system_message(self, step: str) -> str:
        """A step's system message with its personality written in."""
        prompt = self.roles[step]
        return render(prompt.system, {"personality": self.personalities[step]}, source=prompt.source)


def _text_fields(data: Any, path: Path, required: set[str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: expected a mapping with keys {', '.join(sorted(required))}", fix="see the default prompts/"
        )
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
        step_label=str(data["step_label"]).strip(),
        source=str(path),
    )


def _named(path: Path, key: str, source: Path) -> Path:
    """A prompt file that must exist; if it does not, the error names the file and the key that
    point at it."""
    if not path.is_file():
        raise ConfigError(
            f"{source}: {key}: the prompt file {path} does not exist",
            fix=f"create it, or set {key} to an existing file (relative to {source.parent}, else built-in prompts/)",
        )
    return path


def load_prompts(loaded: LoadedConfig) -> PromptSet:
    """Load the task prompt, every step's prompt file and the team's personalities."""
    config = loaded.config
    team = loaded.team.config

    def configured(key: str) -> Path:
        return _named(loaded.resolve(getattr(config, key)), key, loaded.path)

    def of_step(index: int, name: str) -> Path:
        return _named(loaded.step_prompt(name), loaded.team.where(f"steps[{index}].prompt"), loaded.team.source)

    task = load_task_prompt(configured("task_prompt"))
    personalities = {step.name: (step.personality or "").strip() for step in team.steps}
    personalities["manager"] = (team.manager_personality or "").strip()
    personalities["user_proxy"] = (team.user_proxy_personality or "").strip()
    step_labels = {
        step.name: step.label or render(task.step_label, {"step": step.title}, source=task.source)
        for step in team.steps
    }
    return PromptSet(
        task=task,
        roles={step.name: load_role_prompt(of_step(index, step.name)) for index, step in enumerate(team.steps)},
        manager=load_role_prompt(configured("manager_prompt")),
        user_proxy=load_role_prompt(configured("user_proxy_prompt")),
        personalities=personalities,
        labels={**task.labels, **step_labels},
        feedback_templates={step.name: (step.feedback_template or "").strip() for step in team.steps},
    )
