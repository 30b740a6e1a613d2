"""A response cache for model calls, keyed by everything that shapes the reply.

The key covers the endpoint URL and the whole request body: model, every sampling setting,
response format with its JSON schema and the complete messages (image data included), so a
rolled-back step, whose request carries its previous output and the Critic's new feedback, can
never be served an old reply. Only accepted replies (complete, and parsed when the role needs
JSON) are stored; the caller evicts an entry that no longer passes its check.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maps_autogen._util import PRIVATE_FILE_MODE, open_append, redact

CACHE_SCHEMA_VERSION = 2
# Version 1 stored replies before they were checked; its table is left unread.
_TABLE = "accepted_replies"


@dataclass(frozen=True)
class CachedReply:
    """An accepted reply as the cache stored it (the tokens None when the service reported none)."""

    text: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None


def cache_key(request: dict[str, Any]) -> str:
    """A stable hash of a chat request."""
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(f"v{CACHE_SCHEMA_VERSION}:{canonical}".encode()).hexdigest()


def _storable(count: int | None) -> int | None:
    """A token count as the table keeps it: a whole number SQLite's INTEGER holds, else None."""
    if isinstance(count, int) and not isinstance(count, bool) and 0 <= count < 2**63:
        return count
    return None


class ResponseCache:
    """SQLite-backed, safe to share between threads (and processes, through SQLite's locks)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        # Created private before SQLite opens it; SQLite gives its -wal/-shm files the same mode.
        os.close(open_append(path, PRIVATE_FILE_MODE))
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                f"CREATE TABLE IF NOT EXISTS {_TABLE} (key TEXT PRIMARY KEY, text TEXT NOT NULL, model TEXT,"
                " prompt_tokens INTEGER, completion_tokens INTEGER, finish_reason TEXT, created REAL)"
            )
            self._db.commit()

    def get(self, key: str) -> CachedReply | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT text, model, prompt_tokens, completion_tokens, finish_reason FROM {_TABLE} WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        return CachedReply(text=row[0], model=row[1], prompt_tokens=row[2], completion_tokens=row[3],
                           finish_reason=row[4])

    def put(self, key: str, text: str, model: str, prompt_tokens: int | None, completion_tokens: int | None,
            finish_reason: str | None = None) -> None:
        """Store an accepted reply. A token count SQLite cannot hold (the caller checks usage
        first; this is the cache's own guard) is stored as unknown, never overflowing the table."""
        with self._lock:
            self._db.execute(
                f"INSERT OR REPLACE INTO {_TABLE} VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, redact(text), redact(model), _storable(prompt_tokens), _storable(completion_tokens),
                 finish_reason, time.time()),
            )
            self._db.commit()

    def delete(self, key: str) -> None:
        """Evict an entry (its reply no longer passes the caller's check)."""
        with self._lock:
            self._db.execute(f"DELETE FROM {_TABLE} WHERE key = ?", (key,))
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()
