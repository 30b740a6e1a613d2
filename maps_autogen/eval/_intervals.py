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

Two rows that ran the same problems are compared problem by problem (`PairedComparison`): the
difference of their accuracies with the Bonett-Price adjusted Wald interval for paired
proportions (Bonett and Price 2012: each discordant count plus 1 over n plus 2; it never
collapses, not even with no discordant problem), and the exact McNemar test, a two-sided binomial
test at 1/2 on the problems only one of the two got right (McNemar 1947; exact as in
statsmodels' `mcnemar(exact=True)`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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


def mcnemar_exact(first_only: int, second_only: int) -> float:
    """The two-sided exact McNemar p-value: of the discordant problems (`first_only` right only in
    the first row, `second_only` only in the second), the chance under a fair coin of a split at
    least this uneven, 2 P(X <= min) for X ~ Binomial(first_only + second_only, 1/2), at most 1;
    1 when no problem is discordant."""
    if first_only < 0 or second_only < 0:
        raise ValueError("counts of problems are never negative")
    n = first_only + second_only
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(first_only, second_only) + 1))
    return min(1.0, float(2 * tail / 2**n))


@dataclass(frozen=True)
class PairedComparison:
    """Two rows on the same problems, each problem's verdict in both: right in both, right only in
    the first, right only in the second, wrong in both."""

    both: int
    first_only: int
    second_only: int
    neither: int

    @property
    def n(self) -> int:
        return self.both + self.first_only + self.second_only + self.neither

    @property
    def difference(self) -> float | None:
        """The first row's accuracy minus the second's, as a fraction (None without problems)."""
        return (self.first_only - self.second_only) / self.n if self.n else None

    def interval(self, *, z: float = Z_95) -> tuple[float, float] | None:
        """The Bonett-Price adjusted Wald interval of the difference, as fractions in [-1, 1]."""
        if not self.n:
            return None
        first, second = (self.first_only + 1) / (self.n + 2), (self.second_only + 1) / (self.n + 2)
        centre = first - second
        half = z * math.sqrt((first + second - centre * centre) / (self.n + 2))
        return max(-1.0, centre - half), min(1.0, centre + half)

    @property
    def p_value(self) -> float:
        """The exact McNemar p-value of the discordant problems."""
        return mcnemar_exact(self.first_only, self.second_only)


__all__ = ["Z_95", "PairedComparison", "mcnemar_exact", "percent_error", "percent_interval", "standard_error",
           "wilson_interval"]
