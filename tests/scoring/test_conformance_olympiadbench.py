"""Conformance: our OlympiadBench judge reproduces every verdict of the official pipeline, on the
subset that ships with the project (tests/fixtures/conformance/: the judge's own examples and
generated cases it judged) and on the developers' full set where it is found
(tests.helpers.conformance: where; a clone without it runs the subset, CI fails without it).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from maps_autogen.benchmarks import _symbolic
from maps_autogen.benchmarks.olympiadbench import _scorer as ob
from tests.helpers.conformance import OLYMPIADBENCH_EXAMPLES, OLYMPIADBENCH_JUDGED, ConformanceData, conformance_data

SHOW = 10  # disagreeing records listed in a failure message
EXPECTED = {"bundled": 107, "shared": 1003}  # judged cases in each set


def _parallel(func: Any, items: list[Any]) -> list[Any]:
    # One thread per helper process keeps every helper busy.
    with ThreadPoolExecutor(max_workers=_symbolic.pool().max_workers) as executor:
        return list(executor.map(func, items))


def _precision(value: Any) -> float | list[float]:
    if value is None:
        return ob.DEFAULT_PRECISION
    return float(value) if isinstance(value, str) else list(value) if isinstance(value, list) else value


@pytest.fixture(scope="module", params=conformance_data(OLYMPIADBENCH_EXAMPLES), ids=str)
def examples(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    data: ConformanceData = request.param
    loaded: list[dict[str, Any]] = json.loads(data.path.read_text(encoding="utf-8"))
    assert len(loaded) == 36
    return loaded


def test_official_examples_in_pipeline_argument_order(examples: list[dict[str, Any]]) -> None:
    ours = _parallel(
        lambda e: ob.judge_bounded(e["answer"], e["gt"], _precision(e["precision"])), examples
    )
    wrong = [
        f"judge({e['answer']!r}, {e['gt']!r}, {e['precision']!r}): official "
        f"{e['judge_answer_first']}, ours {mine}"
        for e, mine in zip(examples, ours)
        if mine != e["judge_answer_first"]
    ]
    assert not wrong, f"{len(wrong)}/{len(examples)} disagree:\n" + "\n".join(wrong[:SHOW])


def test_official_examples_in_the_other_argument_order(examples: list[dict[str, Any]]) -> None:
    # Not how the pipeline calls it, but the recorded verdicts pin the judge's asymmetries.
    ours = _parallel(
        lambda e: ob.judge_bounded(e["gt"], e["answer"], _precision(e["precision"])), examples
    )
    wrong = [
        f"judge({e['gt']!r}, {e['answer']!r}): official {e['judge_gt_first']}, ours {mine}"
        for e, mine in zip(examples, ours)
        if mine != e["judge_gt_first"]
    ]
    assert not wrong, f"{len(wrong)}/{len(examples)} disagree:\n" + "\n".join(wrong[:SHOW])


@pytest.mark.parametrize("data", conformance_data(OLYMPIADBENCH_JUDGED), ids=str)
def test_judged_cases_scored_from_response(data: ConformanceData) -> None:
    records = [json.loads(line) for line in data.path.read_text(encoding="utf-8").splitlines() if line]
    assert len(records) == EXPECTED[data.kind]
    _symbolic.clear_incidents()
    verdicts = _parallel(ob.SCORER.score, records)
    wrong = [
        f"{r['id']}: final_answer={r['final_answer'][0]!r} error={r['error']!r} "
        f"extraction={v.extraction!r}: official {r['official_verdict']}, ours {v.correct}"
        for r, v in zip(records, verdicts)
        if v.correct != r["official_verdict"]
    ]
    agreement = 100 * (len(records) - len(wrong)) / len(records)
    message = f"agreement {agreement:.2f}% ({len(wrong)} of {len(records)} disagree)"
    assert not wrong, message + ":\n" + "\n".join(wrong[:SHOW])
    assert not _symbolic.incidents(), f"timeouts/crashes: {_symbolic.incidents()[:SHOW]}"
