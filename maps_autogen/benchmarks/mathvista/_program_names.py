"""The names, modules and methods the MathVista program reader models: `import`ed modules (math
emulated, known libraries giving unknown values), builtins refused by name, methods of the
built-in containers, and the function values a program can pass around (bound methods, lambdas)."""

from __future__ import annotations

import ast
import re
from typing import Any

from maps_autogen.benchmarks.mathvista._program_builtins import MATH_CONSTANTS, MATH_FUNCTIONS
from maps_autogen.benchmarks.mathvista._program_values import UNKNOWN, Unsupported

# Libraries whose results are unknown values (never emulated) but which write nothing to
# standard output except through their print-like functions (refused by name). Any other
# module stays outside the subset: its calls could print.
OPAQUE_MODULES = {"numpy", "sympy", "scipy", "matplotlib", "random", "datetime", "fractions",
                   "statistics", "decimal", "cmath", "itertools", "collections", "pandas"}
PRINTING = re.compile(r"print|display|show|write|dump", re.IGNORECASE)


class Module:
    """A name bound by `import`: math is usable, the opaque libraries give unknown values,
    anything else is outside the subset."""

    def __init__(self, name: str) -> None:
        self.name = name

    def attribute(self, attr: str) -> Any:
        if self.name == "math":
            if attr in MATH_FUNCTIONS:
                return MATH_FUNCTIONS[attr]
            if attr in MATH_CONSTANTS:
                return MATH_CONSTANTS[attr]
        elif self.name.split(".")[0] in OPAQUE_MODULES:
            if attr == "show" and self.name.startswith("matplotlib"):
                return show_window
            if not PRINTING.search(attr):
                return UNKNOWN
        raise Unsupported(f"{self.name}.{attr}")


def show_window(*args: Any, **keywords: Any) -> None:
    """pyplot's show(): draws a window, prints nothing, returns None."""
    return None


# The functions of modelled modules a program may call (functions compare by identity).
MODULE_FUNCTIONS = frozenset([*MATH_FUNCTIONS.values(), show_window])
# Builtins that would read, run or show something: refused even though they are undefined
# here (an undefined name is otherwise an unknown value).
REFUSED_NAMES = {"exec", "eval", "input", "help", "breakpoint", "open", "__import__", "compile",
                  "globals", "locals", "vars", "getattr", "setattr", "delattr", "exit", "quit",
                  "display", "pprint"}


class BoundMethod:
    """A method of a value, taken without calling it ("key=prices.get")."""

    def __init__(self, owner: Any, name: str) -> None:
        self.owner = owner
        self.name = name


class Lambda:
    """A `lambda`, with the scope it was written in."""

    def __init__(self, node: ast.Lambda, scope: dict[str, Any]) -> None:
        self.node = node
        self.scope = scope


STRING_METHODS = {"lower", "upper", "strip", "lstrip", "rstrip", "split", "startswith",
                   "endswith", "count", "find", "index", "title", "capitalize", "isdigit"}
LIST_METHODS = {"append", "extend", "index", "count", "sort", "reverse", "pop", "insert",
                 "remove", "copy"}
DICT_METHODS = {"get", "keys", "values", "items", "pop"}
SET_METHODS = {"add"}
# Methods that change their owner: not handed out as values, and not called with an unknown.
MUTATING_METHODS = {"append", "extend", "sort", "reverse", "pop", "insert", "remove", "add"}


def method_names_of(owner: Any) -> set[str]:
    """The methods of `owner` that the subset models."""
    if isinstance(owner, str):
        return STRING_METHODS | {"join"}
    if isinstance(owner, list):
        return LIST_METHODS
    if isinstance(owner, dict):
        return DICT_METHODS
    if isinstance(owner, set):
        return SET_METHODS
    return set()


__all__ = ["DICT_METHODS", "LIST_METHODS", "MODULE_FUNCTIONS", "MUTATING_METHODS", "OPAQUE_MODULES", "PRINTING",
           "REFUSED_NAMES", "SET_METHODS", "STRING_METHODS", "BoundMethod", "Lambda", "Module", "method_names_of",
           "show_window"]
