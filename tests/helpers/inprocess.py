"""Running the `maps` command inside the test process, as if it were a fresh process.

A subprocess pays `import autogen` (2.5 s idle, up to 9 s on a loaded machine) on every call;
in-process the import is paid once per test worker. `run_in_process` gives each call what a new
process would have: exactly the given environment and working directory, its own stdin, stdout
and stderr (not terminals), Python's default warning filters, `main()`'s own logging setup, and
afterwards it undoes what the command left behind in this process (signal handlers, servers it
started, the shared HTTP connection pools, registered secrets, per-process caches).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import os
import signal
import subprocess
import sys
import threading
import traceback
import warnings
from collections.abc import Iterator, Mapping
from types import FrameType, ModuleType

from click import termui
from click.testing import CliRunner

# Variables read once per process: when the interpreter starts (PYTHONPATH, PYTHONWARNINGS, ...),
# when a library is imported (huggingface_hub and datasets fix their cache folders, endpoint and
# offline mode then), or by our process-wide symbolic-scoring helpers (MAPS_SCORER_TIME_LIMIT,
# MAPS_SCORER_WORKERS). A call whose environment changes one of them from this process's runs
# in a subprocess, where they take effect.
READ_AT_START_PREFIXES = ("PYTHON", "HF_", "HUGGINGFACE_", "MAPS_SCORER_")


def needs_process(env: Mapping[str, str]) -> bool:
    """Whether `env` differs from this process's environment in a variable read at start or import."""
    names = {name for name in (*env, *os.environ) if name.startswith(READ_AT_START_PREFIXES)}
    return any(env.get(name) != os.environ.get(name) for name in names)


class _TimedOut(BaseException):
    """Raised in the main thread when a call outlives its timeout (not an Exception, so the
    command's own error handling does not swallow it)."""


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _working_directory(cwd: os.PathLike[str] | str) -> Iterator[None]:
    saved = os.getcwd()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved)


@contextlib.contextmanager
def _no_terminal_on_stdin() -> Iterator[None]:
    """File descriptor 0 on /dev/null for the call, as the subprocess had it (stdin=DEVNULL):
    libraries that size a terminal from fd 0 (rich) see none."""
    saved = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(devnull, 0)
        yield
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(devnull)


@contextlib.contextmanager
def _signal_handlers() -> Iterator[None]:
    """Restore SIGINT/SIGTERM/SIGALRM handlers the command installed (e.g. `exit_on_second_interrupt`)."""
    numbers = (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)
    saved = {number: signal.getsignal(number) for number in numbers}
    try:
        yield
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def _fresh_logging() -> Iterator[None]:
    """The root logger as a new process has it (no handlers), so `main()`'s basicConfig writes
    warnings to this call's stderr; pytest's capture handlers come back afterwards."""
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    root.handlers = []
    try:
        yield
    finally:
        for handler in root.handlers:
            if handler not in saved_handlers:
                handler.close()
        root.handlers = saved_handlers
        root.setLevel(saved_level)


@contextlib.contextmanager
def _default_warnings() -> Iterator[None]:
    """Python's default warning filters, shown on this call's stderr (pytest records them otherwise)."""
    with warnings.catch_warnings():
        warnings.resetwarnings()
        for action, category in (("ignore", DeprecationWarning), ("ignore", PendingDeprecationWarning), ("ignore", ImportWarning),
                                 ("ignore", ResourceWarning)):
            warnings.simplefilter(action, category)
        warnings.showwarning = warnings._showwarning_orig  # type: ignore[attr-defined]
        yield


_STATE_TYPES = (set, dict, list, tuple, frozenset, int, float, str, bool, type(None))


def _is_state(name: str, value: object) -> bool:
    """A module's private data (`_secrets`, `_clients`, a frozen dataclass of tables...), not
    its functions, classes, locks or compiled patterns."""
    if not name.startswith("_") or name.startswith("__"):
        return False
    return isinstance(value, _STATE_TYPES) or dataclasses.is_dataclass(value) and not isinstance(value, type)


