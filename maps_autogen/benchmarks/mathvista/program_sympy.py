"""The part of sympy that answer programs use for polynomials and linear equations.

Programs often answer with `sympy`: declare symbols, state equations with `Eq`, `solve` them,
differentiate a polynomial and substitute a value, print the result. This module models that
much, exactly, and prints results as sympy does ("[70]", "{x: 220, y: 290}", "51/4",
"36.0000000000000") so that what the program prints can be read like any other printed answer.

Expressions are polynomials in named symbols. What leaves polynomials (dividing by a symbol,
a fractional power) is an unknown value, like every sympy function not modelled here; `solve`
handles linear systems with one solution or none, and leaves the subset otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from maps_autogen.benchmarks.mathvista.program_values import UNKNOWN, Unsupported, charge, is_unknown

Number = Fraction | float
# A monomial: its symbols with their powers, sorted by name; () is the constant term.
Monomial = tuple[tuple[str, int], ...]
MAX_TERMS = 20
MAX_DEGREE = 12
MAX_EQUATIONS = 20
MAX_SYMBOLS = 20  # made by one `symbols()` call
MAX_BITS = 4_096  # of an exact coefficient's numerator or denominator


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


def _times(a: Monomial, b: Monomial) -> Monomial:
    powers = dict(a)
    for name, power in b:
        powers[name] = powers.get(name, 0) + power
    if sum(powers.values()) > MAX_DEGREE:
        raise Unsupported("degree too high")
    return tuple(sorted(powers.items()))


class Expression:
    """A polynomial over named symbols: a sympy symbol, number or polynomial expression."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict[Monomial, Number]) -> None:
        charge(1 + len(terms))
        self.terms = {monomial: value for monomial, value in terms.items() if value != 0}
        if len(self.terms) > MAX_TERMS:
            raise Unsupported("too many terms")
        for value in self.terms.values():
            _check_size(value)

    @staticmethod
    def number(value: Any) -> Expression:
        return Expression({(): _number(value)})

    @staticmethod
    def of(value: Any) -> Expression:
        return value if isinstance(value, Expression) else Expression.number(value)

    @property
    def is_constant(self) -> bool:
        return all(not monomial for monomial in self.terms)

    @property
    def constant(self) -> Number:
        return self.terms.get((), Fraction(0))

    @property
    def symbol_names(self) -> set[str]:
        return {name for monomial in self.terms for name, _ in monomial}

    @property
    def is_linear(self) -> bool:
        return all(sum(power for _, power in monomial) <= 1 for monomial in self.terms)

    def coefficient(self, name: str) -> Number:
        """The coefficient of the symbol in a linear expression."""
        return self.terms.get(((name, 1),), Fraction(0))

    # -- arithmetic: polynomials stay polynomials; anything else is an unknown value ----------

    def _combine(self, other: Any, sign: int) -> Expression | Any:
        if is_unknown(other):
            return UNKNOWN
        other = Expression.of(other)
        if other.is_constant and isinstance(other.constant, float) and other.constant == 0:
            return self  # sympy drops an added 0.0 instead of making the sum a Float
        terms = dict(self.terms)
        for monomial, value in other.terms.items():
            mine, theirs = _mixed(terms.get(monomial, Fraction(0)), value)
            terms[monomial] = mine + sign * theirs
        return Expression(terms)

    def __add__(self, other: Any) -> Expression | Any:
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Expression | Any:
        return self._combine(other, -1)

    def __rsub__(self, other: Any) -> Expression | Any:
        return UNKNOWN if is_unknown(other) else Expression.of(other)._combine(self, -1)

    def __neg__(self) -> Expression:
        return self._scaled(Fraction(-1))

    def __pos__(self) -> Expression:
        return self

    def _scaled(self, factor: Number) -> Expression:
        terms: dict[Monomial, Number] = {}
        for monomial, value in self.terms.items():
            a, b = _mixed(value, factor)
            terms[monomial] = a * b
        return Expression(terms)

    def __mul__(self, other: Any) -> Expression | Any:
        if is_unknown(other):
            return UNKNOWN
        other = Expression.of(other)
        charge(len(self.terms) * len(other.terms))
        terms: dict[Monomial, Number] = {}
        for left, a in self.terms.items():
            for right, b in other.terms.items():
                monomial = _times(left, right)
                x, y = _mixed(a, b)
                current, product = _mixed(terms.get(monomial, Fraction(0)), x * y)
                terms[monomial] = current + product
        return Expression(terms)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Expression | Any:
        if is_unknown(other):
            return UNKNOWN
        other = Expression.of(other)
        if not other.is_constant:
            return UNKNOWN  # a rational function: not modelled
        divisor = other.constant
        if divisor == 0:
            return UNKNOWN  # sympy's zoo or nan
        return self._scaled(1 / divisor if isinstance(divisor, float) else Fraction(1) / divisor)

    def __rtruediv__(self, other: Any) -> Expression | Any:
        return UNKNOWN if is_unknown(other) else Expression.of(other) / self

    def __pow__(self, exponent: Any) -> Expression | Any:
        if isinstance(exponent, Expression) and exponent.is_constant:
            exponent = exponent.constant
        if isinstance(exponent, Fraction) and exponent.denominator == 1:
            exponent = int(exponent)
        if not isinstance(exponent, int) or isinstance(exponent, bool) or not 0 <= exponent <= MAX_DEGREE:
            if self.is_constant and isinstance(exponent, int) and not isinstance(exponent, bool) \
                    and -MAX_DEGREE <= exponent < 0 and self.constant != 0:
                return Expression.number(1) / self ** -exponent
            return UNKNOWN  # a root or a symbolic power: not modelled
        result = Expression.number(1)
        for _ in range(exponent):
            result = result * self
        return result

    def __rpow__(self, base: Any) -> Expression | Any:
        return UNKNOWN if is_unknown(base) else Expression.of(base) ** self

    # -- comparing: `==` is structural in sympy too; ordering needs numbers ------------------

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (int, float, Fraction)) and not isinstance(other, bool):
            other = Expression.number(other)
        return isinstance(other, Expression) and self.terms == other.terms

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self.constant) if self.is_constant else hash(frozenset(self.terms.items()))

    def _order(self, other: Any, compare: Callable[[Any, Any], bool]) -> bool:
        other = Expression.of(other)
        if not (self.is_constant and other.is_constant):
            raise Unsupported("ordering symbols")  # sympy raises TypeError; not modelled
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

    __bool__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __abs__ = _refuse  # type: ignore[assignment]
    __round__ = __index__ = __iter__ = __len__ = _refuse  # type: ignore[assignment]

    def __float__(self) -> float:
        if not self.is_constant:
            raise Unsupported("float() of a symbol")  # sympy raises TypeError; not modelled
        return float(self.constant)

    def __int__(self) -> int:
        return int(float(self)) if isinstance(self.constant, float) else int(self.constant)

    def __format__(self, spec: str) -> str:
        return format(float(self), spec) if spec else str(self)

    def __str__(self) -> str:
        if self.is_constant:
            return format_number(self.constant)
        if len(self.terms) == 1:
            ((monomial, value),) = self.terms.items()
            if value == 1 and len(monomial) == 1 and monomial[0][1] == 1:
                return monomial[0][0]
        raise Unsupported("printing a sympy expression")  # its term order is sympy's own

    __repr__ = __str__

    # -- methods --------------------------------------------------------------------------------

    def evalf(self) -> Expression:
        """`expr.evalf()` of a number: a Float."""
        return Expression.number(float(self))

    def subs(self, *args: Any) -> Expression | Any:
        """`expr.subs(x, value)` or `expr.subs({x: value, ...})`."""
        if len(args) == 2:
            replacements = [(args[0], args[1])]
        elif len(args) == 1 and isinstance(args[0], dict):
            replacements = list(args[0].items())
        else:
            raise Unsupported("subs arguments")
        result: Expression | Any = self
        for target, value in replacements:
            if is_unknown(value):
                return UNKNOWN
            result = result._substituted(_symbol_name(target), Expression.of(value))
        return result

    def _substituted(self, name: str, value: Expression) -> Expression:
        charge(len(self.terms))
        result = Expression({})
        for monomial, coefficient in self.terms.items():
            term = Expression({tuple(item for item in monomial if item[0] != name): coefficient})
            power = dict(monomial).get(name, 0)
            result = result + term * value ** power
        return result

    def diff(self, target: Any, times: int = 1) -> Expression:
        """`expr.diff(x)` or `expr.diff(x, n)`."""
        return diff(self, target, times)


