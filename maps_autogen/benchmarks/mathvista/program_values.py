"""What the answer-program models share: leaving the subset, and the unknown value."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

# Work units (about one arithmetic step on a coefficient or one list element each) that the
# library models may spend on one program, beside the interpreter's own step budget: one
# interpreter step can be a whole polynomial product or a median of a long list.
MAX_WORK = 50_000
_WORK_LEFT: ContextVar[list[int] | None] = ContextVar("program_work_left", default=None)


class Unsupported(Exception):
    """The program leaves the modelled subset (of Python or of a library) or a budget: its
    output is not worked out."""


class UnknownValue:
    """A value the program uses but does not give: an undefined name, a library's result.

    The interpreter carries it through arithmetic, calls and stores explicitly; any other use
    (comparing, hashing, printing, iterating it inside a builtin) leaves the subset, so an
    unknown can never pass for a real value or make the program look as if it failed.
    """

    def _refuse(self, *args: Any, **keywords: Any) -> Any:
        raise Unsupported("an unknown value used")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __hash__ = __bool__ = __len__ = __iter__ = __contains__ = _refuse  # type: ignore[assignment]
    __str__ = __repr__ = __format__ = __float__ = __int__ = __index__ = _refuse  # type: ignore[assignment]
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _refuse
    __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = __round__ = _refuse


UNKNOWN = UnknownValue()


@contextmanager
def work_budget() -> Iterator[None]:
    """A fresh MAX_WORK for the program worked out inside the block (per thread/context)."""
    token = _WORK_LEFT.set([MAX_WORK])
    try:
        yield
    finally:
        _WORK_LEFT.reset(token)


def charge(units: int) -> None:
    """Spend work units; Unsupported when the program's budget is spent."""
    left = _WORK_LEFT.get()
    if left is None:
        raise Unsupported("library work outside a program's budget")
    left[0] -= units
    if left[0] < 0:
        raise Unsupported("too much work")


def is_unknown(*values: Any) -> bool:
    """Whether any of the values is the unknown value."""
    return any(value is UNKNOWN for value in values)


__all__ = ["MAX_WORK", "UNKNOWN", "UnknownValue", "Unsupported", "charge", "is_unknown", "work_budget"]
