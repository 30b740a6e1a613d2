"""Ctrl-C handling shared by `maps solve` and `maps eval`.

The first Ctrl-C is a KeyboardInterrupt the command turns into a clean stop (finished work
saved); while it saves, a second Ctrl-C ends the process at once.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

INTERRUPTED_EXIT_CODE = 130

# Called before a second Ctrl-C ends the process (an eval's worker processes are killed and reaped).
_before_exit: list[Callable[[], None]] = []


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


def exit_on_second_interrupt() -> None:
    """From now on, Ctrl-C exits the process immediately (only the main thread can set this)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _exit_now)


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

    def emit(self, record: dict[str, Any]) -> None:
        """Pass `record` on; a closed standard output ends the run."""
        try:
            self.inner.emit(record)
        except BrokenPipeError:
            silence_stdout()
            raise OutputClosed() from None
