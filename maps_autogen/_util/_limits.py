"""Bounding untrusted input: reply text and response bodies, and scoped input settings."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")

DEFAULT_REPLY_BYTES = 256 * 1024


def cap_reply(text: str, max_bytes: int) -> tuple[str, bool]:
    """`text` cut to at most `max_bytes` of UTF-8 (never inside a character), and whether it was cut."""
    encoded = text.encode("utf-8", errors="surrogatepass")
    if len(encoded) <= max_bytes:
        return text, False
    return encoded[:max_bytes].decode("utf-8", errors="ignore"), True


def body_limit(max_reply_bytes: int) -> int:
    """The largest response body we read for a reply of `max_reply_bytes`: JSON escaping can
    grow text up to 6-fold (\\uXXXX), plus room for the envelope."""
    return 6 * max_reply_bytes + 64 * 1024


@contextmanager
def scoped(variable: ContextVar[T], value: T) -> Iterator[None]:
    """`variable` set to `value` for the duration of the block (an input setting such as the
    image limits, applied where data is loaded without threading it through every call)."""
    token = variable.set(value)
    try:
        yield
    finally:
        variable.reset(token)


def capped_lines(chunks: Iterable[str], limit: int) -> Iterator[str]:
    """The lines of streamed text (without their ends), or LineTooLong once one line grows past
    `limit` characters: a stream that never sends a newline must not fill memory. Each chunk is
    split once, so the work is linear in the text."""
    parts: list[str] = []  # the unfinished line
    size = 0
    for chunk in chunks:
        *complete, rest = chunk.split("\n")
        if complete:
            complete[0] = "".join(parts) + complete[0]
            for line in complete:
                yield line.removesuffix("\r")
            parts, size = [], 0
        if rest:
            parts.append(rest)
            size += len(rest)
            if size > limit:
                raise LineTooLong(limit)
    if parts:
        yield "".join(parts).removesuffix("\r")


class LineTooLong(Exception):
    """A streamed line longer than the limit of `capped_lines`."""

    def __init__(self, limit: int):
        super().__init__(f"a streamed line over {limit:,} characters")
        self.limit = limit


def read_capped(chunks: Iterable[bytes], limit: int) -> bytes | None:
    """The concatenated chunks, or None as soon as they exceed `limit` bytes."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
    return b"".join(parts)
