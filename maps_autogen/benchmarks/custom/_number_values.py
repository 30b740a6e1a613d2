"""Arithmetic for the custom benchmark's number reader (`_numbers.py`): exact (fractions) where
it can be, else to 34 significant digits (a root that is not exact, π); every exact result is
charged against the number bounds (`bounds`) before it is computed, so no answer makes a huge
number."""

from __future__ import annotations

import math
from decimal import Context, Decimal, DecimalException
from fractions import Fraction

from maps_autogen.benchmarks._bounds import charge, number_text

#: The largest root index read (`\\sqrt[n]{…}`, a power 1/n).
MAX_ROOT_INDEX = 1000

Number = Fraction | Decimal  # a Decimal is a value that is not exact
CONTEXT = Context(prec=34, Emax=10**8, Emin=-(10**8))
PI = Decimal("3.141592653589793238462643383279502884")
_SHOWN = Context(prec=6, Emax=10**8, Emin=-(10**8))


class Unreadable(Exception):
    """A number was begun but cannot be evaluated (a variable in it, a division by zero, ...)."""


def _digits(value: Fraction) -> float:
    """About how many digits the numerator and denominator have together."""
    return (math.log10(abs(value.numerator)) if value.numerator else 0.0) + math.log10(value.denominator)


def _charged(digits: float) -> None:
    charge("number size", math.ceil(digits), "the number")


def approximate(value: Number) -> Decimal:
    """The value to 34 significant digits."""
    if isinstance(value, Decimal):
        return value
    return CONTEXT.divide(Decimal(value.numerator), Decimal(value.denominator))


def arithmetic(operator: str, left: Number, right: Number) -> Number:
    """`left operator right` for "+", "-", "*", "/": exact when both are (charged first)."""
    if isinstance(left, Fraction) and isinstance(right, Fraction):
        if operator == "/" and not right:
            raise Unreadable("a division by zero")
        _charged(_digits(left) + _digits(right))
        return {"+": left.__add__, "-": left.__sub__, "*": left.__mul__, "/": left.__truediv__}[operator](right)
    a, b = approximate(left), approximate(right)
    if operator == "/" and not b:
        raise Unreadable("a division by zero")
    try:
        return {"+": CONTEXT.add, "-": CONTEXT.subtract, "*": CONTEXT.multiply, "/": CONTEXT.divide}[operator](a, b)
    except DecimalException:
        raise Unreadable("a value out of range") from None


def _integer_root(value: int, index: int) -> int | None:
    """The exact `index`-th root of a non-negative integer, None when it is not an integer."""
    if value < 2:
        return value
    guess = 1 << -(-value.bit_length() // index)  # at least the root
    while True:
        better = ((index - 1) * guess + value // guess ** (index - 1)) // index
        if better >= guess:
            return guess if guess**index == value else None
        guess = better


def root(value: Number, index: int) -> Number:
    """The `index`-th root: exact when the fraction's terms are exact powers."""
    if not 2 <= index <= MAX_ROOT_INDEX:
        raise Unreadable(f"a root of index {index}")
    negative = value < 0
    if negative and index % 2 == 0:
        raise Unreadable("an even root of a negative number")
    if isinstance(value, Fraction):
        top, bottom = _integer_root(abs(value.numerator), index), _integer_root(value.denominator, index)
        if top is not None and bottom is not None:
            return Fraction(-top if negative else top, bottom)
    magnitude = abs(approximate(value))
    root = CONTEXT.sqrt(magnitude) if index == 2 else CONTEXT.power(magnitude, CONTEXT.divide(1, index))
    return -root if negative else root


def power(base: Number, exponent: Number) -> Number:
    """`base` to the power `exponent`: a fraction p/q as the q-th root to the power p."""
    if isinstance(exponent, Fraction) and exponent.denominator != 1:
        return power(root(base, exponent.denominator), Fraction(exponent.numerator))
    if isinstance(exponent, Fraction):
        whole = exponent.numerator
        if not base and whole < 0:
            raise Unreadable("a division by zero")
        if isinstance(base, Fraction):
            digits = _digits(base)
            # past about 1e15 the exponent alone is beyond any bound (a float product would overflow)
            _charged(0 if not digits else abs(whole) if abs(whole) > 10**15 else abs(whole) * digits)
            return base**whole
        try:
            return CONTEXT.power(base, whole)
        except DecimalException:
            raise Unreadable("a value out of range") from None
    if base <= 0:
        raise Unreadable("a power of a number that is not positive")
    try:
        return CONTEXT.power(approximate(base), exponent)
    except DecimalException:
        raise Unreadable("a value out of range") from None


def shown(value: Number) -> str:
    """A value for display (`bounds.number_text`; 6 significant digits when not exact)."""
    if isinstance(value, Fraction):
        return number_text(value)
    rounded = _SHOWN.plus(value).normalize(_SHOWN)
    return f"{rounded:f}" if -5 <= rounded.adjusted() < 6 else f"{rounded:g}"


__all__ = ["CONTEXT", "MAX_ROOT_INDEX", "PI", "Number", "Unreadable", "approximate", "arithmetic", "power", "root",
           "shown"]
