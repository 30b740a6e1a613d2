"""What a short answer program prints, worked out without running it.

Some models answer in Python ("x = 12 / 4\\nprint(x)"): their answer is the program's output.
Untrusted code is never executed. Instead its interpreter (`_program_interpreter.py`) walks the
parsed syntax tree of a small, side-effect-free subset of Python: numbers, strings, lists,
tuples, dicts, arithmetic, comparisons, `if`/`for`/`while`, simple functions and lambdas,
comprehensions, f-strings, `print`, a few builtins and the `math` module. Steps, sizes
(sequence lengths, integer bits), call depth and nesting are bounded, and every operation on values (comparing, hashing,
membership, summing, sorting, printing, concatenating, repeating, slicing) is charged, before it
runs, by the elements and characters it touches (`program_values.touch`); anything outside the
subset or the budgets gives None.

Two readings follow what the program says rather than refusing it outright:
- A name the program never defines, and whatever a library returns (numpy, sympy,
  matplotlib, random, ...: no library is emulated, so no library's printing is imitated), is
  an unknown value. Unknowns may be computed with and stored; only when one decides a branch
  or a loop, or is printed, is the output unknown (None: the response is unreadable and left
  to `--llm-extract`, as the official pipeline leaves every response to its LLM). So
  "AB = 2/5 * AC\nAB = 10\nprint(AB)" prints "10", as its author meant, and
  "print(np.mean(v))" is unreadable.
- A program that fails when run (a ZeroDivisionError, a KeyError, the square root of a
  negative number) prints what it printed before the failure, often nothing (""): the
  failure message is not an answer.
"""

from __future__ import annotations

import ast
import warnings

from maps_autogen.benchmarks.mathvista._program_builtins import printed_text
from maps_autogen.benchmarks.mathvista._program_interpreter import _Break, _Continue, _Interpreter, _Return
from maps_autogen.benchmarks.mathvista._program_values import MAX_WORK, Unsupported, work_budget
from maps_autogen.benchmarks.mathvista._program_values import is_unknown as _is_unknown

MAX_SOURCE_CHARS = 20_000


def parse_program(text: str) -> ast.Module | None:
    """The syntax tree of `text` if it reads as a Python program, else None: it parses, and
    defines, imports or prints something, or is a notebook cell (assignments, then the bare
    name or expression to show). Bounded: long texts are not programs."""
    if len(text) > MAX_SOURCE_CHARS or ("\n" not in text.strip() and "print(" not in text):
        return None
    try:
        with warnings.catch_warnings():
            # Prose that almost parses ("1if") makes the parser warn; that is not ours to show.
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.Import, ast.ImportFrom)):
            return tree
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            return tree
    body = tree.body
    if len(body) >= 2 and isinstance(body[-1], ast.Expr) and isinstance(body[0], ast.Assign):
        return tree
    return None


# What a failing program raises, in Python as here: it stops, and what it printed stands.
_PROGRAM_FAILURES = (ArithmeticError, LookupError, TypeError, ValueError, AttributeError)


def program_output(tree: ast.Module) -> str | None:
    """What the program prints (or, without any print, the value of its last bare
    expression, as a notebook shows it), stripped: "" when it prints nothing, including a
    program that fails before printing. None when the output cannot be worked out."""
    return program_reading(tree)[0]


def program_reading(tree: ast.Module, max_work: int = MAX_WORK) -> tuple[str | None, int]:
    """`program_output` under a budget of `max_work` units, with the work units it spent
    (counted as charged, whether or not the output was worked out)."""
    with work_budget(max_work) as left:
        output = _read(tree)
        return output, max_work - left[0]


def _read(tree: ast.Module) -> str | None:
    try:
        # Compiling runs nothing; it finds what Python refuses before running a line
        # ("return" outside a function): such a program prints nothing at all.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            compile(tree, "<answer>", "exec", dont_inherit=True)
    except SyntaxError:
        return ""
    except (ValueError, RecursionError, MemoryError):
        return None
    interpreter = _Interpreter()
    scope = interpreter.globals
    try:
        for statement in tree.body:
            interpreter.run(statement, scope)
        if not interpreter.output and tree.body and isinstance(tree.body[-1], ast.Expr):
            value = interpreter.eval(tree.body[-1].value, scope)
            if _is_unknown(value):
                return None
            if value is not None:
                interpreter.output.append(printed_text(value))
    except (Unsupported, _Return, _Break, _Continue, RecursionError, MemoryError):
        return None
    except _PROGRAM_FAILURES:
        pass  # the program itself fails: a traceback, not an answer, follows what it printed
    except Exception:  # noqa: BLE001 - extraction is total: whatever else goes wrong, the
        return None  # output is simply not worked out
    return "".join(interpreter.output).strip()


__all__ = ["MAX_SOURCE_CHARS", "parse_program", "program_output", "program_reading"]
