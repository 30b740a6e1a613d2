"""Every accuracy's 95% interval is Wilson's, which never collapses at 0% or 100% (a percentile
bootstrap gives [0, 0] and [100, 100] there), with the standard error lm-evaluation-harness and
Inspect report; Table 1 (maps eval's last table, maps report's) shows the interval and its CSV
the standard error."""

from __future__ import annotations

import csv
import io
import math
import statistics
from pathlib import Path

import pytest

from maps_autogen.eval import Run, table1
from maps_autogen.eval._intervals import percent_error, percent_interval, standard_error, wilson_interval
from tests.helpers.synthetic_runs import eval_manifest, result_row


def test_the_interval_never_collapses_at_the_ends() -> None:
    assert percent_interval(0, 20) == (0.0, 16.11)
    assert percent_interval(20, 20) == (83.89, 100.0)
    low, high = wilson_interval(1, 1) or (0, 0)
    assert 0 < low < 0.25 and high == 1.0


def test_the_interval_matches_the_closed_form() -> None:
    # 81 of 263: the Wilson interval statsmodels' proportion_confint(81, 263, method="wilson") gives
    low, high = wilson_interval(81, 263) or (0, 0)
    assert (round(low, 4), round(high, 4)) == (0.2553, 0.3662)
    low, high = wilson_interval(50, 100) or (0, 0)
    assert math.isclose(low + high, 1.0) and low < 0.5 < high  # symmetric at one half
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_the_standard_error_is_the_harness_s() -> None:
    outcomes = [1] * 7 + [0] * 13
    assert math.isclose(standard_error(7, 20) or 0, statistics.stdev(outcomes) / math.sqrt(20))
    assert standard_error(20, 20) == 0.0 and standard_error(1, 1) is None  # "N/A" below two problems
    assert percent_error(7, 20) == round(100 * statistics.stdev(outcomes) / math.sqrt(20), 2)


def _run(correct: list[bool]) -> Run:
    rows = [result_row(str(n), subset="general", correct=value) for n, value in enumerate(correct)]
    manifest = eval_manifest("mathvista", [row.pid for row in rows], subsets=["general"])
    return Run(path=Path("run"), manifest=manifest, records=rows)


def test_table1_shows_the_interval_at_100_percent_and_its_csv_the_standard_error() -> None:
    markdown, table = table1([_run([True] * 20)])
    assert "100.00 [83.89, 100.00]" in markdown
    header, row = list(csv.reader(io.StringIO(table)))
    cells = dict(zip(header, row))
    assert cells["MathVista Gen. lo"] == "83.89" and cells["MathVista Gen. se"] == "0.0"
    assert cells["MathVista Gen. n"] == "20"
    _, table = table1([_run([True] * 7 + [False] * 13)])
    _, row = list(csv.reader(io.StringIO(table)))
    assert dict(zip(header, row))["MathVista Gen. se"] == str(percent_error(7, 20))
