"""Ctrl-C and SIGTERM handling shared by the `maps` commands.

The first Ctrl-C is a KeyboardInterrupt the command turns into a clean stop (finished work
saved); while it saves, a second Ctrl-C ends the process at once.

SIGTERM (what Slurm sends at a time limit, on `scancel` and on preemption, and what Kubernetes
and systemd send) takes the same path as the first Ctrl-C: it is raised as `Terminated`, a
KeyboardInterrupt, and the command exits with 143 (128 + 15) once it has saved. A SIGTERM
while the command stops (after either) changes nothing: a batch system often sends it to
every process of a job, and more than once. `stop_like_ctrl_c()` installs both handlers (the
`maps` command does, first thing). Once a command has decided its exit code, `finished()`
makes a SIGTERM change nothing: the process exits with that code, never by the raw signal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

INTERRUPTED_EXIT_CODE = 130
#: What a shell reports for a process ended by SIGTERM (128 + 15), and what `maps` exits with
#: after a SIGTERM stopped it cleanly.
TERMINATED_EXIT_CODE = 143

# Called before a second Ctrl-C ends the process (an eval's worker processes are killed and reaped).
_before_exit: list[Callable[[], None]] = []


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: raised as a KeyboardInterrupt so the command stops exactly as on the
    first Ctrl-C (finished work saved, then exit code 143)."""


def on_exit_now(callback: Callable[[], None], *, remove: bool = False) -> None:
    """Call `callback` before a second Ctrl-C ends the process (`remove`: no longer)."""
    if remove:
        if callback in _before_exit:
            _before_exit.remove(callback)
    else:
        _before_exit.append(callback)


def _exit_now(signum: int, frame: object) -> None:
    try:
        sys.stderr.write("interrupted again: exiting now\n")
        sys.stderr.flush()
        for callback in list(_before_exit):
            callback()
    finally:
        os._exit(INTERRUPTED_EXIT_CODE)


def _already_stopping(signum: int, frame: object) -> None:
    """A SIGTERM while the command already stops: nothing more to do."""


def exit_on_second_interrupt() -> None:
    """From now on, Ctrl-C exits the process immediately and SIGTERM changes nothing (only the
    main thread can set this)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _exit_now)
        signal.signal(signal.SIGTERM, _already_stopping)


def _first_interrupt(signum: int, frame: object) -> None:
    """The first Ctrl-C or SIGTERM: the next one cannot cut the clean stop short."""
    exit_on_second_interrupt()
    if signum == signal.SIGTERM:
        raise Terminated()
    raise KeyboardInterrupt()


def stop_like_ctrl_c() -> None:
    """Ctrl-C and SIGTERM stop the command cleanly from now on (main thread only)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _first_interrupt)
        signal.signal(signal.SIGTERM, _first_interrupt)


def finished() -> None:
    """The command is done and its exit code decided: from now on a SIGTERM changes nothing (it
    is ignored, so it can neither be raised in the interpreter's exit path, where an uncaught one
    would end the process by the raw signal, nor end it so once Python's own handlers are gone),
    and a Ctrl-C ends the process at once (main thread only)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, _exit_now)


def stopped_by(stop: BaseException) -> tuple[str, int]:
    """What a command ended by `stop` (a KeyboardInterrupt, or click's Abort raised for one or for
    the end of its input) says, and its exit code: 143 after SIGTERM, else 130."""
    cause = stop if isinstance(stop, KeyboardInterrupt) else stop.__cause__
    if isinstance(cause, Terminated):
        return "stopped by SIGTERM", TERMINATED_EXIT_CODE
    return ("interrupted" if stop is cause else "aborted"), INTERRUPTED_EXIT_CODE


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM held off during the block (a write that must not be cut, a child
    process being started) and handed to the handlers in force once it ends. In the main
    thread only (where they are raised); elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    numbers = (signal.SIGINT, signal.SIGTERM)
    previous: dict[int, Any] = {}
    for number in numbers:
        previous[number] = signal.signal(number, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for number in numbers:
            signal.signal(number, previous[number])
        for signum in dict.fromkeys(caught):  # each signal once, in the order they came
            handler = signal.getsignal(signum)
            if callable(handler):
                handler(signum, None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(signum)


#: What a shell reports for a process ended by SIGPIPE (128 + 13): `maps solve ... | head -3`.
OUTPUT_CLOSED_EXIT_CODE = 141


class OutputClosed(KeyboardInterrupt):
    """Standard output was closed by its reader (`| head`). Raised as a KeyboardInterrupt so a
    run stops exactly as on Ctrl-C (finished turns saved, run.json `interrupted`)."""


def silence_stdout() -> None:
    """Point standard output at /dev/null, so nothing written later (nor the interpreter's own
    flush at exit) meets the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor (a test's captured stream)
        pass


class ClosedOutputGuard:
    """Wraps a chat observer that writes to standard output: when the reader has closed it
    (BrokenPipeError), output is silenced and the run stops as on Ctrl-C (OutputClosed)."""

    def __init__(self, inner: Any):
        self.inner = inner

    def emit(self, record: Any) -> None:
        """Pass `record` (a chat record) on; a closed standard output ends the run."""
        try:
            self.inner.emit(record)
        except BrokenPipeError:
            silence_stdout()
            raise OutputClosed() from None
