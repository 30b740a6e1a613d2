"""How the embedded model is launched: its settings, from agents.yaml's `local` endpoint (bounded by the
config model), made into the launch plan.

Everything that can be checked before spawning the server child is checked here (file exists,
GGUF header and tensor table parse, port free), so common faults give a precise message.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from maps_autogen._util import ConfigError, LocalModelError
from maps_autogen.model.local._child import HOST
from maps_autogen.model.local._embedded import embedded_model_path
from maps_autogen.model.local._gguf import MMPROJ_ARCHITECTURE, GGUFFormatError, GGUFInfo, read_gguf_info
from maps_autogen.settings import LocalEndpoint

logger = logging.getLogger(__name__)

RUNTIME_FIX = "run: make setup (or bash scripts/setup_local_model.sh)"

#: The config model's default (SmolLM2-135M-Instruct was trained with an 8k context).
DEFAULT_N_CTX: int = LocalEndpoint.model_fields["n_ctx"].default
#: The server needs *some* API key string from clients; it checks none.
LOCAL_API_KEY = "local-no-key"



@dataclass(frozen=True)
class LocalModelSettings:
    """How to run the local model server. All fields have working defaults.

    model_path: a GGUF file; None = the embedded SmolLM2-135M-Instruct.
    mmproj_path: the multimodal projector GGUF of a vision model; images are only accepted with it.
    n_ctx: context window in tokens (clamped to what the model was trained with).
    n_threads: CPU threads for generation; None = the usable CPUs minus one (1 on 2 cores).
    chat_template: Jinja text, or a path to a .jinja file; None = the template stored in the GGUF.
    port: TCP port on 127.0.0.1; None = a free port chosen by the server.
    startup_timeout_s: how long to wait for the server to load the model and answer.
    default_max_tokens: reply length cap for requests that set no max_tokens (a small model can
        otherwise ramble until the context is full).
    log_path: where llama.cpp's log goes; None = a temporary file, deleted after a clean stop.
    model_name: the one name of the model: the server registers it and requests send it (the
        run records it); None = the model file's name without .gguf.
    n_parallel: requests served at once (slots), each holding n_ctx / n_parallel tokens.
    """

    model_path: Path | None = None
    mmproj_path: Path | None = None
    n_ctx: int = DEFAULT_N_CTX
    n_threads: int | None = None
    chat_template: str | Path | None = None
    port: int | None = None
    startup_timeout_s: float = 60.0
    default_max_tokens: int = 1024
    log_path: Path | None = None
    model_name: str | None = None
    n_parallel: int = 1

    def __post_init__(self) -> None:
        # Accept plain strings for paths: settings often come from YAML or the command line.
        for name in ("model_path", "mmproj_path", "log_path"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value).expanduser())
        _check_config_bounds(n_ctx=self.n_ctx, n_threads=self.n_threads)
        if self.port is not None and not 1 <= self.port <= 65535:
            raise ConfigError(f"local model port must be between 1 and 65535, got {self.port}")
        if self.startup_timeout_s <= 0:
            raise ConfigError(f"local model startup_timeout_s must be positive, got {self.startup_timeout_s}")
        if not 1 <= self.n_parallel <= 64:
            raise ConfigError(f"local model n_parallel must be between 1 and 64, got {self.n_parallel}")
        if self.default_max_tokens < 1:
            raise ConfigError(f"local model default_max_tokens must be at least 1, got {self.default_max_tokens}")


def _check_config_bounds(**values: Any) -> None:
    """Check settings that agents.yaml also sets against the config model's own bounds (one
    set of bounds: a value `maps` accepts in agents.yaml is accepted here and vice versa)."""
    try:
        LocalEndpoint(**values)
    except ValidationError as error:
        problem = error.errors()[0]
        name = ".".join(str(part) for part in problem["loc"])
        raise ConfigError(f"local model {name}: {problem['msg'].lower()}, got {problem['input']!r}") from None


def settings_from_endpoint(
    endpoint: Any, base_dir: Path | None = None, model_name: str | None = None
) -> LocalModelSettings:
    """LocalModelSettings from an agents.yaml `local` endpoint (maps_autogen.settings._config.LocalEndpoint).

    Reads model_path, mmproj_path, n_ctx, n_threads and chat_template; `model_name` is the name
    the requests will send (the resolved model's name), so the server registers that same name.
    Relative file paths resolve against base_dir (e.g. the config file's folder) when given,
    else against the working directory. A chat_template that is Jinja text is kept as is.
    """

    def path_of(value: str | None) -> Path | None:
        if not value:
            return None
        path = Path(value).expanduser()
        return base_dir / path if base_dir is not None and not path.is_absolute() else path

    template: str | Path | None = getattr(endpoint, "chat_template", None)
    if isinstance(template, str) and template and "{{" not in template and "{%" not in template:
        template = path_of(template)
    return LocalModelSettings(
        model_path=path_of(getattr(endpoint, "model_path", None)),
        mmproj_path=path_of(getattr(endpoint, "mmproj_path", None)),
        n_ctx=getattr(endpoint, "n_ctx", DEFAULT_N_CTX),
        n_threads=getattr(endpoint, "n_threads", None),
        chat_template=template,
        model_name=model_name,
    )


# --------------------------------------------------------------------------------------------
# Turning settings into a launch plan (all validation that can happen before spawning)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LaunchPlan:
    """Everything the child needs, already validated. Sent to it as one JSON line."""

    model_path: Path
    mmproj_path: Path | None
    model_name: str
    n_ctx: int
    n_threads: int
    chat_template: str  # "" = llama.cpp's own fallback (the GGUF had none)
    port: int  # 0 = let the server pick a free port
    n_predict: int
    delete_log: str | None = None  # a temporary log the child removes after a clean stop
    n_parallel: int = 1  # slots sharing n_ctx

    def to_json(self) -> str:
        return json.dumps({
            "model_path": str(self.model_path),
            "mmproj_path": str(self.mmproj_path) if self.mmproj_path else None,
            "model_name": self.model_name,
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
            "chat_template": self.chat_template,
            "port": self.port,
            "n_predict": self.n_predict,
            "delete_log": self.delete_log,
            "n_parallel": self.n_parallel,
        })


def _check_gguf(path: Path, what: str) -> GGUFInfo:
    """Fail with one clear line unless `path` is a readable, well-formed GGUF file."""
    if not path.is_file():
        raise LocalModelError(f"{what} file not found: {path}", fix="check the path in your settings")
    try:
        return read_gguf_info(path)
    except GGUFFormatError as error:
        raise LocalModelError(
            f"{what} file is not a valid GGUF model: {path}: {error}",
            fix="re-download the file or point to another GGUF",
        ) from None
    except OSError as error:
        raise LocalModelError(f"{what} file cannot be read: {path}: {error.strerror}") from None


def _resolve_chat_template(setting: str | Path | None, info: GGUFInfo) -> str:
    """The Jinja text to hand to llama.cpp (see LocalModelSettings.chat_template)."""
    if setting is None:
        template = info.chat_template
        if template is None:
            logger.warning("the model has no chat template; llama.cpp will fall back to ChatML")
        return template or ""
    text = str(setting)
    # A template name such as "chatml" would be taken as literal template text by some
    # xllamacpp versions and as a built-in name by others: accept only unambiguous input.
    if isinstance(setting, Path) or text.endswith(".jinja") or ("{{" not in text and "{%" not in text):
        path = Path(text).expanduser()
        if not path.is_file():
            looks_like_path = isinstance(setting, Path) or text.endswith(".jinja") or os.sep in text
            raise ConfigError(
                f"chat template file not found: {text}" if looks_like_path
                else f"chat_template {text!r} is neither Jinja text nor an existing .jinja file",
                fix="give Jinja template text or the path of a .jinja file",
            )
        return path.read_text(encoding="utf-8")
    return text


def _default_threads() -> int:
    """Generation threads when none are configured: the usable CPUs minus one (at most 8).

    Measured on 2 cores with other work running: llama.cpp with 2 threads collapsed to
    5-18 tokens/s (its threads wait for each other at every step, and a preempted one stalls
    the rest), 1 thread kept ~50 tokens/s. Leaving a core to the agents' own process and the
    OS keeps generation steady; beyond ~8 threads a small model gains nothing.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus - 1, 8))


