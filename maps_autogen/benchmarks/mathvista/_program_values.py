"""What the answer-program reader's parts share: leaving the subset, the unknown value, and
the work budget that every operation on values is charged against by its real cost."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

# Work units one program may spend, beside the interpreter's own step budget: one step can
# compare, hash, print, sum or sort whole nested containers inside a single C call, so every
# such operation is charged, before it runs, by what it touches. A unit is one element of a
# container (at any depth: a list shared 2,000 times is counted 2,000 times, as comparing or
# printing it walks it 2,000 times), 16 characters of a string or 64 bits of an integer.
MAX_WORK = 200_000
# Containers nested deeper than this are not walked: comparing or printing them recurses in C.
MAX_NESTING = 20
_WORK_LEFT: ContextVar[list[int] | None] = ContextVar("program_work_left", default=None)


class Unsupported(Exception):
    """The program leaves the modelled subset (of Python or of a library) or a budget: its
    output is not worked out."""


class UnknownValue:
    """A value the program uses but does not give: an undefined name, a library's result
    (libraries are never emulated).

    The interpreter carries it through arithmetic, calls and stores explicitly; any other use
    (comparing, hashing, printing, iterating it inside a builtin) leaves the subset, so an
    unknown can never pass for a real value or make the program look as if it failed.
    """

    def _refuse(self, *args: Any, **keywords: Any) -> Any:
        raise Unsupported("an unknown value used")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __hash__ = __bool__ = __len__ = __iter__ = __contains__ = _refuse
    __str__ = __repr__ = __format__ = __float__ = __int__ = __index__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _refuse
    __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = __round__ = _refuse


UNKNOWN = UnknownValue()


@contextmanager
def work_budget(units: int = MAX_WORK) -> Iterator[list[int]]:
    """A fresh budget of `units` for the program worked out inside the block (per
    thread/context); yields the one-element list of units left."""
    left = [units]
    token = _WORK_LEFT.set(left)
    try:
        yield left
    finally:
        _WORK_LEFT.reset(token)


def _left() -> list[int]:
    left = _WORK_LEFT.get()
    if left is None:
        raise Unsupported("work outside a program's budget")
    return left


def charge(units: int) -> None:
    """Spend work units; Unsupported when the program's budget is spent."""
    left = _left()
    left[0] -= units
    if left[0] < 0:
        raise Unsupported("too much work")


def touch(*values: Any, times: int = 1) -> None:
    """Charge, before it runs, an operation that walks every part of `values` `times` over
    (comparing, hashing, membership, printing, sorting): the walk that counts the units stops,
    refusing, as soon as the budget would be exceeded, so counting costs no more than the
    budget either. Nesting deeper than MAX_NESTING is refused too."""
    left = _left()
    allowed = left[0] // max(times, 1)
    units = 0
    pending: list[tuple[Any, int]] = [(value, 0) for value in values]
    while pending:
        item, depth = pending.pop()
        units += 1
        if isinstance(item, str):
            units += len(item) // 16
        elif isinstance(item, int):
            units += item.bit_length() // 64
        elif isinstance(item, range):
            units += len(item)
        elif isinstance(item, (list, tuple, set, frozenset, dict)):
            if depth >= MAX_NESTING:
                raise Unsupported("containers nested too deep")
            units += len(item)
            if units > allowed:
                break
            pending.extend((part, depth + 1) for part in item)
            if isinstance(item, dict):
                pending.extend((part, depth + 1) for part in item.values())
        if units > allowed:
            break
    charge(units * max(times, 1))


def is_unknown(*values: Any) -> bool:
    """Whether any of the values is the unknown value."""
    return any(value is UNKNOWN for value in values)


__all__ = ["MAX_NESTING", "MAX_WORK", "UNKNOWN", "UnknownValue", "Unsupported", "charge", "is_unknown",
           "touch", "work_budget"]
