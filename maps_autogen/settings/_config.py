"""Typed configuration: agents.yaml, loaded and validated (unknown keys are errors).

The built-in agents.yaml, team files and prompts/ are package data under maps_autogen/settings/defaults/.
"""

from __future__ import annotations

import importlib.resources
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from maps_autogen._util import (
    ConfigError,
    UsageError,
    looks_like_key,
    register_key_variables,
    register_secret,
    secrets_written_in,
)
from maps_autogen.settings._dotenv import apply_dotenv
from maps_autogen.settings._team import (
    LoadedTeam,
    StepModel,
    load_team_file,
    parse_team,
    threshold_fix,
    threshold_problem,
)
from maps_autogen.settings._yaml import read_yaml

CONFIG_SCHEMA_VERSION = 1
CONFIG_FILE_NAME = "agents.yaml"
DEFAULT_TEAM = "maps"  # the built-in agents.yaml's team, by name (team: maps, --team maps)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TokenPrices(_Strict):
    """USD per million tokens."""

    prompt_per_million: float = Field(ge=0)
    completion_per_million: float = Field(ge=0)
    # Prompt tokens the service read from its cache; unset: they cost prompt_per_million.
    cached_prompt_per_million: float | None = Field(default=None, ge=0)

    def cached_rate(self) -> float:
        """USD per million cached prompt tokens: the cached-input price, else the prompt price."""
        return self.prompt_per_million if self.cached_prompt_per_million is None else self.cached_prompt_per_million


class PriceConfig(TokenPrices):
    """A model's prices: live calls', and `batch`, those of calls answered through the service's
    batch API (`maps eval --batch`; unset: such a call's cost is unknown, never the live price)."""

    batch: TokenPrices | None = None


# Body fields maps writes itself: an endpoint's extra_body may not set them (each has its own key).
RESERVED_BODY_FIELDS = frozenset({
    "model", "messages", "stream", "stream_options", "response_format", "max_tokens", "max_completion_tokens",
    "temperature", "reasoning_effort",
})
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# How a step's request is laid out (role_inputs.build_request): as the paper orders it, or with a
# prefix shared by consecutive steps for the servers' prefix caches (docs/configuration.md).
PromptLayout = Literal["paper", "shared_prefix"]


