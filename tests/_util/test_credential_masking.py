"""Masking bearer/Authorization credentials masks exactly what the credential pattern does over
the whole text, also in a long text that names an "author" (every transcript line holding the
Critic's prompt does); what that costs beside the pattern run over the text whole is a figure
perf/adversarial.py prints."""

from __future__ import annotations

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


def test_a_long_text_naming_an_author_is_left_as_it_is() -> None:
    # About 60 KB of a reviewer's instructions; the same with the Socratic question's "author" in it
    # (what masking each costs, beside the pattern over the text whole: perf/adversarial.py prints it).
    none = "Check each step of the solution against the figure and say which one is weakest. " * 800
    author = none[:30000] + "Ask the question that would lead its author to the weakness. " + none[30000:]
    assert redact(author) == author and redact(none) == none
    assert redact(author + " Authorization: Bearer abcdef123456") == author + f" Authorization: Bearer {MASK}"
