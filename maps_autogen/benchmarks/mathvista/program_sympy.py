"""The part of sympy that answer programs use to solve linear equations, worked out exactly.

Programs often answer with `sympy`: declare symbols, state equations with `Eq`, `solve` them,
print the solution. This module models that much, for linear equations only, and prints the
results as sympy does ("[70]", "{x: 220, y: 290}", "51/4", "36.0000000000000") so that what
the program prints can be read like any other printed answer. Anything else (a product of two
unknowns, a function of one, an equation with infinitely many solutions) is outside the
subset and raises `Unsupported`; every other sympy name stays an unknown value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

Number = Fraction | float
MAX_SYMBOLS = 20  # unknowns in one expression or system
MAX_EQUATIONS = 20
MAX_BITS = 4_096  # of an exact coefficient's numerator or denominator
# Interpreter steps one `solve` is charged: elimination is cubic in the system's size.
SOLVE_STEPS = 1_000


class Unsupported(Exception):
    """The program leaves the modelled subset (of Python, or of sympy here) or a budget: its
    output is not worked out."""


def _number(value: Any) -> Number:
    """A Python number as an exact Fraction (ints) or a float, as sympy would hold it."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise Unsupported("not a number")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Unsupported("not a finite number")
        return value
    return Fraction(value)


def _check_size(value: Number) -> None:
    if isinstance(value, Fraction) and \
            max(value.numerator.bit_length(), value.denominator.bit_length()) > MAX_BITS:
        raise Unsupported("number too large")


def _mixed(a: Number, b: Number) -> tuple[Number, Number]:
    """Exact with exact stays exact; a float makes both floats (sympy's Float absorbs)."""
    if isinstance(a, float) or isinstance(b, float):
        return float(a), float(b)
    return a, b


class Linear:
    """c0 + c1*x1 + ... + cn*xn over named unknowns: a sympy symbol, number or linear sum."""

    __slots__ = ("terms", "constant")

    def __init__(self, terms: dict[str, Number] | None = None, constant: Number = Fraction(0)) -> None:
        self.terms = {name: value for name, value in (terms or {}).items() if value != 0}
        if len(self.terms) > MAX_SYMBOLS:
            raise Unsupported("too many unknowns")
        for value in (constant, *self.terms.values()):
            _check_size(value)
        self.constant = constant

    @staticmethod
    def of(value: Any) -> Linear:
        return value if isinstance(value, Linear) else Linear(constant=_number(value))

    @property
    def is_constant(self) -> bool:
        return not self.terms

    def _combine(self, other: Any, sign: int) -> Linear:
        other = Linear.of(other)
        if other.is_constant and isinstance(other.constant, float) and other.constant == 0:
            return self  # sympy drops an added 0.0 instead of making the sum a Float
        terms = dict(self.terms)
        for name, value in other.terms.items():
            mine, theirs = _mixed(terms.get(name, Fraction(0)), value)
            terms[name] = mine + sign * theirs
        mine, theirs = _mixed(self.constant, other.constant)
        return Linear(terms, mine + sign * theirs)

    def _scaled(self, factor: Number) -> Linear:
        terms = {}
        for name, value in self.terms.items():
            a, b = _mixed(value, factor)
            terms[name] = a * b
        a, b = _mixed(self.constant, factor)
        return Linear(terms, a * b)

    def __add__(self, other: Any) -> Linear:
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Linear:
        return self._combine(other, -1)

    def __rsub__(self, other: Any) -> Linear:
        return Linear.of(other)._combine(self, -1)

    def __neg__(self) -> Linear:
        return self._scaled(Fraction(-1))

    def __pos__(self) -> Linear:
        return self

    def __mul__(self, other: Any) -> Linear:
        other = Linear.of(other)
        if self.is_constant:
            return other._scaled(self.constant)
        if other.is_constant:
            return self._scaled(other.constant)
        raise Unsupported("a product of unknowns is not linear")

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Linear:
        other = Linear.of(other)
        if not other.is_constant:
            raise Unsupported("division by an unknown is not linear")
        if other.constant == 0:
            raise Unsupported("division by zero in sympy gives zoo")
        divisor = other.constant
        return self._scaled(1 / divisor if isinstance(divisor, float) else Fraction(1) / divisor)

    def __rtruediv__(self, other: Any) -> Linear:
        return Linear.of(other) / self

    def __pow__(self, exponent: Any) -> Linear:
        if exponent == 1 and not isinstance(exponent, bool):
            return self
        if self.is_constant and isinstance(exponent, int) and not isinstance(exponent, bool) \
                and 0 <= exponent <= 64 and not isinstance(self.constant, float):
            return Linear(constant=self.constant ** exponent)
        raise Unsupported("a power of an unknown is not linear")

    def _key(self) -> tuple[frozenset[tuple[str, Number]], Number]:
        return frozenset(self.terms.items()), self.constant

    # `==` is structural in sympy too (x == y is False; equations are `Eq`), and a symbol
    # made twice (Symbol('x')) is the same dict key.
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Linear) and self._key() == other._key() or \
            (self.is_constant and isinstance(other, (int, float, Fraction)) and not isinstance(other, bool)
             and self.constant == other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self.constant) if self.is_constant else hash(self._key())

    def _order(self, other: Any, compare: Callable[[Any, Any], bool]) -> bool:
        other = Linear.of(other)
        if not (self.is_constant and other.is_constant):
            raise Unsupported("ordering unknowns")
        return compare(self.constant, other.constant)

    def __lt__(self, other: Any) -> bool:
        return self._order(other, lambda a, b: a < b)

    def __le__(self, other: Any) -> bool:
        return self._order(other, lambda a, b: a <= b)

    def __gt__(self, other: Any) -> bool:
        return self._order(other, lambda a, b: a > b)

    def __ge__(self, other: Any) -> bool:
        return self._order(other, lambda a, b: a >= b)

    def _refuse(self, *args: Any) -> Any:
        raise Unsupported("an operation on a sympy expression outside the subset")

    __bool__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __rpow__ = __abs__ = _refuse  # type: ignore[assignment]
    __round__ = __index__ = __iter__ = __len__ = _refuse  # type: ignore[assignment]

    def __float__(self) -> float:
        if not self.is_constant:
            raise Unsupported("float() of an unknown")  # sympy raises TypeError; not modelled
        return float(self.constant)

    def __int__(self) -> int:
        return int(float(self)) if isinstance(self.constant, float) else int(self.constant)

    def __format__(self, spec: str) -> str:
        if spec:
            return format(float(self), spec)
        return str(self)

    def evalf(self) -> Linear:
        """`expr.evalf()` of a number: a Float."""
        return Linear(constant=float(self))

    def __str__(self) -> str:
        if self.is_constant:
            return format_number(self.constant)
        if self.constant == 0 and len(self.terms) == 1:
            ((name, value),) = self.terms.items()
            if value == 1:
                return name
        raise Unsupported("printing a sympy expression")

    __repr__ = __str__


