"""The few numpy and datetime calls answer programs make on plain numbers, worked out.

Programs reach for `np.mean(values)` or `date(1990, 5, 15).year` where plain Python would
do. Those calls, on numbers or short lists of numbers, are modelled here with the results
numpy and datetime give; arrays, broadcasting and everything else stay unknown values.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from maps_autogen.benchmarks.mathvista.program_values import Unsupported, charge

# numpy sums floats pairwise in blocks once a sequence has 8 or more elements, which can
# differ from a left-to-right sum in the last digit: longer float lists are not modelled.
_SEQUENTIAL_FLOAT_SUM = 8


class NumpyFloat(float):
    """A numpy float64 scalar: prints as a float alone; inside a list its repr depends on
    the numpy version ("6.5" or "np.float64(6.5)"), so it is not printed there."""

    def __repr__(self) -> str:
        raise Unsupported("a numpy scalar printed inside a container")

    def __str__(self) -> str:
        return float.__repr__(self)


class NumpyInt(int):
    """A numpy int64 scalar (see NumpyFloat)."""

    def __repr__(self) -> str:
        raise Unsupported("a numpy scalar printed inside a container")

    def __str__(self) -> str:
        return int.__repr__(self)


def _numbers(values: Any) -> list[int | float]:
    if isinstance(values, (int, float)) and not isinstance(values, bool):
        return [values]
    if isinstance(values, (list, tuple)):
        charge(len(values))
    if isinstance(values, (list, tuple)) and values and \
            all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        if any(isinstance(v, float) for v in values) and len(values) >= _SEQUENTIAL_FLOAT_SUM:
            raise Unsupported("a long float sum (numpy sums pairwise)")
        return list(values)
    raise Unsupported("numpy given something other than numbers")


def _scalar(value: int | float) -> NumpyInt | NumpyFloat:
    return NumpyFloat(value) if isinstance(value, float) else NumpyInt(value)


def _sum(values: Any) -> NumpyInt | NumpyFloat:
    return _scalar(sum(_numbers(values)))


def _mean(values: Any) -> NumpyFloat:
    numbers = _numbers(values)
    return NumpyFloat(sum(float(number) for number in numbers) / len(numbers))


def _median(values: Any) -> NumpyFloat:
    numbers = sorted(_numbers(values))
    middle = len(numbers) // 2
    if len(numbers) % 2:
        return NumpyFloat(numbers[middle])
    return NumpyFloat((numbers[middle - 1] + numbers[middle]) / 2)


def _extreme(pick: Callable[[list[int | float]], int | float]) -> Callable[[Any], Any]:
    return lambda values: _scalar(pick(_numbers(values)))


def _sqrt(value: Any) -> NumpyFloat:
    if isinstance(value, (list, tuple)):
        raise Unsupported("numpy sqrt of a sequence is an array")
    (number,) = _numbers(value)
    # numpy gives nan (and a warning) for a negative number, where math fails.
    return NumpyFloat(math.sqrt(number)) if number >= 0 else NumpyFloat(math.nan)


NUMPY: dict[str, Any] = {
    "mean": _mean, "average": _mean, "median": _median, "sum": _sum,
    "max": _extreme(max), "min": _extreme(min), "amax": _extreme(max), "amin": _extreme(min),
    "sqrt": _sqrt, "pi": NumpyFloat(math.pi), "e": NumpyFloat(math.e),
}


@dataclass(frozen=True)
class Date:
    """`datetime.date(year, month, day)`: its parts, checked as datetime checks them."""

    year: int
    month: int
    day: int

    def __post_init__(self) -> None:
        datetime.date(self.year, self.month, self.day)  # a ValueError, as in the program

    def __repr__(self) -> str:
        raise Unsupported("printing a date")


def _date(year: Any, month: Any, day: Any) -> Date:
    if not all(isinstance(part, int) and not isinstance(part, bool) for part in (year, month, day)):
        raise TypeError("date() arguments must be integers")
    return Date(year, month, day)


DATETIME: dict[str, Any] = {"date": _date}
# Attributes of modelled values a program may read.
ATTRIBUTES: dict[type, set[str]] = {Date: {"year", "month", "day"}}

__all__ = ["ATTRIBUTES", "DATETIME", "NUMPY", "Date", "NumpyFloat", "NumpyInt"]
