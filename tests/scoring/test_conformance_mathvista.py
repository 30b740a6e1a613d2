"""Conformance with the official MathVista evaluator on recorded testmini verdicts: the subset
that ships with the project (tests/fixtures/conformance/, taken from the official result files of
13 model runs, every rule family of each) and the developers' full set where it is found
(tests.helpers.conformance: where; a clone without it runs the subset, CI fails without it). Each
record's extraction, prediction and verdict were produced by the official code; our
normalisation and verdict must reproduce all of them. Scored from the raw response alone, our
rule-based extractor must reach the agreement floors below (perf/mathvista_extraction_agreement.py
prints the full report, with the disagreements grouped by cause).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from maps_autogen.benchmarks.mathvista._extract import extract
from maps_autogen.benchmarks.mathvista._scorer import SCORER, extract_answer, normalize
from tests.helpers.common import REPO
from tests.helpers.conformance import MATHVISTA, ConformanceData, conformance_data


@dataclass(frozen=True)
class Floors:
    """What the rules reach from the response alone on a set (the agreement test's floors)."""

    records: int
    verdict: float
    prediction: float
    false_accepts: int
    outside_verdict: float
    outside_false_accepts: int


# On the full set (measured: 93.61% same verdict, 325 false accepts, 83.4% same prediction). Most
# of the remaining disagreements are the official extractor's own errors
# (perf/mathvista_extraction_agreement.py groups them; 123 of the false accepts are programs whose
# printed answer the official LLM misread): on the 9,762 records outside those families the rules
# agree on 98.90% with 23 false accepts. Since issue 24 a program whose output needs a library
# (sympy, numpy, datetime) is unreadable rather than emulated: 37 such records are false rejects
# here, left to `--llm-extract`, which puts the outside figure under issue 17's 99% (it was 99.07%
# with the emulation). These are the developers' set's figures, and the rules are not tuned
# further to it: on responses outside it the reviewer measured 89.2% agreement with 311 false
# accepts per 10,000. The floors sit just under the figures to catch regressions, and false
# accepts may not grow. On the bundled subset (every rule family of each file, so more of the
# hard ones than the full set has) the floors are its own measured figures.
FLOORS = {
    "shared": Floors(records=12_998, verdict=0.9355, prediction=0.832, false_accepts=325, outside_verdict=0.9885,
                     outside_false_accepts=23),
    # measured: 90.63% same verdict, 73.3% same prediction, 12 false accepts; outside the official-error
    # families 95.71% on 280 records with none
    "bundled": Floors(records=427, verdict=0.906, prediction=0.732, false_accepts=12, outside_verdict=0.957,
                      outside_false_accepts=0),
}


def load_records(data: ConformanceData) -> list[dict[str, Any]]:
    with gzip.open(data.path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@pytest.fixture(scope="module", params=conformance_data(MATHVISTA), ids=str)
def dataset(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    data: ConformanceData = request.param
    return data.kind, load_records(data)


@pytest.fixture(scope="module")
def records(dataset: tuple[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return dataset[1]


def rule_versions_of(record: dict[str, Any]) -> tuple[str, ...]:
    """Which of our rule versions the record's source file was scored with.

    The field reads e.g. "int_only(pre-2024 code)", "int_float", or "both_rules_agree" (files
    where the two integer rules give the same predictions: both must reproduce them).
    """
    rule = record["integer_rule_of_file"]
    if rule.startswith("int_float"):
        return ("current",)
    if rule.startswith("int_only"):
        return ("legacy",)
    if rule.startswith("both"):
        return ("current", "legacy")
    raise AssertionError(f"unknown integer_rule_of_file {rule!r} in pid {record['pid']}")


def disagreements(records: list[dict[str, Any]]) -> Iterator[str]:
    for record in records:
        for rules in rule_versions_of(record):
            prediction = normalize(
                record["extraction"],
                question_type=record["question_type"],
                answer_type=record["answer_type"],
                choices=record["choices"],
                precision=record["precision"],
                rules=rules,
            )
            verdict = SCORER.score(record, rules)
            if (
                prediction != record["prediction"]
                or verdict.prediction != record["prediction"]
                or verdict.correct != record["true_false"]
            ):
                yield (
                    f"{record['source_file']} pid={record['pid']} rules={rules} "
                    f"extraction={record['extraction']!r} official={record['prediction']!r}/"
                    f"{record['true_false']} ours={verdict.prediction!r}/{verdict.correct}"
                )


def test_data_file_is_complete(dataset: tuple[str, list[dict[str, Any]]]) -> None:
    kind, records = dataset
    assert len(records) == FLOORS[kind].records


def test_every_official_prediction_and_verdict_is_reproduced(
    records: list[dict[str, Any]],
) -> None:
    bad = list(disagreements(records))
    agreement = 1 - len(bad) / len(records)
    print(f"\nMathVista conformance: {len(records)} records, agreement {100 * agreement:.2f}%")
    assert not bad, f"{len(bad)} of {len(records)} records disagree; first ones:\n" + "\n".join(
        bad[:10]
    )


def test_both_integer_rules_are_exercised(records: list[dict[str, Any]]) -> None:
    # The conformance data must actually pin the legacy rule down: some records have an
    # extraction like "5.0" whose official prediction is None under int_only.
    legacy_only = [
        r for r in records
        if r["answer_type"] == "integer" and r["integer_rule_of_file"].startswith("int_only")
        and r["prediction"] is None
        and normalize(r["extraction"], question_type="free_form", answer_type="integer",
                      rules="current") is not None
    ]
    assert legacy_only, "no record distinguishes the legacy integer rule from the current one"


def _agreement_script() -> Any:
    """The agreement script as a module: its official-error families are the ones reported."""
    path = REPO / "perf" / "mathvista_extraction_agreement.py"
    spec = importlib.util.spec_from_file_location("mathvista_extraction_agreement", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_rule_only_extraction_agreement(dataset: tuple[str, list[dict[str, Any]]]) -> None:
    kind, records = dataset
    floors = FLOORS[kind]
    script = _agreement_script()
    same_extraction = same_prediction = same_verdict = false_accepts = 0
    outside = outside_agree = outside_false_accepts = 0
    for record in records:
        rules = rule_versions_of(record)[0]
        ours = extract_answer(
            record["response"],
            question_type=record["question_type"],
            answer_type=record["answer_type"],
            choices=record["choices"],
        )
        without_extraction = {k: v for k, v in record.items() if k != "extraction"}
        verdict = SCORER.score(without_extraction, rules)
        same_extraction += ours == record["extraction"]
        same_prediction += verdict.prediction == record["prediction"]
        same_verdict += verdict.correct == record["true_false"]
        false_accepts += verdict.correct and not record["true_false"]
        if script.official_family(record) is None:
            outside += 1
            outside_agree += verdict.correct == record["true_false"]
            outside_false_accepts += verdict.correct and not record["true_false"]
    total = len(records)
    print(
        f"\nRule-only extraction vs official extraction on {total} records: "
        f"same extraction {100 * same_extraction / total:.1f}%, "
        f"same normalised prediction {100 * same_prediction / total:.1f}%, "
        f"same verdict {100 * same_verdict / total:.2f}%, false accepts {false_accepts}; "
        f"outside the official-error families: {outside} records, same verdict "
        f"{100 * outside_agree / outside:.2f}%, false accepts {outside_false_accepts}"
    )
    assert same_prediction / total >= floors.prediction
    assert same_verdict / total >= floors.verdict
    assert false_accepts <= floors.false_accepts
    assert outside_agree / outside >= floors.outside_verdict
    assert outside_false_accepts <= floors.outside_false_accepts


# The hardest families, drawn from the developers' set (source file, pid): for each, the rules
# read from the raw response must give the official extraction itself, not only its verdict.
HARD_CASES = {
    "letter against option text": [("output_claude.json", "23"), ("output_chatgpt.json", "316"),
                                   ("output_claude_2shot_solution.json", "514"), ("output_bard.json", "321"),
                                   ("output_idefics_9b_instruct.json", "950")],
    "last number, not intermediate ones": [("output_bard.json", "435"), ("output_chatgpt.json", "873"),
                                           ("output_chatgpt_2shot_solution_use_ocr.json", "241"),
                                           ("output_bard.json", "662")],
    "number with its unit": [("output_bard.json", "353"), ("output_bard.json", "719"),
                             ("output_claude.json", "638"), ("output_bard.json", "617"),
                             ("output_chatgpt_2shot_solution.json", "629")],
    "program with undefined names or unused libraries": [("output_chatgpt_2shot_code_use_ocr.json", "58"),
                                                         ("output_chatgpt_2shot_code_use_ocr.json", "461")],
}
# Programs whose printed answer needs a library (numpy, sympy): unreadable, never emulated.
LIBRARY_PROGRAM_CASES = [("output_chatgpt_2shot_code.json", "564"), ("output_chatgpt_2shot_code.json", "120"),
                         ("output_chatgpt_2shot_code_use_ocr.json", "622"), ("output_chatgpt_2shot_code.json", "713"),
                         ("output_chatgpt_2shot_code.json", "217")]
# Refusals: no answer read (the official extraction is its own placeholder), same verdict.
REFUSAL_CASES = [("output_chatgpt.json", "523"), ("output_chatgpt_2shot_solution_use_ocr.json", "173"),
                 ("output_chatgpt.json", "308"), ("output_chatgpt_2shot_solution_use_ocr.json", "177")]


def _record(records: list[dict[str, Any]], source: str, pid: str) -> dict[str, Any]:
    found = [r for r in records if r["source_file"].endswith(source) and r["pid"] == pid]
    assert len(found) == 1, f"{source} pid {pid} not in the developers' set"
    return found[0]


@pytest.mark.parametrize(("family", "source", "pid"),
                         [(family, source, pid) for family, cases in HARD_CASES.items()
                          for source, pid in cases])
def test_hard_families_give_the_official_extraction(records: list[dict[str, Any]], family: str,
                                                    source: str, pid: str) -> None:
    record = _record(records, source, pid)
    ours = extract_answer(record["response"], question_type=record["question_type"],
                          answer_type=record["answer_type"], choices=record["choices"])
    assert ours == record["extraction"], family


@pytest.mark.parametrize(("source", "pid"), LIBRARY_PROGRAM_CASES)
def test_programs_needing_a_library_are_unreadable(records: list[dict[str, Any]], source: str, pid: str) -> None:
    record = _record(records, source, pid)
    read = extract(record["response"], question_type=record["question_type"],
                   answer_type=record["answer_type"], choices=record["choices"])
    assert read.status == "unreadable"
    verdict = SCORER.score({k: v for k, v in record.items() if k != "extraction"}, rule_versions_of(record)[0])
    assert verdict.extraction_method == "unreadable"


@pytest.mark.parametrize(("source", "pid"), REFUSAL_CASES)
def test_refusals_give_no_answer_and_the_official_verdict(records: list[dict[str, Any]], source: str,
                                                          pid: str) -> None:
    record = _record(records, source, pid)
    read = extract(record["response"], question_type=record["question_type"],
                   answer_type=record["answer_type"], choices=record["choices"])
    verdict = SCORER.score({k: v for k, v in record.items() if k != "extraction"}, rule_versions_of(record)[0])
    assert read.status == "no_answer"
    assert verdict.correct == record["true_false"]
