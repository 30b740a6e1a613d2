"""Masking bearer/Authorization credentials masks exactly what the credential pattern does, and
costs work only where a credential may start: a long text that names an "author" (every
transcript line holding the Critic's prompt does) is masked for about the cost of one that
names none, not for the cost of running the pattern over it whole."""

from __future__ import annotations

import pytest

import maps_autogen._util._redact as redact_module
from maps_autogen._util._redact import MASK, redact
from tests.helpers.common import cpu_seconds

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


def test_a_long_text_naming_an_author_is_masked_for_about_the_cost_of_one_naming_none() -> None:
    # About 60 KB of a reviewer's instructions; the same with the Socratic question's "author" in it.
    none = "Check each step of the solution against the figure and say which one is weakest. " * 800
    author = none[:30000] + "Ask the question that would lead its author to the weakness. " + none[30000:]
    assert redact(author) == author and redact(none) == none
    cost_none, cost_author = cpu_seconds(lambda: redact(none)), cpu_seconds(lambda: redact(author))
    whole = cpu_seconds(lambda: _reference(author))  # the credential pattern over the whole text
    # Measured: an author costs about 1.4x none; the pattern over the text whole adds 8-12x.
    assert cost_author < 3 * cost_none, (cost_author, cost_none, whole)
