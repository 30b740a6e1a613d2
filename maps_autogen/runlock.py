"""One writer per run folder: a lock file holding the owner's pid.

The file is locked with `flock`, which the kernel releases when its owner dies, so a lock left
by a process that was killed (kill -9, power loss) is simply taken over, and two processes can
never both hold it. The pid inside names the owner in the refusal message.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from maps_autogen.errors import UsageError

LOCK_FILE = ".lock"


class RunLock:
    """Held while a process writes a run folder; use as a context manager."""

    def __init__(self, folder: Path):
        self.path = folder / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise UsageError naming the live owner's pid."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise UsageError(
                f"{self.path.parent} is being written by another maps process (pid {owner})",
                fix="wait for it to finish, or stop it before resuming",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)  # no pid left behind for a reader to misread
            os.close(self._fd)  # closing releases the flock
            self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
