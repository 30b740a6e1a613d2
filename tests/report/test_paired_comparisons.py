"""`maps report` compares MAPS with each baseline and ablation problem by problem when they ran the
same problems: the paired difference with its 95% interval and the exact McNemar p-value of the
problems only one of them got right, in report.md and report.json; runs on different problems
are named, never compared this way. Checked against values worked out by hand on a small made-up
table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from maps_autogen.eval._intervals import Z_95, PairedComparison, mcnemar_exact
from maps_autogen.report._report import write_report
from tests.helpers.synthetic_runs import write_eval_run

# Ten problems: MAPS and CoT both right on 1-3, only MAPS on 4-8, only CoT on 9, neither on 10.
MAPS = {str(n): ("general", n <= 8) for n in range(1, 11)}
COT = {str(n): ("general", n <= 3 or n == 9) for n in range(1, 11)}


def test_mcnemar_exact_by_hand() -> None:
    # 6 discordant problems split 5 to 1: P(X <= 1) for X ~ Binomial(6, 1/2) is (1 + 6) / 64, twice that
    assert mcnemar_exact(5, 1) == mcnemar_exact(1, 5) == 2 * 7 / 64 == 0.21875
    assert mcnemar_exact(10, 0) == 2 / 2**10  # every discordant problem one way
    assert mcnemar_exact(3, 3) == 1.0 and mcnemar_exact(0, 0) == 1.0  # an even split, or none: no evidence
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_the_paired_difference_and_its_interval_by_hand() -> None:
    counts = PairedComparison(both=3, first_only=5, second_only=1, neither=1)
    assert counts.n == 10 and counts.difference == 0.4 and counts.p_value == 0.21875
    # Bonett-Price: (5 + 1) / 12 and (1 + 1) / 12, their difference 1/3, variance (1/2 + 1/6 - 1/9) / 12
    half = Z_95 * math.sqrt((1 / 2 + 1 / 6 - 1 / 9) / 12)
    low, high = counts.interval() or (0.0, 0.0)
    assert math.isclose(low, 1 / 3 - half) and math.isclose(high, 1 / 3 + half)
    assert (round(100 * low, 2), round(100 * high, 2)) == (-8.84, 75.51)
    # no discordant problem: a difference of 0, an interval that does not collapse
    even = PairedComparison(both=4, first_only=0, second_only=0, neither=6)
    bounds = even.interval() or (0.0, 0.0)
    assert even.difference == 0 and bounds[0] < 0 < bounds[1] and even.p_value == 1.0


def test_maps_report_compares_rows_on_the_same_problems_and_names_the_others(tmp_path: Path) -> None:
    maps = write_eval_run(tmp_path / "maps", "mathvista", MAPS)
    cot = write_eval_run(tmp_path / "cot", "mathvista", COT, method="cot")
    # the ablation failed on problem 10 (no verdict): left out of its pair, never counted wrong
    ablation = write_eval_run(tmp_path / "ablation", "mathvista",
                              {**MAPS, "4": ("general", False), "10": ("general", None)}, without=("scholar",))
    fewer = write_eval_run(tmp_path / "direct", "mathvista", dict(list(COT.items())[:8]), method="direct")
    report = write_report([maps, cot, ablation, fewer], tmp_path / "out")
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    against_cot, against_ablation = data["paired"]
    assert against_cot == {
        "benchmark": "mathvista", "row": "maps (gpt-4o)", "against": "cot (gpt-4o)", "kind": "baseline",
        "problems": 10, "left_out_failed": 0, "both_right": 3, "maps_only_right": 5, "other_only_right": 1,
        "both_wrong": 1, "difference_points": 40.0, "interval_points": [-8.84, 75.51], "mcnemar_exact_p": 0.21875}
    assert against_ablation["against"] == "maps w/o scholar (gpt-4o)" and against_ablation["kind"] == "ablation"
    assert (against_ablation["problems"], against_ablation["left_out_failed"]) == (9, 1)
    assert (against_ablation["maps_only_right"], against_ablation["other_only_right"]) == (1, 0)
    assert against_ablation["mcnemar_exact_p"] == 1.0
    assert data["not_paired"] == [{"benchmark": "mathvista", "row": "maps (gpt-4o)", "against": "direct (gpt-4o)",
                                   "why": "not the same problems (2 only in the first, 0 only in the second)"}]
    markdown = report.markdown
    assert "## MAPS against each baseline and ablation on the same problems" in markdown
    assert "| MathVista | maps (gpt-4o) | cot (gpt-4o) | 10 | 5 | 1 | +40.00 [-8.84, +75.51] | 0.2188 | 0 |" in markdown
    assert "| MathVista | maps (gpt-4o) | maps w/o scholar (gpt-4o) | 9 | 1 | 0 |" in markdown
    assert "direct (gpt-4o)" not in markdown.split("## MAPS against")[1].split("Not compared")[0]
    assert ("Not compared problem by problem (runs on different problems): maps (gpt-4o) against direct (gpt-4o) "
            "on MathVista: not the same problems (2 only in the first, 0 only in the second).") in markdown
