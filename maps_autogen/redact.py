"""What leaves the process: secrets masked (`redact`) and untrusted text made safe to print
(`terminal_safe`).

Every path out of the process goes through `redact`: the terminal (live view, --json, --quiet,
error lines, log warnings), every file under runs/, the response cache, the viewer pages and the
reports. It masks the value of every configured API-key variable (registered when the config is
loaded or a model is resolved) and any `Authorization:`/`Bearer` credential.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from typing import Iterable, Mapping

MASK = "***"
_MIN_SECRET_LENGTH = 4

_lock = threading.Lock()
_secrets: set[str] = set()
_longest_first: tuple[str, ...] = ()  # _secrets, longest first (a secret inside another is masked after it)
_longest = 0

# A bearer token or an Authorization header value: 8+ token characters including a digit (so
# prose such as "Authorization: required" is left alone). Each quantifier is followed by a
# character class it cannot match, so matching is linear in the text's length.
_CREDENTIALS = re.compile(
    r"(?P<lead>\bBearer[ \t]+|\bAuthorization[\"']?[ \t]*[:=][ \t]*[\"']?(?!Bearer\b))"
    r"(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{8,}",
    re.IGNORECASE,
)
_TOKEN_CHARACTERS = re.compile(r"[A-Za-z0-9._~+/=-]*")  # the characters a credential goes on with


def register_secret(value: str | None) -> None:
    """Remember a secret so `redact` masks it wherever it shows up."""
    global _longest, _longest_first
    if value and len(value) >= _MIN_SECRET_LENGTH:
        with _lock:
            if value not in _secrets:  # sorted here, once, not on every (per-token) redact call
                _secrets.add(value)
                _longest_first = tuple(sorted(_secrets, key=len, reverse=True))
                _longest = max(_longest, len(value))


def register_key_variables(names: Iterable[str | None], env: Mapping[str, str] | None = None) -> None:
    """Register the values of the named environment variables (every endpoint's api_key_env),
    whether or not the run uses that endpoint."""
    env = os.environ if env is None else env
    for name in names:
        if name:
            register_secret(env.get(name))


def redact(text: str) -> str:
    """`text` with every registered secret and every bearer/Authorization credential masked."""
    for secret in _longest_first:  # a tuple replaced whole on registration: safe to read unlocked
        if secret in text:
            text = text.replace(secret, MASK)
    return _CREDENTIALS.sub(lambda match: match.group("lead") + MASK, text)


def redact_bytes(data: bytes) -> bytes:
    """`redact` for UTF-8 bytes (files whose content we do not decode otherwise)."""
    return redact(data.decode("utf-8", errors="surrogateescape")).encode("utf-8", errors="surrogateescape")


class StreamRedactor:
    """Redacts text that arrives in pieces (streamed tokens), so a secret split across two
    pieces is still masked: it holds back the last few characters until more text (or the end)
    shows whether they begin a secret."""

    def __init__(self) -> None:
        self._pending = ""
        # The text so far ended inside a credential, now masked: the token's further characters
        # are dropped (once masked, "Bearer ***" + "rest" no longer looks like a credential).
        self._in_credential = False

    def feed(self, piece: str) -> str:
        """The text that is safe to show now."""
        if self._in_credential:
            piece = piece[_TOKEN_CHARACTERS.match(piece).end():]
            if not piece:
                return ""
            self._in_credential = False
        hold = max(_longest, 64) - 1  # 64 covers a bearer token's prefix as well
        raw = self._pending + piece
        self._in_credential = any(match.end() == len(raw) for match in _CREDENTIALS.finditer(raw))
        text = redact(raw)
        cut = max(0, len(text) - hold)
        self._pending = text[cut:]
        return text[:cut]

    def flush(self) -> str:
        """Everything held back (the stream ended)."""
        text, self._pending, self._in_credential = redact(self._pending), "", False
        return text


# ---------------------------------------------------------------------------------------------
# Terminal safety
# ---------------------------------------------------------------------------------------------

def _escape_table() -> dict[int, str]:
    """C0 controls (except newline and tab), DEL, C1 controls, and the Unicode bidi overrides
    that reorder what a terminal shows: each becomes a visible escape such as \\x1b."""
    table = {code: f"\\x{code:02x}" for code in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)] if code not in (0x09, 0x0A)}
    for code in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]:
        table[code] = f"\\u{code:04x}"
    return table


_TERMINAL_ESCAPES = _escape_table()
_JSON_ESCAPES = {code: f"\\u{code:04x}" for code in _TERMINAL_ESCAPES}


def escape_controls(text: str) -> str:
    """Control characters and escape sequences shown escaped (``ESC[2J`` prints as
    ``\\x1b[2J``), so a terminal never interprets them."""
    return text.translate(_TERMINAL_ESCAPES)


def terminal_safe(text: str) -> str:
    """Untrusted text as the terminal should show it: secrets masked, controls escaped."""
    return escape_controls(redact(text))


def terminal_safe_json(text: str) -> str:
    """JSON text (from json.dumps, which already escapes C0 controls) safe for the terminal:
    secrets masked; DEL, C1 controls and bidi overrides written as JSON \\u escapes, so the
    output stays valid JSON."""
    return redact(text).translate(_JSON_ESCAPES)


class RedactingFilter(logging.Filter):
    """A logging filter that masks secrets and escapes control characters in every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = terminal_safe(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            # The formatter prints exc_text as it is: clean the traceback here too.
            record.exc_text = terminal_safe(logging.Formatter().formatException(record.exc_info))
        return True
