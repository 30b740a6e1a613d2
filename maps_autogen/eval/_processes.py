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
the cost cap, the service-failure stop, Ctrl-C and the manifest (eval/_runner.py). It starts each
child with the `spawn` method (never a fork of a threaded process) on its spawning thread
(_util/_lifeline.py), with SIGINT and SIGTERM blocked, so the children never see a Ctrl-C: the parent
decides and tells them (`cancel`). Each child dies with the parent, however the parent ends
(_util/_lifeline.py), rebuilds its own team (solving.assemble_team) from what the parent resolved,
masks the same secrets, and solves the problems it is sent, each with the parent's own data set
row (a child never reads the data set: it could meet another revision than the parent
fingerprinted), in its own threads (eval/_workers.py), each into its own folder; it sends back
each problem's results row and the service failure that ended it, its log records, and at the
end the requests each replica served. A child ends when the parent closes it or goes away (its
pipe closes); the parent reaps every child, and kills them before a second Ctrl-C exits.

A SIGTERM to a child (Slurm's `scancel` and time limit signal every process of a job) stops
the child's chats as the first Ctrl-C does, and the whole run stops as on a SIGTERM to the
parent (`signalled`). A child that dies otherwise (killed, out of memory) is reported in one
line; its problems in flight are recorded failed (--resume runs them again) and a new child
takes its place, at most `REPLACEMENTS_PER_WORKER` times per worker in one invocation (the
summary says how many were replaced).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from maps_autogen._util import (
    TERMINATED_EXIT_CODE,
    FatalServiceError,
    MapsError,
    RunInterrupted,
    UsageError,
    on_exit_now,
    register_secret,
    registered_secrets,
    terminal_safe,
)
from maps_autogen._util import _lifeline as lifeline
from maps_autogen.benchmarks import get_benchmark
from maps_autogen.eval._problem_run import ProblemRunner
from maps_autogen.eval._selection import items_of
from maps_autogen.eval._workers import DaemonWorkers
from maps_autogen.model import ResponseCache
from maps_autogen.orchestration import assemble_team
from maps_autogen.problem import EvalItem, Row, Task, private_urls_allowed
from maps_autogen.records import ResultRow, outside_paths_allowed
from maps_autogen.settings import LoadedConfig, Resolution

logger = logging.getLogger(__name__)

#: Problems in flight one process keeps up with (one core); more go to more processes.
PROBLEMS_PER_PROCESS = 64
#: How long a closing child may take to say goodbye before it is killed.
_CLOSE_SECONDS = 30.0
#: Dead worker processes replaced in one invocation: this many per worker, at most.
REPLACEMENTS_PER_WORKER = 2

Solved = tuple[ResultRow, MapsError | None]


def available_cores(env: Mapping[str, str] | None = None) -> int:
    """The cores this process may run on: its CPU affinity, and inside a Slurm job at most the
    CPUs the job was given per task (`SLURM_CPUS_PER_TASK`: a cluster whose task plugin does not
    confine a job to its cores still shows it every core of the node)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    given = (os.environ if env is None else env).get("SLURM_CPUS_PER_TASK", "")
    return min(cores, int(given)) if given.isdigit() and int(given) > 0 else cores


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
    """What a child needs to build the problems it is sent and its team as the parent has them."""

    benchmark: str
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
    parent: lifeline.ParentLink | None = None  # set by the parent for each child it starts


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

    @property
    def signalled(self) -> Future[None]:
        """Never set: the threads share this process's signals."""
        return _NEVER

    @property
    def replaced(self) -> int:
        """No process to replace."""
        return 0

    def close(self) -> None:
        """Let the threads end once the problems in flight are done (never waits)."""
        self._threads.close()


_NEVER: Future[None] = Future()


class WorkerDied(MapsError):
    """The worker process solving a problem ended before it finished."""


class WorkersGone(FatalServiceError):
    """Every worker process has ended and none may be replaced: the problems not started stay
    pending (a stop, as on a fatal service error)."""


@dataclass
class _Child:
    number: int
    process: Any  # multiprocessing's SpawnProcess
    conn: Connection
    share: int
    in_flight: dict[str, Future[Solved]] = field(default_factory=dict)
    alive: bool = True
    closing: bool = False
    signalled: bool = False  # it was sent SIGTERM: it takes no more problems
    listener: threading.Thread | None = None
    sending: threading.Lock = field(default_factory=threading.Lock)


class ProcessWorkers:
    """The children solving an eval's problems, as the parent sees them (see the module doc).
    `rows` holds the parent's data set row of every problem it may send."""

    def __init__(self, setup: WorkerSetup, count: int, concurrency: int, rows: Mapping[str, Row]):
        self._setup = replace(setup, secrets=registered_secrets())
        self._shares = shares(concurrency, count)
        self._rows = rows
        self._lock = threading.Lock()
        self._starting = threading.Lock()  # held while a replacement starts; `close` waits for it
        self._stopping = False  # cancelled or closing: no replacement starts any more
        self._replacements_left = REPLACEMENTS_PER_WORKER * count
        self._replaced = 0
        self._signalled: Future[None] = Future()
        self._served: dict[str, dict[str, int]] = {}
        self._children: list[_Child] = []  # those started

    def start(self) -> None:
        """Start the children (a Ctrl-C meanwhile is handled once they have started)."""
        on_exit_now(self.kill)
        # Its own start, first: starting it unblocks SIGINT and SIGTERM on the spawning thread
        # (lifeline.spawn blocks them again before the next start).
        lifeline.spawn(resource_tracker.ensure_running)

        def start_all() -> None:
            for number, share in enumerate(self._shares, start=1):
                self._start_child(number, share)

        lifeline.spawn(start_all)

    def _start_child(self, number: int, share: int) -> None:
        """Start child `number` and its listener (on the spawning thread: lifeline.spawn)."""
        context = multiprocessing.get_context("spawn")
        here, there = context.Pipe()
        setup = replace(self._setup, threads=share, parent=lifeline.link())
        process = context.Process(target=worker_main, args=(there, setup), name=f"maps-eval-{number}", daemon=True)
        process.start()
        there.close()
        child = _Child(number, process, here, share)
        child.listener = threading.Thread(target=self._listen, args=(child,), name=f"maps-eval-{number}-listener",
                                          daemon=True)
        with self._lock:
            self._children.append(child)
        child.listener.start()

    def room(self) -> bool:
        """Whether a live child can take another problem now."""
        with self._lock:
            return any(self._takes(child) and len(child.in_flight) < child.share for child in self._children)

    @staticmethod
    def _takes(child: _Child) -> bool:
        return child.alive and not child.signalled

    def submit(self, item: EvalItem) -> Future[Solved]:
        """Send `item`, with its data set row, to the live child with the most room (call only
        when `room()`)."""
        future: Future[Solved] = Future()
        future.set_running_or_notify_cancel()
        with self._lock:
            live = [c for c in self._children if self._takes(c)]
            child = max(live, key=lambda c: c.share - len(c.in_flight)) if live else None
            if child is not None:
                child.in_flight[str(item.pid)] = future
        if child is None:
            future.set_exception(WorkerDied("every worker process has ended", fix="run it again with --resume"))
        else:
            self._send(child, ("solve", str(item.pid), self._rows[str(item.pid)]))
        return future

    def cancel(self) -> None:
        """Every child's chats stop at their next model request (Ctrl-C, a stop: Team.cancel in each)."""
        with self._lock:
            self._stopping = True
            children = list(self._children)
        for child in children:
            self._send(child, ("cancel",))

    def replicas_served(self) -> dict[str, dict[str, int]]:
        """Requests served by each replica, summed over the children that said goodbye."""
        with self._lock:
            return added_counts(self._served)

    @property
    def signalled(self) -> Future[None]:
        """Set when a child was sent SIGTERM: the run stops as on a SIGTERM to this process."""
        return self._signalled

    @property
    def replaced(self) -> int:
        """How many children that died were replaced in this invocation."""
        with self._lock:
            return self._replaced

    def close(self) -> None:
        """Tell every child to end, wait for its goodbye (bounded), and reap it (its listener
        reaps it: one waiter per process)."""
        with self._starting, self._lock:  # no replacement starts once this holds
            self._stopping = True
            children = list(self._children)
        for child in children:
            child.closing = True
            self._send(child, ("close",))
        for child in children:
            assert child.listener is not None
            child.listener.join(_CLOSE_SECONDS)
            if child.listener.is_alive():
                logger.warning("worker process %d (pid %s) did not end: stopping it", child.number, child.process.pid)
                child.process.kill()
                child.listener.join()
            child.conn.close()
        on_exit_now(self.kill, remove=True)

    def kill(self) -> None:
        """End every child now, and reap it (a second Ctrl-C exits right after). Called by a
        signal handler: takes no lock the interrupted code may hold."""
        self._stopping = True
        children = list(self._children)
        for child in children:
            if child.listener is not None and child.listener.is_alive():
                child.process.kill()
        for child in children:
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
            failed = self._received(child, message) or failed
        self._ended(child, failed)

    def _received(self, child: _Child, message: tuple[Any, ...]) -> str | None:
        """Act on one message of `child`; a failure to start it reports (else None)."""
        kind = message[0]
        if kind == "done":
            _, pid, row, failure, broken = message
            with self._lock:
                future = child.in_flight.pop(pid, None)
            if future is not None and broken is not None:
                future.set_exception(WorkerDied(f"its worker process could not build it ({broken})"))
            elif future is not None:
                future.set_result((row, failure))
        elif kind == "log":
            _relog(*message[1:])
        elif kind == "served":
            with self._lock:
                self._served = added_counts(self._served, message[1])
        elif kind == "failed":
            return str(message[1])
        elif kind == "signalled":  # SIGTERM: its chats stop; the run stops as on the parent's own
            with self._lock:
                child.signalled = True
            if not self._signalled.done():
                self._signalled.set_result(None)
        return None

    def _ended(self, child: _Child, failed: str | None) -> None:
        """`child`'s pipe closed: reap it and settle its problems in flight; replace it when it
        died unasked (see the module doc)."""
        child.process.join(5)  # its pipe is closed: it is ending (or has ended)
        if child.process.exitcode is None:
            child.process.kill()
            child.process.join()
        with self._lock:
            child.alive = False
            orphaned, child.in_flight = child.in_flight, {}
        why = failed or f"exit code {child.process.exitcode}"
        if (child.closing or child.signalled) and failed is None:
            # Told to end, or stopped by SIGTERM: what was in flight stays pending (Ctrl-C, a stop).
            for future in orphaned.values():
                future.set_exception(RunInterrupted("dropped when the run stopped"))
            return
        replaced = failed is None and self._replace(child)
        logger.warning("worker process %d (pid %s) ended (%s): its %d problem(s) in flight are recorded failed; "
                       "--resume runs them again%s", child.number, child.process.pid, why, len(orphaned),
                       "; a new worker process takes its place" if replaced else "")
        for future in orphaned.values():
            future.set_exception(WorkerDied(f"the worker process solving it ended ({why})",
                                            fix="run it again with --resume"))

    def _replace(self, dead: _Child) -> bool:
        """Start a child in the place of `dead`, unless the run stops or the replacements allowed
        are used up; whether one started."""
        with self._starting:
            with self._lock:
                if self._stopping or self._replacements_left <= 0:
                    return False
                self._replacements_left -= 1
                self._replaced += 1
            lifeline.spawn(lambda: self._start_child(dead.number, dead.share))
        return True


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
    """A child's life: build its team, solve what the parent sends, end when told or when the
    parent is gone (its pipe closes; on Linux its parent-death signal even sooner). Never
    returns: the process ends here."""
    if setup.parent is not None:
        lifeline.bind_to_parent(setup.parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what a Ctrl-C does
    # SIGTERM (started blocked, lifeline.spawn): noted on a pipe the loop below watches, and
    # handled there (a handler raising in the middle of reading a message would cut it).
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.signal(signal.SIGTERM, lambda signum, frame: _note(wake_write))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
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
        task, runner, cache = _prepare(setup)
    except BaseException as error:  # noqa: BLE001 - told to the parent, which reports it
        send(("failed", f"{error.__class__.__name__}: {error}"))
        os._exit(1)

    def solve(pid: str, row: Row) -> None:
        try:
            with outside_paths_allowed(setup.allow_outside_paths), private_urls_allowed(setup.allow_private_urls):
                (_, item), = items_of(task, [row], setup.loaded)
        except Exception as error:  # noqa: BLE001 - the parent checked the row: a bug, reported as its failure
            send(("done", pid, None, None, f"{error.__class__.__name__}: {error}"))
            return
        try:
            solved, failure = runner.solve(item)
        except Exception as error:  # a bug in one problem must not stop the run (as in one process)
            logging.getLogger("maps_autogen.eval._runner").exception("problem %s failed", item.pid)
            solved, failure = runner.failed_row(item, f"{error.__class__.__name__}: {error}", 0.0), None
        send(("done", pid, solved, failure, None))

    workers = DaemonWorkers(setup.threads)
    signalled = _serve_parent(conn, wake_read, runner.team, workers, send, solve)
    send(("served", runner.team.replicas_served()))
    workers.close()
    if cache is not None:
        cache.close()
    conn.close()
    # The problems still in flight (after a cancel) are dropped, as a process exit drops them.
    os._exit(TERMINATED_EXIT_CODE if signalled else 0)


def _serve_parent(conn: Connection, wake: int, team: Any, workers: DaemonWorkers, send: Any, solve: Any) -> bool:
    """A child's loop: do what the parent says until it says `close` (the process exits when the
    parent is gone); a SIGTERM (noted on `wake`) stops the chats and is told to the parent.
    Whether a SIGTERM came."""
    signalled = False
    while True:
        ready = wait([conn, wake])
        if wake in ready:
            os.read(wake, 64)
            if not signalled:  # SIGTERM: as the first Ctrl-C; the parent stops the run
                signalled = True
                team.cancel()
                send(("signalled",))
        if conn not in ready:
            continue
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            os._exit(1)
        if message[0] == "solve":
            workers.submit(solve, message[1], message[2])
        elif message[0] == "cancel":
            team.cancel()
        elif message[0] == "close":
            return signalled


def _note(fd: int) -> None:
    """SIGTERM in a child: wake its loop (a full pipe already will)."""
    try:
        os.write(fd, b"t")
    except OSError:
        pass


def _prepare(setup: WorkerSetup) -> tuple[Task, ProblemRunner, ResponseCache | None]:
    """The benchmark and a team of this process's own."""
    task = get_benchmark(setup.benchmark).task
    cache = ResponseCache(setup.cache_path) if setup.cache_path is not None else None
    team = assemble_team(setup.loaded, resolution=setup.resolution, cache=cache,
                         max_connections=setup.max_connections)
    runner = ProblemRunner.of(task, setup.loaded, team, setup.eval_dir, method=setup.method, without=setup.without,
                              rules=setup.rules)
    return task, runner, cache


__all__ = ["PROBLEMS_PER_PROCESS", "REPLACEMENTS_PER_WORKER", "InProcess", "ProcessWorkers", "Solved", "WorkerDied",
           "WorkerSetup", "WorkersGone", "added_counts", "available_cores", "check_workers", "shares", "worker_count",
           "worker_main"]
