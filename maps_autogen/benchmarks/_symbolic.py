"""The per-item time limit for the symbolic scorers, and sympy's LaTeX parse they share (`_latex_parse`).

Why a worker process: sympy's `simplify`/`evalf` can run for minutes (or exhaust memory) on a
pathological answer, and Python cannot interrupt a running C-level computation from another
thread; `signal.alarm` only works in the main thread. So every symbolic verdict runs in a
persistent helper process. On timeout that process is killed and a fresh one is started for the
next call; the timed-out item counts as "not equal" and is recorded (a log warning and an entry
in `incidents()`). The limit covers the computation only, not the wait for a free helper.

The limit is counted in the helper's CPU time (what the check really costs), not on the wall
clock: a verdict must not depend on how loaded the machine is. The helper arms a profiling timer
(`setitimer(ITIMER_PROF)`, user plus system time of the helper) for each check, whose signal,
SIGPROF, left at its default action, ends the helper even inside a long C-level call; the caller
reads that death as a timeout. A helper that burns no CPU (stopped, starved, stuck in a wait)
still ends: the caller kills it after `WALL_CLOCK_FACTOR` times the limit on the wall clock.
Where there is no profiling timer (Windows) the limit is counted on the wall clock.

The pool is thread-safe: each call borrows one idle worker (starting one if needed, at most
`max_workers` at a time), so scorers may be called from any number of threads.

Workers are started with `subprocess` running `python -c` (not `multiprocessing`), so a caller's
`__main__` module is never re-imported in the child. Each helper dies with the process that
started it, however that process ends (_util/_lifeline.py: a parent-death signal on Linux, a watchdog
on a pipe elsewhere), also in the middle of a long sympy call; it ignores Ctrl-C and SIGTERM
(the process that started it decides, and stops it).

Everything in the "worker side" section below runs inside the helper process.
"""

from __future__ import annotations

import atexit
import collections
import importlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from maps_autogen._util import _lifeline as lifeline
from maps_autogen.benchmarks._incidents import Incident, clear_incidents, incidents
from maps_autogen.benchmarks._incidents import record as _record
from maps_autogen.benchmarks._latex_parse import parse_latex, parse_latex_whole, parse_paths

log = logging.getLogger(__name__)

DEFAULT_TIME_LIMIT_S = 10.0
"""Per-item limit (seconds of the helper's CPU time) for one symbolic verdict; override with
MAPS_SCORER_TIME_LIMIT."""

WALL_CLOCK_FACTOR = 10.0
"""A check whose helper has not answered after this many times the limit on the wall clock is
stopped all the same (a stopped or starved helper uses no CPU time, so its limit never passes)."""

#: Whether the limit can be counted in CPU time here (a POSIX profiling timer).
COUNTS_CPU_TIME = hasattr(signal, "setitimer")

DEFAULT_MEMORY_LIMIT_BYTES = 3 * 1024**3
"""Address-space cap of a helper process, so `10^{10^{10}}`-like input fails instead of OOM."""

_STARTUP_TIMEOUT_S = 120.0  # importing sympy on a loaded 2-core CI box can take a while


# --------------------------------------------------------------------------------------------
# Configuration and records of timeouts
# --------------------------------------------------------------------------------------------


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        log.warning("ignoring %s=%r (not a number)", name, raw)
        return default
    return value if value > 0 else default


_time_limit_s = _env_float("MAPS_SCORER_TIME_LIMIT", DEFAULT_TIME_LIMIT_S)


def time_limit() -> float:
    """The current per-item time limit in seconds."""
    return _time_limit_s


def set_time_limit(seconds: float) -> None:
    """Change the per-item time limit (seconds, > 0) for all later calls in this process."""
    global _time_limit_s
    if not seconds > 0:
        raise ValueError(f"time limit must be positive, got {seconds!r}")
    _time_limit_s = float(seconds)


# --------------------------------------------------------------------------------------------
# Caller side: the pool of helper processes
# --------------------------------------------------------------------------------------------


class WorkerFailed(RuntimeError):
    """A helper process timed out or died; the message says which."""


