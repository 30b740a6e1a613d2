"""Shared by the tests of tests/eval/test_eval_cli.py and others: eval_dir_of, results, scripted_answers."""

from __future__ import annotations

import json
from pathlib import Path


def scripted_answers(rows: dict) -> dict[str, str]:
    """Right answers except for every 4th problem; multiple choice answered by letter."""
    answers = {}
    for pid, row in rows.items():
        right = "B" if row["question_type"] == "multi_choice" else row["answer"]
        answers[pid] = "999" if int(pid) % 4 == 0 else right
    return answers


def results(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def eval_dir_of(runs: Path) -> Path:
    return next(p for p in runs.iterdir() if p.name.startswith("eval-"))
