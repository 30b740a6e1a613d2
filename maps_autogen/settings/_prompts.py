"""Load prompt files and render their `{{name}}` variables (a missing variable is an error).

All prompt text lives in prompts/; this module only reads and fills it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from maps_autogen._util import ConfigError
from maps_autogen.settings._config import LoadedConfig
from maps_autogen.settings._team import REVIEW_PARTS
from maps_autogen.settings._yaml import read_yaml

_VARIABLE = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")

ROLE_PROMPT_KEYS = {"system", "instruction", "revision"}
TASK_PROMPT_KEYS = {"preamble", "grounding", "labels", "image_note", "image_capped_note", "no_image_note", "step_label",
                    "sent_back", "unusable_reply_note", "preliminary_result"}
REQUIRED_LABELS = {"question", "context", "options", "images", "answer_format", "previous_output", "feedback",
                   "user_question", "user_notes"}
# Why a prompt file may not hold a key: it would never be sent (dead configuration).
_NEVER_SENT = {
    "reviewer": {"revision": "the reviewer is never sent back: every review after a rollback is a fresh review"},
    "manager": {"instruction": "the Manager never calls a model", "revision": "the Manager never calls a model"},
}


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
    """A role's prompt file: its system message, its instruction and its revision instruction
    (what a step sent back by the reviewer is told; "" for a role that is never sent back)."""

    system: str
    instruction: str
    revision: str
    source: str


@dataclass(frozen=True)
class TaskPrompt:
    """The UserProxy's task preamble, the input labels and the image notes. `preamble` is what
    every step is sent: the file's preamble, then its `grounding` when the team keeps it
    (`load_prompts`)."""

    preamble: str
    labels: dict[str, str]
    image_note: str  # for an image the model cannot see (a text-only model)
    image_capped_note: str  # for an image left out of a request that carries at most `max_images`
    no_image_note: str
    unusable_reply_note: str  # appended to a request sent again after an unusable reply ({{reason}})
    step_label: str  # the heading of a step's output when the step declares no label
    source: str
    grounding: str = ""  # the sentence the team's `grounding` adds to the preamble
    # after the instruction of a step with `preliminary_result: true` ({{answer_step}})
    preliminary_result: str = ""
    # how each part of a review a step is sent back with is written (team.REVIEW_PARTS)
    sent_back: dict[str, str] = field(default_factory=dict)


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
    # by step name: the names its prompts may use ({{step}}, {{reviewer}}, {{answer_step}})
    names: dict[str, dict[str, str]] = field(default_factory=dict)

    def system_message(self, step: str) -> str:
        """A step's system message with its personality and the team's names written in."""
        prompt = self.roles[step]
        return render(prompt.system, {**self.names[step], "personality": self.personalities[step]},
                      source=prompt.source)


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


def load_role_prompt(path: Path, *, kind: str = "reviewed") -> RolePrompt:
    """Read one role's prompt file. `kind` says which keys it has: "reviewed" (a step the
    reviewer scores: system, instruction and revision), "step" (revision optional: the step is
    not scored now, but may be once the team changes), "reviewer", "manager" or "user_proxy"
    (a key that role never sends is refused, naming why)."""
    if not isinstance(raw := read_yaml(path), dict):
        raise ConfigError(f"{path}: expected a mapping with keys system, instruction, revision",
                          fix="see the default prompts/")
    for key, why in _NEVER_SENT.get(kind, {}).items():
        if key in raw:
            raise ConfigError(f"{path}: '{key}' is never sent ({why})", fix=f"remove '{key}' from {path.name}")
    never = set(_NEVER_SENT.get(kind, {}))
    optional = {"revision"} if kind == "step" and "revision" not in raw else set()
    data = _text_fields(raw, path, ROLE_PROMPT_KEYS - never - optional)
    return RolePrompt(
        system=str(data["system"]).strip(),
        instruction=str(data.get("instruction", "")).strip(),
        revision=str(data.get("revision", "")).strip(),
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
    sent_back = data["sent_back"]
    if not isinstance(sent_back, dict) or sorted(map(str, sent_back)) != sorted(REVIEW_PARTS):
        raise ConfigError(f"{path}: 'sent_back' must be a mapping with the keys {', '.join(REVIEW_PARTS)}",
                          fix="see the default prompts/task.yaml")
    return TaskPrompt(
        preamble=str(data["preamble"]).strip(),
        labels={str(key): str(value) for key, value in labels.items()},
        image_note=str(data["image_note"]).strip(),
        image_capped_note=str(data["image_capped_note"]).strip(),
        no_image_note=str(data["no_image_note"]).strip(),
        unusable_reply_note=str(data["unusable_reply_note"]).strip(),
        step_label=str(data["step_label"]).strip(),
        source=str(path),
        grounding=str(data["grounding"]).strip(),
        preliminary_result=str(data["preliminary_result"]).strip(),
        sent_back={str(key): str(value).strip() for key, value in sent_back.items()},
    )


def _named(loaded: LoadedConfig, relative: str, base_dir: Path, key: str, source: Path) -> Path:
    """A prompt file that must exist, looked for in its `LoadedConfig.places`: relative to the
    folder of the file that names it, else among the built-in prompts. If it is in none, the
    error names the key that points at it and every place it looked."""
    places = loaded.places(relative, base_dir)
    found = next((place for place in places if place.is_file()), None)
    if found is None:
        looked = " and ".join(str(place) for place in places)
        raise ConfigError(
            f"{source}: {key}: the prompt file {relative} does not exist (looked at {looked})",
            fix=f"create it, or set {key} to an existing file (relative to {base_dir}, else a built-in prompt)",
        )
    return found


def _role_kinds(loaded: LoadedConfig) -> dict[str, str]:
    """Which keys each step's prompt file has (`load_role_prompt`'s kind): a reviewer's file has
    no revision, a reviewed step's must."""
    steps = loaded.team.config.steps
    reviewed = {name for step in steps for name in step.reviews or ()}
    return {step.name: "reviewer" if step.reviews is not None else "reviewed" if step.name in reviewed else "step"
            for step in steps}


