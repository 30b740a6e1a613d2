"""Every file we write and read back: the one atomic writer (secrets masked, one consistent
mode), the one JSONL reader (one torn-tail rule: a damaged line anywhere else stops the read
with one line naming it) and guarded readers that turn a missing or damaged file into one line
naming it and the fix.

Everything we write is 0644 (meant to be read and shared: run folders, results, viewer pages,
reports), except the response cache, which is 0600 (a machine-local store of every request
and reply, never meant to leave the machine).
"""

from __future__ import annotations

import errno
import functools
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from maps_autogen._util._errors import DataError, DiskFullError
from maps_autogen._util._redact import redact
from maps_autogen._util._temporaries import lock_held, remove_stale, temporary_prefix
from maps_autogen._util._text import json_loads, may_hold_surrogates, valid_tree

FILE_MODE = 0o644
PRIVATE_FILE_MODE = 0o600


_FULL = (errno.ENOSPC, errno.EDQUOT)  # no space on the device, or over the user's quota
_CHUNK = 1 << 20  # an atomic file is written in pieces of about this size


def _write(fd: int, data: bytes) -> None:
    """Every byte of `data` to `fd`: every file we write goes through here (an OSError, such as
    a full disk's ENOSPC, may come after part of it is written)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _size_text(size: int) -> str:
    """A size in bytes as people read it: 512 bytes, 3.5 KB, 1.2 GB."""
    if size < 1024:
        return f"{size:,} bytes"
    scaled = float(size)
    for unit in ("KB", "MB", "GB"):
        scaled /= 1024
        if scaled < 1024:
            return f"{scaled:,.1f} {unit}"
    return f"{scaled / 1024:,.1f} TB"


def disk_full(path: Path, needed: int | None, *, then: str = "run it again") -> DiskFullError:
    """The one line for a write that found no space: the folder, the space needed (when known)
    and free, and what to do once there is room (`then`)."""
    folder = path if path.is_dir() else path.parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        free = 0
    if needed is None:
        return DiskFullError(f"no space left to write in {folder}: {_size_text(free)} free",
                             fix=f"free space on that disk (or write elsewhere), then {then}; "
                                 "nothing already written is damaged")
    return DiskFullError(
        f"no space left to write in {folder}: about {_size_text(needed)} more needed, {_size_text(free)} free",
        fix=f"free at least {_size_text(needed)} on that disk (or write elsewhere), then {then}; "
            "nothing already written is damaged",
    )


def is_disk_full(error: OSError) -> bool:
    """Whether an OSError means the disk (or the user's quota) is full."""
    return error.errno in _FULL


class _RedactingWriter:
    """A text handle on a file descriptor whose every write is redacted, encoded and written
    in pieces of about _CHUNK bytes (`attempted` counts the bytes given so far)."""

    def __init__(self, fd: int, errors: str):
        self._fd = fd
        self._errors = errors
        self._pending: list[bytes] = []
        self._pending_size = 0
        self.attempted = 0

    def write(self, text: str) -> int:
        data = redact(text).encode("utf-8", self._errors)
        self._pending.append(data)
        self._pending_size += len(data)
        self.attempted += len(data)
        if self._pending_size >= _CHUNK:
            self.flush()
        return len(text)

    def flush(self) -> None:
        data, self._pending, self._pending_size = b"".join(self._pending), [], 0
        _write(self._fd, data)


@contextmanager
def _written_beside(path: Path, *, fsync: bool, size: Callable[[], int | None]) -> Iterator[tuple[int, str]]:
    """A temporary file's descriptor beside `path` (mode 0644), renamed over `path` when the
    block succeeds: readers never see a half-written file, and a failure leaves any previous
    file intact and no temporary one. A full disk is a DiskFullError naming the folder and the
    `size()` the file needed. The temporary is named and locked as _temporaries.py says (its
    writer's lock is held until it is renamed into place, so no sweep takes it meanwhile), and
    the provably stale temporaries of the same target are removed first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(path)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=temporary_prefix(path.name), suffix=".tmp")
    try:
        lock_held(fd)
        os.fchmod(fd, FILE_MODE)  # mkstemp makes the file private; ours are meant to be read
        yield fd, temp
        if fsync:
            os.fsync(fd)
        os.replace(temp, path)  # before the descriptor (and its lock) goes
    except OSError as error:
        Path(temp).unlink(missing_ok=True)
        if is_disk_full(error):
            raise disk_full(path, size()) from None
        raise
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)


@contextmanager
def atomic_text_writer(path: Path, *, fsync: bool = False, errors: str = "strict") -> Iterator[_RedactingWriter]:
    """A redacting text handle on a temporary file beside `path`, renamed over it on success
    (`_written_beside`: never a half-written file; a full disk is a DiskFullError)."""
    attempted = [0]
    with _written_beside(path, fsync=fsync, size=lambda: attempted[0]) as (fd, _):
        writer = _RedactingWriter(fd, errors)
        try:
            yield writer
            writer.flush()
        finally:
            attempted[0] = writer.attempted


def write_text_atomic(path: Path, text: str, *, errors: str = "strict") -> None:
    """Write `text` (redacted) to `path` atomically, mode 0644."""
    with atomic_text_writer(path, errors=errors) as handle:
        handle.write(text)


def write_bytes_file(path: Path, data: bytes) -> None:
    """Write binary data (images, figures) with mode 0644, atomically (`_written_beside`: a
    full disk leaves no partial file, a DiskFullError)."""
    with _written_beside(path, fsync=False, size=lambda: len(data)) as (fd, _):
        _write(fd, data)


@contextmanager
def path_written_beside(path: Path) -> Iterator[Path]:
    """A temporary file beside `path` for another program's writer to fill (Inspect's log
    writer), renamed over `path` when the block succeeds (`_written_beside`: named, locked and
    swept as our own, so one left by a writer killed mid-way is removed by the next write, and
    never named like `path`'s kind: a `.eval` Inspect would list as a log). What is written is
    not redacted here: the caller hands the writer masked data."""
    with _written_beside(path, fsync=False, size=lambda: None) as (_, temp):
        yield Path(temp)


def copy_file(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Copy a file's bytes to `target` (mode 0644) through the one writer, in pieces: atomic,
    and a full disk is a DiskFullError naming the space the copy needed (shutil.copytree's
    `copy_function`)."""
    target = Path(target)
    with open(source, "rb") as reader:
        needed = os.fstat(reader.fileno()).st_size
        with _written_beside(target, fsync=False, size=lambda: needed) as (fd, _):
            while block := reader.read(_CHUNK):
                _write(fd, block)


def open_append(path: Path, mode: int = FILE_MODE) -> int:
    """A file descriptor for appending to `path` (created with `mode`, whatever the umask)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)
    os.fchmod(fd, mode)
    return fd


def append_whole(fd: int, path: Path, data: bytes, *, fsync: bool = False) -> None:
    """Append `data` (whole lines) to the file `fd` has open for appending (`path`), or nothing:
    a write that fails half-way (a full disk) is cut off again, so no torn line is left behind.
    A full disk is a DiskFullError naming the folder and the space the lines needed."""
    size = os.fstat(fd).st_size
    try:
        _write(fd, data)
        if fsync:
            os.fsync(fd)
    except OSError as error:
        try:
            os.truncate(fd, size)
        except OSError:
            pass  # the reader's torn-tail rule still leaves the partial line unread
        if is_disk_full(error):
            raise disk_full(path, len(data)) from None
        raise


def json_text(data: Any) -> str:
    """`data` as the JSON text of our files: an object with one top-level key per line (easy to
    read and grep), each value compact. Written by the C encoder: `indent` would force the
    pure-Python one, several times slower on a run's record."""
    if not isinstance(data, dict) or not data:
        return json.dumps(data, ensure_ascii=False, default=str) + "\n"
    lines = (json.dumps({key: value}, ensure_ascii=False, default=str)[1:-1] for key, value in data.items())
    return "{\n  " + ",\n  ".join(lines) + "\n}\n"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON (`json_text`) so that a reader (or a killed process) never sees a half-written
    file.

    The rename is atomic; there is no fsync, because surviving `kill -9` needs none and these
    files are rewritten often (results.jsonl, the record of finished work, is fsync'd)."""
    write_text_atomic(path, json_text(data))


_DAMAGED_FIX = ("the file was edited or damaged: repair or delete that line (a deleted results.jsonl line's "
                "problem is run again by --resume)")


def _json_object(line: bytes, path: Path, line_number: Callable[[], int]) -> dict[str, Any]:
    """A complete JSONL line as an object; a damaged line or one that is not an object is one
    DataError naming the file and its line (`line_number()`, counted only then)."""
    try:
        record = parse_read_back(line)
    except (ValueError, RecursionError) as error:  # JSON, UTF-8, nesting, digit limit
        reason = "nested too deeply" if isinstance(error, RecursionError) else _reason(error)
        raise DataError(f"{path} line {line_number()} is not a JSON record ({reason})", fix=_DAMAGED_FIX) from None
    if not isinstance(record, dict):
        raise DataError(f"{path} line {line_number()} is a JSON {type(record).__name__}, not a record",
                        fix=_DAMAGED_FIX)
    return record


def _reason(error: ValueError) -> str:
    """A parse error in a few words (JSON's own message without its position)."""
    if isinstance(error, json.JSONDecodeError):
        return f"not valid JSON: {error.msg}"
    if isinstance(error, UnicodeDecodeError):
        return "not UTF-8 text"
    return str(error)


def parse_read_back(source: str | bytes) -> Any:
    """Parsed JSON read back from a file (which may have been edited): a lone surrogate escape
    becomes U+FFFD, so what is read can be written again. Raises what `text.json_loads` raises
    (ValueError subclasses) and TooDeep."""
    data = json_loads(source)
    return valid_tree(data, limit=10**6) if may_hold_surrogates(source) else data


def line_at(path: Path, offset: int) -> int:
    """The number of the line starting at byte `offset` (the file is read only when an error
    names a line)."""
    count = 1
    with open(path, "rb") as handle:
        while offset > 0:
            block = handle.read(min(offset, 1 << 20))
            if not block:
                break
            count += block.count(b"\n")
            offset -= len(block)
    return count


def read_jsonl_from(path: Path, start: int = 0, stop: int | None = None) -> tuple[list[dict[str, Any]], int]:
    """The JSON objects on the complete lines of a JSONL file we wrote, from byte `start` (up to
    byte `stop`), and the offset after the last complete line.

    The one torn-tail rule: every writer ends each record with a newline, so a last line without
    one is a record still being written (or torn by a kill) and is not read. Any other line that
    is damaged or not an object stops the read: a DataError naming the file and the line. A
    missing file reads as empty; an offset past the file's end reads nothing."""
    start = max(0, start)
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size  # a hostile offset is never sought to or read up to
            end = size if stop is None else min(stop, size)
            if start >= end:
                return [], start
            handle.seek(start)
            data = handle.read(end - start)
    except FileNotFoundError:
        return [], start
    complete = data[: data.rfind(b"\n") + 1]
    records = []
    position = start
    for line in complete.split(b"\n")[:-1]:
        if line.strip():  # a blank line (an edit's) holds no record
            records.append(_json_object(line, path, functools.partial(line_at, path, position)))
        position += len(line) + 1
    return records, start + len(complete)


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(byte offset, object) of each line, one line at a time (for files too big to hold), under
    the same rules as `read_jsonl_from` (a damaged line stops the read, naming it)."""
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return
    with handle:
        offset = 0
        for number, line in enumerate(handle, start=1):
            start, offset = offset, offset + len(line)
            if not line.endswith(b"\n"):
                return  # the torn tail
            if line.strip():  # a blank line (an edit's) holds no record
                yield start, _json_object(line, path, functools.partial(int, number))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a whole JSONL file we wrote (see `read_jsonl_from` for the rules)."""
    return read_jsonl_from(path)[0]


def read_json_object(path: Path, *, missing: str, fix: str) -> dict[str, Any]:
    """A JSON object file we wrote; DataError(`missing`) when it is absent, and one line naming
    the file when it cannot be read, is not JSON or is not an object."""
    if not path.is_file():
        raise DataError(missing, fix=fix)
    try:
        data = parse_read_back(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:  # ValueError: JSON, UTF-8, nesting, digit limit
        raise DataError(f"cannot read {path}: {error}", fix="the run folder may be damaged") from None
    if not isinstance(data, dict):
        raise DataError(f"cannot read {path}: not a JSON object", fix="the run folder may be damaged")
    return data


def read_json_or_empty(path: Path) -> dict[str, Any]:
    """A JSON object file that may be mid-rewrite or not yet written: {} then (live readers)."""
    try:
        data = parse_read_back(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}
