"""One writer per run folder: a lock file holding the owner's pid.

The file is locked with `flock`, which the kernel releases when its owner dies, so a lock left
by a process that was killed (kill -9, power loss) is simply taken over, and two processes can
never both hold it. The pid inside names the owner in the refusal message. A reader that must
not see a run change under it (`maps merge`) holds the lock shared: refused while a writer
holds it, and no writer can take it until the reader is done.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from maps_autogen._util._errors import UsageError

LOCK_FILE = ".lock"


def _held_shared(fd: int) -> bool:
    """Whether the lock `fd` could not take is held by readers only (a shared hold is possible)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return True


class RunLock:
    """Held while a process writes a run folder (or, `shared`, reads it whole); use as a
    context manager."""

    def __init__(self, folder: Path, *, shared: bool = False):
        self.path = folder / LOCK_FILE
        self.shared = shared
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise UsageError naming the live owner's pid."""
        if self.shared:
            self._acquire_shared()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            reader = _held_shared(fd)
            os.close(fd)
            raise UsageError(
                f"{self.path.parent} is being read by another maps process (maps merge)" if reader
                else f"{self.path.parent} is being written by another maps process (pid {owner})",
                fix="wait for it to finish, or stop it before resuming",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def _acquire_shared(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except PermissionError:  # a folder we may not write: its lock file, if a writer made one
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:  # nobody can write here to take it either
                return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise UsageError(f"{self.path.parent} is being written by another maps process (pid {owner})",
                             fix="wait for it to finish (or stop it), then merge") from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            if not self.shared:
                os.ftruncate(self._fd, 0)  # no pid left behind for a reader to misread
            os.close(self._fd)  # closing releases the flock
            self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