class OpenAIEndpoint(_Strict):
    """An OpenAI-compatible chat-completions service (OpenAI, vLLM, llama.cpp, gateways, Azure)."""

    kind: Literal["openai"] = "openai"
    # None: $OPENAI_BASE_URL, else OpenAI's own; a list: replicas of one model (model/_pool.py)
    base_url: str | Annotated[list[str], Field(min_length=1)] | None = None
    api_key_env: str | None = "OPENAI_API_KEY"  # the variable's name; None: no key needed
    default_model: str = "gpt-4o"
    # A CPU server may take minutes for a long reply: the OpenAI SDK's default deadline.
    timeout_s: float = Field(default=600, gt=0)  # a whole non-streamed request
    stream_idle_s: float = Field(default=60, gt=0)  # a stream: the longest wait for more of its reply
    stream_total_s: float = Field(default=3600, gt=0)  # a stream, whole
    max_retries: int = Field(default=4, ge=0)
    json_mode: Literal["schema", "object", "none"] = "schema"
    stream: bool = False
    max_connections: int = Field(default=64, ge=1)
    vision: bool = True  # false: a text-only model; its roles get a note in place of each image (recorded)
    max_images: int | None = Field(default=None, ge=0)  # the most images one request may carry (vLLM's limit)
    models: list[str] = Field(default_factory=list)  # names it serves: `endpoint: auto` sends a named model here
    # The service's dialect. openai: POST <base_url>/chat/completions with a Bearer key; azure:
    # an `api-key` header, and for a resource endpoint (not .../openai/v1) the deployment URL
    # <base_url>/openai/deployments/<model>/chat/completions?api-version=<api_version>.
    api_type: Literal["openai", "azure"] = "openai"
    api_version: str | None = None
    azure_deployment: str | None = None  # the deployment's name in the URL, when not the model's
    headers: dict[str, str] = Field(default_factory=dict)  # on every request (values of secret-looking names masked)
    query: dict[str, str] = Field(default_factory=dict)  # query parameters of every request
    extra_body: dict[str, Any] = Field(default_factory=dict)  # more body fields (vLLM's top_k, seed...)
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"  # reasoning models: the latter
    reasoning_effort: str | None = None
    # Set: every request to this endpoint carries it, whatever a step sets (an AG2 config list entry's).
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    requests_per_s: float | None = Field(default=None, gt=0)  # at most this many requests a second (per process)
    prompt_layout: PromptLayout = "shared_prefix"  # paper: the paper's order (docs/paper.md)
    # maps eval --batch (docs/batch.md): the longest wait between two looks at a running batch
    # (the first after a second, then doubling), and the service's limits on one batch's input file.
    batch_poll_s: float = Field(default=60, gt=0)
    batch_max_requests: int = Field(default=50_000, ge=1)
    batch_max_bytes: int = Field(default=200_000_000, ge=1024)

    @field_validator("base_url")
    @classmethod
    def _a_url(cls, value: str | list[str] | None) -> str | list[str] | None:
        for url in [value] if isinstance(value, str) else value or []:
            if looks_like_key(url):
                register_secret(url)
                raise ValueError("holds what looks like an API key, not a URL: put the key in the variable "
                                 "api_key_env names")
            if not url.strip().lower().startswith(("http://", "https://")):
                raise ValueError("must be an http:// or https:// URL (e.g. http://127.0.0.1:8000/v1)")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _a_variable_name(cls, value: str | None) -> str | None:
        if value is not None and not _VARIABLE_NAME.fullmatch(value):
            register_secret(value)  # a key pasted here is never printed
            raise ValueError("is the NAME of the environment variable that holds the key (e.g. OPENAI_API_KEY), "
                             "not the key itself")
        return value

    @field_validator("extra_body")
    @classmethod
    def _not_our_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        taken = sorted(set(value) & RESERVED_BODY_FIELDS)
        if taken:
            raise ValueError(f"may not set '{taken[0]}': maps writes it (use the endpoint's own key, or the step's)")
        return value

    @model_validator(mode="after")
    def _azure_needs_a_version(self) -> OpenAIEndpoint:
        if self.api_type == "azure" and self.api_version is None and not _azure_v1(self.base_url):
            raise ValueError("api_type azure with a resource endpoint needs api_version (e.g. 2024-10-21); or "
                             "write base_url as https://RESOURCE.openai.azure.com/openai/v1 for Azure's v1 API")
        return self


def _azure_v1(base_url: str | list[str] | None) -> bool:
    """Whether an Azure base URL is the v1 API's (https://RESOURCE.openai.azure.com/openai/v1)."""
    urls = [base_url] if isinstance(base_url, str) else base_url or []
    return bool(urls) and all(url.strip().rstrip("/").endswith("/openai/v1") for url in urls)


class LocalEndpoint(_Strict):
    """The embedded llama.cpp server (offline, demonstration quality by default)."""

    kind: Literal["local"] = "local"
    model_path: str | None = None  # None: the embedded SmolLM2-135M-Instruct
    mmproj_path: str | None = None  # a multimodal projector makes images real
    n_ctx: int = Field(default=8192, ge=512)
    n_threads: int | None = Field(default=None, ge=1)
    chat_template: str | None = None
    # A 135M model drifts into repetition on long replies: cap them and discourage repeats.
    max_tokens: int = Field(default=384, ge=16)
    repeat_penalty: float = Field(default=1.15, ge=1.0, le=2.0)
    # The review loop when this endpoint serves every step and nothing sets `critic` (file or
    # flag): a 135M model's rollbacks rarely improve its answer, and each costs minutes on 2 cores.
    max_rollbacks: int | None = Field(default=1, ge=0, le=20)  # None: critic.max_rollbacks
    final_review: bool | None = False  # None: critic.final_review
    timeout_s: float = Field(default=600, gt=0)
    stream_idle_s: float = Field(default=60, gt=0)
    stream_total_s: float = Field(default=3600, gt=0)
    max_retries: int = Field(default=1, ge=0)
    json_mode: Literal["schema", "object", "none"] = "schema"
    stream: bool = False
    vision: bool | None = None  # None: true exactly when mmproj_path is set
    prompt_layout: PromptLayout = "shared_prefix"  # paper: the paper's order (docs/paper.md)

    @model_validator(mode="after")
    def _vision_needs_projector(self) -> LocalEndpoint:
        if self.vision and not self.mmproj_path:
            raise ValueError("vision: true needs mmproj_path (the model's image projector)")
        return self

    @property
    def sees_images(self) -> bool:
        """Whether requests to this endpoint carry the images themselves."""
        return bool(self.mmproj_path) if self.vision is None else self.vision