class Equation:
    """`Eq(left, right)`, kept as left - right = 0."""

    def __init__(self, left: Any, right: Any = 0) -> None:
        self.difference = Linear.of(left) - Linear.of(right)

    def _refuse(self, *args: Any) -> Any:
        raise Unsupported("using an equation as a value")

    __eq__ = __bool__ = __str__ = __repr__ = _refuse  # type: ignore[assignment]
    __hash__ = object.__hash__


def format_number(value: Number) -> str:
    """A number as sympy prints it: "7", "51/4", and Floats with 15 significant digits."""
    if isinstance(value, Fraction):
        return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    if value == 0 or not 1e-5 <= abs(value) < 1e15:
        raise Unsupported("a Float sympy would print in another form")
    exponent = math.floor(math.log10(abs(value)))
    text = f"{value:.{max(0, 14 - exponent)}f}"
    # Rounding may carry into a new digit (9.99...→10.0): one decimal fewer then.
    if len(text.lstrip("-").replace(".", "").lstrip("0")) > 15:
        text = f"{value:.{max(0, 13 - exponent)}f}"
    return text


def symbol(name: Any) -> Linear:
    """`Symbol('x')`."""
    if not isinstance(name, str) or not name.isidentifier() or len(name) > 40:
        raise Unsupported("symbol name")
    return Linear({name: Fraction(1)})


def symbols(names: Any) -> Linear | tuple[Linear, ...]:
    """`symbols('x y')` or `symbols('x, y')`: one symbol, or a tuple for several names."""
    if not isinstance(names, str):
        raise Unsupported("symbol names")
    parts = names.replace(",", " ").split()
    if not parts or len(parts) > MAX_SYMBOLS:
        raise Unsupported("symbol names")
    made = tuple(symbol(part) for part in parts)
    return made[0] if len(made) == 1 and "," not in names else made


