"""The report's figures and the paper's rows, read back: Figure 4 gives a problem whose review
failed or was unreadable its own bar, Figure 5 shows every bar (a zero one too) with its legend
whole, Figure 6 plots the field each benchmark has and says which, and `--paper` prints the
paper's corrected reference rows and where each comes from."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from maps_autogen.eval import Run
from maps_autogen.report._figures import NO_REVIEW_COLOUR, SERIES_COLOURS, plot_feedback, plot_models
from maps_autogen.report._report import paper_table, solving_times
from maps_autogen.report.paper import paper_row_for, reference_notes
from maps_autogen.report.paper import table1_rows as paper_rows
from tests.helpers.eval_fixtures import colour_regions
from tests.helpers.synthetic_runs import eval_manifest, model_record, result_row


def _pixels(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def _has(path: Path, colour: str) -> int:
    """How many pixels of exactly `colour` the PNG has."""
    rgb = tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return int(np.all(_pixels(path) == rgb, axis=2).sum())


def _edges_are_blank(path: Path) -> bool:
    """Nothing drawn touches the picture's edges (nothing was cut there)."""
    pixels = _pixels(path)
    edges = np.concatenate([pixels[:, :2].reshape(-1, 3), pixels[:, -2:].reshape(-1, 3),
                            pixels[:2].reshape(-1, 3), pixels[-2:].reshape(-1, 3)])
    return bool(np.all(edges == 255))


def test_figure5_shows_a_zero_bar_and_a_whole_legend(tmp_path: Path) -> None:
    long_labels = [f"maps (Qwen/Qwen2.5-VL-72B-Instruct; team interpreter, aligner, scholar, solver, critic; run {n})"
                   for n in range(4)]
    data = {"emma": {label: {"Math": 0.0 if n == 1 else 40.0 + n, "Physics": 30.0, "Avg.": 20.0 + n}
                     for n, label in enumerate(long_labels)}}
    path = plot_models(data, tmp_path / "figure5.png")
    assert _edges_are_blank(path)
    # The zero bar of the second row is drawn on the axis in its colour: that row's colour shows
    # in three bars and its legend swatch, as the others' do.
    for colour in SERIES_COLOURS[:4]:
        assert colour_regions(path, colour) == 4, colour


def test_figure4_has_a_bar_for_no_usable_review(tmp_path: Path) -> None:
    shares = {"mathvista": {"maps (gpt-4o)": {"scholar": 0.25, "none": 0.5, "no usable review": 0.25}}}
    path = plot_feedback(shares, tmp_path / "figure4.png")
    assert _has(path, NO_REVIEW_COLOUR) > 100 and _edges_are_blank(path)


def _run(benchmark: str, records: list[dict]) -> Run:
    manifest = eval_manifest(benchmark, range(len(records)), models={"solver": model_record("gpt-4o", endpoint=None, kind=None)})
    return Run(path=Path(f"/runs/{benchmark}"), manifest=manifest,
               records=[result_row(str(n), **r) for n, r in enumerate(records)])


def test_figure6_plots_the_field_each_benchmark_has() -> None:
    mathvista = _run("mathvista", [{"seconds": 10, "metadata": {"grade": "college", "category": "math-targeted-vqa"}}])
    emma = _run("emma", [{"seconds": 20, "metadata": {"category": "Reflection", "type": "Open-ended"}}])
    olympiad = _run("olympiadbench", [{"seconds": 30, "metadata": {"difficulty": "Competition", "subfield": "Optics"}}])
    times = solving_times([mathvista, emma, olympiad])
    assert times["difficulty"]["fields"] == {"mathvista": "grade", "olympiadbench": "difficulty"}
    assert times["difficulty"]["values"] == ["MathVista: college", "OlympiadBench: Competition"]
    assert times["category"]["fields"] == {"mathvista": "category", "emma": "category", "olympiadbench": "subfield"}
    assert times["category"]["values"] == ["MathVista: math-targeted-vqa", "EMMA-mini: Reflection", "OlympiadBench: Optics"]


def test_the_paper_reference_rows_are_the_corrected_ones_and_say_where_they_come_from() -> None:
    rows = {row.label: row for row in paper_rows()}
    assert rows["Random Choice"].cells["emma/Avg."] == "21.00"
    assert rows["Human Expert"].cells["emma/Avg."] == "75.17"
    assert all(row.source == "v2" for label, row in rows.items() if label not in ("Random Choice", "Human Expert"))
    notes = "\n".join(reference_notes())
    assert "Random Choice, Human Expert" in notes and "23.00 → 21.00" in notes and "64.50 → 75.17" in notes
    assert "second version" in notes and "first version" in notes
    emma = _run("emma", [{"subset": "Physics", "correct": True, "metadata": {"choices": 4}}])
    markdown, _ = paper_table([emma])
    assert "| paper (v2, EMMA Avg. corrected) | Random Choice | 13.00 | 23.00 | 27.00 | 21.00 | 21.00 |  |" in markdown
    assert "| paper (v2, EMMA Avg. corrected) | Human Expert | 75.00 | 64.50 | 86.00 | 75.17 | 75.17 |  |" in markdown
    assert "Where the rows come from:" in markdown and "random choice (expected, from the data)" in markdown
    assert paper_row_for("maps", {"gpt-4o"}) is not None
