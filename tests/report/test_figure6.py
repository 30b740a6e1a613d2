"""Figure 6 (solving time by question type, answer type, category, difficulty): one series per
Table 1 row (method and models), never every run pooled; every series of a panel over the
same values, lined up across benchmarks; its data written beside the PNG."""

from __future__ import annotations

import json
from pathlib import Path

from maps_autogen.eval import Run
from maps_autogen.report._report import solving_times
from tests.helpers.common import TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.synthetic_runs import eval_manifest, model_record, result_row


def _mean_seconds(run_dir: Path, field: str) -> dict[str, float]:
    times: dict[str, list[float]] = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["status"] == "ok":
            value = row["metadata"].get(field) or row["metadata"].get("question_type")
            times.setdefault(str(value), []).append(float(row["seconds"]))
    return {value: round(sum(t) / len(t), 3) for value, t in times.items()}


def test_report_draws_one_series_per_run(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "data", 6)
    answers = {pid: ("B" if row["question_type"] == "multi_choice" else row["answer"]) for pid, row in rows.items()}
    slow = {pid: 0.05 for pid, row in rows.items() if row["question_type"] == "multi_choice"}
    run_dirs = []
    for name, extra in (("maps", []), ("cot", ["--method", "cot"])):
        with FakeOpenAI(ProblemScript(answers, delay_for=slow)) as server:
            env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
            runs = tmp_path / f"runs-{name}"
            result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), *extra], env=env, cwd=tmp_path)
            assert result.returncode == 0, result.stderr
            run_dirs.append(next(p for p in runs.iterdir() if p.name.startswith("eval-")))
    out = tmp_path / "report"
    result = run_maps(["report", *map(str, run_dirs), "--out", str(out)], env=clean_env(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    figure = json.loads((out / "figure6.json").read_text())
    assert figure == json.loads((out / "report.json").read_text())["solving_times"]
    assert set(figure) == {"question type", "answer type", "category", "difficulty"}
    for panel in figure.values():
        # One line per run, labelled as Table 1 labels its rows; every line over the same values.
        assert list(panel["series"]) == ["maps (gpt-4o)", "cot (gpt-4o)"]
        assert all(len(seconds) == len(panel["values"]) for seconds in panel["series"].values())
    # Each line holds its own run's times, not the pool of both.
    question_type = figure["question type"]
    for label, run_dir in zip(("maps (gpt-4o)", "cot (gpt-4o)"), run_dirs):
        assert dict(zip(question_type["values"], question_type["series"][label])) == _mean_seconds(run_dir, "question_type")
    assert (out / "figure6.png").stat().st_size > 0 and (out / "figure6_paper_scale.png").stat().st_size > 0


def _run(benchmark: str, method: str, records: list[dict]) -> Run:
    manifest = eval_manifest(benchmark, range(len(records)), method=method,
                             models={"solver": model_record("gpt-4o", endpoint=None, kind=None)})
    return Run(path=Path(f"/runs/{benchmark}-{method}"), manifest=manifest,
               records=[result_row(str(n), **record) for n, record in enumerate(records)])


def test_panels_line_up_across_benchmarks() -> None:
    maps_mathvista = _run("mathvista", "maps", [{"seconds": 10, "metadata": {"question_type": "free_form"}},
                                                {"seconds": 30, "metadata": {"question_type": "free_form"}}])
    maps_emma = _run("emma", "maps", [{"seconds": 50, "metadata": {"type": "Open-ended"}}])
    cot_mathvista = _run("mathvista", "cot", [{"seconds": 2, "metadata": {"question_type": "free_form"}}])
    # Given in any order, the values follow the paper's benchmark order (MathVista, then EMMA).
    times = solving_times([maps_emma, cot_mathvista, maps_mathvista])
    assert times == {"question type": {
        "values": ["MathVista: free_form", "EMMA-mini: Open-ended"],
        "fields": {"mathvista": "question_type", "emma": "type"},
        # MAPS on both benchmarks is one Table 1 row, so one line; CoT ran on MathVista only.
        "series": {"maps (gpt-4o)": [20.0, 50.0], "cot (gpt-4o)": [2.0, None]},
    }}
    # One benchmark: the values need no benchmark name.
    assert solving_times([maps_mathvista])["question type"]["values"] == ["free_form"]
