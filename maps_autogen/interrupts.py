"""Ctrl-C handling shared by `maps solve` and `maps eval`.

The first Ctrl-C is a KeyboardInterrupt the command turns into a clean stop (finished work
saved); while it saves, a second Ctrl-C ends the process at once.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

INTERRUPTED_EXIT_CODE = 130


def _exit_now(signum: int, frame: object) -> None:
    try:
        sys.stderr.write("interrupted again: exiting now\n")
        sys.stderr.flush()
    finally:
        os._exit(INTERRUPTED_EXIT_CODE)


def exit_on_second_interrupt() -> None:
    """From now on, Ctrl-C exits the process immediately (only the main thread can set this)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _exit_now)
