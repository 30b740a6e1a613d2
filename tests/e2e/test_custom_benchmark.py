"""`maps eval custom --data FILE.jsonl`: a benchmark of the user's own, scored by plain rules,
with Table 1 per category; `maps score custom`; bad rows refused before any call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maps_autogen.benchmarks import RecordError
from maps_autogen.benchmarks.custom import SCORER
from tests.helpers.common import TEST_KEY, clean_env, make_png, run_maps
from tests.helpers.eval_fixtures import ProblemScript
from tests.helpers.fake_openai import FakeOpenAI

# (row, what the Solver answers, right?)
ROWS = [
    ({"id": "c1", "question": "[q:c1] Which way does the force point?", "images": ["img/c1.png"],
      "options": ["up", "down", "left"], "answer": "B", "category": "mechanics"}, "(B)", True),
    ({"id": "c2", "question": "[q:c2] Which lens is shown?", "image": "img/c2.png",
      "options": ["convex", "concave"], "answer": "a", "answer_type": "choice", "category": "optics"}, "concave", False),
    ({"id": "n1", "question": "[q:n1] How far does it travel (m)?", "image": "img/n1.png", "answer": "12.5",
      "answer_type": "number", "category": "mechanics"}, "12.50 m", True),
    ({"id": "n2", "question": "[q:n2] Focal length in cm?", "answer": 20, "answer_type": "number", "tolerance": 0.5,
      "category": "optics"}, "about 20.4", True),
    ({"id": "n3", "question": "[q:n3] Mass in kg?", "answer": "1,250", "category": "mechanics"}, "1200", False),
    ({"id": "t1", "question": "[q:t1] What is the image called?", "answer": "A virtual image", "answer_type": "text",
      "category": "optics"}, "virtual image.", True),
]


def write_benchmark(folder: Path, rows: list[dict]) -> Path:
    (folder / "img").mkdir(parents=True, exist_ok=True)
    for name in ("c1", "c2", "n1"):
        make_png(folder / "img" / f"{name}.png")
    path = folder / "small.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_eval_custom_scores_a_small_file_with_a_table_per_category(tmp_path: Path) -> None:
    data = write_benchmark(tmp_path / "bench", [row for row, _, _ in ROWS])
    script = ProblemScript({row["id"]: answer for row, answer, _ in ROWS})
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "custom", "--data", str(data), "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
        solver_formats = [m["content"] for r in server.received if r.role == "solver" for m in r.messages
                          if isinstance(m.get("content"), str) and "[q:c1]" in m["content"]]
    assert result.returncode == 0, result.stderr
    run_dir = next(p for p in (tmp_path / "runs").iterdir() if p.name.startswith("eval-"))
    records = {r["pid"]: r for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())}
    assert {pid: r["correct"] for pid, r in records.items()} == {row["id"]: right for row, _, right in ROWS}
    assert records["n1"]["prediction"] == "12.5" and records["c2"]["prediction"] == "B"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["subsets"]["mechanics"]["accuracy"] == pytest.approx(66.67)
    assert summary["subsets"]["optics"]["accuracy"] == pytest.approx(66.67)
    assert summary["average"]["accuracy"] == pytest.approx(66.67)
    # Table 1, as maps eval prints it and maps report writes it: one column per category.
    assert "Custom mechanics" in result.stdout and "Custom optics" in result.stdout
    report = run_maps(["report", str(run_dir), "--out", str(tmp_path / "report")], env=clean_env(), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    table = (tmp_path / "report" / "table1.md").read_text()
    assert "Custom mechanics" in table and "Custom optics" in table and "66.67" in table
    # The Solver is told how to answer for the row's answer type.
    assert any("give only its letter (A-C)" in text for text in solver_formats), solver_formats

    # maps score custom: the same rules over recorded responses.
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text("".join(json.dumps({**row, "response": f"Working.\nThe answer is {answer}"}) + "\n" for row, answer, _ in ROWS))
    scored = run_maps(["score", "custom", str(outputs)], env=clean_env(), cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    assert "4 / 6" in scored.stdout and "66.67%" in scored.stdout
    assert "mechanics" in scored.stdout and "optics" in scored.stdout


def test_custom_needs_data_and_refuses_bad_rows_in_one_line_each(tmp_path: Path) -> None:
    env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    missing = run_maps(["eval", "custom", "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1 and "--data" in missing.stderr
    bad = [row for row, _, _ in ROWS] + [
        {"id": "x1", "question": "q", "options": ["a", "b"], "answer": "C"},  # letter beyond the options
        {"id": "x2", "question": "q", "answer": "twelve", "answer_type": "number"},
        {"id": "x3", "question": "q", "answer": "1", "answer_type": "integer"},
        {"id": "c1", "question": "q", "answer": "x"},  # duplicate id
        {"id": "x5", "question": "q"},  # no answer
        {"id": "x6", "question": "q", "answer": "1", "images": "img/c1.png"},
        {"id": "x7", "question": "q", "answer": "1", "category": "optics\u001b[31m"},  # a terminal escape
    ]
    data = write_benchmark(tmp_path / "bench", bad)
    result = run_maps(["eval", "custom", "--data", str(data), "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if " line " in line]
    assert [line.split(" line ")[1].split(":")[0] for line in lines] == ["7", "8", "9", "10", "11", "12", "13"], result.stderr
    assert "option letter A-B" in lines[0] and "not a number" in lines[1] and "answer_type" in lines[2]
    assert "repeats id 'c1'" in lines[3] and "has no 'answer'" in lines[4] and "'images' that is not a list" in lines[5]
    assert "'category' that is not one printable line" in lines[6]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    # An image outside the data folder is refused before any call, too.
    outside = write_benchmark(tmp_path / "bench2", [{"id": "o", "question": "q", "image": "../bench/img/c1.png", "answer": "1"}])
    result = run_maps(["eval", "custom", "--data", str(outside), "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
    assert result.returncode == 2 and "outside the data folder" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(("record", "response", "correct"), [
    ({"answer": "B", "options": ["x", "y", "z"]}, "The answer is (B).", True),
    ({"answer": "B", "options": ["x", "y", "z"]}, "Option b", True),
    ({"answer": "B", "options": ["x", "y", "z"]}, "\\boxed{y}", True),
    ({"answer": "B", "options": ["x", "y", "z"]}, "D", False),  # not one of the options' letters
    ({"answer": "12.5"}, "12.50", True),
    ({"answer": "0.25"}, "1/4", True),
    ({"answer": "1250"}, "answer: 1,250 kg", True),
    ({"answer": "3"}, "x = 3.4", False),
    ({"answer": "3", "tolerance": 0.5}, "x = 3.4", True),
    ({"answer": "3", "tolerance": "0.1"}, "x = 3.4", False),
    ({"answer": "50%"}, "50", True),
    ({"answer": "The Mitochondria", "answer_type": "text"}, "answer is mitochondria!", True),
    ({"answer": "north pole", "answer_type": "text"}, "south pole", False),
])
def test_the_documented_rules(record: dict, response: str, correct: bool) -> None:
    assert SCORER.score({**record, "response": response}).correct is correct


def test_unusable_records_are_named() -> None:
    with pytest.raises(RecordError, match="tolerance"):
        SCORER.score({"answer": "3", "tolerance": -1, "response": "3"})
    with pytest.raises(RecordError, match="at least two"):
        SCORER.score({"answer": "A", "answer_type": "choice", "response": "A"})
    assert SCORER.subset({"category": "optics"}) == "optics" and SCORER.subset({}) == "all"


def test_categories_are_the_subsets(tmp_path: Path) -> None:
    from maps_autogen._util._errors import UsageError
    from maps_autogen.benchmarks.custom import TASK
    from maps_autogen.problem._tasks import available_subsets, find_subsets

    data = write_benchmark(tmp_path / "bench", [row for row, _, _ in ROWS] + [{"id": "u", "question": "q", "answer": "1"}])
    available = available_subsets(TASK, data)
    assert [s.name for s in available] == ["mechanics", "optics", "all"]  # in order of first appearance
    chosen = find_subsets(TASK, ("Optics",), available)
    assert [row.fields["id"] for row in TASK.rows(chosen, data)] == ["c2", "n2", "t1"]
    with pytest.raises(UsageError, match="no subset 'chemistry'"):
        find_subsets(TASK, ("chemistry",), available)
