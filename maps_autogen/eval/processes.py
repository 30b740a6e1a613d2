"""Worker processes for `maps eval`: problems solved in several processes when one core cannot
keep up with the problems in flight.

`maps eval` is CPU-bound in one process at high concurrency with a fast service. Measured on
the 2-core machine (0.5 s calls, 5 calls a problem; docs/benchmarks.md): at 64 in flight one
process and two reach the same rate, at 96 and 128 two are ahead. So `maps eval`
uses one process (the path without workers) up to `PROBLEMS_PER_PROCESS` in flight, and beyond
it one process per `PROBLEMS_PER_PROCESS` in flight (rounded up), at most one per core and one
per `PROBLEMS_PER_PROCESS` problems left to run (starting a process costs about the start-up of
`maps`); `--workers N` overrides. A run on the embedded model (an endpoint of kind `local`)
stays in one process: its llama.cpp server is one server that already uses every core, each
call takes seconds, and MAPS's own CPU per problem is lost in that; more processes would only
compete with the server for the cores.

The parent keeps everything a run has once: the one writer of results.jsonl, the progress bar,
the cost cap, the service-failure stop, Ctrl-C and the manifest (eval/runner.py). It starts each
child with the `spawn` method (never a fork of a threaded process) and SIGINT blocked, so the
children never see a Ctrl-C: the parent decides and tells them (`cancel`). Each child rebuilds
the run's problems and its own team (solving.assemble_team) from what the parent resolved, masks
the same secrets, solves the problems it is given in its own threads (eval/workers.py), each into
its own folder, and sends back each problem's results row and the service failure that ended it,
its log records, and at the end the requests each replica served. A child ends when the parent
closes it or goes away (its pipe closes); the parent reaps every child, and kills them before a
second Ctrl-C exits. A child that dies is reported in one line; its problems in flight are
recorded failed, so --resume runs them again.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from maps_autogen.benchmarks import get_benchmark
from maps_autogen.benchmarks.tasks import EvalItem, Subset
from maps_autogen.cache import ResponseCache
from maps_autogen.config import LoadedConfig
from maps_autogen.endpoints import Resolution
from maps_autogen.errors import MapsError, UsageError
from maps_autogen.eval.problem_run import ProblemRunner
from maps_autogen.eval.selection import load_items
from maps_autogen.eval.workers import DaemonWorkers
from maps_autogen.fetch import private_urls_allowed
from maps_autogen.interrupts import on_exit_now
from maps_autogen.records import ResultRow
from maps_autogen.redact import register_secret, registered_secrets, terminal_safe
from maps_autogen.safe_paths import outside_paths_allowed
from maps_autogen.solving import assemble_team

logger = logging.getLogger(__name__)

#: Problems in flight one process keeps up with (one core); more go to more processes.
PROBLEMS_PER_PROCESS = 64
#: How long a closing child may take to say goodbye before it is killed.
_CLOSE_SECONDS = 30.0

Solved = tuple[ResultRow, MapsError | None]


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def check_workers(requested: int | None, *, local: bool) -> None:
    """`--workers N` above 1 on the embedded model is refused (see the module doc)."""
    if requested is not None and requested > 1 and local:
        raise UsageError(
            f"--workers {requested} cannot run the embedded model (endpoint kind local): its one server already "
            "uses every core", fix="drop --workers (a local run uses one process)")


def worker_count(requested: int | None, *, concurrency: int, problems: int, cores: int, local: bool) -> int:
    """How many processes solve `problems` with `concurrency` in flight (see the module doc):
    `requested` when given (never more than the problems in flight or left to run), else 1 up to
    PROBLEMS_PER_PROCESS in flight, then one per PROBLEMS_PER_PROCESS in flight (rounded up), at
    most one per core and one per PROBLEMS_PER_PROCESS problems left to run."""
    check_workers(requested, local=local)
    if requested is not None:
        return max(1, min(requested, concurrency, problems))
    if local:
        return 1
    return max(1, min(cores, -(-concurrency // PROBLEMS_PER_PROCESS), problems // PROBLEMS_PER_PROCESS))


def added_counts(*counts: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    """Requests per replica URL, per endpoint, summed over several counts."""
    total: dict[str, dict[str, int]] = {}
    for served in counts:
        for endpoint, by_url in served.items():
            for url, count in by_url.items():
                total.setdefault(endpoint, {})[url] = total.get(endpoint, {}).get(url, 0) + count
    return total


def shares(concurrency: int, count: int) -> list[int]:
    """The problems in flight of each of `count` processes: `concurrency` split as evenly as
    possible (the total never exceeds it)."""
    return [concurrency // count + (1 if index < concurrency % count else 0) for index in range(count)]


@dataclass(frozen=True)
class WorkerSetup:
    """What a child needs to rebuild the run's problems and team as the parent has them."""

    benchmark: str
    subsets: tuple[Subset, ...]
    data: Path | None
    pids: frozenset[str]
    allow_outside_paths: bool
    allow_private_urls: bool
    loaded: LoadedConfig
    resolution: Resolution  # resolved once by the parent: every child sends the same models and keys
    method: str
    without: frozenset[str]
    rules: str
    eval_dir: Path
    cache_path: Path | None
    max_connections: int
    threads: int = 1
    secrets: frozenset[str] = field(default_factory=frozenset, repr=False)


