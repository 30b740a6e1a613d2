"""Every scorer's work is bounded in the process it runs in, by its real cost: a response whose
judging would pass a bound is judged wrong and says why (`unjudged`), never failed, never a
crash; a row whose own numbers pass the bounds is refused before any call.

The work is read from what it costs, never from the clock: the bound each scorer charged
(`bounds.metered`), the peak memory of the scoring (tracemalloc), and the helper calls and
edit-distance tables that are (not) made. perf/scorer_bounds.py prints the times.
"""

from __future__ import annotations

import json
import random
import re
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from maps_autogen.benchmarks import RecordError, Verdict, _symbolic
from maps_autogen.benchmarks import _bounds as bounds
from maps_autogen.benchmarks.custom import SCORER as CUSTOM
from maps_autogen.benchmarks.emma import _scorer as emma
from maps_autogen.benchmarks.mathvista import SCORER as MATHVISTA
from maps_autogen.benchmarks.mathvista import _choice_answers as choice_answers
from maps_autogen.benchmarks.olympiadbench import _scorer as olympiadbench
from maps_autogen.scoring._score import score_file
from tests.helpers.common import TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import ProblemScript
from tests.helpers.fake_openai import FakeOpenAI

MEGABYTE = 1 << 20


def scored_within(score: Callable[[], Verdict], memory_bytes: int) -> tuple[Verdict, dict[str, int]]:
    """The verdict, and the work each bound was asked for; the scoring's peak memory must stay
    under `memory_bytes` (what the old code spent on these vectors: hundreds of megabytes)."""
    tracemalloc.start()
    try:
        with bounds.metered() as meter:
            verdict = score()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < memory_bytes, f"peak {peak:,} bytes"
    return verdict, dict(meter)


def assert_unjudged(verdict: Verdict, bound: str, work: dict[str, int]) -> None:
    """Judged wrong, saying which bound; the work refused was never done."""
    assert verdict.correct is False and verdict.unjudged is not None
    assert f"more than the bound of {bounds.BOUNDS[bound]:,}" in verdict.unjudged or "beyond the bound" in verdict.unjudged
    assert work.get(bound, 0) > bounds.BOUNDS[bound] or "beyond the bound" in verdict.unjudged


# ----- numbers (the custom benchmark's rules) ------------------------------------------------


@pytest.mark.parametrize("reply", ["The result is -6.02E+31337 joules", "≈ 7.5e-123456789", "x = 5.0e+99999999999999"])
def test_a_number_with_a_huge_power_of_ten_is_judged_wrong_saying_why(reply: str) -> None:
    verdict, work = scored_within(lambda: CUSTOM.score({"answer": "12", "response": reply}), MEGABYTE)
    assert_unjudged(verdict, "number exponent", work)
    assert "power of ten" in str(verdict.unjudged)


def test_a_number_with_too_many_digits_is_judged_wrong_saying_why() -> None:
    digits = "".join(random.Random(3).choice("123456789") for _ in range(bounds.MAX_NUMBER_DIGITS + 500))
    verdict, work = scored_within(lambda: CUSTOM.score({"answer": "12", "response": f"so {digits}.25"}), MEGABYTE)
    assert_unjudged(verdict, "number digits", work)
    assert "digits" in str(verdict.unjudged)


@pytest.mark.parametrize(("reply", "gold", "prediction", "correct"), [
    ("8.25e+7000", "8.25e7000", "8.25e+7000", True),  # far past a float, still exact
    ("3e-9000", "0", "3e-9000", False),  # not rounded to zero
    ("-4.5E+2999 m", "12", "-4.5e+2999", False),
    ("1/3", "0.333", "0.333333", False),
])
def test_numbers_within_the_bounds_are_judged_exactly(reply: str, gold: str, prediction: str, correct: bool) -> None:
    verdict, work = scored_within(lambda: CUSTOM.score({"answer": gold, "response": reply}), MEGABYTE)
    assert (verdict.prediction, verdict.correct, verdict.unjudged) == (prediction, correct, None)
    assert all(units <= bounds.BOUNDS[name] for name, units in work.items())


@pytest.mark.parametrize(("row", "field"), [
    ({"answer": "2E+123456"}, "answer"),
    ({"answer": "9" * 4400}, "answer"),
    ({"answer": "3", "answer_type": "number", "tolerance": "1e-54321"}, "tolerance"),
])
def test_a_row_whose_own_number_passes_the_bounds_is_refused_naming_the_field(row: dict[str, Any], field: str) -> None:
    with pytest.raises(RecordError, match=rf"field '{field}' cannot be scored: the number .* bound"):
        CUSTOM.score({**row, "response": "3"})