@contextlib.contextmanager
def _module_globals(module: ModuleType) -> Iterator[None]:
    """Put `module`'s private data back as it was (containers refilled in place, other values
    rebound), closing what the call opened there (an HTTP connection pool it made)."""
    saved = {name: copy.copy(value) for name, value in vars(module).items() if _is_state(name, value)}
    try:
        yield
    finally:
        for name, before in saved.items():
            now = getattr(module, name)
            if isinstance(now, dict) and isinstance(before, dict):
                for key, value in now.items():
                    if before.get(key) is not value and hasattr(value, "close"):
                        value.close()
            if isinstance(now, (set, dict, list)) and type(now) is type(before):
                now.clear()
                now.update(before) if not isinstance(now, list) else now.extend(before)
            else:
                setattr(module, name, before)


@contextlib.contextmanager
def _process_state() -> Iterator[None]:
    """Undo the per-process state of our package the command created: the local model server
    and any other it started, the shared HTTP pools (made with the environment's proxy
    settings), registered secrets, the hub probe's answer."""
    from maps_autogen._util import _redact as redact
    from maps_autogen.model import _client as client
    from maps_autogen.problem import _hub as hub

    server_module = sys.modules.get("maps_autogen.model.local._server")
    saved_servers = set(server_module._LIVE_SERVERS) if server_module else set()
    with _module_globals(redact), _module_globals(client):
        try:
            yield
        finally:
            server_module = sys.modules.get("maps_autogen.model.local._server")
            if server_module is not None:
                shared = server_module._SHARED
                if shared is not None and shared not in saved_servers:
                    server_module.stop_shared_local_server()
                for server in list(server_module._LIVE_SERVERS):
                    if server not in saved_servers:
                        server.stop()
            hub.hub_reachable.cache_clear()
            dotenv = sys.modules.get("maps_autogen.settings._dotenv")
            if dotenv is not None:
                dotenv.forget_dotenv()  # the .env a command read is its own


@contextlib.contextmanager
def _deadline(timeout: float) -> Iterator[None]:
    """Interrupt the call after `timeout` seconds (main thread only; SIGALRM's handler is restored)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise _TimedOut

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _exit_code(done: SystemExit) -> int:
    code = done.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message"), as the interpreter would
    return 1


def run_in_process(args: list[str], *, env: Mapping[str, str], cwd: os.PathLike[str] | str, timeout: float,
                   stdin: str | None) -> subprocess.CompletedProcess[str]:
    """`maps ARGS` run by `maps_autogen.cli.main` in this process, with a fresh process's view
    of the world; the result has a subprocess's fields (returncode, stdout, stderr).
    An uncaught exception is a traceback on stderr and exit code 1, as in a process."""
    from maps_autogen.cli import main

    runner = CliRunner()
    command = ["maps", *args]
    with contextlib.ExitStack() as stack:
        stack.enter_context(_process_state())
        stack.enter_context(_signal_handlers())
        stack.enter_context(_environment(env))
        stack.enter_context(_working_directory(cwd))
        stack.enter_context(_no_terminal_on_stdin())
        stdout, stderr, _ = stack.enter_context(runner.isolation(input=stdin))
        # A process reading piped stdin prompts with input(): the answer is not echoed back.
        termui.visible_prompt_func = input
        stack.enter_context(_fresh_logging())
        stack.enter_context(_default_warnings())
        try:
            with _deadline(timeout):
                main(list(args))
            returncode = 0
        except _TimedOut:
            raise subprocess.TimeoutExpired(command, timeout) from None
        except SystemExit as done:
            returncode = _exit_code(done)
        except BaseException:  # noqa: BLE001 - an uncaught error ends a process with a traceback
            traceback.print_exc()
            returncode = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
    return subprocess.CompletedProcess(command, returncode, stdout.getvalue().decode("utf-8"),
                                       stderr.getvalue().decode("utf-8", errors="backslashreplace"))
