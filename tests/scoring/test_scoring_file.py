"""`score_file`, `score_record`, the summary and the `maps score` command, on MathVista files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from maps_autogen._util._errors import DataError, UsageError
from maps_autogen.scoring._score import (
    default_out_path,
    render_summary,
    score_file,
    score_record,
)
from tests.helpers.common import clean_env
from tests.helpers.common import run_maps as run_command


def free_form(pid: str, answer: str, **fields: Any) -> dict[str, Any]:
    return {"pid": pid, "question_type": "free_form", "answer_type": "integer",
            "precision": None, "choices": None, "answer": answer, **fields}


def multi_choice(pid: str, answer: str, **fields: Any) -> dict[str, Any]:
    return {"pid": pid, "question_type": "multi_choice", "answer_type": "text",
            "precision": None, "choices": ["yes", "no"], "answer": answer, **fields}


# Four good lines: math 2 of 3 right (one via the legacy-sensitive "4.0"), general 1 of 1.
GOOD = [
    free_form("1", "4", extraction="4.0", category="math-targeted-vqa",
              model="m1", metadata={"note": "kept", "nested": [1, 2]}),
    free_form("2", "9", response="So the answer is 9.", category="math-targeted-vqa"),
    free_form("3", "2", response="I think 3.", category="math-targeted-vqa"),
    multi_choice("4", "no", extraction="(B)", category="general-vqa"),
]


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def results_file(tmp_path: Path) -> Path:
    lines = [json.dumps(GOOD[0]), "", json.dumps(GOOD[1]), "{not json",
             json.dumps({"pid": "x", "answer": "1"}), json.dumps(GOOD[2]), "   ",
             json.dumps([1, 2]), json.dumps(GOOD[3])]
    return write_jsonl(tmp_path / "results.jsonl", lines)


def test_scores_and_passes_unknown_fields_through(results_file: Path) -> None:
    report = score_file("mathvista", results_file)
    out = read_jsonl(report.out_path)
    assert [line["pid"] for line in out] == ["1", "2", "3", "4"]
    for original, scored in zip(GOOD, out):
        for key, value in original.items():
            assert scored[key] == value, key  # every input field, unchanged
    assert out[0]["metadata"] == {"note": "kept", "nested": [1, 2]}
    assert [line["correct"] for line in out] == [True, True, False, True]
    assert [line["prediction"] for line in out] == ["4", "9", "3", "no"]
    assert [line["extraction"] for line in out] == ["4.0", "9", "3", "(B)"]


def test_extraction_method_marks_rule_extraction_only(results_file: Path) -> None:
    out = read_jsonl(score_file("mathvista", results_file).out_path)
    assert [line.get("extraction_method") for line in out] == [None, "rules", "rules", None]


def test_summary_reports_how_each_line_was_extracted(tmp_path: Path) -> None:
    lines = [free_form("1", "4", extraction="4"), free_form("2", "9", response="So the answer is 9."),
             free_form("3", "2", response="The picture is too blurry to count."),
             free_form("4", "2", response="I cannot determine the number without the image.")]
    path = write_jsonl(tmp_path / "r.jsonl", [json.dumps(line) for line in lines])
    report = score_file("mathvista", path)
    out = read_jsonl(report.out_path)
    assert [line.get("extraction_method") for line in out] == [None, "rules", "unreadable", "rules"]
    assert {name: tally.scored for name, tally in report.methods.items()} == {
        "given": 1, "rules": 2, "unreadable": 1}
    assert report.llm_requests is None
    text = render_summary(report)
    assert "unreadable" in text and "given" in text and "LLM extractor" not in text


def test_failed_normalisation_writes_null_prediction(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", [json.dumps(free_form("1", "4", extraction="four"))])
    (line,) = read_jsonl(score_file("mathvista", path).out_path)
    assert line["prediction"] is None and line["correct"] is False


def test_bad_lines_are_skipped_with_line_numbers(results_file: Path) -> None:
    report = score_file("mathvista", results_file)
    assert [skip.line_no for skip in report.skipped] == [4, 5, 8]
    reasons = [skip.reason for skip in report.skipped]
    assert "not valid JSON" in reasons[0]
    assert "question_type" in reasons[1] and "missing" in reasons[1]
    assert "JSON object" in reasons[2]


def test_summary_counts_per_subset_and_overall(results_file: Path) -> None:
    report = score_file("mathvista", results_file)
    assert {name: (t.correct, t.scored) for name, t in report.subsets.items()} == {
        "math": (2, 3), "general": (1, 1)}
    assert (report.overall.correct, report.overall.scored) == (3, 4)
    text = render_summary(report)
    assert "math" in text and "2 / 3" in text and "66.67%" in text
    assert "general" in text and "100.00%" in text
    assert "overall" in text and "3 / 4" in text and "75.00%" in text
    assert "skipped lines: 3" in text
    assert "rules" in text  # the extraction-method breakdown


def test_legacy_rules_change_the_integer_verdict(results_file: Path, tmp_path: Path) -> None:
    report = score_file("mathvista", results_file, rules="legacy", out_path=tmp_path / "l.jsonl")
    out = read_jsonl(tmp_path / "l.jsonl")
    assert out[0]["correct"] is False and out[0]["prediction"] is None
    assert (report.overall.correct, report.overall.scored) == (2, 4)
    assert "legacy" in render_summary(report)


def test_records_without_category_count_as_all(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", [json.dumps(free_form("1", "4", extraction="4"))])
    report = score_file("mathvista", path)
    assert set(report.subsets) == {"all"}


def test_default_out_path(tmp_path: Path) -> None:
    assert default_out_path(tmp_path / "run.jsonl") == tmp_path / "run.scored.jsonl"
    assert default_out_path(tmp_path / "run") == tmp_path / "run.scored.jsonl"


def test_default_out_path_is_used_and_input_untouched(results_file: Path) -> None:
    before = results_file.read_bytes()
    report = score_file("mathvista", results_file)
    assert report.out_path == results_file.with_name("results.scored.jsonl")
    assert report.out_path.exists()
    assert results_file.read_bytes() == before


def test_explicit_out_path_in_a_new_folder(results_file: Path, tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "scored.jsonl"
    report = score_file("mathvista", results_file, out_path=target)
    assert report.out_path == target and len(read_jsonl(target)) == 4


def test_write_is_atomic_and_leaves_no_temp_files(
    results_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("previous\n", encoding="utf-8")
    calls: list[tuple[str, str]] = []
    real_replace = os.replace

    def failing_replace(src: str, dst: str) -> None:
        calls.append((str(src), str(dst)))
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        score_file("mathvista", results_file, out_path=target)
    # The output went through a temporary file in the same folder, then a rename ...
    assert calls and Path(calls[0][0]).parent == tmp_path and calls[0][1] == str(target)
    # ... so a failure leaves the previous output whole and no temporary file behind.
    assert target.read_text(encoding="utf-8") == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl", "results.jsonl"]
    monkeypatch.setattr(os, "replace", real_replace)
    score_file("mathvista", results_file, out_path=target)
    assert len(read_jsonl(target)) == 4


def test_output_may_not_overwrite_input(results_file: Path) -> None:
    with pytest.raises(UsageError, match="overwrite"):
        score_file("mathvista", results_file, out_path=results_file)


def test_missing_input_is_a_one_line_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError) as caught:
        score_file("mathvista", tmp_path / "absent.jsonl", out_path=tmp_path / "new" / "o.jsonl")
    message = str(caught.value)
    assert "absent.jsonl" in message and "not found" in message and "\n" not in message
    assert list(tmp_path.iterdir()) == []  # no output folder, file or temporary file


def test_folder_and_non_utf8_inputs_are_data_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="folder"):
        score_file("mathvista", tmp_path)
    binary = tmp_path / "b.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DataError, match="UTF-8"):
        score_file("mathvista", binary)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.jsonl"]  # temp file removed


def test_unknown_rules_value_is_a_usage_error(results_file: Path) -> None:
    with pytest.raises(UsageError, match="unknown rules"):
        score_file("mathvista", results_file, rules="2019")
    with pytest.raises(UsageError, match="unknown rules"):
        score_record("mathvista", GOOD[0], rules="2019")


def test_unknown_benchmark_is_a_usage_error(results_file: Path) -> None:
    with pytest.raises(UsageError, match="unknown benchmark"):
        score_file("mmmu", results_file)


def test_score_record_uses_the_same_path() -> None:
    verdict = score_record("mathvista", GOOD[0])
    assert (verdict.extraction, verdict.prediction, verdict.correct) == ("4.0", "4", True)
    assert score_record("mathvista", GOOD[0], rules="legacy").correct is False


def test_unicode_and_lone_surrogates_round_trip(tmp_path: Path) -> None:
    line = free_form("1", "4", extraction="4", note="角度 ✓")
    raw = json.dumps(line, ensure_ascii=False)[:-1] + ', "odd": "\\ud800"}'
    path = write_jsonl(tmp_path / "r.jsonl", [raw])
    (out,) = read_jsonl(score_file("mathvista", path).out_path)
    assert out["note"] == "角度 ✓" and out["odd"] == "\ud800" and out["correct"] is True


def test_empty_file_gives_an_empty_report(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", ["", "  "])
    report = score_file("mathvista", path)
    assert report.overall.scored == 0 and report.skipped == []
    assert read_jsonl(report.out_path) == []
    assert "0 / 0" in render_summary(report)


# --- the real command ----------------------------------------------------------------------


def run_maps(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # Scoring needs no model: keep anything that could point at one out of the command's view.
    return run_command(list(args), env=clean_env(), cwd=cwd)


def test_cli_scores_a_file(results_file: Path, tmp_path: Path) -> None:
    done = run_maps("score", "mathvista", str(results_file), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = read_jsonl(results_file.with_name("results.scored.jsonl"))
    assert [line["correct"] for line in out] == [True, True, False, True]
    assert "overall" in done.stdout and "75.00%" in done.stdout
    assert "warning: line 4:" in done.stderr and "warning: line 8:" in done.stderr


def test_cli_missing_file_is_exit_2_with_one_line_error(tmp_path: Path) -> None:
    done = run_maps("score", "mathvista", str(tmp_path / "nothing.jsonl"), cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    assert "nothing.jsonl" in lines[0]
    assert "Traceback" not in done.stderr


def test_llm_extraction_through_the_configured_model(tmp_path: Path) -> None:
    """`maps score mathvista --llm-extract`: only lines the rules cannot read go to the model
    (the scripted server on 127.0.0.1), not answers nor refusals; the summary counts them."""
    from tests.helpers.common import TEST_KEY, clean_env, run_maps
    from tests.helpers.fake_openai import FakeOpenAI, Reply

    lines = [
        {"pid": "1", "question_type": "free_form", "answer_type": "integer", "precision": None, "choices": None,
         "answer": "12", "response": "The quantity is roughly a dozen."},
        {"pid": "2", "question_type": "free_form", "answer_type": "integer", "precision": None, "choices": None,
         "answer": "7", "response": "The answer is 7."},
        {"pid": "3", "question_type": "free_form", "answer_type": "integer", "precision": None, "choices": None,
         "answer": "5", "response": "Without the image I cannot determine the count."},
    ]
    source = tmp_path / "outputs.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with FakeOpenAI(lambda request: Reply("12")) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["score", "mathvista", str(source), "--llm-extract"], env=env, cwd=tmp_path)
        prompts = [r.user_text() for r in server.received]
    assert result.returncode == 0, result.stderr
    assert len(prompts) == 1 and "roughly a dozen" in prompts[0] and [r.role for r in server.received] == ["extractor"]
    scored = [json.loads(line) for line in (tmp_path / "outputs.scored.jsonl").read_text().splitlines()]
    assert scored[0]["extraction"] == "12" and scored[0]["extraction_method"] == "llm" and scored[0]["correct"] is True
    assert scored[1]["extraction_method"] == "rules" and scored[1]["correct"] is True
    # A refusal is no answer: its stated refusal is the extraction (as officially), never an answer.
    assert scored[2]["extraction_method"] == "rules" and scored[2]["correct"] is False
    assert scored[2]["extraction"] == "Without the image I cannot determine the count"
    assert "by extraction method:" in result.stdout and "llm" in result.stdout
    assert "sent to the LLM extractor (unreadable by the rules): 1" in result.stdout