class InProcess:
    """The problems solved in this process's threads (one process: the path without workers)."""

    def __init__(self, runner: ProblemRunner, threads: int):
        self._runner = runner
        self._threads = DaemonWorkers(threads)

    def start(self) -> None:
        """Nothing to start: the threads wait for problems."""

    def room(self) -> bool:
        """Always: the caller keeps to the concurrency."""
        return True

    def submit(self, item: EvalItem) -> Future[Solved]:
        """Solve `item` in a worker thread."""
        future: Future[Solved] = self._threads.submit(self._runner.solve, item)
        return future

    def cancel(self) -> None:
        """Every chat stops at its next model request (Ctrl-C, a stop)."""
        self._runner.team.cancel()

    def replicas_served(self) -> dict[str, dict[str, int]]:
        """Nothing beyond the team's own counts."""
        return {}

    def close(self) -> None:
        """Let the threads end once the problems in flight are done (never waits)."""
        self._threads.close()


class WorkerDied(MapsError):
    """The worker process solving a problem ended before it finished."""


@dataclass
class _Child:
    number: int
    process: Any  # multiprocessing's SpawnProcess
    conn: Connection
    share: int
    in_flight: dict[str, Future[Solved]] = field(default_factory=dict)
    alive: bool = True
    closing: bool = False
    listener: threading.Thread | None = None
    sending: threading.Lock = field(default_factory=threading.Lock)