# ----- OlympiadBench: boxes nested in boxes, font commands -----------------------------------


def nested_boxes(depth: int, inner: str = "1") -> str:
    return "We get " + "\\boxed{2+" * depth + inner + "}" * depth + " at last."


def test_boxes_nested_thousands_deep_are_judged_wrong_without_their_quadratic_output() -> None:
    reply = nested_boxes(3000)  # 30 KB whose official extraction is 45 MB of text
    record = {"final_answer": ["5"], "response": reply}
    verdict, work = scored_within(lambda: olympiadbench.SCORER.score(record), 4 * MEGABYTE)
    assert_unjudged(verdict, "boxed chars", work)
    assert "boxed answers would produce" in str(verdict.unjudged)


def test_nested_boxes_within_the_bound_are_read_as_upstream_reads_them() -> None:
    # Each box found again on its own: "2+\boxed{2+1}," then "2+1,".
    assert olympiadbench.boxed_or_dollar_content("\\boxed{2+\\boxed{2+1}}") == "2+\\boxed{2+1},2+1,"
    assert olympiadbench.boxed_or_dollar_content("a}\\boxed{x}{") == "x,"  # a stray "}" before, a "{" after
    with pytest.raises(olympiadbench._UnclosedBox):
        olympiadbench.boxed_or_dollar_content("\\boxed{x}\\boxed{{y}")


def _reference_boxes(text: str) -> str | None:
    """Upstream's extraction (a depth scan per box), for comparing on small texts."""
    pieces = []
    for match in re.finditer(r"\\boxed{", text):
        depth, position = 1, match.end()
        while depth > 0 and position < len(text):
            depth += {"{": 1, "}": -1}.get(text[position], 0)
            position += 1
        if depth:
            return None
        pieces.append(text[match.end() : position - 1])
    return "".join(piece + "," for piece in pieces) if pieces else text


def test_the_linear_readings_agree_with_upstreams_on_random_texts() -> None:
    chooser = random.Random(11)
    alphabet = ["\\boxed{", "{", "}", "x", "\\mathrm{", "\\mathbf{", "~", " ", "\n", "$"]
    for _ in range(3000):
        text = "".join(chooser.choice(alphabet) for _ in range(chooser.randrange(0, 14)))
        try:
            mine: str | None = olympiadbench.boxed_or_dollar_content(text)
        except olympiadbench._UnclosedBox:
            mine = None
        if "\\boxed{" in text:
            assert mine == _reference_boxes(text), text
        upstream = re.sub(r"\\(?:mathrm|mathbf)\{~?([^}]*)\}", r"\1", text)
        assert olympiadbench._drop_font_commands(text) == upstream, text


def test_an_answer_too_long_for_the_symbolic_check_is_not_sent_to_the_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_symbolic, "run_bounded", _never_called)
    long_answer = "x" * (bounds.MAX_SYMBOLIC_CHARS + 10)
    verdict = olympiadbench.SCORER.score({"final_answer": ["5"], "response": long_answer})
    assert verdict.correct is False and "would send" in str(verdict.unjudged)
    # The same long answer equal to the truth needs no symbolic check: credited.
    assert olympiadbench.SCORER.score({"final_answer": [long_answer], "response": long_answer}).correct


def _never_called(*args: Any, **keywords: Any) -> Any:
    raise AssertionError("the helper process was asked")


def test_a_symbolic_check_that_does_not_finish_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_symbolic, "run_bounded",
                        lambda *args, **keywords: _symbolic.NotFinished("its symbolic check did not finish"))
    verdict = olympiadbench.SCORER.score({"final_answer": ["5"], "response": "So the final answer is $\\sqrt{26}$"})
    assert (verdict.correct, verdict.unjudged) == (False, "its symbolic check did not finish")
    verdict = emma.SCORER.score({"answer": "A", "gt_content": "5", "response": "The answer is \\sqrt{26}."})
    assert (verdict.correct, verdict.unjudged) == (False, "its symbolic check did not finish")


def spin_in_the_helper(seconds: float) -> None:
    """Run in the helper process (imported there by name): uses `seconds` of CPU time."""
    started = time.process_time()
    while time.process_time() - started < seconds:
        pass


def test_the_helpers_time_limit_is_the_reason_given() -> None:
    result = _symbolic.run_bounded(spin_in_the_helper, 120.0, fallback=_symbolic.NOT_FINISHED, timeout=0.5)
    assert isinstance(result, _symbolic.NotFinished)
    assert result.reason == "its symbolic check did not finish within the time limit of 0.5 s of CPU time"


# ----- EMMA: what the helper is sent and what the cache keeps --------------------------------