Endpoint = Annotated[OpenAIEndpoint | LocalEndpoint, Field(discriminator="kind")]


# Which endpoint and model a step talks to (`endpoint: auto` picks at start-up); the team's
# steps use the same type for their own model.
ModelChoice = StepModel


class EveryStepConfig(_Strict):
    """Sampling settings sent with every step's request, over the step's own and `model:`'s
    (None: each step keeps its own). The command line's --temperature, --top-p, --seed and
    --max-tokens set them."""

    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    seed: int | None = None
    max_tokens: int | None = Field(default=None, ge=1)

    def given(self) -> dict[str, Any]:
        """The settings this section sets (those not None)."""
        return {key: value for key, value in self.model_dump().items() if value is not None}


#: The command-line flag of each `every_step` setting.
EVERY_STEP_FLAGS = {"temperature": "--temperature", "top_p": "--top-p", "seed": "--seed", "max_tokens": "--max-tokens"}


class CriticConfig(_Strict):
    """The review loop. Algorithm 1: review again after every rollback, up to a cap."""

    threshold: float | None = Field(default=None, ge=0)  # None: the reviewer step's; at most its scale's high
    max_rollbacks: int = Field(default=3, ge=0, le=20)
    final_review: bool = True  # review after the last allowed rollback too
    # which of the steps tied at the lowest score re-runs: the reviewer's worst_step when it is
    # among them, else the earliest (worst_step); always the earliest, the paper's argmin (earliest)
    ties: Literal["worst_step", "earliest"] = "worst_step"


class StopConfig(_Strict):
    max_rounds: int | None = Field(default=None, ge=1)  # None: derived from the team and max_rollbacks


#: When a person in the chat (`maps solve --human`) is asked: after each review, or after every turn.
HumanWhen = Literal["review", "every_turn"]


class HumanConfig(_Strict):
    """A person in the chat (`maps solve --human`): when the UserProxy asks them, how many steps
    they may send back in one chat, and how long a pause waits for them before the chat goes
    on as planned (None: for ever). `maps eval` never asks a person."""

    when: HumanWhen = "review"  # after each review, or after every turn
    max_backs: int = Field(default=10, ge=0, le=100)
    wait_s: float | None = Field(default=None, ge=0)  # None: a pause waits until someone answers


class ImagesConfig(_Strict):
    max_side: int = Field(default=1568, ge=64)
    # A left-out step's images (--without interpreter): false, they reach no step (the paper's
    # ablation); true, they go to the next step that runs.
    to_next_step: bool = False


class LimitsConfig(_Strict):
    """Bounds on untrusted input: model replies, images, problem files."""

    reply_bytes: int = Field(default=256 * 1024, ge=1024)  # longer replies are truncated and flagged
    image_file_bytes: int = Field(default=50 * 2**20, ge=1024)  # regular files only
    image_pixels: int = Field(default=50_000_000, ge=4096)  # decoded; big JPEGs are reduced while decoding
    problem_file_bytes: int = Field(default=2**20, ge=1024)  # problem.yaml (YAML aliases are refused)


def _default_endpoints() -> dict[str, OpenAIEndpoint | LocalEndpoint]:
    return {"openai": OpenAIEndpoint()}


