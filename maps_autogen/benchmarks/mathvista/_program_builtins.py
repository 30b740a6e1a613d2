"""The values the answer-program reader computes with: size budgets, what each operation
costs (charged before it runs, see `program_values.touch`), arithmetic, the builtins and the
`math` module of the Python subset `program_output` walks."""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Iterable
from typing import Any

from maps_autogen.benchmarks.mathvista._program_values import Unsupported, charge, touch

MAX_LENGTH = 2_000  # elements of a sequence or characters of a string
MAX_INT_BITS = 4_096
MAX_FACTORIAL = 500


def checked(value: Any) -> Any:
    """`value` if within the size budgets, else Unsupported."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:
            raise Unsupported("integer too large")
    elif isinstance(value, (str, list, tuple, dict, set, range)):
        if len(value) > MAX_LENGTH:
            raise Unsupported("sequence too long")
    return value


def printed_text(value: Any) -> str:
    """str(value), refused when the text would be too long (checked before it is built)."""
    touch(value)
    budget = MAX_LENGTH
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
            budget -= 4 * len(item)
        elif isinstance(item, (list, tuple, set)):
            pending.extend(item)
            budget -= 2 * len(item)
        elif isinstance(item, str):
            budget -= len(item) + 2
        elif isinstance(item, int) and not isinstance(item, bool):
            budget -= 2 + item.bit_length() // 3  # a sign, and a digit holds more than 3 bits
        else:
            budget -= 30  # a float or None prints in at most a few dozen characters
        if budget < 0:
            raise Unsupported("text too long")
    return str(value)


def _bounded_int(value: Any, limit: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= limit:
        raise Unsupported("argument out of range")
    return value


def _factorial(value: Any) -> int:
    return math.factorial(_bounded_int(value, MAX_FACTORIAL))


def _comb(n: Any, k: Any) -> int:
    return math.comb(_bounded_int(n, MAX_FACTORIAL), _bounded_int(k, MAX_FACTORIAL))


def _perm(n: Any, k: Any = None) -> int:
    return math.perm(_bounded_int(n, MAX_FACTORIAL), None if k is None else _bounded_int(k, MAX_FACTORIAL))


MATH_FUNCTIONS: dict[str, Callable[..., Any]] = {
    name: getattr(math, name)
    for name in ("sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "radians",
                 "degrees", "floor", "ceil", "log", "log10", "log2", "exp", "hypot", "fabs",
                 "gcd", "trunc", "isclose", "copysign")
}
MATH_FUNCTIONS.update({"factorial": _factorial, "comb": _comb, "perm": _perm})
MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}


def sized(iterable: Any) -> Any:
    """A builtin's iterable argument, refused if it is not a bounded container. A number or
    None fails as in Python ("'float' object is not iterable"): the program fails there."""
    if isinstance(iterable, (str, list, tuple, dict, set, range)):
        return checked(iterable)
    if iterable is None or isinstance(iterable, (int, float, complex)):
        raise TypeError(f"'{type(iterable).__name__}' object is not iterable")
    raise Unsupported("not a container")


def bounded_join(separator: str, items: Any) -> str:
    """separator.join(items), for strings only and charged first; refused when too long."""
    items = sized(items)
    charge(len(items))
    if not all(isinstance(item, str) for item in items):
        raise Unsupported("join of non-strings")
    touch(items)
    if sum(len(item) for item in items) + len(separator) * len(items) > MAX_LENGTH:
        raise Unsupported("string too long")
    return separator.join(items)


def _round(value: Any, digits: Any = None) -> Any:
    if digits is not None and not (isinstance(digits, int) and -20 <= digits <= 20):
        raise Unsupported("round digits")
    return round(value) if digits is None else round(value, digits)


def _int(value: Any = 0) -> int:
    if isinstance(value, str) and len(value) > 100:
        raise Unsupported("long number text")
    return int(value)


def _float(value: Any = 0.0) -> float:
    if isinstance(value, str) and len(value) > 100:
        raise Unsupported("long number text")
    return float(value)


def _builtin(function: Callable[..., Any], walks: bool = False) -> Callable[..., Any]:
    """A builtin whose container arguments are size-checked and charged first: by their length
    (a shallow copy or scan), or, when it `walks` them (hashing, comparing the elements), by
    everything they hold."""

    def call(*args: Any, **keywords: Any) -> Any:
        arguments = [sized(arg) if isinstance(arg, (str, list, tuple, dict, set, range)) else arg for arg in args]
        if walks:
            touch(*arguments)
        else:
            charge(sum(len(arg) for arg in arguments if isinstance(arg, (list, tuple, dict, set, range))))
        return function(*arguments, **keywords)

    return call


def _ordered(function: Callable[..., Any]) -> Callable[..., Any]:
    """max, min or sorted: each element (or its key) is compared up to about 2·log2(n) times,
    and one comparison of nested containers walks them; charged for all that first. A `key`
    is charged for the values it gives as it gives them (see `_Interpreter.key_function`)."""

    def call(*args: Any, **keywords: Any) -> Any:
        items = sized(args[0]) if len(args) == 1 else args
        rounds = 2 * max(len(items), 1).bit_length()
        if keywords.get("key") is None:
            touch(*items, times=rounds)
        else:
            charge(len(items) * rounds)
        return function(*args, **keywords)

    return call


def _sum(items: Any, start: Any = 0) -> Any:
    """sum(): numbers are added as Python adds them; anything else (lists, tuples) one `+` at
    a time, each charged by what it copies (so a quadratic sum of lists is charged as such)."""
    items = sized(items)
    charge(len(items))
    if isinstance(start, str):
        raise TypeError("sum() can't sum strings")
    if all(isinstance(item, (int, float)) for item in items) and isinstance(start, (int, float)):
        touch(*items)
        return sum(items, start)
    total = start
    for item in items:
        total = checked(binary(ast.Add(), total, item))
    return total


def number_set(items: Iterable[Any] = ()) -> set[Any]:
    """set(items), for numbers only: a set of strings iterates and prints in an order that
    changes from one Python process to the next, so what it prints is not one answer."""
    values = sized(items)
    charge(len(values))
    # Checked before the set is built: building it hashes (walks) every element.
    if not all(isinstance(value, (int, float)) for value in values):
        raise Unsupported("set of non-numbers (no fixed order)")
    touch(*values)
    return set(values)


def _range(*args: Any) -> range:
    if not all(isinstance(arg, int) and not isinstance(arg, bool) for arg in args):
        raise Unsupported("range of non-integers")
    bounded: range = checked(range(*args))
    return bounded


_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "tuple": tuple,
          "dict": dict, "set": set}


def _isinstance(value: Any, kinds: Any) -> bool:
    """isinstance() with builtin type names ("int", or a tuple of them) as the types."""
    names = kinds if isinstance(kinds, tuple) else (kinds,)
    if not all(isinstance(name, str) and name in _TYPES for name in names):
        raise Unsupported("isinstance of another type")
    return isinstance(value, tuple(_TYPES[name] for name in names))


BUILTINS: dict[str, Callable[..., Any]] = {
    "len": len, "max": _ordered(max), "min": _ordered(min), "sum": _sum,
    "abs": abs, "round": _round, "int": _int, "float": _float, "bool": bool, "str": printed_text,
    "sorted": _ordered(sorted), "list": _builtin(list), "tuple": _builtin(tuple),
    "set": number_set, "dict": _builtin(dict, walks=True), "range": _range,
    "enumerate": _builtin(lambda items: list(enumerate(items))),
    "zip": _builtin(lambda *lists: list(zip(*lists))),
    "reversed": _builtin(lambda items: list(reversed(items))),
    "any": _builtin(any), "all": _builtin(all), "divmod": divmod, "isinstance": _isinstance,
}

BUILTIN_KEYWORDS = {"sorted": {"reverse", "key"}, "max": {"key", "default"}, "min": {"key", "default"},
                     "round": {"ndigits"}}

# How often sorting, max or min compares one key at most (2·log2 of the longest sequence).
COMPARISONS_PER_KEY = 2 * MAX_LENGTH.bit_length()

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}
COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
}


def _size_of(value: Any) -> int:
    return len(value) if isinstance(value, (str, list, tuple)) else 0


def copied(value: Any) -> int:
    """Work units to copy `value` shallowly: its elements, or its characters by 16."""
    if isinstance(value, str):
        return 1 + len(value) // 16
    return 1 + _size_of(value)


def _power(base: Any, exponent: Any) -> Any:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        if exponent * max(abs(base).bit_length(), 1) > MAX_INT_BITS:
            raise Unsupported("power too large")
    elif isinstance(exponent, (int, float)) and abs(exponent) > 10_000:
        raise Unsupported("power too large")
    return pow(base, exponent)


def binary(operator: ast.operator, left: Any, right: Any) -> Any:
    """`left <operator> right`, its result's size checked and its work charged before it is
    computed; Unsupported for an operator outside the subset or a result beyond the budgets."""
    if isinstance(operator, ast.Pow):
        return _power(left, right)
    function = _BINARY.get(type(operator))
    if function is None:
        raise Unsupported(type(operator).__name__)
    if isinstance(operator, ast.Mult):
        # "ab" * 10**9 or [0] * 10**9 would be built before any check: check the size first.
        for sequence, count in ((left, right), (right, left)):
            if _size_of(sequence) and isinstance(count, int):
                if count * _size_of(sequence) > MAX_LENGTH:
                    raise Unsupported("sequence too long")
                length = _size_of(sequence) * max(count, 0)
                charge(1 + (length // 16 if isinstance(sequence, str) else length))
        if isinstance(left, int) and isinstance(right, int) and \
                left.bit_length() + right.bit_length() > MAX_INT_BITS:
            raise Unsupported("integer too large")
    if isinstance(operator, ast.Add):
        if _size_of(left) + _size_of(right) > MAX_LENGTH:
            raise Unsupported("sequence too long")
        charge(copied(left) + copied(right))
    if isinstance(left, int) and isinstance(right, int):
        charge((left.bit_length() + right.bit_length()) // 64)
    if isinstance(operator, ast.Mod) and isinstance(left, str):
        if "%" not in left:
            # Python fails the same way: "not all arguments converted during string formatting".
            raise TypeError("not all arguments converted")
        raise Unsupported("%-formatting")
    return function(left, right)


__all__ = ["BUILTINS", "BUILTIN_KEYWORDS", "COMPARE", "COMPARISONS_PER_KEY", "MATH_CONSTANTS", "MATH_FUNCTIONS",
           "MAX_INT_BITS", "MAX_LENGTH", "binary", "bounded_join", "checked", "copied", "number_set", "printed_text",
           "sized"]
