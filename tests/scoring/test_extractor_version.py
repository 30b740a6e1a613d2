"""Every MathVista score records the version of the rules that read it (`extractor_version`),
in `maps score` output lines and `maps eval` results rows, so that scores made by different
rules can be told apart; benchmarks scored by their official extraction record none."""

from __future__ import annotations

import json
from pathlib import Path

from maps_autogen.benchmarks.mathvista._extract import EXTRACTOR_VERSION
from maps_autogen.scoring._score import score_record, scored_line
from tests.helpers.common import TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI


def test_maps_score_lines_record_the_extractor_version(tmp_path: Path) -> None:
    lines = [
        {"pid": "1", "question_type": "free_form", "answer_type": "integer", "precision": None, "choices": None,
         "answer": "9", "response": "So the answer is 9."},
        {"pid": "2", "question_type": "free_form", "answer_type": "integer", "precision": None, "choices": None,
         "answer": "9", "extraction": "9"},  # a given extraction: still scored by these rules
        {"pid": "3", "question_type": "free_form", "answer_type": "integer", "precision": None, "choices": None,
         "answer": "2", "response": "import numpy as np\nprint(np.mean([1, 3]))"},  # unreadable
    ]
    source = tmp_path / "outputs.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    result = run_maps(["score", "mathvista", str(source), "--out", str(tmp_path / "scored.jsonl")],
                      env=clean_env(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    scored = [json.loads(line) for line in (tmp_path / "scored.jsonl").read_text().splitlines()]
    assert [line["extractor_version"] for line in scored] == [EXTRACTOR_VERSION] * 3
    assert [line["extraction_method"] for line in scored if "response" in line] == ["rules", "unreadable"]


def test_an_official_extraction_records_no_version_of_ours() -> None:
    record = {"pid": "Math_1", "type": "Open-ended", "answer": "7", "response": "The answer is 7"}
    assert "extractor_version" not in scored_line(record, score_record("emma", record))


def test_maps_eval_rows_record_the_extractor_version(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 3)
    answers = {pid: row["answer"] if row["question_type"] == "free_form" else "B" for pid, row in rows.items()}
    with FakeOpenAI(ProblemScript(answers)) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"),
                           "--method", "direct"], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run_dir = next(path for path in (tmp_path / "runs").iterdir() if path.name.startswith("eval-"))
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(results) == 3
    assert all(row["extractor_version"] == EXTRACTOR_VERSION and row["correct"] is True for row in results)