class HelperStartError(RuntimeError):
    """A helper process cannot start (e.g. sympy or antlr4 missing): a setup problem, raised
    rather than counted as "not equal" so a broken environment cannot pass for low scores."""


class WorkerTimeout(WorkerFailed):
    """The helper did not answer within the time limit (it is killed); `wall_clock` when the
    wall-clock backstop ended it rather than the CPU time it used."""

    def __init__(self, message: str, *, wall_clock: bool) -> None:
        super().__init__(message)
        self.wall_clock = wall_clock


class RemoteError(WorkerFailed):
    """The function raised inside a healthy helper (the helper stays in use)."""


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[3])


def _child_program(read_fd: int, write_fd: int, memory_limit: int, parent: lifeline.ParentLink) -> str:
    root = _package_root()
    return (
        "import sys\n"
        f"sys.path.insert(0, {root!r})\n"
        f"{parent.bootstrap()}"  # first: a helper never outlives the process that started it
        "from maps_autogen.benchmarks._symbolic import _serve\n"
        f"_serve({read_fd}, {write_fd}, {memory_limit})\n"
    )


class _Worker:
    """One helper process and the two pipe ends we talk to it through."""

    def __init__(self, memory_limit: int) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()

        def start() -> subprocess.Popen[bytes]:
            parent = lifeline.link()
            return subprocess.Popen(
                [sys.executable, "-c", _child_program(to_child_r, from_child_w, memory_limit, parent)],
                pass_fds=(to_child_r, from_child_w, *parent.pass_fds()),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                close_fds=True,
            )

        try:
            self.proc = lifeline.spawn(start)  # on the thread whose end is the process's end
        except BaseException:
            os.close(to_child_w)
            os.close(from_child_r)
            raise
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self.send_conn = Connection(to_child_w, readable=False)
        self.recv_conn = Connection(from_child_r, writable=False)
        self.ready = False

    def wait_ready(self) -> None:
        """Block until the helper has imported sympy (it sends one hello message)."""
        if self.ready:
            return
        if not self.recv_conn.poll(_STARTUP_TIMEOUT_S):
            self.kill()
            raise HelperStartError(f"helper process did not start in {_STARTUP_TIMEOUT_S:g}s")
        try:
            hello = self.recv_conn.recv()
        except (EOFError, OSError) as exc:
            self.kill()
            raise HelperStartError(f"helper process died while starting: {exc!r}") from exc
        if hello != "ready":
            self.kill()
            raise HelperStartError(f"helper process cannot start: {hello}")
        self.ready = True

    def call(self, target: tuple[str, str], args: tuple[Any, ...], timeout: float) -> Any:
        """Run `module.function(*args)` in the helper within `timeout` seconds of its CPU time
        (on the wall clock where CPU time cannot be counted); WorkerFailed on timeout or death."""
        self.wait_ready()
        wall = timeout * WALL_CLOCK_FACTOR if COUNTS_CPU_TIME else timeout
        try:
            self.send_conn.send((target, args, timeout if COUNTS_CPU_TIME else 0.0))
            if not self.recv_conn.poll(wall):
                if COUNTS_CPU_TIME:
                    raise WorkerTimeout(f"no answer within {wall:g}s on the wall clock", wall_clock=True)
                raise WorkerTimeout(f"no answer within {timeout:g}s", wall_clock=False)
            status, payload = self.recv_conn.recv()
        except (EOFError, OSError, BrokenPipeError) as exc:
            if self._ended_by_cpu_limit():
                raise WorkerTimeout(f"used more than {timeout:g}s of CPU time", wall_clock=False) from exc
            raise WorkerFailed(f"helper process died: {exc!r}") from exc
        if status == "ok":
            return payload
        raise RemoteError(f"helper raised {payload}")

    def _ended_by_cpu_limit(self) -> bool:
        """Whether the helper was ended by its CPU-time limit (its profiling timer's signal)."""
        try:
            code = self.proc.wait(timeout=10)  # its pipe is closed: it is gone or about to be
        except subprocess.TimeoutExpired:
            return False
        return COUNTS_CPU_TIME and code == -signal.SIGPROF

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """Stop the helper now and release its pipes."""
        try:
            self.proc.kill()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        for conn in (self.send_conn, self.recv_conn):
            try:
                conn.close()
            except OSError:
                pass

    def close(self) -> None:
        """Ask the helper to exit (closing its input does), then make sure it has."""
        try:
            self.send_conn.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        self.kill()


