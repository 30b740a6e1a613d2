"""Names and paths built from untrusted text: data set ids, result rows, merged shards.

`safe_component` is the one way text becomes a file or folder name: one path component that is
never empty, `.` or `..`, holds no separator, NUL or control character, is bounded in length,
and is distinct for distinct texts, also on a case-insensitive file system. `inside` and
`child_folder` are the confinement checks every read, write or delete by such a path passes
first: the path, symlinks followed, must stay inside its folder.

Files a data set row or a problem file refers to stay inside its folder (`checked_reference`):
a row or a problem file is untrusted, and an absolute path, `~`, `../` or a symlink must not make
us read (and send to a model) a file from elsewhere on the machine. `--allow-outside-paths` (on
`maps eval` for rows, on `maps solve` for a problem file) lifts the rule for files the user
trusts (`outside_paths_allowed`).
"""

from __future__ import annotations

import hashlib
import re
from contextlib import AbstractContextManager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, JsonValue

from maps_autogen._util import DataError, read_json_or_empty, scoped
from maps_autogen.records._schema import PROBLEMS_DIR, RUN_FILE

__all__ = ["belongs_to", "checked_reference", "child_folder", "inside", "is_component", "outside_paths_allowed",
           "problem_folder", "safe_component"]

# Kept as they are: lower-case names of safe characters, not starting with `.` or `-` and not
# ending with `.` (Windows drops a trailing dot), at most 64 characters.
_KEPT = re.compile(r"[a-z0-9_](?:[a-z0-9._-]{0,62}[a-z0-9_-])?")
_HASH_CHARS = 16
# What every changed name ends with; a kept name never does, so the two kinds never meet.
_HASHED_TAIL = re.compile(rf"-[0-9a-f]{{{_HASH_CHARS}}}$")
_READABLE_CHARS = 48
# Names Windows reserves whatever the extension (a run folder may be copied there).
_RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"com{n}" for n in range(10)), *(f"lpt{n}" for n in range(10))})
_MAX_COMPONENT = 255
_UNSAFE_IN_COMPONENT = re.compile(r"[/\\\x00-\x1f\x7f]")


def safe_component(text: Any) -> str:
    """One file or folder name for `text` (an id from a data row, a result row, a shard).

    A lower-case name of letters, digits, `_`, `-` and inner dots is kept as it is; anything
    else becomes its readable part (unsafe characters as `_`, at most 48 characters) followed
    by `-` and 16 hex digits of the SHA-256 of the whole text. Distinct texts give distinct
    names, also when compared without case: kept names are lower-case and never end like a
    changed one, and changed names differ in their hash."""
    value = str(text)
    if _KEPT.fullmatch(value) and not _HASHED_TAIL.search(value) and value.split(".")[0] not in _RESERVED:
        return value
    readable = re.sub(r"[^A-Za-z0-9_-]+", "_", value)[:_READABLE_CHARS].lstrip("-") or "_"
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    return f"{readable}-{digest}"


def is_component(name: Any) -> bool:
    """Whether `name` is one usable path component (not empty, `.`, `..`, no separator, NUL or
    control character, not too long)."""
    return (isinstance(name, str) and name not in ("", ".", "..") and len(name) <= _MAX_COMPONENT
            and not _UNSAFE_IN_COMPONENT.search(name))


def inside(base: Path, relative: Any, *, strict: bool = False) -> Path | None:
    """`base/relative`, resolved, if it stays inside `base` (strictly below it with `strict`);
    None otherwise. A damaged or hostile file must not lead us elsewhere: `..`, absolute paths
    and symlinks that lead out all resolve outside."""
    if not isinstance(relative, str) or not relative or "\0" in relative:
        return None
    try:
        root = base.resolve()
        path = (root / relative).resolve()
    except (OSError, RuntimeError):  # a name too long, a symlink loop: nothing of the folder's
        return None
    if not path.is_relative_to(root) or (strict and path == root):
        return None
    return path


def child_folder(parent: Path, name: str, *, what: str) -> Path:
    """`parent/name`, checked before anything is written into or deleted from it: `name` is one
    component and the path, symlinks followed, is a direct child of `parent` (never `parent`
    itself, a sibling or anything elsewhere). DataError naming `what` otherwise."""
    path = inside(parent, name, strict=True) if is_component(name) else None
    if path is None or path.parent != parent.resolve() or parent.is_symlink() or (parent / name).is_symlink():
        raise DataError(f"{what}: {name!r} is not a folder of its own inside {parent}",
                        fix="the run folder may have been tampered with; remove that entry or use a new run folder")
    return parent / name


def problem_folder(eval_dir: Path, named: Any) -> Path | None:
    """The problem folder a result row's `run_dir` names, when it is `problems/<one name>` and
    `child_folder` accepts it (whether or not it exists); None for anything else."""
    prefix = f"{PROBLEMS_DIR}/"
    if not isinstance(named, str) or not named.startswith(prefix):
        return None
    try:
        return child_folder(eval_dir / PROBLEMS_DIR, named[len(prefix):], what="a result row")
    except DataError:
        return None


def belongs_to(folder: Path, pid: Any) -> bool:
    """Whether a problem folder is `pid`'s own: its run.json names no other problem (a folder
    whose run.json is not written yet, as a killed run leaves it, is nobody else's)."""
    recorded = _Owner.model_validate(read_json_or_empty(folder / RUN_FILE)).pid
    return recorded is None or str(recorded) == str(pid)


class _Owner(BaseModel):
    """The one field of a run.json the ownership check reads, as written: the rest of the file
    may be half-written, damaged or from another version (the run's own reader judges it)."""

    model_config = ConfigDict(extra="ignore")

    pid: JsonValue = None


_allow_outside: ContextVar[bool] = ContextVar("allow_outside_paths", default=False)
_NOT_FILES = ("http://", "https://", "data:")


def outside_paths_allowed(allowed: bool) -> AbstractContextManager[None]:
    """Within the block, the files data set rows and problem files refer to may be outside
    their folder when `allowed`."""
    return scoped(_allow_outside, allowed)


def checked_reference(reference: str, base_dir: Path | None, *, what: str, folder: str = "the data folder",
                      trust: str = "the data") -> str:
    """`reference` unchanged when it is a URL or resolves (symlinks followed) inside `base_dir`,
    the folder relative paths start from; a DataError naming `what` (the row's image), the
    `folder` it must stay in and the flag for files the user trusts otherwise."""
    if base_dir is None or reference.startswith(_NOT_FILES) or _allow_outside.get():
        return reference
    root = base_dir.resolve()
    try:
        candidate = Path(reference).expanduser()  # the same resolution load_image applies
        resolved: Path | None = (candidate if candidate.is_absolute() else root / candidate).resolve()
    except (OSError, RuntimeError, ValueError):  # an unknown ~user, a NUL, a name too long: not a file of its folder
        resolved = None
    if resolved is None or not resolved.is_relative_to(root):
        raise DataError(
            f"{what} refers to '{reference}', which is outside {folder} {root}",
            fix=f"keep its files inside {folder}, or pass --allow-outside-paths if you trust {trust}",
        )
    return reference