METHODS = {"evalf", "subs", "diff"}


class Equation:
    """`Eq(left, right)`, kept as left - right = 0."""

    def __init__(self, left: Any, right: Any = 0) -> None:
        self.difference = Expression.of(left) - Expression.of(right)

    def _refuse(self, *args: Any) -> Any:
        raise Unsupported("using an equation as a value")

    __eq__ = __bool__ = __str__ = __repr__ = _refuse  # type: ignore[assignment]
    __hash__ = object.__hash__


def _equation(left: Any, right: Any = 0) -> Equation | Any:
    """`Eq(left, right)`; with an unknown side it is an unknown value."""
    return UNKNOWN if is_unknown(left, right) else Equation(left, right)


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


def symbol(name: Any) -> Expression:
    """`Symbol('x')`."""
    if not isinstance(name, str) or not name.isidentifier() or len(name) > 40:
        raise Unsupported("symbol name")
    return Expression({((name, 1),): Fraction(1)})


def symbols(names: Any) -> Expression | tuple[Expression, ...]:
    """`symbols('x y')` or `symbols('x, y')`: one symbol, or a tuple for several names."""
    if not isinstance(names, str):
        raise Unsupported("symbol names")
    parts = names.replace(",", " ").split()
    if not parts or len(parts) > MAX_SYMBOLS:
        raise Unsupported("symbol names")
    made = tuple(symbol(part) for part in parts)
    return made[0] if len(made) == 1 and "," not in names else made