class AppConfig(_Strict):
    """The whole of agents.yaml."""

    schema_version: int = CONFIG_SCHEMA_VERSION
    # an AG2 OAI_CONFIG_LIST file (or the variable holding it): its models become endpoints
    config_list: str | None = None
    endpoints: dict[str, Endpoint] = Field(default_factory=_default_endpoints)
    model: ModelChoice = ModelChoice()
    every_step: EveryStepConfig = EveryStepConfig()
    prices: dict[str, PriceConfig] = Field(default_factory=dict)
    task_prompt: str = "prompts/task.yaml"
    manager_prompt: str = "prompts/manager.yaml"
    user_proxy_prompt: str = "prompts/user_proxy.yaml"
    answer_formats: str = "prompts/answer_formats.yaml"
    baseline_prompts: str = "prompts/baselines.yaml"
    team: str | dict[str, Any] | list[Any]  # a team file, or the team inline (validated by _team.py)
    critic: CriticConfig = CriticConfig()
    stop: StopConfig = StopConfig()
    human: HumanConfig = HumanConfig()
    images: ImagesConfig = ImagesConfig()
    limits: LimitsConfig = LimitsConfig()

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, version: int) -> int:
        if version != CONFIG_SCHEMA_VERSION:
            raise ValueError(f"schema_version {version} is not supported (this maps reads {CONFIG_SCHEMA_VERSION})")
        return version


class LoadedConfig(BaseModel):
    """A validated config and team plus where they came from (paths resolve against `base_dir`).

    `origins`: where each top-level key's value came from (the file, the built-in defaults, a
    config list). `endpoint_keys`: API keys given inline by an AG2 config list, by endpoint name
    (registered with the redactor; never part of `config`, so never dumped)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    config: AppConfig
    path: Path
    base_dir: Path
    team: LoadedTeam
    origins: dict[str, str] = Field(default_factory=dict)
    endpoint_keys: dict[str, str] = Field(default_factory=dict, repr=False, exclude=True)

    def places(self, relative: str, base_dir: Path | None = None) -> list[Path]:
        """Where a path from the config is looked for, in order: itself when absolute; else in
        `base_dir` (the folder of the file that names it: the config's by default), then among
        the built-ins."""
        candidate = Path(relative).expanduser()
        if candidate.is_absolute():
            return [candidate]
        return [(base_dir or self.base_dir) / candidate, defaults_dir() / candidate]

    def resolve(self, relative: str, base_dir: Path | None = None) -> Path:
        """A path from the config: the first of its `places` that exists (else the first)."""
        places = self.places(relative, base_dir)
        return next((place for place in places if place.exists()), places[0])

    def model_for(self, step: str) -> ModelChoice:
        """A step's model: the keys its own `model:` writes, the others from the top-level `model:`
        (so a step that sets only `max_tokens` still runs on the configured endpoint and model),
        then the sampling settings `every_step:` sets (or --temperature, --top-p, --seed,
        --max-tokens), which apply to every step over its own."""
        own = self.team.config.step(step).model
        chosen = self.config.model
        if own is not None:
            chosen = chosen.model_copy(update={key: getattr(own, key) for key in own.model_fields_set})
        every = self.config.every_step.given()
        return chosen.model_copy(update=every) if every else chosen


def defaults_dir() -> Path:
    """Where the built-in agents.yaml, teams/ and prompts/ live (package data)."""
    return Path(str(importlib.resources.files("maps_autogen.settings.defaults")))


def find_config(explicit: Path | None = None, cwd: Path | None = None) -> Path:
    """The config to use: --config FILE, else ./agents.yaml, else the built-in one."""
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"config file {explicit} does not exist", fix="check the --config path")
        return explicit
    here = (cwd or Path.cwd()) / CONFIG_FILE_NAME
    if here.is_file():
        return here
    return defaults_dir() / CONFIG_FILE_NAME


def _describe(error: ErrorDetails) -> str:
    loc = [str(part) for part in error["loc"] if not str(part).startswith("function-")]
    if len(loc) >= 3 and loc[0] == "endpoints" and loc[2] in ("openai", "local"):
        del loc[2]  # pydantic puts the endpoint's `kind` tag into the path; the user never wrote it
    where = ".".join(loc)
    if error["type"] == "extra_forbidden":
        return f"unknown key '{where}'"
    if error["type"] == "missing" and where == "team":
        return "missing key 'team' (the ordered list of steps, or a team file)"
    if error["type"] == "missing":
        return f"missing key '{where}'"
    return f"'{where}': {error['msg']}" if where else error["msg"]


def parse_config(data: Any, path: Path) -> AppConfig:
    """Validate agents.yaml data; errors name the key and the file."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level", fix="see the default agents.yaml")
    try:
        return AppConfig.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        more = len(error.errors()) - 1
        suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise ConfigError(
            f"{path}: {_describe(first)}{suffix}", fix="fix agents.yaml; the default one documents every key"
        ) from None


