"""The verdict settings an eval's manifest records (`records.Manifest.settings`): everything of
a run that can change a verdict, one model per part. eval/_verdict_settings.py builds them from what
a run will use and compares two of them part by part (`differences`), by their JSON as recorded:
a setting at its default is not recorded (settings/_compared.py), and one not recorded is unset,
never given a default."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Part(BaseModel):
    """A part of the settings: every field declared, nothing else accepted (unless it says why)."""

    model_config = ConfigDict(extra="forbid")


class _SectionPart(_Part):
    """A part made from a section of agents.yaml: open beyond the fields named here, since every
    other field of its section is compared as written when not at its default
    (settings/_compared.py: a setting added to the section joins the comparison by itself)."""

    model_config = ConfigDict(extra="allow")


class StepSettings(_Part):
    """A team step as the verdict settings record it: as the team declares it (settings/_team.py's step,
    less its model and threshold), its prompt's content hashed. Open beyond its name: the step's
    fields are the team schema's of the day, compared as recorded (a field a later team adds is
    a difference only when set)."""

    model_config = ConfigDict(extra="allow")

    name: str
    prompt: str | None = None  # the hash of the step's prompt content


class TeamSettings(_SectionPart):
    """The team part of the verdict settings (beyond these, the team's other settings not at
    their default: its `inputs` rule...)."""

    steps: list[StepSettings] = Field(default_factory=list)
    manager_personality: str | None = None
    user_proxy_personality: str | None = None


class PromptSettings(_Part):
    """The hashes of the prompts that are not a step's (a baseline's: None for maps)."""

    task: str | None = None
    manager: str | None = None
    user_proxy: str | None = None
    answer_formats: str | None = None
    baseline: str | None = None


class ReviewSettings(_SectionPart):
    """The review loop in force (None: not recorded, at its default; beyond these, the other
    settings of `critic` and `stop` not at their default)."""

    threshold: int | float | None = None  # as the team or config gives it (5 stays 5)
    max_rollbacks: int | None = None
    final_review: bool | None = None
    max_rounds: int | None = None
    ties: str | None = None


class LocalSettings(_Part):
    """What an embedded model is: its files, context and chat template."""

    model_path: str | None = None
    mmproj_path: str | None = None
    n_ctx: int | None = None
    chat_template: str | None = None


class ModelSettings(_Part):
    """A step's model in the verdict settings: what it is, where its requests go, and every
    setting they carry (streaming, only how a reply travels, left out). Open beyond the fields
    named here: the settings a request carries are `records.SentSettings`' (and a server's own
    extra_body fields), compared as recorded."""

    model_config = ConfigDict(extra="allow")

    kind: str | None = None
    base_url: str | list[str] | None = None  # the URL, or the replicas' (userinfo masked)
    json_mode: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    model: str | None = None
    vision: bool | None = None  # False: text-only (a note for each image); None: images sent
    prompt_layout: str | None = None  # the order of a request's material (paper, shared_prefix)
    local: LocalSettings | None = None
    # The endpoint's settings not recorded as sent nor above, not at their default, as written
    # (max_images, max_retries...: settings/_compared.py's endpoint_compared)
    endpoint: dict[str, Any] | None = None


class ImageSettings(_SectionPart):
    """`images` (beyond these, its other settings not at their default)."""

    max_side: int | None = None
    to_next_step: bool | None = None  # None: no step that sees images is left out


class LimitSettings(_SectionPart):
    """`limits` that change what is read of a reply (beyond reply_bytes, those of its other
    settings not at their default that settings/_compared.py does not leave out)."""

    reply_bytes: int | None = None  # None: the default


class DataFingerprint(_Part):
    """The selected problems: their count, one hash of ids and what scoring reads, a short hash
    of that per id (`gold`) and of what the steps are shown per id (`shown`)."""

    count: int
    sha256: str
    gold: dict[str, str]
    shown: dict[str, str]


class VerdictSettings(_Part):
    """What decides an eval run's verdicts (eval/_verdict_settings.py), recorded in its manifest and
    compared on --resume part by part; a part not recorded is unset."""

    team: TeamSettings | None = None
    prompts: PromptSettings | None = None
    review: ReviewSettings | None = None
    models: dict[str, ModelSettings] | None = None
    images: ImageSettings | None = None
    limits: LimitSettings | None = None
    method: str | None = None
    without: list[str] | None = None
    data: DataFingerprint | None = None
    # agents.yaml's sections no part above names, each as written when not at its default
    config: dict[str, Any] | None = None
    # maps eval's options that are neither settings of agents.yaml nor fixed by the manifest nor
    # left out as changing nothing sent (eval/_options.py), as given when not at their default
    options: dict[str, Any] | None = None


__all__ = ["DataFingerprint", "ImageSettings", "LimitSettings", "LocalSettings", "ModelSettings",
           "PromptSettings", "ReviewSettings", "StepSettings", "TeamSettings", "VerdictSettings"]
