"""Untrusted text made valid once, where it enters: lone UTF-16 surrogates (a JSON ``\\udcff``
escape, half of an emoji split across two streamed pieces, a command-line argument that was not
UTF-8) become U+FFFD, a surrogate pair becomes its character, and nesting is bounded.

Everything downstream (the transcript writer, the terminal, the cache, the pages) may then
assume valid UTF-8: these are the only places text from outside is repaired.
"""

from __future__ import annotations

import codecs
import json
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any

REPLACEMENT = "\ufffd"
# How deep untrusted YAML or JSON may nest: our files are a few levels deep, and a few hundred
# levels exhaust Python's recursion (a RecursionError with a 3,000-line traceback).
MAX_NESTING = 64

_SURROGATE = re.compile("[\ud800-\udfff]")
# What a lone surrogate looks like before JSON parsing: a \\uD800-\\uDFFF escape, or UTF-8 bytes
# of a surrogate (json.loads decodes bytes with surrogatepass).
_SURROGATE_SOURCE_TEXT = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_SOURCE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


class TooDeep(ValueError):
    """Untrusted data nested deeper than the limit."""

    def __init__(self, limit: int):
        super().__init__(f"nested more than {limit} levels deep")
        self.limit = limit


class NumberTooLong(ValueError):
    """Untrusted JSON holding an integer longer than Python converts (its digit limit)."""


def json_loads(source: str | bytes, **options: Any) -> Any:
    """`json.loads`, with an integer past Python's digit limit (4,300 digits: converting one
    longer is refused, as its cost grows with the square of its length) raised as NumberTooLong,
    a one-line reason, instead of a ValueError advising to lift the limit. JSONDecodeError and
    UnicodeDecodeError are raised as `json.loads` raises them."""
    try:
        return json.loads(source, **options)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise
    except ValueError as error:
        if "integer string conversion" not in str(error):
            raise
        raise NumberTooLong(f"holds a number with more than {sys.get_int_max_str_digits():,} digits") from None


def valid_text(text: str) -> str:
    """`text` as valid Unicode: surrogate pairs joined into their character, lone surrogates
    replaced by U+FFFD. Text without surrogates is returned as it is (one regex scan)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def may_hold_surrogates(source: str | bytes) -> bool:
    """Whether JSON source text could parse into a string with a surrogate (a cheap test that
    spares walking what it parses)."""
    if isinstance(source, bytes):
        return _SURROGATE_SOURCE_BYTES.search(source) is not None
    return _SURROGATE_SOURCE_TEXT.search(source) is not None or _SURROGATE.search(source) is not None


def valid_tree(value: Any, *, limit: int = MAX_NESTING) -> Any:
    """Parsed JSON or YAML with every string (keys too) made valid by `valid_text`; raises
    TooDeep when it nests deeper than `limit`. A container shared by YAML aliases is cleaned
    once and stays shared (no expansion)."""
    done: dict[int, Any] = {}

    def clean(item: Any, depth: int) -> Any:
        if isinstance(item, str):
            return valid_text(item)
        if not isinstance(item, (dict, list, tuple)):
            return item
        if depth >= limit:
            raise TooDeep(limit)
        if id(item) in done:
            return done[id(item)]
        if isinstance(item, dict):
            result: Any = {clean(key, depth + 1): clean(child, depth + 1) for key, child in item.items()}
        elif isinstance(item, list):
            result = [clean(child, depth + 1) for child in item]
        else:
            result = tuple(clean(child, depth + 1) for child in item)
        done[id(item)] = result
        return result

    return clean(value, 0)


def nesting_depth_over(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether parsed data nests deeper than `limit` containers (iterative: any depth is safe)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def utf8_chunks(chunks: Iterable[bytes]) -> Iterator[str]:
    """Bytes arriving in pieces decoded as UTF-8 incrementally: a character split across two
    pieces is decoded whole; invalid bytes become U+FFFD."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    for chunk in chunks:
        text = decoder.decode(chunk)
        if text:
            yield text
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


class PieceJoiner:
    """Streamed text pieces made valid one at a time: a piece ending in the first half of a
    surrogate pair (an emoji split across two JSON-escaped pieces) holds that half back until
    the next piece completes it."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        """The valid text of `piece` (with any half held from the previous piece)."""
        piece = self._held + piece
        self._held = ""
        if piece and "\ud800" <= piece[-1] <= "\udbff":
            piece, self._held = piece[:-1], piece[-1]
        return valid_text(piece)

    def flush(self) -> str:
        """A half pair still held at the end of the stream, as U+FFFD."""
        held, self._held = self._held, ""
        return valid_text(held)
