"""Whole output folders (`maps report --out`, `maps merge --out`, `maps view --out`): built in a
temporary folder beside the target and moved into place in one rename, so a failure (a full
disk, an error, kill -9) leaves no half-written target, and a folder we did not write is never
emptied.

A builder that may replace its own earlier output names a marker file (`.maps-view`,
`.maps-report`): written last into the folder, it lists every file the build wrote. The target
is replaced only when it is missing, an empty folder, or a folder whose marker lists every file
in it; a folder holding anything else (a user's notes beside the pages) is refused in one line
naming a file that is not ours, and left as it is.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from maps_autogen._util._artifacts import disk_full, is_disk_full, write_json_atomic
from maps_autogen._util._errors import DataError
from maps_autogen._util._temporaries import lock_held, remove_stale, temporary_prefix

#: A marker larger than this is no list of ours (nothing of it is read).
MAX_MARKER_BYTES = 32 << 20


def _files_in(folder: Path) -> Iterator[str]:
    """Every entry of `folder` that is not a real folder (a file, a link, anything else), as a
    path relative to it with "/" between parts; links are never followed."""
    stack = [folder]
    while stack:
        current = stack.pop()
        with os.scandir(current) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                else:
                    yield Path(entry.path).relative_to(folder).as_posix()


def _listed(marker: Path) -> set[str] | None:
    """The files a marker lists (None: not a marker this version wrote, or unreadable)."""
    try:
        if marker.is_symlink() or marker.stat().st_size > MAX_MARKER_BYTES:
            return None
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list) or not all(isinstance(name, str) for name in files):
        return None
    return set(files)


def check_replaceable(target: Path, *, fix: str, marker: str | None = None) -> None:
    """Refuse (DataError) a `target` the build may not take: anything but a missing path, an
    empty folder, or a folder of an earlier build whose `marker` lists every file in it (a marker
    that lists none is no list: the folder is refused)."""
    if not os.path.lexists(target):
        return
    if target.is_symlink() or not target.is_dir():
        raise DataError(f"{target} already exists and is not a folder", fix=fix)
    ours: Callable[[str], bool] | None = None
    if marker is not None and (target / marker).is_file():
        listed = _listed(target / marker)
        if listed is not None:
            ours = listed.__contains__
    try:
        for relative in _files_in(target):
            if ours is None:
                raise DataError(f"{target} already exists and is not empty (holding e.g. {relative}); it is never "
                                "emptied", fix=fix)
            if relative != marker and not ours(relative):
                raise DataError(f"{target} holds files this command did not write (e.g. {relative}); it is never "
                                "emptied", fix=f"move them out of it, or {fix}")
    except OSError as error:
        raise DataError(f"cannot read {target}: {error.strerror or error}", fix=fix) from None


def write_marker(folder: Path, marker: str, written_by: str) -> None:
    """The marker of a finished build: who wrote the folder and every file in it (itself included)."""
    files = sorted({*_files_in(folder), marker})
    write_json_atomic(folder / marker, {"written_by": written_by, "files": files})


def _locked_folder(target: Path) -> tuple[Path, int]:
    """A new empty folder beside `target`, named and locked as _temporaries.py says, and the
    descriptor holding its lock."""
    made = Path(tempfile.mkdtemp(dir=target.parent, prefix=temporary_prefix(target.name), suffix=".tmp"))
    try:
        held = os.open(made, os.O_RDONLY | os.O_DIRECTORY)
    except BaseException:
        shutil.rmtree(made, ignore_errors=True)
        raise
    lock_held(held)
    return made, held


def _failure(target: Path, error: OSError, fix: str) -> Exception:
    """A failed build as one line: a full disk (exit 1, the space free), else what the system said."""
    if is_disk_full(error):
        return disk_full(target.parent, None)
    return DataError(f"cannot write {target}: {error.strerror or error}", fix=fix)


@contextmanager
def folder_built_beside(target: Path, *, fix: str, marker: str | None = None,
                        written_by: str = "maps") -> Iterator[Path]:
    """A new folder beside `target` to build a whole folder in, moved to `target` in one rename
    when the block succeeds and removed when it fails, so a failure leaves no half-written
    `target` (see the module doc for what `target` may already be: `check_replaceable`). With
    `marker`, the marker listing every file is written last. A full disk is a DiskFullError
    (exit 1); another OSError a DataError naming `target` and `fix`.

    The folder being built is named and locked as _temporaries.py says: one left by a builder
    that was killed (kill -9, power loss) is removed by the next build beside the same `target`,
    and never one whose builder is alive (in any pid namespace or container)."""
    check_replaceable(target, fix=fix, marker=marker)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale(target, folder=True)
        building, held = _locked_folder(target)
    except OSError as error:
        raise _failure(target, error, fix) from None
    aside: tuple[Path, int] | None = None
    try:
        os.chmod(building, 0o755)  # mkdtemp makes the folder private; ours are meant to be read
        yield building
        if marker is not None:
            write_marker(building, marker, written_by)
        check_replaceable(target, fix=fix, marker=marker)  # again: a file may have been added since
        if target.is_dir() and any(target.iterdir()):  # an earlier build: moved aside, then removed
            aside = _locked_folder(target)
            os.replace(target, aside[0])
        try:
            os.replace(building, target)
        except OSError:
            if aside is not None:
                os.replace(aside[0], target)  # the earlier build back in place
                os.close(aside[1])
                aside = None
            raise
    except OSError as error:
        raise _failure(target, error, fix) from None
    finally:
        if building.exists():
            shutil.rmtree(building, ignore_errors=True)  # our own temporary folder, never `target`
        if aside is not None:
            shutil.rmtree(aside[0], ignore_errors=True)
            os.close(aside[1])
        os.close(held)  # the lock goes with it


__all__ = ["MAX_MARKER_BYTES", "check_replaceable", "folder_built_beside", "write_marker"]
