"""The MathVista program reader walks each kind of statement and expression it models as Python
runs it (the expected outputs are what Python prints), and refuses the rest (its output is then not worked out: None)."""

from __future__ import annotations

import pytest

from maps_autogen.benchmarks.mathvista._program_output import parse_program, program_output


def _output(source: str) -> str | None:
    tree = parse_program(source)
    assert tree is not None, source
    return program_output(tree)


@pytest.mark.parametrize(("source", "printed"), [
    # while, with break and continue
    ("n = 0\ntotal = 0\nwhile n < 10:\n    n += 1\n    if n % 2:\n        continue\n"
     "    if n > 6:\n        break\n    total += n\nprint(total)", "12"),
    ("x: int = 4\nprint(x * 2)", "8"),
    ("from math import sqrt as root\nprint(root(16))", "4.0"),
    ("def f(a, b=2):\n    return a ** b\nprint(f(3), f(2, 3), sep=',')", "9,8"),
    ("for i in range(3):\n    pass\nelse:\n    print('done', i)", "done 2"),
    ("d = {'a': 1, 'b': 2}\nprint(sorted(d, key=lambda k: -d[k])[0], (1, 2)[1:], {3, 1} == {1, 3})",
     "b (2,) True"),
    ("print(f'{2 / 3:.2f}', not 0, -(3), 1 < 2 < 3, 0 or 'x', [i * i for i in range(4) if i])",
     "0.67 True -3 True x [1, 4, 9]"),
])
def test_statements_and_expressions_run_as_python(source: str, printed: str) -> None:
    assert _output(source) == printed


@pytest.mark.parametrize("source", [
    "x: int\nprint(1)",  # an annotation without a value
    "@staticmethod\ndef f():\n    return 1\nprint(f())",  # a decorated function
    "from os import system\nprint(1)",  # a module outside the subset
    "from . import sibling\nprint(1)",  # a relative import
    "class A:\n    pass\nprint(1)",  # a statement kind the subset leaves out
    "print(*[1, 2])",  # starred arguments
    "print({**{'a': 1}})",  # dict unpacking
])
def test_statements_outside_the_subset_leave_the_output_unknown(source: str) -> None:
    assert _output(source) is None
