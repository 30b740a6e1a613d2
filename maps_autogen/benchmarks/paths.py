"""Files a data set row refers to stay inside the data folder.

A row is untrusted: an absolute path, `../` or a symlink must not make us read (and send to a
model) a file from elsewhere on the machine. `maps eval --allow-outside-paths` lifts the rule
for data sets the user trusts.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from contextvars import ContextVar
from pathlib import Path

from maps_autogen.errors import DataError
from maps_autogen.limits import scoped

_allow_outside: ContextVar[bool] = ContextVar("allow_outside_paths", default=False)
_NOT_FILES = ("http://", "https://", "data:")


def outside_paths_allowed(allowed: bool) -> AbstractContextManager[None]:
    """Within the block, data set file references may leave the data folder when `allowed`."""
    return scoped(_allow_outside, allowed)


def checked_reference(reference: str, base_dir: Path | None, *, what: str) -> str:
    """`reference` unchanged when it is a URL or resolves (symlinks followed) inside `base_dir`,
    the folder relative paths start from; a DataError naming `what` (the row's image) otherwise."""
    if base_dir is None or reference.startswith(_NOT_FILES) or _allow_outside.get():
        return reference
    root = base_dir.resolve()
    candidate = Path(reference).expanduser()  # the same resolution load_image applies
    resolved = (candidate if candidate.is_absolute() else root / candidate).resolve()
    if not resolved.is_relative_to(root):
        raise DataError(
            f"data set image {what} refers to '{reference}', which is outside the data folder {root}",
            fix="keep the data set's files inside its folder, or pass --allow-outside-paths if you trust the data",
        )
    return reference