def find_team_file(name: str, base_dir: Path) -> Path:
    """A team file: a path (relative to `base_dir`), else a built-in team by name (big_five)."""
    candidate = Path(name).expanduser()
    if not candidate.is_absolute():
        candidate = base_dir / candidate
    if candidate.is_file():
        return candidate
    builtin = defaults_dir() / "teams" / (name if name.endswith(".yaml") else f"{name}.yaml")
    if builtin.is_file():
        return builtin
    known = ", ".join(sorted([DEFAULT_TEAM, *(p.stem for p in (defaults_dir() / "teams").glob("*.yaml"))]))
    raise ConfigError(f"team file {name} does not exist", fix=f"give a path to a team file or a built-in team: {known}")


def load_named_team(name: str, base_dir: Path) -> LoadedTeam:
    """A team file by path (relative to `base_dir`), else a built-in team by name: `maps` is the
    default team (the one in the built-in agents.yaml), the others are files in teams/."""
    if name == DEFAULT_TEAM and not (base_dir / Path(name).expanduser()).is_file():
        path = defaults_dir() / CONFIG_FILE_NAME
        return parse_team(read_yaml(path)["team"], path, key="team", base_dir=defaults_dir())
    return load_team_file(find_team_file(name, base_dir), read_yaml=read_yaml)


def _load_team(config: AppConfig, path: Path) -> LoadedTeam:
    if isinstance(config.team, str):
        return load_named_team(config.team, path.parent)
    return parse_team(config.team, path, key="team", base_dir=path.parent)


def configured_secrets(
    explicit: Path | None = None, env: Mapping[str, str] | None = None
) -> tuple[list[str], list[str]]:
    """What every command masks from the config `find_config` picks, read once and leniently (a
    config that cannot be read names nothing here; the commands that use it report why): the
    api_key_env of every openai endpoint, and the keys written inline in the AG2 config list it
    names (`config_list:`), so `maps view`, `--serve` and `maps score` mask them as solve and
    eval do."""
    try:
        path = find_config(explicit)
        data = read_yaml(path)
    except ConfigError:
        return [], []
    return _key_variables(data), [*_inline_keys(data, path, os.environ if env is None else env),
                                  *written_secrets(data)]


def written_secrets(data: Any) -> list[str]:
    """Secrets written into config data where a name or a URL goes: anything shaped like an API
    key, a URL's user information and credential query parameters, and a header, query
    parameter or extra_body field named like a credential (`redact.secrets_written_in`)."""
    return secrets_written_in(data)


def register_written_secrets(data: Any) -> None:
    """Register every secret `written_secrets` finds in `data`, so no output shows it."""
    for secret in written_secrets(data):
        register_secret(secret)


def _key_variables(data: Any) -> list[str]:
    endpoints = data.get("endpoints") if isinstance(data, dict) else None
    default = OpenAIEndpoint().api_key_env or ""
    if not isinstance(endpoints, dict):
        return [default]  # the default endpoint
    names = [endpoint.get("api_key_env", default) for endpoint in endpoints.values()
             if isinstance(endpoint, dict) and endpoint.get("kind", "openai") == "openai"]
    return [name for name in names if isinstance(name, str)]


def _inline_keys(data: Any, path: Path, env: Mapping[str, str]) -> list[str]:
    from maps_autogen.settings._config_list import inline_keys

    source = data.get("config_list") if isinstance(data, dict) else None
    if not isinstance(source, str) or not source:
        return []
    return inline_keys(source, base_dir=path.parent, env=env)


