"""No process of ours outlives its parent: the helper and worker processes a command starts (the
symbolic judge's sympy helpers, the embedded model's server, an eval's worker processes) die
with the process that started them, however it ends (SIGKILL, the OOM killer, a crash).

How a child learns its parent died:
- on Linux, a parent-death signal (`prctl(PR_SET_PDEATHSIG)`): the kernel signals the child
  the moment its parent is gone, even while the child is busy inside a long C-level call (a
  sympy simplification holds the interpreter: no thread of the child's own could act);
- elsewhere, a watchdog thread in the child reading a pipe whose only writer is the parent
  (never written to, never closed): the read returns at end of file when the parent is gone.
A child binds itself first thing (`bind_to_parent`), and exits at once when the parent it was
started by is already gone.

Linux sends the parent-death signal when the *thread* that started the child ends, not the
process; so every child is started on one long-lived thread of the process (`spawn`). That
thread also blocks SIGINT and SIGTERM, so each child starts with both blocked: a Ctrl-C in the
terminal (sent to the whole process group) never cuts a helper short, and the parent decides
what a stop means; a child that handles them unblocks them itself.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from maps_autogen._util._interrupts import signals_deferred

Method = Literal["prctl", "pipe"]

#: How the children started from now on learn their parent died (a test may choose "pipe").
METHOD: Method = "prctl" if sys.platform.startswith("linux") else "pipe"
_PR_SET_PDEATHSIG = 1
_HELD = {signal.SIGINT, signal.SIGTERM}  # blocked on the spawning thread, so in every child at its start

T = TypeVar("T")


@dataclass(frozen=True)
class ParentLink:
    """What a child needs to die with its parent: the parent's pid, the method, and (method
    "pipe") the read end of the parent's lifeline pipe, which the child inherits."""

    pid: int
    method: Method
    fd: int | None = None

    def bootstrap(self, signum: int = signal.SIGKILL) -> str:
        """Python source binding a `python -c` child to its parent, to run before anything else."""
        return (f"from maps_autogen._util._lifeline import ParentLink, bind_to_parent\n"
                f"bind_to_parent(ParentLink({self.pid}, {self.method!r}, {self.fd!r}), {int(signum)})\n")

    def pass_fds(self) -> tuple[int, ...]:
        """The file descriptors the child must inherit (subprocess's `pass_fds`)."""
        return (self.fd,) if self.fd is not None else ()

    def argv(self) -> list[str]:
        """The link as command-line words (`from_argv` reads them back in the child)."""
        return [str(self.pid), self.method, "" if self.fd is None else str(self.fd)]

    @classmethod
    def from_argv(cls, words: list[str]) -> ParentLink:
        """The link `argv` wrote."""
        pid, method, fd = words
        if method not in ("prctl", "pipe"):
            raise ValueError(f"unknown method {method!r}")
        return cls(int(pid), "prctl" if method == "prctl" else "pipe", int(fd) if fd else None)


_state_lock = threading.Lock()
_owner = 0  # the pid the state below belongs to (a fork starts afresh)
_lifeline_read: int | None = None  # method "pipe": the end children inherit; this process keeps the write end
_lifeline_write: int | None = None
_jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] | None = None
_spawner: threading.Thread | None = None


def _fresh() -> None:
    """Forget what belongs to another process (this one was forked from it)."""
    global _owner, _lifeline_read, _lifeline_write, _jobs, _spawner
    if _owner != os.getpid():
        _owner, _lifeline_read, _lifeline_write, _jobs, _spawner = os.getpid(), None, None, None, None


def link() -> ParentLink:
    """The link for a child this process starts now (on the spawning thread: see `spawn`)."""
    global _lifeline_read, _lifeline_write
    with _state_lock:
        _fresh()
        if METHOD == "prctl":
            return ParentLink(os.getpid(), "prctl")
        if _lifeline_read is None:
            # Both ends close on exec (PEP 446): the read end reaches a child only through
            # pass_fds, the write end never leaves this process.
            _lifeline_read, _lifeline_write = os.pipe()
        return ParentLink(os.getpid(), "pipe", _lifeline_read)


def spawn(start: Callable[[], T]) -> T:
    """Run `start` (which starts a child process) on this process's spawning thread and return
    what it returns. From the main thread, a Ctrl-C or SIGTERM meanwhile is handled once the
    child has started (a KeyboardInterrupt in the middle of a start would lose the child)."""
    global _jobs, _spawner
    with _state_lock:
        _fresh()
        if _spawner is None:
            _jobs = queue.SimpleQueue()
            _spawner = threading.Thread(target=_spawn_forever, args=(_jobs,), name="maps-spawner", daemon=True)
            _spawner.start()
        jobs, spawner = _jobs, _spawner
    assert jobs is not None
    if threading.current_thread() is spawner:
        return start()
    future: Future[T] = Future()
    with signals_deferred():
        jobs.put((start, future))
        return future.result()


def _spawn_forever(jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]]) -> None:
    """The spawning thread: lives as long as the process, so the children it starts are not
    sent their parent-death signal before the process ends."""
    while True:
        start, future = jobs.get()
        # Again before each start: a start may unblock them on this thread (multiprocessing's
        # resource tracker does).
        signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
        try:
            future.set_result(start())
        except BaseException as error:  # noqa: BLE001 - handed to the caller, which raises it
            future.set_exception(error)


def bind_to_parent(parent: ParentLink, signum: int = signal.SIGKILL) -> None:
    """In a child, first thing: die (by `signum`, method "prctl"; by exiting, method "pipe")
    when `parent` is gone, and exit now if it already is. A child that handles `signum` (not
    SIGKILL) has its handler installed before, and `signum` is unblocked here."""
    if parent.method == "prctl":
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if signum != signal.SIGKILL:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    elif parent.fd is not None:
        threading.Thread(target=_watch, args=(parent.fd,), name="maps-lifeline", daemon=True).start()
    if os.getppid() != parent.pid:  # the parent died before the binding: nobody would tell us
        os._exit(1)


def _watch(fd: int) -> None:
    """Method "pipe": block on the parent's lifeline until it closes, then exit."""
    try:
        while os.read(fd, 1):
            pass
    except OSError:
        pass
    os._exit(1)


__all__ = ["METHOD", "ParentLink", "bind_to_parent", "link", "spawn"]
