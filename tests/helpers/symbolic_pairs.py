"""Generated symbolic answer pairs in OlympiadBench's style (a model's answer, the ground truth),
written as LaTeX text by templates, so the same seed gives the same pairs under any sympy: the set
the scoring stack's drift across its sympy range is measured on (tests/scoring/
test_conformance_newest_scoring.py; docs/development.md states the figure)."""

from __future__ import annotations

import random

SYMBOLS = ["a", "b", "c", "x", "y", "m", "g", "L", "R", "k", "q", "t", "\\theta", "\\omega", "v_{0}", "r_{1}"]


def _coefficient(rng: random.Random) -> str:
    return rng.choice(["2", "3", "4", "\\frac{1}{2}", "\\frac{3}{4}", "\\sqrt{2}", "\\pi", "5", "\\frac{2}{3}"])


def _pair(rng: random.Random) -> tuple[str, str]:
    s, t, u = rng.sample(SYMBOLS, 3)
    c, d = _coefficient(rng), _coefficient(rng)
    n = rng.randint(2, 9)
    family = rng.randrange(16)
    if family == 0:  # a sum in another order
        return f"{s} + {c} {t}", f"{c} {t} + {s}"
    if family == 1:  # a product in another order
        return f"{c} {s} {t} {u}", f"{c} {u} {t} {s}"
    if family == 2:  # one fraction for two
        return f"\\frac{{{s}}}{{{t}}} + \\frac{{{u}}}{{{n}}}", f"\\frac{{{n} {s} + {t} {u}}}{{{n} {t}}}"
    if family == 3:  # a root in the denominator
        return f"\\frac{{{s}}}{{\\sqrt{{2}}}}", f"\\frac{{\\sqrt{{2}} {s}}}{{2}}"
    if family == 4:  # a square expanded
        return f"({s} + {n})^{{2}}", f"{s}^{{2}} + {2 * n} {s} + {n * n}"
    if family == 5:  # a double angle
        return f"2 \\sin {s} \\cos {s}", f"\\sin {{2 {s}}}"
    if family == 6:  # a difference of squares
        return f"({s} - {t})({s} + {t})", f"{s}^{{2}} - {t}^{{2}}"
    if family == 7:  # a decimal for a fraction
        return f"0.5 {s} {t}^{{2}}", f"\\frac{{{s} {t}^{{2}}}}{{2}}"
    if family == 8:  # a near miss within the fixed symbolic tolerance, or just past it
        epsilon = rng.choice(["0.0001", "0.0005", "0.002", "0.01"])
        return f"{s} + {epsilon}", f"{s}"
    if family == 9:  # a wrong coefficient
        return f"{n} {s} {t}", f"{n + 1} {s} {t}"
    if family == 10:  # powers and roots
        return f"\\sqrt{{{s}^{{2}} {t}}}", f"{s} \\sqrt{{{t}}}"
    if family == 11:  # an exponential
        return f"e^{{{s}}} e^{{{t}}}", f"e^{{{s} + {t}}}"
    if family == 12:  # a logarithm
        return f"\\ln {s} + \\ln {t}", f"\\ln ({s} {t})"
    if family == 13:  # an equation's right side
        return f"{u} = {c} {s} {t}", f"{c} {t} {s}"
    if family == 14:  # a quotient of sums
        return f"\\frac{{{s}^{{2}} - {t}^{{2}}}}{{{s} - {t}}}", f"{s} + {t}"
    return f"{c} {s} + {d} {s}", f"({c} + {d}) {s}"  # like terms


def symbolic_pairs(count: int, seed: int = 0) -> list[tuple[str, str]]:
    """`count` pairs (model answer, ground truth), the same for the same seed."""
    rng = random.Random(seed)
    return [_pair(rng) for _ in range(count)]


__all__ = ["symbolic_pairs"]
