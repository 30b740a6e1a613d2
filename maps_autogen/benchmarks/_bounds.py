"""The bounds every scorer's work stays within, in the process it runs in (ours or the
symbolic helper's), each counted by its real cost before the work is done: the digits and the
power of ten of a number made exact, the digits of a number worked out from LaTeX (the custom
benchmark's), the text OlympiadBench's box extraction produces, the cells of MathVista's
edit-distance table, the size of what is sent to the symbolic helper (whose work is bounded
there by time and memory, `_symbolic`).

A response whose judging would pass a bound cannot be judged: it is judged wrong and its
verdict says why (`Verdict.unjudged`), never a failed problem, never a crash. The gold side of
a row is checked with the same bounds before any model call (the row check names the field).

`metered()` records the work each bound was charged (tests and perf/scorer_bounds.py read it).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from decimal import Context, Decimal
from fractions import Fraction

#: Digits of one number's mantissa (below CPython's 4,300-digit limit on int/str conversion).
MAX_NUMBER_DIGITS = 4000
#: The largest power of ten a number may carry (10**10000 is 33,000 bits: cheap to compare).
MAX_NUMBER_EXPONENT = 10_000
#: Digits (numerator and denominator together) of a number the custom benchmark works out from
#: an answer's LaTeX (`\frac`, powers, roots): the largest mantissa times the largest power of ten.
MAX_NUMBER_SIZE = MAX_NUMBER_DIGITS + MAX_NUMBER_EXPONENT
#: Characters OlympiadBench's box extraction may produce (nested boxes repeat their contents,
#: so its output grows with the square of the nesting).
MAX_BOXED_CHARS = 1_000_000
#: Cells of the edit-distance tables MathVista's normalisation fills for one answer (the
#: answer's length times each option's, summed over the options): about half a second of pure
#: Python; the official results files need at most 32,000.
MAX_EDIT_CELLS = 250_000
#: Characters one symbolic check may send to the helper process (the answer and the truths):
#: no answer is that long, and parsing that much LaTeX takes sympy longer than its time limit.
MAX_SYMBOLIC_CHARS = 20_000

#: The bounds by name, as the meter records them.
BOUNDS = {"number digits": MAX_NUMBER_DIGITS, "number exponent": MAX_NUMBER_EXPONENT, "number size": MAX_NUMBER_SIZE,
          "boxed chars": MAX_BOXED_CHARS, "edit cells": MAX_EDIT_CELLS, "symbolic chars": MAX_SYMBOLIC_CHARS}
#: How a reason names each bound's work: "{what} {has} {units} {unit}".
_UNITS = {"number digits": ("has", "digits"), "number exponent": ("has", "as its power of ten"),
          "number size": ("would have", "digits"),
          "boxed chars": ("would produce", "characters"), "edit cells": ("needs", "edit-distance cells"),
          "symbolic chars": ("would send", "characters")}


class Unjudgeable(Exception):
    """Judging a response would pass one of the bounds: it is judged wrong, for this reason."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


_METER: ContextVar[Counter[str] | None] = ContextVar("scoring_work", default=None)


@contextmanager
def metered() -> Iterator[Counter[str]]:
    """Within the block, the largest work each bound was asked for (by the names of `BOUNDS`)."""
    meter: Counter[str] = Counter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def charge(bound: str, units: int, what: str) -> None:
    """Check `units` of work against the bound named `bound` before doing it: Unjudgeable saying
    `what` needs them when they are more than the bound allows."""
    meter = _METER.get()
    if meter is not None and units > meter[bound]:
        meter[bound] = units
    if units > BOUNDS[bound]:
        verb, unit = _UNITS[bound]
        shown = f"{units:,}" if units < 10**15 else "more than 10^15"
        raise Unjudgeable(f"{what} {verb} {shown} {unit}, more than the bound of {BOUNDS[bound]:,}")


# A plain decimal as Fraction reads it (sign, digits with optional underscores, a fraction part,
# an exponent); "a/b" is split by the caller.
_EXPONENT = re.compile(r"[eE]([-+]?[\d_]+)\s*$")
_EXPONENT_DIGITS = 8  # an exponent written with more digits is beyond any bound anyway


def exact_number(text: str) -> Fraction | None:
    """`Fraction(text)` within the number bounds: None when the text is no number Fraction reads
    ("inf", "1..2"); Unjudgeable when its digits or its power of ten pass the bounds (making
    1e100000000 exact would take minutes and gigabytes)."""
    digits = sum(char.isdigit() for char in text)
    exponent = _EXPONENT.search(text)
    mantissa_digits = digits - (sum(char.isdigit() for char in exponent.group(1)) if exponent else 0)
    shown = text.strip() if len(text.strip()) <= 40 else text.strip()[:37] + "..."
    charge("number digits", mantissa_digits, f"the number {shown}")
    if exponent is not None:
        written = exponent.group(1).replace("_", "")
        if len(written.lstrip("+-").lstrip("0")) > _EXPONENT_DIGITS:
            raise Unjudgeable(f"the number {shown} has a power of ten beyond the bound of "
                              f"{MAX_NUMBER_EXPONENT:,}")
        charge("number exponent", abs(int(written)), f"the number {shown}")
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


_SHOWN_DIGITS = Context(prec=6)


def number_text(value: Fraction) -> str:
    """A number for display: an integer in full (up to 30 digits), else `f"{x:g}"`'s 6
    significant digits, in scientific notation past what a float holds (float() overflows past
    1e308 and reads 1e-5000 as 0)."""
    if value.denominator == 1 and abs(value.numerator) < 10**30:
        return str(value.numerator)
    try:
        as_float = float(value)
    except OverflowError:
        as_float = 0.0
    if as_float != 0.0:
        return f"{as_float:g}"
    shown = _SHOWN_DIGITS.divide(Decimal(value.numerator), Decimal(value.denominator))
    return f"{shown.normalize(_SHOWN_DIGITS):e}".replace("E", "e") if shown else "0"


def bounded_symbolic(*texts: str | None) -> None:
    """Check what a symbolic check would send to the helper process against its size bound."""
    charge("symbolic chars", sum(len(text) for text in texts if text), "the symbolic check of this answer")


__all__ = ["BOUNDS", "MAX_BOXED_CHARS", "MAX_EDIT_CELLS", "MAX_NUMBER_DIGITS", "MAX_NUMBER_EXPONENT", "MAX_NUMBER_SIZE",
           "MAX_SYMBOLIC_CHARS", "Unjudgeable", "bounded_symbolic", "charge", "exact_number", "metered",
           "number_text"]
