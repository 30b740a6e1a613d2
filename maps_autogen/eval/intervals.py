"""How sure an accuracy is: its 95% Wilson score interval and its standard error.

An accuracy is a proportion of problems (correct of scored). The Wilson interval (Wilson 1927;
Brown, Cai and DasGupta 2001 recommend it for small samples) never collapses at the ends: 0 of
20 correct gives [0.00, 16.11]%, 20 of 20 gives [83.89, 100.00]%, where a percentile bootstrap
gives [0, 0] and [100, 100] because every resample is the same. It is a closed form, so the
same rows always give the same interval (no resampling seed).

The standard error is the one lm-evaluation-harness reports for `acc` (`acc_stderr`) and Inspect's
`stderr()` metric computes: the sample standard deviation of the per-problem outcomes (n - 1 in
its denominator) over the square root of n, i.e. sqrt(p (1 - p) / (n - 1)); undefined below two
problems (lm-evaluation-harness writes "N/A" there).
"""

from __future__ import annotations

import math

#: The normal quantile of a two-sided 95% interval.
Z_95 = 1.959963984540054


def wilson_interval(correct: int, n: int, *, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of `correct` out of `n`, as fractions in [0, 1] (None when n is 0)."""
    if n <= 0:
        return None
    if not 0 <= correct <= n:
        raise ValueError(f"{correct} correct out of {n} is not a proportion")
    p = correct / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def standard_error(correct: int, n: int) -> float | None:
    """The standard error of the proportion `correct` / `n`, as a fraction: the sample standard
    deviation of the 0/1 outcomes over sqrt(n); None below two problems."""
    if n < 2:
        return None
    if not 0 <= correct <= n:
        raise ValueError(f"{correct} correct out of {n} is not a proportion")
    p = correct / n
    return math.sqrt(p * (1 - p) / (n - 1))


def percent_interval(correct: int, n: int) -> tuple[float, float] | None:
    """`wilson_interval` in percent, to two decimals (as every accuracy we print)."""
    interval = wilson_interval(correct, n)
    return None if interval is None else (round(100 * interval[0], 2), round(100 * interval[1], 2))


def percent_error(correct: int, n: int) -> float | None:
    """`standard_error` in percentage points, to two decimals."""
    error = standard_error(correct, n)
    return None if error is None else round(100 * error, 2)


__all__ = ["Z_95", "percent_error", "percent_interval", "standard_error", "wilson_interval"]
