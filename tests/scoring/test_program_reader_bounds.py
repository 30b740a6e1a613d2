"""Hostile answer programs: the MathVista program reader charges every operation on values by
what it really touches, before it runs, so no program can make one C call (comparing,
hashing, summing, sorting or printing nested containers) run for seconds or hours.

Boundedness is shown by counting work, never by timing: a small version of each attack is
read correctly and is charged at least the elements it really touches; under a budget just
below that, it is refused (unknown output, so the response is "unreadable"); and the
full-size attack, whose real cost is billions of elements, is refused. perf/adversarial.py
prints the times.
"""

from __future__ import annotations

import pytest

from maps_autogen.benchmarks.mathvista._extract import extract
from maps_autogen.benchmarks.mathvista._program_output import parse_program, program_reading


def nested(name: str, size: int, levels: int = 4) -> str:
    """A program line building `levels` nested lists of `size` elements, each level one list
    repeated `size` times (cheap to build, size**levels elements to walk)."""
    lines = [f"{name}0 = [0] * {size}"]
    lines += [f"{name}{level} = [{name}{level - 1}] * {size}" for level in range(1, levels)]
    return "\n".join(lines) + "\n"


def two(size: int) -> str:
    """Two equal, distinct nested structures `a3` and `b3` (Python compares them whole)."""
    return nested("a", size) + nested("b", size)


