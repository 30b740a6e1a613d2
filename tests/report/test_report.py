"""`maps report`: numbers checked against runs the tests make with scripted answers (known
accuracies, feedback shares and times), and the figures written as PNGs."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from maps_autogen.eval import load_run, table1_rows
from maps_autogen.report._report import feedback_shares, solving_times
from tests.helpers.common import TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import ProblemScript, colour_regions, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI


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


def test_feedback_shares_and_times(runs) -> None:
    loaded = [load_run(runs[n]) for n in ("maps", "ablation", "cot")]
    shares = feedback_shares(loaded)
    assert shares == {"mathvista": {"maps (gpt-4o)": {"interpreter": 0.0, "aligner": 0.0, "scholar": round(1 / 12, 4),
                                                      "solver": round(2 / 12, 4), "none": round(9 / 12, 4)}}}
    times = solving_times([loaded[0]])
    assert set(times) == {"question type", "answer type", "category", "difficulty"}
    assert times["difficulty"]["fields"] == {"mathvista": "grade"}  # MathVista's difficulty is its grade
    # Multiple-choice problems made at least 4 calls that name their pid (all but the
    # Interpreter's), each delayed 0.1 s; the others were not delayed.
    question_type = dict(zip(times["question type"]["values"], times["question type"]["series"]["maps (gpt-4o)"]))
    assert question_type["multi_choice"] >= 0.4  # a delay is a floor; how fast the others went depends on the load
    recorded: dict[str, list[float]] = {}
    for record in loaded[0].scored:
        recorded.setdefault(record.metadata["question_type"], []).append(record.seconds)
    assert question_type == {kind: round(sum(seconds) / len(seconds), 3) for kind, seconds in recorded.items()}
    assert set(times["category"]["values"]) == {"general-vqa", "math-targeted-vqa"}


def test_report_command_writes_tables_and_figures(runs) -> None:
    out = runs["tmp"] / "out"
    result = run_maps(["report", str(runs["maps"]), str(runs["ablation"]), str(runs["cot"]), "--out", str(out)], env=clean_env(), cwd=runs["tmp"])
    assert result.returncode == 0, result.stderr
    assert "| maps (gpt-4o) | 100.00 [60.97, 100.00] | 66.67 [" in result.stdout
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
    assert data["feedback_shares"]["mathvista"]["maps (gpt-4o)"]["none"] == 0.75


def test_report_rejects_a_folder_that_is_not_a_run(tmp_path: Path) -> None:
    result = run_maps(["report", str(tmp_path)], env=clean_env(), cwd=tmp_path)
    assert result.returncode == 2 and "is not an eval run" in result.stderr and "Traceback" not in result.stderr


# ---- the paper beside ours, and every figure read back -------------------------------------------


def assert_a_real_picture(path: Path, min_size: tuple[int, int]) -> None:
    with Image.open(path) as image:
        assert image.format == "PNG" and image.width >= min_size[0] and image.height >= min_size[1]
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 20  # not blank: drawn text, bars and axes


@pytest.fixture(scope="module")
def paper_report(runs) -> tuple[subprocess.CompletedProcess, Path]:
    out = runs["tmp"] / "paper"
    result = run_maps(["report", str(runs["maps"]), str(runs["ablation"]), str(runs["cot"]), "--paper", "--out", str(out)],
                      env=clean_env(), cwd=runs["tmp"])
    assert result.returncode == 0, result.stderr
    return result, out


def test_report_paper_shows_the_papers_cells_verbatim_and_the_difference(paper_report) -> None:
    result, out = paper_report
    # MathVista only: the paper's MathVista cells as printed, and the benchmark's average.
    assert "| paper (v2) | MAPS (GPT-4o base) | 75.87 | 83.15 | 79.80 | 79.80 |  |" in result.stdout
    assert "| paper (v2) | GPT-4o | 65.22 | 61.30 | 63.10 | 63.10 |  |" in result.stdout
    assert "| paper (v2) | GPT-4o (CoT) | 65.22 | 62.59 | 63.80 | 63.80 |  |" in result.stdout
    assert "| paper (v2, EMMA Avg. corrected) | Random Choice | 26.09 | 22.78 | 24.30 | 24.30 |  |" in result.stdout
    # Ours: MAPS 100 / 66.67 (avg 83.33) against 79.80; CoT 50 against 63.80; the ablation has no paper row.
    assert "| this report | maps (gpt-4o) | 100.00 | 66.67 | 83.33 | 83.33 | +3.53 (MAPS (GPT-4o base)) |" in result.stdout
    assert "| this report | cot (gpt-4o) | 50.00 | 50.00 | 50.00 | 50.00 | -13.80 (GPT-4o (CoT)) |" in result.stdout
    assert "| this report | maps w/o scholar (gpt-4o) | 83.33 | 66.67 | 75.00 | 75.00 | - |" in result.stdout
    assert "| maps (gpt-4o) − MAPS (GPT-4o base) | +24.13 | -16.48 | +3.53 |" in result.stdout
    # Random choice from the data: 2 of the 6 problems per subset have 3 choices, the rest are open.
    assert "| this report | random choice (expected, from the data) | 11.11 | 11.11 | 11.11 | 11.11 | - |" in result.stdout
    with open(out / "table1_paper.csv") as handle:
        rows = list(csv.reader(handle))
    assert ["paper (v2)", "MAPS (GPT-4o base)", "75.87", "83.15", "79.80", "79.80", ""] in rows


def test_paper_rows_of_every_benchmark_are_the_published_ones() -> None:
    from maps_autogen.report.paper import paper_row_for
    from maps_autogen.report.paper import table1_rows as paper_rows

    maps_row = paper_row_for("maps", {"gpt-4o"})
    assert maps_row is not None and paper_row_for("maps", {"gpt-4o-mini"}) is None
    assert [maps_row.cells[k] for k in ("mathvista/Avg.", "emma/Avg.", "olympiadbench/Avg.", "Avg.")] == ["79.80", "58.00", "31.14", "56.31"]
    assert paper_row_for("direct", {"gpt-4o-2024-08-06"}).cells["Avg."] == "39.41"
    assert paper_row_for("cot", {"gpt-4o"}).cells["Avg."] == "40.47"
    assert paper_row_for("cot", {"gpt-4o"}).cells["olympiadbench/Math_Zh_COMP"] == "12.50"
    assert len(paper_rows()) == 15


def test_every_figure_is_read_back(paper_report) -> None:
    from maps_autogen.report._figures import FEEDBACK_COLOURS, NO_FEEDBACK_COLOUR, SERIES_COLOURS

    _, out = paper_report
    data = json.loads((out / "report.json").read_text())
    # Figure 4: per Critic target, a bar segment when it has a share, plus its legend swatch.
    assert_a_real_picture(out / "figure4.png", (600, 150))
    shares = data["feedback_shares"]["mathvista"]["maps (gpt-4o)"]
    assert list(shares) == ["interpreter", "aligner", "scholar", "solver", "none"]  # the team's scored steps, in order
    for target, colour in zip(shares, [*FEEDBACK_COLOURS[:4], NO_FEEDBACK_COLOUR]):
        assert colour_regions(out / "figure4.png", colour) == (shares[target] > 0) + 1, target
    # Figure 5: one colour per full run (maps, cot), a bar per subset and the average, plus a swatch.
    assert_a_real_picture(out / "figure5.png", (600, 300))
    by_model = data["accuracy_by_model"]["mathvista"]
    assert list(by_model) == ["maps (gpt-4o)", "cot (gpt-4o)"]
    for colour, values in zip(SERIES_COLOURS, by_model.values()):
        assert colour_regions(out / "figure5.png", colour) == len(values) + 1  # a bar each (a zero one too), a swatch
    # Figure 6, in seconds and on the paper's scale: one line per run (its colour in each of
    # the three panels, where crossing lines may cut it, plus its legend swatch).
    panels = data["solving_times"]
    assert len(panels) == 4 and all(len(panel["values"]) == (1 if name == "difficulty" else 2)
                                    for name, panel in panels.items())
    labels = list(next(iter(panels.values()))["series"])
    assert labels == ["maps (gpt-4o)", "maps w/o scholar (gpt-4o)", "cot (gpt-4o)"]
    for figure in ("figure6.png", "figure6_paper_scale.png"):
        assert_a_real_picture(out / figure, (1000, 300))
        for colour in SERIES_COLOURS[: len(labels)]:
            assert colour_regions(out / figure, colour) >= len(panels) + 1, (figure, colour)
