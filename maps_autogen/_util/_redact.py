"""What leaves the process: secrets masked (`redact`) and untrusted text made safe to print
(`terminal_safe`).

One registry of secrets (`register_secret`), fed from every place a credential can live: the
value of every configured API-key variable, a config list's keys, an endpoint's headers, query
parameters and extra_body fields named like credentials, the user information and the
credential query parameters of every base URL (`register_url_secrets`), a key pasted where a
name or a path goes. Every path out of the process goes through `redact`: the terminal (live
view, --json, --quiet, error lines, log warnings), every file under runs/, the response cache,
the viewer pages, the reports, and Inspect's log (inspect_tasks/). It masks every registered
secret in every encoding it travels in (itself; URL-encoded, as a query string carries it;
JSON-escaped, as every file and --json line carries it; base64, as `Authorization: Basic`
carries a URL's `user:password`, at any alignment inside a longer encoded text), any run of
12 or more consecutive characters of one (a near-copy: the key minus a character, without its
prefix, split by a zero-width character), and any `Authorization:`/`Bearer`/`Basic` credential.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import logging
import os
import re
import threading
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MASK = "***"
_MIN_SECRET_LENGTH = 4
# Any run of this many consecutive characters of a secret is masked (the key minus a character,
# without its prefix, a piece of it); shorter secrets are masked where they appear whole.
NEAR_COPY_CHARACTERS = 12
_BLOCK = NEAR_COPY_CHARACTERS // 2  # every run of 12 holds one of the secret's aligned 6-blocks
# A character of the secrets (or not) as `_alphabet_runs` marks it, and the marks of a run of 12.
_IN_ALPHABET, _OUTSIDE = ord("a"), ord(" ")
_ALPHABET_RUN = bytes([_IN_ALPHABET]) * NEAR_COPY_CHARACTERS

# Invisible format characters (Unicode category Cf: zero-width space and joiners, soft hyphen,
# bidi marks, word joiner, BOM, tags...): ignored when looking for a secret, so a key split by
# one is still found; the mask covers them too.
_INVISIBLE_BMP = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
)
_INVISIBLE_ASTRAL = (
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
_INVISIBLE = re.compile(f"[{_INVISIBLE_BMP}{_INVISIBLE_ASTRAL}]")
# Two cheaper first looks (a class of BMP characters only compiles to a table lookup).
_ANY_INVISIBLE_BMP = re.compile(f"[{_INVISIBLE_BMP}]")
_ANY_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _has_invisible(text: str) -> bool:
    """Whether `text` holds an invisible format character (ASCII text is known at once)."""
    if text.isascii():
        return False
    return _ANY_INVISIBLE_BMP.search(text) is not None or (
        _ANY_ASTRAL.search(text) is not None and _INVISIBLE.search(text) is not None
    )


@dataclass(frozen=True)
class _Secrets:
    """What `redact` looks for, replaced whole on registration (safe to read unlocked)."""

    exact: tuple[str, ...] = ()  # secrets shorter than NEAR_COPY_CHARACTERS, longest first
    blocks: tuple[str, ...] = ()  # the aligned 6-character blocks of the longer ones: a cheap first test
    runs: frozenset[str] = frozenset()  # every 12-character piece of the longer ones
    longest: int = 0
    # The characters of the longer ones, as a bytes.translate table of Latin-1 (each one to "a",
    # any other to " "), and a character that is none of them; None when one is beyond Latin-1.
    alphabet: bytes | None = None
    separator: str = ""


_lock = threading.Lock()
_secrets: set[str] = set()  # as registered (its encodings are derived when the tables are built)
_state = _Secrets()

# A bearer token or an Authorization header value: 8+ token characters including a digit (so
# prose such as "Authorization: required" is left alone). Each quantifier is followed by a
# character class it cannot match, so matching is linear in the text's length.
_CREDENTIALS = re.compile(
    r"(?P<lead>\bBearer[ \t]+|\bAuthorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:Basic[ \t]+)?(?!Bearer\b|Basic\b))"
    r"(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{8,}",
    re.IGNORECASE,
)
_TOKEN_CHARACTERS = re.compile(r"[A-Za-z0-9._~+/=-]*")  # the characters a credential goes on with


def encodings(secret: str) -> set[str]:
    """The forms `secret` travels in besides itself: URL-encoded (a query string, a path, as
    `quote` and `urlencode` write it), inside a JSON string (every file we write, --json: its
    quotes and backslashes escaped, anything beyond ASCII as `\\u` escapes or not) and base64
    (standard and URL-safe alphabets) at each of the three alignments it can have inside a
    longer encoded text (`Authorization: Basic` of `user:` + the secret): of those, the
    characters that depend on the secret alone, when there are enough of them
    (NEAR_COPY_CHARACTERS) to tell it."""
    forms = {urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret),
             json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    data = secret.encode("utf-8", errors="surrogatepass")
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for offset in range(3):
            encoded = encode(b"\0" * offset + data).decode("ascii")
            inside = encoded[-(-8 * offset // 6):(offset + len(data)) // 3 * 4]  # whole 6-bit groups of the secret
            if len(inside) >= NEAR_COPY_CHARACTERS:
                forms.add(inside)
    forms.discard(secret)
    return {form for form in forms if len(form) >= _MIN_SECRET_LENGTH}


def _compile(given: Iterable[str]) -> _Secrets:
    """The lookup tables for a set of secrets and their encodings (built once per registration,
    not per call)."""
    secrets = {form for secret in given for form in (secret, *encodings(secret))}
    exact = tuple(sorted((s for s in secrets if len(s) < NEAR_COPY_CHARACTERS), key=len, reverse=True))
    long = [s for s in secrets if len(s) >= NEAR_COPY_CHARACTERS]
    runs = frozenset(s[i : i + NEAR_COPY_CHARACTERS] for s in long for i in range(len(s) - NEAR_COPY_CHARACTERS + 1))
    blocks = tuple(dict.fromkeys(s[i : i + _BLOCK] for s in long for i in range(0, len(s) - _BLOCK + 1, _BLOCK)))
    characters = set("".join(long))
    separator = next((c for c in "\0\n \"" if c not in characters), "")
    alphabet = (bytes(_IN_ALPHABET if chr(code) in characters else _OUTSIDE for code in range(256))
                if separator and all(ord(c) < 256 for c in characters) else None)
    return _Secrets(exact, blocks, runs, max((len(s) for s in secrets), default=0), alphabet, separator)


def register_secret(value: str | None) -> None:
    """Remember a secret so `redact` masks it, and any 12 consecutive characters of it, in each
    of its `encodings`, wherever they show up."""
    global _state
    if value and len(value) >= _MIN_SECRET_LENGTH:
        with _lock:
            if value not in _secrets:
                _secrets.add(value)
                _state = _compile(_secrets)


def registered_secrets() -> frozenset[str]:
    """Every secret registered so far, as registered (an eval's worker processes register the
    same, and derive the same encodings)."""
    with _lock:
        return frozenset(_secrets)


# Variables that hold keys whatever the config says: registered by every command.
WELL_KNOWN_KEY_VARIABLES = ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
# Variables that name a service by its URL (OpenAI's SDK's, the older name, gateways' own): their
# user information and credential query parameters are secrets.
_URL_VARIABLE = re.compile(r"_(?:BASE_URL|API_BASE|ENDPOINT|BASE)$", re.IGNORECASE)


def register_well_known_keys(env: Mapping[str, str] | None = None) -> None:
    """Register the well-known key variables, every variable whose name ends in _API_KEY, and
    the credentials written into every variable that names a service by its URL
    (OPENAI_BASE_URL: `http://user:password@host/v1?api-key=...`)."""
    env = os.environ if env is None else env
    register_key_variables(
        [*WELL_KNOWN_KEY_VARIABLES, *(name for name in env if name.upper().endswith("_API_KEY"))], env
    )
    for name, value in env.items():
        if _URL_VARIABLE.search(name):
            register_url_secrets(value)


def register_key_variables(names: Iterable[str | None], env: Mapping[str, str] | None = None) -> None:
    """Register the values of the named environment variables (every endpoint's api_key_env),
    whether or not the run uses that endpoint."""
    env = os.environ if env is None else env
    for name in names:
        if name:
            register_secret(env.get(name))


def _alphabet_runs(view: str, alphabet: bytes) -> list[tuple[int, int]]:
    """The [start, end) spans of `view` made of 12 or more characters of the secrets' alphabet
    (the only places a piece of a secret can be): each character marked by one C pass (Latin-1,
    anything beyond it as "?"), the runs of marks found by `bytes.find`."""
    marks = view.encode("latin-1", "replace").translate(alphabet)
    runs: list[tuple[int, int]] = []
    at = marks.find(_ALPHABET_RUN)
    while at != -1:
        end = marks.find(_OUTSIDE, at + NEAR_COPY_CHARACTERS)
        end = len(marks) if end == -1 else end
        runs.append((at, end))
        at = marks.find(_ALPHABET_RUN, end)
    return runs


def _near_copy_spans(view: str, state: _Secrets) -> list[tuple[int, int]]:
    """The [start, end) spans of `view` made of 12-character pieces of a secret, merged.

    A piece of a secret is made of the secrets' characters, so only the runs of 12 or more of
    them are looked in (`_alphabet_runs`: in prose and JSON, a few per cent of the text), joined
    by a character that is none of them: one text, searched as a whole text is."""
    if state.alphabet is None:
        return _spans_in(view, state)
    runs = _alphabet_runs(view, state.alphabet)
    if len(runs) == 1 and runs[0] == (0, len(view)):
        return _spans_in(view, state)
    joined = state.separator.join(view[start:end] for start, end in runs)
    found = _spans_in(joined, state)
    if not found:
        return []
    placed, at = [], 0  # where each run starts in `joined`
    for start, end in runs:
        placed.append(at)
        at += end - start + 1
    spans = []
    for start, end in found:  # a span lies within one run (the separator is in no secret)
        number = bisect.bisect_right(placed, start) - 1
        moved = runs[number][0] - placed[number]
        spans.append((start + moved, end + moved))
    return spans


def _spans_in(view: str, state: _Secrets) -> list[tuple[int, int]]:
    """`_near_copy_spans` of a whole text.

    Only windows around an occurrence of one of the secrets' aligned blocks can be such a piece
    (a piece of 12 holds a whole aligned block of 6), and each window start is looked at once,
    so the work is linear in the text (str.find does the scanning)."""
    width = NEAR_COPY_CHARACTERS
    checked: set[int] = set()
    starts: list[int] = []
    last = len(view) - width
    for block in state.blocks:
        at = view.find(block)
        while at != -1:
            for start in range(max(0, at - (width - _BLOCK)), min(at, last) + 1):
                if start not in checked:
                    checked.add(start)
                    if view[start : start + width] in state.runs:
                        starts.append(start)
            at = view.find(block, at + 1)
    spans: list[tuple[int, int]] = []
    for start in sorted(starts):
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], start + width)
        else:
            spans.append((start, start + width))
    return spans


def _mask_near_copies(text: str, state: _Secrets) -> str:
    """`text` with every run of 12+ consecutive characters of a long secret masked, invisible
    format characters inside it ignored (and masked with it)."""
    invisible = _has_invisible(text)
    view = _INVISIBLE.sub("", text) if invisible else text
    spans = _near_copy_spans(view, state)
    if not spans:
        return text
    if invisible:  # back to positions in `text`: a view position plus the invisibles before it
        shifted = [match.start() - number for number, match in enumerate(_INVISIBLE.finditer(text))]
        spans = [(start + bisect.bisect_right(shifted, start), end - 1 + bisect.bisect_right(shifted, end - 1) + 1)
                 for start, end in spans]
    pieces, done = [], 0
    for start, end in spans:
        pieces += [text[done:start], MASK]
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def redact(text: str) -> str:
    """`text` with every registered secret (and any run of 12+ of its characters, invisible
    characters inside ignored), every bearer/Authorization credential and the user information
    of every URL (`http://user:password@host`) masked."""
    state = _state
    if state.blocks:
        text = _mask_near_copies(text, state)
    for secret in state.exact:
        if secret in text:
            text = text.replace(secret, MASK)
    return mask_url_userinfo(_mask_credentials(text))


# Where a URL's authority (and so its user information) ends.
_AUTHORITY_ENDS = frozenset("/?#\\ \t\r\n\"'<>`")


def mask_url_userinfo(text: str) -> str:
    """`text` with the user information of every URL in it masked: `scheme://user:pw@host`
    becomes `scheme://***@host`. Each `://` is followed to the end of its authority (a `/`, `?`,
    `#`, space or quote), which holds no `/`: authorities overlap by at most the two characters
    that begin the next `://`, so the work is linear in the text."""
    at = text.find("://")
    if at == -1 or "@" not in text:  # the fast path: no URL with user information
        return text
    pieces, done = [], 0
    while at != -1:
        start = at + 3
        end = start
        while end < len(text) and text[end] not in _AUTHORITY_ENDS:
            end += 1
        userinfo_end = text.rfind("@", start, end)
        if userinfo_end > start and text[start:userinfo_end] != MASK:
            pieces += [text[done:start], MASK]
            done = userinfo_end
        at = text.find("://", start)  # (the next one may begin inside this authority: ":/" ends it)
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def url_userinfo(url: str) -> str:
    """The user information of `url` (`user:password`), or "" when it has none."""
    scheme_end = url.find("://")
    if scheme_end == -1:
        return ""
    start = scheme_end + 3
    end = start
    while end < len(url) and url[end] not in _AUTHORITY_ENDS:
        end += 1
    at = url.rfind("@", start, end)
    return url[start:at] if at > start else ""


def url_secrets(url: str) -> list[str]:
    """The credentials written into a URL: its user information (`user:password` and the
    password, as written and percent-decoded), the `Authorization: Basic` value an HTTP client
    makes of it (base64 of the decoded `user:password`), and the value of every query parameter
    named like a credential (`?api-key=...`, `?sig=...`)."""
    found: list[str] = []
    userinfo = url_userinfo(url)
    if userinfo:
        user, _, password = userinfo.partition(":")
        decoded = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
        found += [userinfo, password, decoded, urllib.parse.unquote(password),
                  base64.b64encode(decoded.encode("utf-8", errors="surrogatepass")).decode("ascii")]
    query = url.split("#", 1)[0].partition("?")[2]
    if query:
        for name, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
            if names_a_credential(name):
                found += credential_forms(value)
    return [secret for secret in dict.fromkeys(found) if secret]


def register_url_secrets(url: str | None) -> None:
    """Register every credential written into `url` (`url_secrets`), so a copy anywhere, in any
    encoding, is masked."""
    for secret in url_secrets(url or ""):
        register_secret(secret)


# An Authorization-style value: a scheme, then the credential.
_SCHEME = re.compile(r"(?P<scheme>Bearer|Basic|Token|Bot|ApiKey|Key|SharedKey|Digest)[ \t]+(?P<credential>\S+)",
                     re.IGNORECASE)


def credential_forms(value: str) -> list[str]:
    """A credential's value as it may be seen: whole; the credential after its scheme (`Bearer
    X`, `Basic X`); and for `Basic`, the decoded `user:password` and the password."""
    found = [value]
    match = _SCHEME.fullmatch(value.strip())
    if match:
        found.append(match.group("credential"))
        if match.group("scheme").lower() == "basic":
            try:
                decoded = base64.b64decode(match.group("credential"), validate=True).decode("utf-8")
            except (binascii.Error, ValueError):
                decoded = ""
            if ":" in decoded:
                found += [decoded, decoded.partition(":")[2]]
    return [secret for secret in found if secret]


# Where config data holds what is sent as it is written (an endpoint's headers, query parameters
# and extra body fields; a config list entry's headers and query): a value under a name that
# says credential is one.
CREDENTIAL_HOLDERS = frozenset({"headers", "query", "extra_body", "default_headers", "extra_headers",
                                "default_query"})


def secrets_written_in(data: Any) -> list[str]:
    """Secrets written into config data: anything shaped like an API key (`pasted_keys`) where a
    name or a URL goes, every URL's credentials (`url_secrets`), and the text value of every
    name that says credential inside a `CREDENTIAL_HOLDERS` part, at any depth (`credential_forms`).
    Walked iteratively: config data is bounded in depth and size already."""
    found: list[str] = []
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        item, held = stack.pop()
        if isinstance(item, dict):
            for name, value in item.items():
                stack.append((name, False))
                if held and isinstance(name, str) and isinstance(value, str) and names_a_credential(name):
                    found += credential_forms(value)
                stack.append((value, held or (isinstance(name, str) and name in CREDENTIAL_HOLDERS)))
        elif isinstance(item, list):
            stack.extend((value, held) for value in item)
        elif isinstance(item, str):
            found += pasted_keys(item)
            if "://" in item:
                found += url_secrets(item)
    return [secret for secret in found if secret]


def mask_credential_fields(data: Any) -> Any:
    """`data` (a request body's settings, as a run records them) with the text value of every
    field named like a credential masked, at any depth (a number or a list under such a name,
    `max_tokens` or `stop_token_ids`, is a setting, not a credential)."""
    if isinstance(data, dict):
        return {name: MASK if isinstance(value, str) and isinstance(name, str) and names_a_credential(name)
                else mask_credential_fields(value) for name, value in data.items()}
    if isinstance(data, list):
        return [mask_credential_fields(value) for value in data]
    return data


# Header and query parameter names whose values are credentials, whatever they hold.
_CREDENTIAL_NAME = re.compile(r"auth|key|token|secret|password|cookie|signature|\bsig\b|credential", re.IGNORECASE)


def names_a_credential(name: str) -> bool:
    """Whether a header's or a query parameter's name says its value is a credential."""
    return _CREDENTIAL_NAME.search(name) is not None


def shown_value(name: str, value: str) -> str:
    """A header's or query parameter's value as a record shows it: masked when its name says it
    is a credential or it holds a registered secret."""
    if names_a_credential(name) or any(secret in value for secret in registered_secrets()):
        return MASK
    return value


# How API keys begin (OpenAI sk-/sk-proj-, Anthropic sk-ant-, Google AIza, Hugging Face hf_,
# Groq gsk_, xAI xai-, Perplexity pplx-, NVIDIA nvapi-, Replicate r8_, GitHub ghp_/github_pat_,
# OpenRouter sk-or-): a value that begins so and runs on for 16+ key characters is a key,
# whatever key of the config it was written under.
# A model name such as deepseek-r1 has "sk-" inside a word: a key's prefix starts one, and a key
# holds a digit.
_KEY_SHAPE = re.compile(
    r"(?<![A-Za-z0-9])(?:sk-|AIza|hf_|gsk_|xai-|pplx-|nvapi-|r8_|ghp_|github_pat_|glpat-)[A-Za-z0-9_\-]{16,}"
)


def pasted_keys(value: str) -> list[str]:
    """The parts of `value` shaped like an API key (pasted where a name or a URL goes: an
    `api_key_env`, a model name, a base URL, a config list's name)."""
    return [match.group() for match in _KEY_SHAPE.finditer(value) if any(c.isdigit() for c in match.group())]


def looks_like_key(value: str) -> bool:
    """Whether `value` holds something shaped like an API key (`pasted_keys`)."""
    return bool(pasted_keys(value))


def _masked_credential(match: re.Match[str]) -> str:
    return match.group("lead") + MASK


def _mask_credentials(text: str) -> str:
    """`text` with every bearer/Authorization credential masked, as `_CREDENTIALS.sub` would.

    A credential starts at "bearer" or one character before "uthor" (in any case: these letters
    have no case-insensitive match that lower() does not also find), so the pattern is tried only
    there: a text that names an author (a prompt does) is not scanned by the pattern whole."""
    lowered = text.lower()
    if "bearer" not in lowered and "uthor" not in lowered:  # the fast path: most text names no credential
        return text
    if len(lowered) != len(text):  # "İ" lowers to two characters: positions no longer match
        return _CREDENTIALS.sub(_masked_credential, text)
    starts = sorted({*_found(lowered, "bearer", 0), *_found(lowered, "uthor", 1)})
    pieces, done = [], 0
    for start in starts:
        match = _CREDENTIALS.match(text, start) if start >= done else None  # (\b looks before `start`)
        if match is not None:
            pieces += [text[done:start], _masked_credential(match)]
            done = match.end()
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def _found(text: str, word: str, before: int) -> Iterable[int]:
    """Where each occurrence of `word` in `text` starts, less `before` (never below 0)."""
    at = text.find(word, before)
    while at != -1:
        yield at - before
        at = text.find(word, at + 1)


def redact_bytes(data: bytes) -> bytes:
    """`redact` for UTF-8 bytes (files whose content we do not decode otherwise)."""
    return redact(data.decode("utf-8", errors="surrogateescape")).encode("utf-8", errors="surrogateescape")


def _open_run_start(text: str) -> int:
    """Where a near-copy of a secret that reaches the end of `text` starts (else len(text))."""
    state = _state
    if not state.blocks:
        return len(text)
    spans = _near_copy_spans(text, state)
    return spans[-1][0] if spans and spans[-1][1] == len(text) else len(text)


class StreamRedactor:
    """Redacts text that arrives in pieces (streamed tokens), so a secret (or a near-copy) split
    across pieces is still masked: it holds back as many characters as the longest secret until
    more text (or the end) shows whether they begin one."""

    def __init__(self) -> None:
        self._pending = ""
        # The text so far ended inside a credential, now masked: the token's further characters
        # are dropped (once masked, "Bearer ***" + "rest" no longer looks like a credential).
        self._in_credential = False

    def feed(self, piece: str) -> str:
        """The text that is safe to show now. Invisible format characters are dropped: padded
        with them, a secret could outgrow what is held back."""
        if _has_invisible(piece):
            piece = _INVISIBLE.sub("", piece)
        if self._in_credential:
            rest = _TOKEN_CHARACTERS.match(piece)  # (it always matches: it may match nothing)
            piece = piece[rest.end() if rest else 0:]
            if not piece:
                return ""
            self._in_credential = False
        hold = max(_state.longest, 64) - 1  # 64 covers a bearer token's prefix as well
        raw = self._pending + piece
        self._in_credential = any(match.end() == len(raw) for match in _CREDENTIALS.finditer(raw))
        # A near-copy reaching the end may go on in the next piece: it stays unmasked, held
        # back, so it is masked whole once it ends (masked now, its last characters would show).
        open_run = _open_run_start(raw)
        text = redact(raw[:open_run]) + raw[open_run:]
        cut = max(0, min(len(text) - hold, len(text) - (len(raw) - open_run)))
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
    table = {
        code: f"\\x{code:02x}" for code in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)] if code not in (0x09, 0x0A)
    }
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