# (name, program of size n, expected output at the small size, elements really touched there)
ATTACKS = [
    ("nested equality", lambda n: two(n) + "print(a3 == b3)", "True", 2 * 6**4),
    ("nested inequality", lambda n: two(n) + "print(a3 != b3, a3 < b3)", "False False", 2 * 6**4),
    ("sum of lists", lambda n: nested("a", n, 2) + "print(len(sum(a1, [])))", "36", 6 * 7 // 2 * 6),
    ("max over nested lists", lambda n: two(n) + "print(len(max([a3, b3])))", "6", 2 * 6**4),
    ("min over nested lists", lambda n: two(n) + "print(len(min(a3, b3)))", "6", 2 * 6**4),
    ("sorted of nested lists", lambda n: two(n) + "print(len(sorted([a3, b3, a3])))", "3", 2 * 6**4),
    ("list.sort of nested lists", lambda n: two(n) + "x = [a3, b3]\nx.sort()\nprint(len(x))", "2", 2 * 6**4),
    ("str of a nested list", lambda n: nested("a", n, 3) + "print(len(str(a2)))", "732", 6**3),
    ("printing a nested list", lambda n: nested("a", n, 3) + "print(a2)", None, 6**3),
    ("f-string of a nested list", lambda n: nested("a", n, 3) + "s = f'{a2}'\nprint(len(s))", "732", 6**3),
    ("in on a list of lists", lambda n: two(n) + "print(b2 in a3)", "True", 6**4),
    ("count on a list of lists", lambda n: two(n) + "print(a3.count(b2))", "6", 6**4),
    ("index on a list of lists", lambda n: two(n) + "print(a3.index(b2))", "0", 6**3),
    ("tuple key of a dict", lambda n: nested("a", n, 3) + "t = tuple(tuple(tuple(r) for r in p) for p in a2)\n"
     "d = {t: 1}\nprint(d[t])", "1", 2 * 6**3),
    ("membership in a dict", lambda n: nested("a", n, 3) + "t = tuple(tuple(tuple(r) for r in p) for p in a2)\n"
     "d = {1: 2}\nprint(t in d)", "False", 6**3),
    ("str.join of long strings", lambda n: f"s = ['x' * {n * 50}] * {n}\nprint(len(''.join(s)))", "1800", 6 * 19),
]


@pytest.mark.parametrize(("name", "program", "expected", "touched"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_an_attack_is_charged_what_it_touches(name: str, program, expected: str | None, touched: int) -> None:
    tree = parse_program(program(6))
    assert tree is not None
    output, work = program_reading(tree)
    if expected is not None:
        assert output == expected
    else:
        assert output is not None and output.startswith("[[[0, 0")
    assert work >= touched, f"{name}: charged {work} units, touches at least {touched}"
    # Refused, not run, when the budget does not cover what the operation touches.
    refused, spent = program_reading(tree, max_work=touched // 2)
    assert refused is None
    assert spent <= touched  # counting stops at the budget: refusing costs no more than it


@pytest.mark.parametrize(("name", "program", "expected", "touched"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_the_full_size_attack_is_unreadable(name: str, program, expected: str | None, touched: int) -> None:
    # 2,000-element lists on four levels: 16·10^12 elements to compare, print or hash.
    response = program(2000)
    reading = extract(response, question_type="free_form", answer_type="integer")
    assert reading.status == "unreadable", name
    output, work = program_reading(parse_program(response))  # type: ignore[arg-type]
    assert output is None


@pytest.mark.parametrize(
    ("name", "program"),
    [
        ("string repetition", "s = 'ab' * 10**9\nprint(len(s))"),
        ("list repetition", "s = [[0]] * 10**9\nprint(len(s))"),
        ("a tower of powers", "print(2**10**8)"),
        ("a huge product", "x = 7**1000\ny = x * x * x * x * x * x\nprint(y % 10)"),
        ("a huge float power", "print(2.5 ** 10**6)"),
        ("a long concatenation", "s = 'x' * 2000\nt = s + s\nprint(len(t))"),
        ("deep nesting", "a = []\nfor i in range(3000):\n    a = [a]\nprint(a == a)"),
        ("deep nesting printed", "a = []\nfor i in range(3000):\n    a = [a]\nprint(a)"),
        ("deep nesting hashed", "a = ()\nfor i in range(3000):\n    a = (a,)\nd = {a: 1}\nprint(len(d))"),
        ("quadratic membership", "seen = list(range(2000))\nn = 0\nfor i in range(2000):\n"
                                 "    if -i - 1 in seen:\n        n += 1\nprint(n)"),
        ("a long separator", "s = 'x' * 2000\nprint(" + "1, " * 500 + "sep=s)"),
        ("deeply nested expression", "x = " + "(" * 150 + "1" + ")" * 150 + "\nprint(" + "-" * 900 + "x)"),
    ],
)
def test_other_attacks_of_the_class_are_unreadable(name: str, program: str) -> None:
    tree = parse_program(program)
    assert tree is not None, name
    output, work = program_reading(tree)
    assert output is None, name


def test_ordinary_programs_still_read() -> None:
    # Appending, sorting with a key and small nested comparisons stay well inside the budget.
    program = (
        "values = []\nfor i in range(500):\n    values.append(i % 7)\n"
        "pairs = sorted(zip(values, range(500)), key=lambda p: (p[0], -p[1]))\n"
        "grid = [[i * j for j in range(5)] for i in range(5)]\n"
        "print(pairs[0], grid == [row[:] for row in grid], max(grid), sum(values))"
    )
    output, work = program_reading(parse_program(program))  # type: ignore[arg-type]
    assert output == "(0, 497) True [0, 4, 8, 12, 16] 1494"
    assert 0 < work < 200_000


def test_nesting_a_few_levels_deep_reads() -> None:
    output, _ = program_reading(parse_program("a = [[[[[1]]]]]\nprint(a == [[[[[1]]]]], a)"))  # type: ignore[arg-type]
    assert output == "True [[[[[1]]]]]"


@pytest.mark.parametrize("call", ["min(area)", "max(area)", "sum(area)", "sorted(area)", "list(area)"])
def test_a_number_given_where_a_container_is_needed_fails_as_in_python(call: str) -> None:
    # Python raises TypeError ("'float' object is not iterable"): the program prints what it
    # printed before, here "start" (not an unknown output: nothing is left to work out).
    output, _ = program_reading(parse_program(f"area = 2.5\nprint('start')\nif area == {call}:\n    print('yes')"))  # type: ignore[arg-type]
    assert output == "start"


def test_print_separators_are_read_as_python_reads_them() -> None:
    read = [program_reading(parse_program(program))[0] for program in (  # type: ignore[arg-type]
        "print(1, 2, sep=None, end=None)", "print(1, 2, sep='-')", "print('a')\nprint(1, 2, sep=[0])")]
    assert read == ["1 2", "1-2", "a"]  # a separator that is no string fails, as in Python
