"""Masking bearer/Authorization credentials costs work only where one may start (issue 27: a
transcript line holding a prompt that names an "author" was scanned by the credential pattern
whole), and masks exactly what the pattern does."""

from __future__ import annotations

import re
from typing import Any

import pytest

import maps_autogen._util._redact as redact_module
from maps_autogen._util._redact import MASK, redact

TEXTS = [
    "Authorization: Bearer abcdef123456 and Bearer zyx987654321",
    "authorization=sk9999999999 then AUTHORIZATION: 'tok3n-value-xyz'",
    "Bearer abc12345678Bearer def12345678",  # the second has no word boundary before it
    "xBearer abc12345678 is not one; nor is Authorization: required",
    "the author of the proof; an authority; co-authored by bearers of news",
    "İ Authorization: Bearer qwerty1234567 İ",  # lowered, "İ" is two characters
    "ends with Bearer tok12345678",
    "Bearer\tabcdefgh1 Authorization:\t\"Bearer\"",
    "Authorization: Bearer authorization12345",
]


def _reference(text: str) -> str:
    """What the pattern masks when run over the whole text."""
    return redact_module._CREDENTIALS.sub(lambda match: match.group("lead") + MASK, text)


@pytest.mark.parametrize("text", TEXTS)
def test_credentials_are_masked_as_the_pattern_masks_them(text: str) -> None:
    assert redact(text) == _reference(text)


def test_masked_credentials_do_not_show() -> None:
    assert redact("Authorization: Bearer abcdef123456") == f"Authorization: Bearer {MASK}"


class _CountingPattern:
    """The credential pattern, counting how it is used."""

    def __init__(self, pattern: re.Pattern[str]):
        self.pattern = pattern
        self.whole_scans = 0  # sub/search/finditer/findall over the text
        self.tries = 0  # match at one position

    def match(self, text: str, pos: int = 0) -> Any:
        self.tries += 1
        return self.pattern.match(text, pos)

    def __getattr__(self, name: str) -> Any:
        if name in ("sub", "search", "finditer", "findall"):
            self.whole_scans += 1
        return getattr(self.pattern, name)


def test_a_text_naming_authors_is_not_scanned_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = _CountingPattern(redact_module._CREDENTIALS)
    monkeypatch.setattr(redact_module, "_CREDENTIALS", counting)
    text = "ask the question that would lead its author to the weakness. " * 200
    assert redact(text) == text
    assert counting.whole_scans == 0 and counting.tries == 200