def rational(numerator: Any, denominator: Any = 1) -> Expression:
    """`Rational(p, q)`."""
    if not all(isinstance(part, int) and not isinstance(part, bool) for part in (numerator, denominator)) \
            or denominator == 0:
        raise Unsupported("Rational arguments")
    return Expression.number(Fraction(numerator, denominator))


def _symbol_name(value: Any) -> str:
    """The name of a bare symbol."""
    if isinstance(value, Expression) and len(value.terms) == 1:
        ((monomial, coefficient),) = value.terms.items()
        if coefficient == 1 and len(monomial) == 1 and monomial[0][1] == 1:
            return monomial[0][0]
    raise Unsupported("not a symbol")


def diff(expression: Any, target: Any, times: Any = 1) -> Expression | Any:
    """`diff(expr, x)` or `diff(expr, x, n)` of a polynomial."""
    if is_unknown(expression):
        return UNKNOWN
    if not isinstance(times, int) or isinstance(times, bool) or not 0 <= times <= MAX_DEGREE:
        raise Unsupported("diff order")
    name = _symbol_name(target)
    result = Expression.of(expression)
    for _ in range(times):
        terms: dict[Monomial, Number] = {}
        for monomial, coefficient in result.terms.items():
            powers = dict(monomial)
            power = powers.get(name, 0)
            if power == 0:
                continue
            powers[name] = power - 1
            reduced = tuple(sorted((n, p) for n, p in powers.items() if p))
            current, term = _mixed(terms.get(reduced, Fraction(0)), coefficient * power)
            terms[reduced] = current + term
        result = Expression(terms)
    return result


def degree(expression: Any, target: Any = None) -> Expression | Any:
    """`degree(f, x)`: the highest power of x in the polynomial, as a sympy Integer."""
    if is_unknown(expression):
        return UNKNOWN
    expression = Expression.of(expression)
    if target is None:
        names = expression.symbol_names
        if len(names) > 1:
            raise Unsupported("degree of a polynomial in several symbols needs the symbol")
        name = next(iter(names), None)
    else:
        name = _symbol_name(target)
    if not expression.terms:
        raise Unsupported("the degree of zero is -oo")
    return Expression.number(max(dict(monomial).get(name, 0) if name else 0 for monomial in expression.terms))


def _as_difference(item: Any) -> Expression:
    if isinstance(item, Equation):
        return item.difference
    if is_unknown(item):
        raise Unsupported("solving an unknown equation")
    return Expression.of(item)


def solve(equations: Any, *unknowns: Any) -> list[Expression] | dict[Expression, Expression]:
    """`solve(eq, x)` → [value]; `solve([eq1, eq2], (x, y))` → {x: value, y: value}; a
    system with no solution → []. Only linear equations with one solution (or none)."""
    system = isinstance(equations, (list, tuple))
    items = list(equations) if system else [equations]
    if not items or len(items) > MAX_EQUATIONS:
        raise Unsupported("number of equations")
    differences = [_as_difference(item) for item in items]
    if not all(difference.is_linear for difference in differences):
        raise Unsupported("a non-linear equation")
    symbols_given: list[Expression] = []
    for unknown in unknowns:
        symbols_given.extend(unknown if isinstance(unknown, (list, tuple)) else [unknown])
    names = [_symbol_name(value) for value in symbols_given]
    if not names:
        names = sorted({name for difference in differences for name in difference.symbol_names})
        symbols_given = [symbol(name) for name in names]
    if not names or len(names) > MAX_EQUATIONS or len(set(names)) != len(names):
        raise Unsupported("unknowns")
    if any(difference.symbol_names - set(names) for difference in differences):
        raise Unsupported("a system with other symbols (parameters)")
    solution = _eliminate(differences, names)
    if not system:
        if len(names) != 1:
            raise Unsupported("one equation, several unknowns")
        return [] if solution is None else [Expression.number(solution[0])]
    if solution is None:
        return []
    return {given: Expression.number(value) for given, value in zip(symbols_given, solution)}


def _eliminate(differences: Iterable[Expression], names: list[str]) -> list[Number] | None:
    """The one solution of the linear system (each difference = 0), or None when it has
    none; Unsupported when it has infinitely many."""
    rows: list[list[Number]] = []
    for difference in differences:
        row: list[Number] = [difference.coefficient(name) for name in names]
        row.append(-difference.constant)
        rows.append(row)
    charge(len(rows) * (len(names) + 1) ** 2)  # elimination is cubic in the system's size
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
    "Eq": _equation,
    "solve": solve,
    "Rational": rational,
    "diff": diff,
    "degree": degree,
}

__all__ = ["FUNCTIONS", "METHODS", "Equation", "Expression", "format_number", "solve"]