class WorkerPool:
    """At most `max_workers` helper processes, shared by all threads of this process."""

    def __init__(self, max_workers: int | None = None, memory_limit: int | None = None) -> None:
        self.max_workers = max_workers or max(1, os.cpu_count() or 1)
        self.memory_limit = DEFAULT_MEMORY_LIMIT_BYTES if memory_limit is None else memory_limit
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._free_slots = self.max_workers
        # Waiting callers in arrival order: a plain semaphore lets a busy thread re-acquire its
        # slot again and again while others starve (seen: 27 s waits behind 2 slots).
        self._waiters: collections.deque[threading.Event] = collections.deque()
        self._pid = os.getpid()

    def _acquire_slot(self) -> None:
        with self._lock:
            if self._free_slots > 0 and not self._waiters:
                self._free_slots -= 1
                return
            turn = threading.Event()
            self._waiters.append(turn)
        turn.wait()  # the releasing caller hands its slot straight to us

    def _release_slot(self) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft().set()
            else:
                self._free_slots += 1

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
                worker.kill()
        return _Worker(self.memory_limit)

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            keep = len(self._idle) < self.max_workers
            if keep:
                self._idle.append(worker)
        if not keep:
            worker.close()

    def run(self, target: tuple[str, str], args: tuple[Any, ...], timeout: float) -> Any:
        """Run a function in a helper within `timeout` seconds; WorkerFailed otherwise."""
        self._check_fork()
        self._acquire_slot()
        try:
            worker = self._take()
            try:
                result = worker.call(target, args, timeout)
            except RemoteError:
                self._give_back(worker)
                raise
            except BaseException:
                # A helper that timed out may still be computing: only killing it stops that.
                worker.kill()
                raise
            self._give_back(worker)
            return result
        finally:
            self._release_slot()

    def shutdown(self) -> None:
        """Stop every idle helper (busy ones are stopped when their call returns)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()

    def _check_fork(self) -> None:
        # After os.fork() the child must not share the parent's pipes.
        if os.getpid() != self._pid:
            self._lock = threading.Lock()
            self._idle = []
            self._free_slots = self.max_workers
            self._waiters = collections.deque()
            self._pid = os.getpid()


_pool: WorkerPool | None = None
_pool_lock = threading.Lock()


def pool() -> WorkerPool:
    """The process-wide helper pool (created on first use; MAPS_SCORER_WORKERS sizes it)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            workers = int(_env_float("MAPS_SCORER_WORKERS", float(os.cpu_count() or 1)))
            _pool = WorkerPool(max_workers=workers)
            atexit.register(_pool.shutdown)
        return _pool


@dataclass(frozen=True)
class NotFinished:
    """A symbolic check that did not finish normally, and why (said in the verdict)."""

    reason: str


#: Pass as `run_bounded`'s fallback to get a NotFinished saying why, instead of a fixed value.
NOT_FINISHED = NotFinished("")


def _why(kind: str, limit: float, error: WorkerFailed) -> str:
    if isinstance(error, WorkerTimeout) and error.wall_clock:
        return (f"its symbolic check's helper did not answer within {limit * WALL_CLOCK_FACTOR:g} s on the wall "
                f"clock (the backstop of its time limit of {limit:g} s of CPU time)")
    if kind == "timeout":
        counted = " of CPU time" if COUNTS_CPU_TIME else ""
        return f"its symbolic check did not finish within the time limit of {limit:g} s{counted}"
    if kind == "crash":
        return (f"its symbolic check's helper process died (its memory limit is "
                f"{DEFAULT_MEMORY_LIMIT_BYTES / 1024**3:g} GB)")
    return f"its symbolic check failed: {str(error).removeprefix('helper raised ')[:200]}"