class ProcessWorkers:
    """The children solving an eval's problems, as the parent sees them (see the module doc)."""

    def __init__(self, setup: WorkerSetup, count: int, concurrency: int):
        self._setup = replace(setup, secrets=registered_secrets())
        self._shares = shares(concurrency, count)
        self._lock = threading.Lock()
        self._served: dict[str, dict[str, int]] = {}
        self._children: list[_Child] = []  # those started

    def start(self) -> None:
        """Start the children (a Ctrl-C meanwhile leaves those started to `close`)."""
        context = multiprocessing.get_context("spawn")
        on_exit_now(self.kill)
        # Started now: starting it unblocks SIGINT in this thread, which children started after
        # that would inherit.
        resource_tracker.ensure_running()
        with _sigint_deferred():
            for number, share in enumerate(self._shares, start=1):
                here, there = context.Pipe()
                process = context.Process(target=worker_main, args=(there, replace(self._setup, threads=share)),
                                          name=f"maps-eval-{number}", daemon=True)
                process.start()
                there.close()
                child = _Child(number, process, here, share)
                child.listener = threading.Thread(target=self._listen, args=(child,),
                                                  name=f"maps-eval-{number}-listener", daemon=True)
                self._children.append(child)
                child.listener.start()

    def room(self) -> bool:
        """Whether a live child can take another problem now."""
        with self._lock:
            return any(child.alive and len(child.in_flight) < child.share for child in self._children)

    def submit(self, item: EvalItem) -> Future[Solved]:
        """Send `item` to the live child with the most room (call only when `room()`)."""
        future: Future[Solved] = Future()
        future.set_running_or_notify_cancel()
        with self._lock:
            live = [c for c in self._children if c.alive]
            child = max(live, key=lambda c: c.share - len(c.in_flight)) if live else None
            if child is not None:
                child.in_flight[str(item.pid)] = future
        if child is None:
            future.set_exception(WorkerDied("every worker process has ended", fix="run it again with --resume"))
        else:
            self._send(child, ("solve", str(item.pid)))
        return future

    def cancel(self) -> None:
        """Every child's chats stop at their next model request (Ctrl-C, a stop: Team.cancel in each)."""
        for child in self._children:
            self._send(child, ("cancel",))

    def replicas_served(self) -> dict[str, dict[str, int]]:
        """Requests served by each replica, summed over the children that said goodbye."""
        with self._lock:
            return added_counts(self._served)

    def close(self) -> None:
        """Tell every child to end, wait for its goodbye (bounded), and reap it (its listener
        reaps it: one waiter per process)."""
        for child in self._children:
            child.closing = True
            self._send(child, ("close",))
        for child in self._children:
            assert child.listener is not None
            child.listener.join(_CLOSE_SECONDS)
            if child.listener.is_alive():
                logger.warning("worker process %d (pid %s) did not end: stopping it", child.number, child.process.pid)
                child.process.kill()
                child.listener.join()
            child.conn.close()
        on_exit_now(self.kill, remove=True)

    def kill(self) -> None:
        """End every child now, and reap it (a second Ctrl-C exits right after)."""
        for child in self._children:
            if child.listener is not None and child.listener.is_alive():
                child.process.kill()
        for child in self._children:
            if child.listener is not None:
                child.listener.join(5)

    # ----- the parent's side of each pipe ---------------------------------------------------
    def _send(self, child: _Child, message: tuple[Any, ...]) -> None:
        try:
            with child.sending:
                if child.alive:
                    child.conn.send(message)
        except (OSError, ValueError):  # the child is gone: its listener reports it
            pass

    def _listen(self, child: _Child) -> None:
        """Receive what `child` sends until its pipe closes; then settle its problems in flight."""
        failed: str | None = None
        while True:
            try:
                message = child.conn.recv()
            except (EOFError, OSError):
                break
            except Exception as error:  # noqa: BLE001 - a message that cannot be read: the child is stopped
                failed = f"a message from it could not be read: {error.__class__.__name__}"
                child.process.kill()
                break
            kind = message[0]
            if kind == "done":
                _, pid, row, failure = message
                with self._lock:
                    future = child.in_flight.pop(pid, None)
                if future is not None:
                    future.set_result((row, failure))
            elif kind == "log":
                _relog(*message[1:])
            elif kind == "served":
                with self._lock:
                    self._served = added_counts(self._served, message[1])
            elif kind == "failed":
                failed = message[1]
        child.process.join(5)  # its pipe is closed: it is ending (or has ended)
        if child.process.exitcode is None:
            child.process.kill()
            child.process.join()
        with self._lock:
            child.alive = False
            orphaned, child.in_flight = child.in_flight, {}
        why = failed or f"exit code {child.process.exitcode}"
        if child.closing and failed is None:  # told to end: what was in flight is dropped (Ctrl-C, a stop)
            for future in orphaned.values():
                future.set_exception(WorkerDied("dropped when the run stopped"))
            return
        logger.warning("worker process %d (pid %s) ended (%s): its %d problem(s) in flight are recorded failed; "
                       "--resume runs them again", child.number, child.process.pid, why, len(orphaned))
        for future in orphaned.values():
            future.set_exception(WorkerDied(f"the worker process solving it ended ({why})",
                                            fix="run it again with --resume"))


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """SIGINT held off while the children start. Blocked in this thread, so each child inherits
    the block (and then ignores SIGINT); a Ctrl-C meanwhile (delivered to another thread) is
    noted and handed to the handler in force once every child has started: a KeyboardInterrupt
    in the middle of a start would leave a child reading a cut pipe."""
    caught: list[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    except ValueError:  # not the main thread, where a Ctrl-C is raised: nothing to defer
        previous = None
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
            if caught and callable(previous):
                previous(signal.SIGINT, None)


def _relog(name: str, level: int, message: str, exc_text: str | None) -> None:
    """A child's log record, logged here (through this process's handlers, which mask secrets)."""
    target = logging.getLogger(name)
    if target.isEnabledFor(level):
        target.handle(logging.makeLogRecord({"name": name, "levelno": level, "levelname": logging.getLevelName(level),
                                             "msg": message, "exc_text": exc_text}))


class _Forward(logging.Handler):
    """A child's log records, sent to the parent."""

    def __init__(self, send: Any):
        super().__init__(logging.WARNING)
        self._send_message = send

    def emit(self, record: logging.LogRecord) -> None:
        """Send the record's message and traceback (masked here: the parent's filter masks the
        message only)."""
        exc_text = logging.Formatter().formatException(record.exc_info) if record.exc_info else record.exc_text
        self._send_message(("log", record.name, record.levelno, terminal_safe(record.getMessage()),
                            terminal_safe(exc_text) if exc_text else None))


# ----- the child ------------------------------------------------------------------------------
def worker_main(conn: Connection, setup: WorkerSetup) -> None:
    """A child's life: rebuild the run, solve what the parent sends, end when told or when the
    parent is gone (its pipe closes). Never returns: the process ends here."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what a Ctrl-C does
    sending = threading.Lock()

    def send(message: tuple[Any, ...]) -> None:
        with sending:
            conn.send(message)

    for secret in setup.secrets:
        register_secret(secret)
    root = logging.getLogger()
    root.handlers = [_Forward(send)]
    root.setLevel(logging.WARNING)
    try:
        runner, items, cache = _prepare(setup)
    except BaseException as error:  # noqa: BLE001 - told to the parent, which reports it
        send(("failed", f"{error.__class__.__name__}: {error}"))
        os._exit(1)
    team = runner.team

    def solve(pid: str) -> None:
        item = items[pid]
        try:
            row, failure = runner.solve(item)
        except Exception as error:  # a bug in one problem must not stop the run (as in one process)
            logging.getLogger("maps_autogen.eval.runner").exception("problem %s failed", item.pid)
            row, failure = runner.failed_row(item, f"{error.__class__.__name__}: {error}", 0.0), None
        send(("done", pid, row, failure))

    workers = DaemonWorkers(setup.threads)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            os._exit(1)
        if message[0] == "solve":
            workers.submit(solve, message[1])
        elif message[0] == "cancel":
            team.cancel()
        elif message[0] == "close":
            break
    send(("served", team.replicas_served()))
    workers.close()
    if cache is not None:
        cache.close()
    conn.close()
    os._exit(0)  # the problems still in flight (after a cancel) are dropped, as a process exit drops them


def _prepare(setup: WorkerSetup) -> tuple[ProblemRunner, dict[str, EvalItem], ResponseCache | None]:
    """The run's problems (those the parent selected) and a team of this process's own."""
    task = get_benchmark(setup.benchmark).task
    with outside_paths_allowed(setup.allow_outside_paths), private_urls_allowed(setup.allow_private_urls):
        loaded_items = load_items(task, setup.subsets, setup.data, setup.loaded)
    items = {str(item.pid): item for item in loaded_items if str(item.pid) in setup.pids}
    cache = ResponseCache(setup.cache_path) if setup.cache_path is not None else None
    team = assemble_team(setup.loaded, resolution=setup.resolution, cache=cache,
                         max_connections=setup.max_connections)
    runner = ProblemRunner.of(task, setup.loaded, team, setup.eval_dir, method=setup.method, without=setup.without,
                              rules=setup.rules)
    return runner, items, cache


__all__ = ["PROBLEMS_PER_PROCESS", "InProcess", "ProcessWorkers", "Solved", "WorkerDied", "WorkerSetup", "added_counts",
           "available_cores", "check_workers", "shares", "worker_count", "worker_main"]
