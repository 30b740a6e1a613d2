"""An Inspect log that can be browsed and searched by question: each sample's input is its problem's
question (text from the row; its images are still read only when the sample runs, and shown then in
its first message), and a MAPS task reports the rollback rate (the share of scored samples whose
Critic rolled back) beside accuracy; a baseline, which has no Critic, reports none. Read back with
inspect_ai's read_eval_log."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.inspect_runs import inspect_log


def test_the_input_is_the_question_and_the_rollback_rate_sits_beside_accuracy(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 4)
    answers = {pid: "B" if row["question_type"] == "multi_choice" else row["answer"] for pid, row in rows.items()}
    with FakeOpenAI(ProblemScript(answers, critic_low={"2"})) as server:  # problem 2 rolled back once
        log = inspect_log("mathvista", ["-T", f"data={data}"], server, tmp_path)
    samples = {str(sample.id): sample for sample in log.samples or []}
    for pid, sample in samples.items():
        assert sample.input == rows[pid]["question"]  # searchable by question
        content = sample.messages[0].content  # the whole problem, its image read when the sample ran
        assert any(part.type == "image" and part.image.startswith("data:image/png;base64,") for part in content)
    metrics = log.results.scores[0].metrics
    assert metrics["accuracy"].value == 1.0
    assert metrics["rollback_rate"].value == 0.25


def test_a_baseline_reports_no_rollback_rate(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    with FakeOpenAI(ProblemScript({pid: row["answer"] for pid, row in rows.items()})) as server:
        log = inspect_log("mathvista", ["-T", f"data={data}", "-T", "method=direct"], server, tmp_path)
    assert "rollback_rate" not in log.results.scores[0].metrics
    assert "accuracy" in log.results.scores[0].metrics