def merge_onto(base: Any, override: Any) -> Any:
    """`override` (a user's agents.yaml) laid over `base` (the built-in defaults). Mappings merge
    key by key, recursively, the override's keys first (so `endpoint: auto` prefers the user's
    endpoints); everything else (lists such as team.steps, strings, numbers, null) replaces the
    base's value whole. Two mappings of different `kind` (an endpoint redeclared as another
    kind) do not merge: the override replaces the base."""
    if not isinstance(base, dict) or not isinstance(override, dict):
        return override
    if "kind" in base and "kind" in override and base["kind"] != override["kind"]:
        return override
    merged = {key: merge_onto(base[key], value) if key in base else value for key, value in override.items()}
    merged.update({key: value for key, value in base.items() if key not in override})
    return merged


def effective_data(data: Any, path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """A config file's data merged onto the built-in defaults, and where each top-level key came
    from. An empty file is all defaults; a file that is not a mapping is an error."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level", fix="see the default agents.yaml")
    builtin = defaults_dir() / CONFIG_FILE_NAME
    defaults = read_yaml(builtin)
    merged = merge_onto(defaults, data)
    origins = {key: str(path) if key in data else "built-in defaults" for key in merged}
    return merged, origins


def load_config(
    explicit: Path | None = None,
    cwd: Path | None = None,
    *,
    team: Path | None = None,
    config_list: str | None = None,
    env: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """Find, read and validate the config and its team (`team`: --team FILE). The file is merged
    onto the built-in defaults (`merge_onto`); `config_list` (--config-list, else the file's
    `config_list:`) adds an AG2 OAI_CONFIG_LIST's models as endpoints."""
    from maps_autogen.settings._config_list import add_config_list

    env = os.environ if env is None else env
    path = find_config(explicit, cwd).resolve()
    data, origins = effective_data(read_yaml(path), path)
    register_written_secrets(data)  # before anything can print them (a validation error included)
    keys: dict[str, str] = {}
    source = config_list or data.get("config_list")
    if env is os.environ:
        apply_dotenv([source if isinstance(source, str) else None])  # a config list's variable, from ./.env
    if source:
        data, keys = add_config_list(data, source, base_dir=path.parent if not config_list else Path.cwd(), env=env)
        origins["endpoints"] = f"{origins['endpoints']} + config list {source}"
    config = parse_config(data, path)
    if env is os.environ:  # each endpoint's key variable, from ./.env (_dotenv.py: keys and endpoints only)
        apply_dotenv(e.api_key_env for e in config.endpoints.values() if isinstance(e, OpenAIEndpoint))
    # Every configured key is masked in all output, whether or not this run uses its endpoint;
    # so is a credential in an endpoint's headers or query (by its name: Authorization, X-Api-Key...).
    register_key_variables((e.api_key_env for e in config.endpoints.values() if isinstance(e, OpenAIEndpoint)), env)
    register_written_secrets(config.model_dump(mode="json", include={"endpoints"}))
    loaded_team = (
        load_named_team(str(team), Path.cwd()) if team else _load_team(config, path)
    )
    if team:
        origins["team"] = f"--team {team}"
    loaded = LoadedConfig(
        config=config, path=path, base_dir=path.parent, team=loaded_team, origins=origins, endpoint_keys=keys
    )
    check_threshold(loaded)
    return loaded


def check_threshold(loaded: LoadedConfig) -> None:
    """`critic.threshold` (or --threshold) must be reachable on the team's reviewer scale
    (1-5 by default, [0, 1] for Big Five): checked once the team is known."""
    scale = loaded.team.config.scale
    problem = threshold_problem(loaded.config.critic.threshold, scale)
    if problem is None:
        return
    origin = loaded.origins.get("critic", str(loaded.path))
    if origin.startswith("--"):
        raise UsageError(f"--threshold {problem}", fix=threshold_fix(scale))
    raise ConfigError(f"{loaded.path}: critic.threshold {problem}", fix=threshold_fix(scale))