def rational(numerator: Any, denominator: Any = 1) -> Linear:
    """`Rational(p, q)`."""
    if not all(isinstance(part, int) and not isinstance(part, bool) for part in (numerator, denominator)) \
            or denominator == 0:
        raise Unsupported("Rational arguments")
    return Linear(constant=Fraction(numerator, denominator))


def _unknown_name(value: Any) -> str:
    """The name of a bare symbol given as an unknown to solve for."""
    if isinstance(value, Linear) and value.constant == 0 and len(value.terms) == 1:
        ((name, coefficient),) = value.terms.items()
        if coefficient == 1:
            return name
    raise Unsupported("solving for something that is not a symbol")


def _as_difference(item: Any) -> Linear:
    return item.difference if isinstance(item, Equation) else Linear.of(item)


def solve(equations: Any, *unknowns: Any) -> list[Linear] | dict[Linear, Linear]:
    """`solve(eq, x)` → [value]; `solve([eq1, eq2], (x, y))` → {x: value, y: value}; a
    system with no solution → []. Only linear equations with one solution (or none)."""
    system = isinstance(equations, (list, tuple))
    items = list(equations) if system else [equations]
    if not items or len(items) > MAX_EQUATIONS:
        raise Unsupported("number of equations")
    differences = [_as_difference(item) for item in items]
    symbols_given: list[Linear] = []
    for unknown in unknowns:
        symbols_given.extend(unknown if isinstance(unknown, (list, tuple)) else [unknown])
    names = [_unknown_name(value) for value in symbols_given]
    if not names:
        names = sorted({name for difference in differences for name in difference.terms})
        symbols_given = [symbol(name) for name in names]
    if not names or len(set(names)) != len(names):
        raise Unsupported("unknowns")
    if any(set(difference.terms) - set(names) for difference in differences):
        raise Unsupported("a system with other unknowns (parameters)")
    solution = _eliminate(differences, names)
    if not system:
        if len(names) != 1:
            raise Unsupported("one equation, several unknowns")
        return [] if solution is None else [Linear(constant=solution[0])]
    if solution is None:
        return []
    return {given: Linear(constant=value) for given, value in zip(symbols_given, solution)}


def _eliminate(differences: Iterable[Linear], names: list[str]) -> list[Number] | None:
    """The one solution of the linear system (each difference = 0), or None when it has
    none; Unsupported when it has infinitely many."""
    rows: list[list[Number]] = []
    for difference in differences:
        row: list[Number] = [difference.terms.get(name, Fraction(0)) for name in names]
        row.append(-difference.constant)
        rows.append(row)
    floats = any(isinstance(value, float) for row in rows for value in row)
    if floats:
        rows = [[float(value) for value in row] for row in rows]
    pivot_row = 0
    pivots: list[int] = []
    for column in range(len(names)):
        best = max(range(pivot_row, len(rows)), key=lambda r: abs(rows[r][column]), default=None)
        if best is None or _is_zero(rows[best][column], floats):
            continue
        rows[pivot_row], rows[best] = rows[best], rows[pivot_row]
        pivot = rows[pivot_row][column]
        rows[pivot_row] = [value / pivot for value in rows[pivot_row]]
        for other in range(len(rows)):
            if other != pivot_row and not _is_zero(rows[other][column], floats):
                factor = rows[other][column]
                rows[other] = [a - factor * b for a, b in zip(rows[other], rows[pivot_row])]
                for value in rows[other]:
                    _check_size(value)
        pivots.append(column)
        pivot_row += 1
    if any(all(_is_zero(value, floats) for value in row[:-1]) and not _is_zero(row[-1], floats)
           for row in rows):
        return None  # 0 = c, c ≠ 0: no solution
    if len(pivots) < len(names):
        raise Unsupported("infinitely many solutions")
    solution: list[Number] = [Fraction(0)] * len(names)
    for index, column in enumerate(pivots):
        solution[column] = rows[index][-1]
    return solution


def _is_zero(value: Number, floats: bool) -> bool:
    return abs(value) < 1e-12 if floats else value == 0


# What `sympy.<name>` gives inside the subset; every other attribute is an unknown value.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "Symbol": symbol,
    "symbols": symbols,
    "Eq": Equation,
    "solve": solve,
    "Rational": rational,
}

__all__ = ["FUNCTIONS", "Equation", "Linear", "Unsupported", "format_number", "solve"]
