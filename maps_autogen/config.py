"""Typed configuration: agents.yaml, loaded and validated (unknown keys are errors).

The repository's top-level agents.yaml and prompts/ are the built-in defaults; an installed
wheel carries a build-time copy of them under maps_autogen/_defaults/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from maps_autogen.errors import ConfigError
from maps_autogen.redact import register_key_variables
from maps_autogen.roles import Role

CONFIG_SCHEMA_VERSION = 1
CONFIG_FILE_NAME = "agents.yaml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PriceConfig(_Strict):
    """USD per million tokens."""

    prompt_per_million: float = Field(ge=0)
    completion_per_million: float = Field(ge=0)


class OpenAIEndpoint(_Strict):
    """An OpenAI-compatible chat-completions service (OpenAI, vLLM, llama.cpp, gateways)."""

    kind: Literal["openai"] = "openai"
    base_url: str | None = None  # None: $OPENAI_BASE_URL, else OpenAI's own
    api_key_env: str | None = "OPENAI_API_KEY"  # the variable's name; None: no key needed
    default_model: str = "gpt-4o"
    timeout_s: float = Field(default=120, gt=0)
    max_retries: int = Field(default=4, ge=0)
    json_mode: Literal["schema", "object", "none"] = "schema"
    stream: bool = False
    max_connections: int = Field(default=64, ge=1)


class LocalEndpoint(_Strict):
    """The embedded llama.cpp server (offline, demonstration quality by default)."""

    kind: Literal["local"] = "local"
    model_path: str | None = None  # None: the embedded SmolLM2-135M-Instruct
    mmproj_path: str | None = None  # a multimodal projector makes images real
    n_ctx: int = Field(default=8192, ge=512)
    n_threads: int | None = Field(default=None, ge=1)
    chat_template: str | None = None
    # A 135M model drifts into repetition on long replies: cap them and discourage repeats.
    max_tokens: int = Field(default=256, ge=16)
    repeat_penalty: float = Field(default=1.15, ge=1.0, le=2.0)
    timeout_s: float = Field(default=600, gt=0)
    max_retries: int = Field(default=1, ge=0)
    json_mode: Literal["schema", "object", "none"] = "schema"
    stream: bool = False


Endpoint = Annotated[Union[OpenAIEndpoint, LocalEndpoint], Field(discriminator="kind")]


class ModelChoice(_Strict):
    """Which endpoint and model a role talks to. `endpoint: auto` picks at start-up."""

    endpoint: str = "auto"
    name: str | None = None  # None: the endpoint's default model
    temperature: float | None = Field(default=0.0, ge=0, le=2)
    max_tokens: int | None = Field(default=2048, ge=1)


class RoleConfig(_Strict):
    prompt: str
    sees_images: bool = False
    model: ModelChoice | None = None  # None: the top-level model


class CriticConfig(_Strict):
    # Scores are 1-5; a threshold of 6 never passes, so every allowed rollback runs.
    threshold: float = Field(default=5, ge=0, le=6)
    max_rollbacks: int = Field(default=1, ge=0, le=20)
    final_review: bool = False


class StopConfig(_Strict):
    max_rounds: int = Field(default=40, ge=1)


class ImagesConfig(_Strict):
    max_side: int = Field(default=1568, ge=64)


class LimitsConfig(_Strict):
    """Bounds on untrusted input: model replies, images, problem files."""

    reply_bytes: int = Field(default=256 * 1024, ge=1024)  # longer replies are truncated and flagged
    image_file_bytes: int = Field(default=50 * 2**20, ge=1024)  # regular files only
    image_pixels: int = Field(default=50_000_000, ge=4096)  # decoded; big JPEGs are reduced while decoding
    problem_file_bytes: int = Field(default=2**20, ge=1024)  # problem.yaml (YAML aliases are refused)


class PersonalityConfig(_Strict):
    profile: str = "big_seven"  # a profile in `file`, or "custom" with `custom` filled in
    file: str = "prompts/personalities.yaml"
    custom: dict[str, str] | None = None


class AppConfig(_Strict):
    """The whole of agents.yaml."""

    schema_version: int = CONFIG_SCHEMA_VERSION
    endpoints: dict[str, Endpoint] = Field(default_factory=lambda: {"openai": OpenAIEndpoint()})
    model: ModelChoice = ModelChoice()
    prices: dict[str, PriceConfig] = Field(default_factory=dict)
    personality: PersonalityConfig = PersonalityConfig()
    task_prompt: str = "prompts/task.yaml"
    manager_prompt: str = "prompts/manager.yaml"
    user_proxy_prompt: str = "prompts/user_proxy.yaml"
    answer_formats: str = "prompts/answer_formats.yaml"
    baseline_prompts: str = "prompts/baselines.yaml"
    roles: dict[Role, RoleConfig]
    critic: CriticConfig = CriticConfig()
    stop: StopConfig = StopConfig()
    images: ImagesConfig = ImagesConfig()
    limits: LimitsConfig = LimitsConfig()

    @field_validator("personality", mode="before")
    @classmethod
    def _profile_shorthand(cls, value: Any) -> Any:
        return {"profile": value} if isinstance(value, str) else value

    @field_validator("roles")
    @classmethod
    def _every_role(cls, roles: dict[Role, RoleConfig]) -> dict[Role, RoleConfig]:
        missing = [role.value for role in Role if role not in roles]
        if missing:
            raise ValueError(f"roles is missing {', '.join(missing)}")
        return roles

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, version: int) -> int:
        if version != CONFIG_SCHEMA_VERSION:
            raise ValueError(f"schema_version {version} is not supported (this maps reads {CONFIG_SCHEMA_VERSION})")
        return version

    def model_for(self, role: Role) -> ModelChoice:
        return self.roles[role].model or self.model


class LoadedConfig(BaseModel):
    """A validated config plus where it came from (prompt paths resolve against `base_dir`)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    config: AppConfig
    path: Path
    base_dir: Path

    def resolve(self, relative: str) -> Path:
        """A path from the config: relative to the config's folder, else to the built-ins."""
        candidate = Path(relative).expanduser()
        if candidate.is_absolute():
            return candidate
        local = self.base_dir / candidate
        if local.exists():
            return local
        builtin = defaults_dir() / candidate
        return builtin if builtin.exists() else local