def run_bounded(
    func: Callable[..., Any],
    *args: Any,
    fallback: Any,
    timeout: float | None = None,
) -> Any:
    """Run module-level `func(*args)` in a helper process within the time limit (seconds of
    the helper's CPU time; see the module's docstring for the wall-clock backstop).

    `func` must be importable by module and name and its arguments and result picklable. When
    the helper times out, dies, or `func` raises, the incident is recorded and `fallback` is
    returned (scorers pass False: "not equal"; NOT_FINISHED gives a NotFinished saying why).
    HelperStartError when no helper can start.
    """
    limit = time_limit() if timeout is None else timeout
    target = (func.__module__, func.__qualname__)
    started = time.monotonic()
    try:
        return pool().run(target, args, limit)
    except WorkerFailed as exc:
        elapsed = time.monotonic() - started
        if isinstance(exc, WorkerTimeout):
            kind = "timeout"
        elif isinstance(exc, RemoteError):
            kind = "error"
        else:
            kind = "crash"
        _record(Incident(f"{target[0]}.{target[1]}", kind, elapsed, f"{exc}; args {_short(args)}"))
        return NotFinished(_why(kind, limit, exc)) if fallback is NOT_FINISHED else fallback


def _short(args: tuple[Any, ...], limit: int = 200) -> str:
    text = repr(args)
    return text if len(text) <= limit else text[:limit] + "…"


# --------------------------------------------------------------------------------------------
# Worker side (runs inside the helper process)
# --------------------------------------------------------------------------------------------


def _serve(read_fd: int, write_fd: int, memory_limit: int) -> None:
    """Main loop of a helper: answer (target, args) requests until the input pipe closes."""
    recv_conn = Connection(read_fd, writable=False)
    send_conn = Connection(write_fd, readable=False)
    _limit_memory(memory_limit)
    # The official OlympiadBench judge lifts CPython's int→str digit cap; keep its behaviour.
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(1_000_000)
    try:
        parse_latex("1")  # load sympy and the ANTLR parser before saying hello
    except Exception as exc:  # noqa: BLE001 - reported to the caller as a setup problem
        send_conn.send(f"{type(exc).__name__}: {exc} (needs sympy and antlr4-python3-runtime)")
        return
    if COUNTS_CPU_TIME:
        signal.signal(signal.SIGPROF, signal.SIG_DFL)  # the timer's signal ends this process
    send_conn.send("ready")
    functions: dict[tuple[str, str], Callable[..., Any]] = {}
    while True:
        try:
            target, args, cpu_limit = recv_conn.recv()
        except (EOFError, OSError):
            return
        try:
            func = functions.get(target)
            if func is None:
                func = getattr(importlib.import_module(target[0]), target[1])
                functions[target] = func
            if cpu_limit > 0:
                signal.setitimer(signal.ITIMER_PROF, cpu_limit)
            try:
                reply: tuple[str, Any] = ("ok", func(*args))
            finally:
                if cpu_limit > 0:
                    signal.setitimer(signal.ITIMER_PROF, 0)
        except BaseException as exc:  # noqa: BLE001 - everything must go back to the caller
            reply = ("error", f"{type(exc).__name__}: {exc}"[:500])
        try:
            send_conn.send(reply)
        except (OSError, ValueError):
            return


def _limit_memory(limit: int) -> None:
    if limit <= 0:
        return
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, ValueError, OSError):
        pass


__all__ = [
    "COUNTS_CPU_TIME",
    "DEFAULT_TIME_LIMIT_S",
    "NOT_FINISHED",
    "Incident",
    "HelperStartError",
    "NotFinished",
    "RemoteError",
    "WorkerFailed",
    "WorkerTimeout",
    "WorkerPool",
    "WALL_CLOCK_FACTOR",
    "clear_incidents",
    "incidents",
    "parse_latex",
    "parse_latex_whole",
    "parse_paths",
    "pool",
    "run_bounded",
    "set_time_limit",
    "time_limit",
]
