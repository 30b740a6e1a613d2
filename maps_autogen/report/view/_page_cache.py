"""Pages rendered once per change: each kept with the stamps (inode, size, mtime) of the files
it was rendered from, and served again while none of them changed (`maps view --serve`)."""

from __future__ import annotations

import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Stamp = tuple[int, int, int] | None


def stamp_of(path: Path) -> Stamp:
    """What changes when a file is rewritten (os.replace gives a new inode) or grows."""
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_ino, status.st_size, status.st_mtime_ns


SETTLED_NS = 2_000_000_000  # a file modified this close to a render may change again unseen (coarse mtimes)
CACHED_PAGES = 64  # the index, the rows and the problem pages last asked for


@dataclass(frozen=True)
class _Rendered:
    paths: tuple[Path, ...]  # what the value was rendered from
    stamps: tuple[Stamp, ...]  # their stamps, taken before the render (of files found while rendering: after)
    settled: bool  # every stamp older than the render by SETTLED_NS: the same stamp means the same content
    token: Any  # what else the value was rendered from, compared by equality
    value: Any


class PageCache:
    """Rendered pages (and other values read from the run folder), each kept with the stamps of
    the files it depends on and rendered again only when one of them changed. A page whose files
    were modified just before (or during) its render is rendered again the next time, since a file
    rewritten within the file system's timestamp granularity can keep its size and mtime. Errors
    are not kept: a damaged file is reported on every request until it is repaired. One render
    per key at a time (a burst of requests for a page renders it once), while other pages are
    served: the index of a large eval being rendered holds up no problem page.
    `renders` counts the renders by key (tests read it)."""

    def __init__(self, size: int = CACHED_PAGES):
        self._entries: OrderedDict[str, _Rendered] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()  # guards the entries, the keys' locks and the counts
        self._keys: dict[str, threading.Lock] = {}  # one per page (the pages are the run's: bounded)
        self.renders: Counter[str] = Counter()

    def get(self, key: str, paths: Sequence[Path], render: Callable[[], tuple[Any, Sequence[Path]]],
            token: Any = None) -> Any:
        """The value kept under `key` if its files are unchanged (and it was rendered for an equal
        `token`), else `render()`'s value (which also returns the further paths it depends on,
        found while rendering)."""
        with self._lock:
            key_lock = self._keys.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                entry = self._entries.get(key)
            if (entry is not None and entry.settled and entry.token == token
                    and tuple(map(stamp_of, entry.paths)) == entry.stamps):
                with self._lock:
                    if key in self._entries:
                        self._entries.move_to_end(key)
                return entry.value
            started = time.time_ns()
            before = tuple(map(stamp_of, paths))
            value, found = render()
            stamps = before + tuple(map(stamp_of, found))
            settled = all(stamp is None or stamp[2] < started - SETTLED_NS for stamp in stamps)
            with self._lock:
                self.renders[key] += 1
                self._entries[key] = _Rendered((*paths, *found), stamps, settled, token, value)
                self._entries.move_to_end(key)
                while len(self._entries) > self._size:
                    self._entries.popitem(last=False)
            return value