def defaults_dir() -> Path:
    """Where the built-in agents.yaml and prompts/ live (source checkout or installed wheel)."""
    package_dir = Path(__file__).resolve().parent
    source_root = package_dir.parent
    if (source_root / CONFIG_FILE_NAME).is_file() and (source_root / "prompts").is_dir():
        return source_root
    return package_dir / "_defaults"


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


def _describe(error: dict[str, Any]) -> str:
    loc = [str(part) for part in error["loc"] if not str(part).startswith("function-")]
    if len(loc) >= 3 and loc[0] == "endpoints" and loc[2] in ("openai", "local"):
        del loc[2]  # pydantic puts the endpoint's `kind` tag into the path; the user never wrote it
    where = ".".join(loc)
    if error["type"] == "extra_forbidden":
        return f"unknown key '{where}'"
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
        raise ConfigError(f"{path}: {_describe(first)}{suffix}", fix="fix agents.yaml; the default one documents every key") from None


class _NoAliasLoader(yaml.SafeLoader):
    """A safe loader that refuses aliases (`*name`), so a small untrusted file cannot expand
    into gigabytes (the "billion laughs" bomb)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in this file", event.start_mark)
        return super().compose_node(parent, index)


def read_yaml(path: Path, *, allow_aliases: bool = True, max_bytes: int | None = None, limit_name: str = "") -> Any:
    """Read a YAML file, turning every failure into a one-line ConfigError. Untrusted files
    pass `allow_aliases=False` and a `max_bytes` bound (named `limit_name` in the error)."""
    try:
        if max_bytes is not None and path.stat().st_size > max_bytes:
            raise ConfigError(f"{path} is larger than {limit_name or 'the limit'} ({max_bytes:,} bytes)",
                              fix=f"shorten the file or raise {limit_name} in agents.yaml" if limit_name else "shorten the file")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist", fix="check the path") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error.__class__.__name__}", fix="check the file's permissions and encoding") from None
    try:
        return yaml.load(text, Loader=yaml.SafeLoader if allow_aliases else _NoAliasLoader)  # noqa: S506 - both are safe loaders
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or "invalid YAML"
        raise ConfigError(f"{path}: malformed YAML{where}: {problem}", fix="fix the YAML syntax") from None


def load_config(explicit: Path | None = None, cwd: Path | None = None) -> LoadedConfig:
    """Find, read and validate the config."""
    path = find_config(explicit, cwd)
    config = parse_config(read_yaml(path), path)
    # Every configured key is masked in all output, whether or not this run uses its endpoint.
    register_key_variables(e.api_key_env for e in config.endpoints.values() if isinstance(e, OpenAIEndpoint))
    return LoadedConfig(config=config, path=path.resolve(), base_dir=path.resolve().parent)


def with_overrides(
    loaded: LoadedConfig,
    *,
    model: str | None = None,
    threshold: float | None = None,
    max_rollbacks: int | None = None,
) -> LoadedConfig:
    """Apply command-line overrides; `model` is NAME or ENDPOINT:NAME and applies to every role."""
    config = loaded.config
    data = config.model_dump(mode="python")
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
        for role_data in data["roles"].values():
            role_data["model"] = None
    if threshold is not None:
        data["critic"]["threshold"] = threshold
    if max_rollbacks is not None:
        data["critic"]["max_rollbacks"] = max_rollbacks
    return LoadedConfig(config=parse_config(data, loaded.path), path=loaded.path, base_dir=loaded.base_dir)