def test_emma_sends_no_answer_past_the_bound_and_keeps_no_long_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_symbolic, "run_bounded", _never_called)
    huge = "12" * (bounds.MAX_SYMBOLIC_CHARS // 2 + 1)
    verdict = emma.SCORER.score({"answer": "A", "gt_content": "7", "response": f"The answer is {huge}."}, "current")
    assert verdict.correct is False and "would send" in str(verdict.unjudged)
    monkeypatch.setattr(_symbolic, "run_bounded", lambda *args, **keywords: False)
    emma._cache.clear()
    long_text = "q" * 5000
    emma.SCORER.score({"answer": "A", "gt_content": "7", "response": f"The answer is {long_text}."})
    emma.SCORER.score({"answer": "A", "gt_content": "7", "response": "The answer is 8."})
    assert [key[0] for key in emma._cache] == ["8"]  # the cache's memory stays bounded


# ----- MathVista: the nearest option by edit distance ----------------------------------------


def test_a_given_extraction_too_long_to_match_to_an_option_is_judged_wrong() -> None:
    options = ["p" * 1500, "q" * 1500]
    record = {"pid": "1", "question_type": "multi_choice", "answer_type": "text", "choices": options,
              "answer": options[0], "extraction": "r" * 2000}
    verdict, work = scored_within(lambda: MATHVISTA.score(record), MEGABYTE)
    assert_unjudged(verdict, "edit cells", work)
    # An extraction that is an option needs no table: judged as the official code judges it.
    verdict, work = scored_within(lambda: MATHVISTA.score({**record, "extraction": options[0]}), MEGABYTE)
    assert verdict.correct and verdict.unjudged is None and "edit cells" not in work


def test_a_long_option_costs_no_typo_table(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[str, str]] = []
    real = choice_answers.levenshtein
    monkeypatch.setattr(choice_answers, "levenshtein", lambda a, b: compared.append((a, b)) or real(a, b))
    assert choice_answers._near_choice("Adolescent", ["Adolescents", "z" * 200_000, "Children"]) == "Adolescents"
    assert all(len(b) < 100 for _, b in compared)


# ----- maps score, maps eval -----------------------------------------------------------------


def test_maps_score_judges_unjudgeable_lines_wrong_and_skips_a_number_past_the_digit_limit(tmp_path: Path) -> None:
    path = tmp_path / "outputs.jsonl"
    lines = [json.dumps({"id": "a", "answer": "4", "response": "The answer is 4"}),
             json.dumps({"id": "b", "answer": "4", "response": "The answer is 1e+88888"}),
             '{"id": "c", "answer": 4, "response": "4", "extra": ' + "7" * 4500 + "}"]
    path.write_text("\n".join(lines) + "\n")
    report = score_file("custom", path)
    assert [(s.line_no, s.reason) for s in report.skipped] == [(3, "holds a number with more than 4,300 digits")]
    assert (report.overall.scored, report.overall.correct, report.unjudged) == (2, 1, 1)
    scored = [json.loads(line) for line in report.out_path.read_text().splitlines()]
    assert "unjudged" not in scored[0] and "power of ten" in scored[1]["unjudged"] and scored[1]["correct"] is False
    result = run_maps(["score", "custom", str(path), "--out", str(tmp_path / "again.jsonl")], env=clean_env(),
                      cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "warning: line 3: holds a number with more than 4,300 digits" in result.stderr
    assert "not judged within the scorers' bounds, so counted wrong (`unjudged` says why): 1" in result.stdout


def test_an_eval_counts_an_unjudgeable_answer_as_wrong_not_failed(tmp_path: Path) -> None:
    rows = [{"id": "u1", "question": "[q:u1] How many?", "answer": "3"},
            {"id": "u2", "question": "[q:u2] How many?", "answer": "5"}]
    data = tmp_path / "bench.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with FakeOpenAI(ProblemScript({"u1": "3", "u2": "-9.1e+654321"})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "custom", "--data", str(data), "--runs-dir", str(tmp_path / "runs")], env=env,
                          cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run_dir = next(p for p in (tmp_path / "runs").iterdir() if p.name.startswith("eval-"))
    records = {r["pid"]: r for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())}
    assert records["u2"]["status"] == "ok" and records["u2"]["correct"] is False
    assert "power of ten" in records["u2"]["unjudged"] and "unjudged" not in records["u1"]
    run = json.loads((run_dir / "problems" / "u2" / "run.json").read_text())
    assert run["evaluation"]["unjudged"] == records["u2"]["unjudged"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["failed"] == 0 and summary["average"]["accuracy"] == 50.0


@pytest.fixture(autouse=True)
def _fresh_emma_cache() -> Iterator[None]:
    yield
    emma._cache.clear()
