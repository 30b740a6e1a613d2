"""Text to tokens for the custom benchmark's number reader (`_numbers.py`): the Unicode forms
chat models write rewritten as the LaTeX they stand for, then one pass that makes tokens
(numbers with their thousands separators, LaTeX commands, words, symbols) and one that pairs
brackets. Both passes are linear in the text."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from fractions import Fraction

_DIGITS = "0123456789"

# Characters rewritten before tokens are made (then NFKC): what chat models write for the LaTeX.
_SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+"))
_REWRITTEN = {"−": "-", "×": " \\times ", "·": " \\cdot ", "⋅": " \\cdot ", "∙": " \\cdot ", "÷": " \\div ",
              "π": " \\pi ", "√": " \\surd ", "±": " \\pm ", "∓": " \\mp ", "≈": " \\approx ", "°": " \\degree ",
              "⁄": "/", "\u2009": "\\,", "\u202f": "\\,", "\u00a0": " "}
_SPACING = {"quad", "qquad", "displaystyle", "textstyle", "left", "right", "big", "Big", "bigg", "Bigg", "bigl",
            "bigr", "Bigl", "Bigr", "biggl", "biggr", "Biggl", "Biggr", "thinspace", "enspace", "ensuremath"}
_FRACTIONS = {"frac", "dfrac", "tfrac", "cfrac"}


@dataclass(frozen=True)
class Token:
    """One token: its kind, its text, and whether whitespace came before it."""

    kind: str  # "num" (digits as Fraction reads them), "cmd" (a LaTeX command's name), "word", "sym"
    text: str
    spaced: bool  # whitespace before it


def _vulgar(char: str) -> str | None:
    if not unicodedata.name(char, "").startswith("VULGAR FRACTION"):
        return None
    value = Fraction(unicodedata.numeric(char)).limit_denominator(10)
    return f"\\frac{{{value.numerator}}}{{{value.denominator}}}"


def normalised(text: str) -> str:
    """Unicode forms of the LaTeX rewritten (superscripts as `^{…}`, "½" as `\\frac{1}{2}`, ×, ·,
    π, √, ...), then NFKC (full-width digits, other spaces)."""
    pieces: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char in _SUPERSCRIPTS:
            end = position
            while end < len(text) and text[end] in _SUPERSCRIPTS:
                end += 1
            pieces.append("^{" + "".join(_SUPERSCRIPTS[c] for c in text[position:end]) + "}")
            position = end
            continue
        vulgar = _vulgar(char) if ord(char) > 127 else None
        pieces.append(vulgar or _REWRITTEN.get(char, char))
        position += 1
    return unicodedata.normalize("NFKC", "".join(pieces))


def _digits_at(text: str, position: int) -> int:
    """Where the run of ASCII digits starting at `position` ends."""
    while position < len(text) and text[position] in _DIGITS:
        position += 1
    return position


_GROUP_SEPARATORS = (",", "{,}", "\\,")


def _number_at(text: str, start: int) -> tuple[str, int]:
    """The number starting at `start` (Fraction's spelling: separators dropped) and its end.
    Thousands groups follow a first group of one to three digits, each exactly three digits."""
    end = _digits_at(text, start)
    parts = [text[start:end]]
    if 1 <= end - start <= 3:
        grouped = True
        while grouped:
            grouped = False
            for separator in _GROUP_SEPARATORS:
                group = end + len(separator)
                if text.startswith(separator, end) and _digits_at(text, group) == group + 3:
                    parts.append(text[group : group + 3])
                    end, grouped = group + 3, True
                    break
    if text.startswith(".", end) and end + 1 < len(text) and text[end + 1] in _DIGITS:
        fraction_end = _digits_at(text, end + 1)
        parts.append(text[end:fraction_end])
        end = fraction_end
    if end < len(text) and text[end] in "eE":
        mark = end + 1 + (end + 1 < len(text) and text[end + 1] in "+-")
        if mark < len(text) and text[mark] in _DIGITS:
            exponent_end = _digits_at(text, mark)
            parts.append(text[end:exponent_end])
            end = exponent_end
    return "".join(parts), end


def _tokens(text: str) -> list[Token]:
    """The tokens of a normalised text, in one pass."""
    tokens: list[Token] = []
    spaced = False
    position = 0
    while position < len(text):
        char = text[position]
        if char.isspace() or char in "$~":
            spaced, position = True, position + 1
            continue
        if char in _DIGITS or (char == "." and position + 1 < len(text) and text[position + 1] in _DIGITS):
            number, position = _number_at(text, position)
            tokens.append(Token("num", number, spaced))
        elif char == "\\":
            end = position + 1
            while end < len(text) and text[end].isascii() and text[end].isalpha():
                end += 1
            name = text[position + 1 : end]
            if not name:  # a control symbol: "\%" is a percent sign, "\," "\;" "\!" "\ " are spaces
                symbol = text[end : end + 1]
                if symbol == "%":
                    tokens.append(Token("sym", "%", spaced))
                elif symbol and symbol not in ",;:! ":
                    tokens.append(Token("sym", "\\" + symbol, spaced))
                spaced = spaced or symbol in ",;:! "
                position = end + 1
                continue
            position = end
            if name in _SPACING:
                spaced = True
                continue
            tokens.append(Token("cmd", "frac" if name in _FRACTIONS else name, spaced))
        elif char.isalpha():
            end = position + 1
            while end < len(text) and text[end].isalpha():
                end += 1
            tokens.append(Token("word", text[position:end], spaced))
            position = end
        elif text.startswith("{,}", position):
            tokens.append(Token("sym", ",", spaced))
            position += 3
        else:
            tokens.append(Token("sym", char, spaced))
            position += 1
        spaced = False
    return tokens


def closings(tokens: list[Token]) -> dict[int, int]:
    """{index of an opening bracket: index of its closing one} (each kind matched on its own;
    an opening never closed is absent)."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    opened: dict[str, list[int]] = {"(": [], "{": [], "[": []}
    closing: dict[int, int] = {}
    closers = {close: open_ for open_, close in pairs.items()}
    for index, token in enumerate(tokens):
        if token.kind != "sym":
            continue
        if token.text in pairs:
            opened[token.text].append(index)
        elif token.text in closers and opened[closers[token.text]]:
            closing[opened[closers[token.text]].pop()] = index
    return closing


def tokens_of(text: str) -> list[Token]:
    """The tokens of an answer's text (normalised first)."""
    return _tokens(normalised(text))


__all__ = ["Token", "closings", "normalised", "tokens_of"]
