"""Conformance: our EMMA fast-eval scorer reproduces every rule-scored official verdict, on the
subset that ships with the project (tests/fixtures/conformance/: generated responses scored by
EMMA's own evaluation code, current and first release, with records where the two differ) and on
the developers' full set where it is found (tests.helpers.conformance: where; a clone without it
runs the subset, CI fails without it).

Each record carries the rule its source file was scored with: `fast_eval_new…` (current code),
`fast_eval_old…` (first release), `fast_eval(both versions agree)` (must pass under both), or
`gpt_eval` (an LLM judge: counted and reported, not asserted).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from maps_autogen.benchmarks import _symbolic
from maps_autogen.benchmarks.emma import _scorer as emma
from tests.helpers.conformance import EMMA, ConformanceData, conformance_data

SHOW = 10


def rule_versions_of(rule_of_file: str) -> tuple[str, ...]:
    """Our rule versions that must reproduce a file's verdicts (empty for the LLM judge)."""
    if rule_of_file.startswith("fast_eval(both"):
        return ("current", "legacy")
    if rule_of_file.startswith("fast_eval_new"):
        return ("current",)
    if rule_of_file.startswith("fast_eval_old"):
        return ("legacy",)
    return ()


@pytest.fixture(scope="module", params=conformance_data(EMMA), ids=str)
def records(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    data: ConformanceData = request.param
    with gzip.open(data.path, "rt", encoding="utf-8") as stream:
        return [json.loads(line) for line in stream if line.strip()]


def test_the_bundled_set_pins_both_versions_where_they_differ() -> None:
    """The full set holds no record that only the current rules decide; the bundled one holds
    inputs scored by each version where their verdicts differ, once per version."""
    [bundled] = [data for data in conformance_data(EMMA) if data.kind == "bundled"]
    with gzip.open(bundled.path, "rt", encoding="utf-8") as stream:
        records = [json.loads(line) for line in stream if line.strip()]
    current = {r["pid"] for r in records if rule_versions_of(r["scoring_rule_of_file"]) == ("current",)}
    legacy = {r["pid"] for r in records if rule_versions_of(r["scoring_rule_of_file"]) == ("legacy",)}
    assert current and current == legacy
    for pid in current:
        assert {r["true_false"] for r in records if r["pid"] == pid} == {True, False}, pid


def test_every_record_has_a_known_rule(records: list[dict[str, Any]]) -> None:
    unknown = {r["scoring_rule_of_file"] for r in records} - {
        rule
        for rule in {r["scoring_rule_of_file"] for r in records}
        if rule_versions_of(rule) or rule.startswith("gpt_eval")
    }
    assert not unknown, f"unrecognised scoring rules: {sorted(unknown)}"


def test_rule_scored_verdicts_agree(records: list[dict[str, Any]]) -> None:
    jobs = [(r, v) for r in records for v in rule_versions_of(r["scoring_rule_of_file"])]
    gpt_judged = Counter(
        r["source_file"] for r in records if not rule_versions_of(r["scoring_rule_of_file"])
    )
    _symbolic.clear_incidents()
    with ThreadPoolExecutor(max_workers=_symbolic.pool().max_workers) as executor:
        verdicts = list(executor.map(lambda job: emma.SCORER.score(job[0], job[1]), jobs))

    per_rule: Counter[tuple[str, str]] = Counter()
    wrong: list[str] = []
    for (record, version), verdict in zip(jobs, verdicts):
        per_rule[(record["scoring_rule_of_file"], version)] += 1
        if verdict.correct != record["true_false"]:
            wrong.append(
                f"{record['source_file']} {record['pid']} [{version}]: answer="
                f"{record['answer']!r} extraction={verdict.extraction!r}: official "
                f"{record['true_false']}, ours {verdict.correct}"
            )
    summary = ", ".join(f"{rule}/{version}: {n}" for (rule, version), n in sorted(per_rule.items()))
    print(f"\nEMMA conformance checks: {summary}; gpt_eval records (not asserted): "
          f"{sum(gpt_judged.values())} in {len(gpt_judged)} files")
    agreement = 100 * (len(jobs) - len(wrong)) / max(1, len(jobs))
    assert not wrong, (
        f"agreement {agreement:.2f}% ({len(wrong)} of {len(jobs)} disagree):\n"
        + "\n".join(wrong[:SHOW])
    )
    assert not _symbolic.incidents(), f"timeouts/crashes: {_symbolic.incidents()[:SHOW]}"
