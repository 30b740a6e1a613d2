"""Writing files: atomically, with secrets masked, and with one consistent mode.

Everything we write is 0644 (meant to be read and shared: run folders, results, viewer pages,
reports), except the response cache, which is 0600 (a machine-local store of every request
and reply, never meant to leave the machine).
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, TextIO

from maps_autogen.redact import redact

FILE_MODE = 0o644
PRIVATE_FILE_MODE = 0o600


class _RedactingWriter:
    """A text handle whose every write is redacted."""

    def __init__(self, handle: TextIO):
        self._handle = handle

    def write(self, text: str) -> int:
        return self._handle.write(redact(text))


@contextmanager
def atomic_text_writer(path: Path, *, fsync: bool = False, errors: str = "strict") -> Iterator[_RedactingWriter]:
    """A redacting text handle on a temporary file beside `path`, renamed over it on success:
    readers never see a half-written file, and a failure leaves any previous file intact."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)  # mkstemp makes the file private; ours are meant to be read
        with os.fdopen(fd, "w", encoding="utf-8", errors=errors) as handle:
            yield _RedactingWriter(handle)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str, *, errors: str = "strict") -> None:
    """Write `text` (redacted) to `path` atomically, mode 0644."""
    with atomic_text_writer(path, errors=errors) as handle:
        handle.write(text)


def write_bytes_file(path: Path, data: bytes) -> None:
    """Write binary data (images, figures) with mode 0644."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    os.fchmod(fd, FILE_MODE)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def open_append(path: Path, mode: int = FILE_MODE) -> int:
    """A file descriptor for appending to `path` (created with `mode`, whatever the umask)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)
    os.fchmod(fd, mode)
    return fd