def _check_port_free(port: int) -> None:
    """Fail clearly if `port` on 127.0.0.1 is taken (llama.cpp only logs a generic init error)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # Same flag as the server's own socket, so a port in TIME_WAIT is not reported as busy.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            raise LocalModelError(
                f"port {port} on {HOST} is already in use",
                fix="choose another port, or leave the port unset to pick a free one",
            ) from None


def plan_launch(settings: LocalModelSettings) -> LaunchPlan:
    """Validate `settings` against the files on disk and produce the child's launch plan."""
    import importlib.util

    if importlib.util.find_spec("xllamacpp") is None:
        raise LocalModelError("the local model runtime xllamacpp is not installed", fix=RUNTIME_FIX)
    model_path = (settings.model_path or embedded_model_path()).resolve()
    info = _check_gguf(model_path, "local model")
    if info.architecture == MMPROJ_ARCHITECTURE:
        raise LocalModelError(f"{model_path} is an mmproj (image projector) file, not a language model",
                              fix="set it as mmproj_path and give the model GGUF as model_path")
    mmproj_path = settings.mmproj_path.resolve() if settings.mmproj_path else None
    if mmproj_path is not None:
        mmproj_info = _check_gguf(mmproj_path, "mmproj")
        if mmproj_info.architecture != MMPROJ_ARCHITECTURE:
            raise LocalModelError(
                f"{mmproj_path} is not an mmproj (image projector) file: its architecture is "
                f"{mmproj_info.architecture!r}, not {MMPROJ_ARCHITECTURE!r}",
                fix="use the mmproj-*.gguf published with the vision model",
            )
    n_ctx = settings.n_ctx
    if info.context_length is not None and n_ctx > info.context_length:
        # Beyond the trained context a model degrades into noise; only tell loudly if asked for.
        log = logger.info if settings.n_ctx == DEFAULT_N_CTX else logger.warning
        log("n_ctx %d exceeds the model's trained context %d; using %d",
                       n_ctx, info.context_length, info.context_length)
        n_ctx = info.context_length
    if settings.port is not None:
        _check_port_free(settings.port)
    return LaunchPlan(
        model_path=model_path,
        mmproj_path=mmproj_path,
        model_name=settings.model_name or model_path.stem,
        n_ctx=n_ctx,
        n_threads=settings.n_threads or _default_threads(),
        chat_template=_resolve_chat_template(settings.chat_template, info),
        port=settings.port or 0,
        n_predict=settings.default_max_tokens,
        n_parallel=settings.n_parallel,
    )

