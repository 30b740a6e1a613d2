"""`maps report`: numbers checked against runs the tests make with scripted answers (known
accuracies, feedback shares and times), and the figures written as PNGs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from PIL import Image

from maps_autogen.report import bootstrap_interval, feedback_shares, load_run, solving_times, table1_rows
from tests.conftest import TEST_KEY, clean_env, run_maps
from tests.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.fake_openai import FakeOpenAI


def answers_for(rows: dict, wrong: set[str]) -> dict[str, str]:
    return {pid: "999" if pid in wrong else ("B" if row["question_type"] == "multi_choice" else row["answer"]) for pid, row in rows.items()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A full MAPS run, an ablation and a CoT baseline on 12 MathVista problems.

    MAPS: pids 4 and 8 wrong (general 6/6, math 4/6); first review sends pid 1 back to the
    Scholar and pids 2, 3 back to the Solver; multiple-choice problems (3, 6, 9, 12) take 0.1 s
    longer per call. Ablation without the Scholar: pids 4, 5, 8 wrong. CoT: pids 1..6 wrong.
    """
    tmp = tmp_path_factory.mktemp("report")
    data, rows = write_mathvista_jsonl(tmp / "data", 12)
    made = {}
    plans = {
        "maps": ([], answers_for(rows, {"4", "8"}), {"1": "knowledge", "2": "solution", "3": "solution"}),
        "ablation": (["--without", "scholar"], answers_for(rows, {"4", "5", "8"}), {}),
        "cot": (["--method", "cot"], answers_for(rows, {"1", "2", "3", "4", "5", "6"}), {}),
    }
    slow = {pid: 0.1 for pid, row in rows.items() if row["question_type"] == "multi_choice"}
    for name, (extra, answers, low) in plans.items():
        with FakeOpenAI(ProblemScript(answers, critic_low=low, delay_for=slow)) as server:
            env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
            result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp / name), "--concurrency", "4", "--no-cache", *extra], env=env, cwd=tmp)
            assert result.returncode == 0, result.stderr
        made[name] = next((tmp / name).glob("eval-*"))
    made["tmp"] = tmp
    return made


def test_table1_numbers_match_the_scripted_answers(runs) -> None:
    rows = {row.label: row for row in table1_rows([load_run(runs[n]) for n in ("maps", "ablation", "cot")])}
    maps = rows["maps (gpt-4o)"]
    assert maps.cells[("mathvista", "general")].accuracy == 100.0
    assert maps.cells[("mathvista", "math")].accuracy == round(100 * 4 / 6, 2)
    assert maps.cells[("mathvista", "Avg.")].accuracy == round(100 * 10 / 12, 2)
    assert rows["maps w/o scholar (gpt-4o)"].cells[("mathvista", "Avg.")].accuracy == 75.0
    assert rows["cot (gpt-4o)"].cells[("mathvista", "Avg.")].accuracy == 50.0
    low, high = maps.cells[("mathvista", "Avg.")].interval
    assert low <= round(100 * 10 / 12, 2) <= high and high <= 100.0 and low >= 50.0


def test_bootstrap_interval_properties() -> None:
    assert bootstrap_interval([True] * 20) == (100.0, 100.0)
    assert bootstrap_interval([]) is None
    low, high = bootstrap_interval([True, False] * 50)
    assert 38 <= low < 50 < high <= 62
    assert bootstrap_interval([True, False] * 50) == (low, high)  # seeded, reproducible


def test_feedback_shares_and_times(runs) -> None:
    loaded = [load_run(runs[n]) for n in ("maps", "ablation", "cot")]
    shares = feedback_shares(loaded)
    assert shares == {"mathvista": {"interpreter": 0.0, "aligner": 0.0, "scholar": round(1 / 12, 4),
                                    "solver": round(2 / 12, 4), "none": round(9 / 12, 4)}}
    times = solving_times([loaded[0]])
    assert set(times) == {"question type", "answer type", "category"}
    # Multiple-choice problems made at least 4 calls that name their pid (all but the
    # Interpreter's), each delayed 0.1 s; the others were not delayed.
    assert times["question type"]["multi_choice"] >= 0.4 > times["question type"]["free_form"]
    assert set(times["category"]) == {"general-vqa", "math-targeted-vqa"}


def test_report_command_writes_tables_and_figures(runs) -> None:
    out = runs["tmp"] / "out"
    result = run_maps(["report", str(runs["maps"]), str(runs["ablation"]), str(runs["cot"]), "--out", str(out)], env=clean_env(), cwd=runs["tmp"])
    assert result.returncode == 0, result.stderr
    assert "| maps (gpt-4o) | 100.00 [100.00, 100.00] | 66.67 [" in result.stdout
    table2 = (out / "table2.md").read_text()
    assert "w/o scholar" in table2 and "75.00 (-8.33)" in table2
    with open(out / "table1.csv") as handle:
        table = list(csv.DictReader(handle))
    assert {row["method"] for row in table} == {"maps (gpt-4o)", "maps w/o scholar (gpt-4o)", "cot (gpt-4o)"}
    assert float(next(r for r in table if r["method"] == "cot (gpt-4o)")["MathVista Avg. acc"]) == 50.0
    for figure in ("figure4.png", "figure6.png"):
        with Image.open(out / figure) as image:
            assert image.format == "PNG" and image.width >= 600 and image.height >= 150
    usage = (out / "usage.md").read_text()
    for role in ("interpreter", "aligner", "scholar", "solver", "critic", "cot"):
        assert f"| {role} |" in usage
    data = json.loads((out / "report.json").read_text())
    assert data["feedback_shares"]["mathvista"]["none"] == 0.75


def test_report_rejects_a_folder_that_is_not_a_run(tmp_path: Path) -> None:
    result = run_maps(["report", str(tmp_path)], env=clean_env(), cwd=tmp_path)
    assert result.returncode == 2 and "is not an eval run" in result.stderr and "Traceback" not in result.stderr