def load_prompts(loaded: LoadedConfig) -> PromptSet:
    """Load the task prompt, every step's prompt file and the team's personalities; labels and
    prompts name the team's steps through `{{step}}` (the step's own title), `{{reviewer}}` and
    `{{answer_step}}`."""
    config = loaded.config
    team = loaded.team.config

    def configured(key: str) -> Path:
        return _named(loaded, getattr(config, key), loaded.base_dir, key, loaded.path)

    def of_step(index: int, name: str) -> Path:
        where = loaded.team.where(f"steps[{index}].prompt")
        return _named(loaded, team.step(name).prompt, loaded.team.base_dir, where, loaded.team.source)

    task = load_task_prompt(configured("task_prompt"))
    team_names = team.variables()
    task = replace(task, labels={key: render(label, team_names, source=task.source)
                                 for key, label in task.labels.items()},
                   preamble=" ".join(filter(None, [task.preamble, task.grounding if team.grounding else ""])))
    personalities = {step.name: (step.personality or "").strip() for step in team.steps}
    personalities["manager"] = (team.manager_personality or "").strip()
    personalities["user_proxy"] = (team.user_proxy_personality or "").strip()
    names = {step.name: {**team_names, "step": step.title} for step in team.steps}
    step_labels = {
        step.name: render(step.label, names[step.name], source=f"{loaded.team.source}: label of {step.name}")
        if step.label else render(task.step_label, {"step": step.title}, source=task.source)
        for step in team.steps
    }
    kinds = _role_kinds(loaded)
    roles = {step.name: load_role_prompt(of_step(index, step.name), kind=kinds[step.name])
             for index, step in enumerate(team.steps)}
    for step in team.steps:  # a step invited to state a preliminary result is told so after its instruction
        if step.preliminary_result:
            role = roles[step.name]
            roles[step.name] = replace(role, instruction="\n".join([role.instruction, task.preliminary_result]))
    return PromptSet(
        task=task,
        roles=roles,
        manager=load_role_prompt(configured("manager_prompt"), kind="manager"),
        user_proxy=load_role_prompt(configured("user_proxy_prompt"), kind="user_proxy"),
        personalities=personalities,
        labels={**task.labels, **step_labels},
        feedback_templates={step.name: (step.feedback_template or "").strip() for step in team.steps},
        names=names,
    )
