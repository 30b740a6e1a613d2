"""`maps report` never pools runs that differ in a verdict setting: each group of runs under the
same settings is one row (of Table 1, the usage table and every figure), labelled by the models
that answered and by what sets it apart, and the report lists which runs went into which row."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import yaml

from maps_autogen.eval import Run, table1, table1_rows
from maps_autogen.records._schema import Manifest, ResultRow
from maps_autogen.report._report import feedback_shares, paper_table, table2, usage_by_role
from tests.helpers.common import REPO, TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply

STEPS = ["interpreter", "aligner", "scholar", "solver", "critic"]


def settings(steps: list[str] = STEPS, *, threshold: float = 5, temperature: float = 0.0, method: str = "maps",
             without: list[str] = (), base_url: str = "http://127.0.0.1:1/v1", data: str = "sha256:a") -> dict[str, Any]:
    """Verdict settings as eval/_verdict_settings.py records them (the parts the rows are keyed by)."""
    return {
        "team": {"steps": [{"name": step, "personality": None} for step in steps]},
        "prompts": {"task": "sha256:task", "answer_formats": f"sha256:{data}"},
        "review": {"threshold": threshold, "max_rollbacks": 3},
        "models": {step: {"model": "gpt-4o", "base_url": base_url, "temperature": temperature} for step in steps},
        "method": method, "without": list(without), "data": {"count": 2, "sha256": data, "gold": {}, "shown": {}},
    }


def run_of(path: str, *, benchmark: str = "mathvista", recorded: dict[str, Any] | None = None,
           served: str | list[str] | None = None, rows: list[dict[str, Any]] | None = None, method: str = "maps",
           without: tuple[str, ...] = ()) -> Run:
    """A run read from its manifest and rows, as load_run gives it."""
    recorded = recorded or settings(method=method, without=list(without))
    steps = [step["name"] for step in recorded["team"]["steps"]]
    manifest = Manifest.model_validate({
        "benchmark": benchmark, "method": method, "without": list(without), "settings": recorded,
        "selection": {"ids": [], "scoring": {}, "shown": {}},
        "models": {step: {"model": "gpt-4o", "prompt_layout": "paper"} for step in steps},
        "team": {"steps": steps, "reviewer": steps[-1], "final_step": steps[-2],
                 "scored": {step: step for step in steps[:-1]}},
    })
    answered = served if isinstance(served, list) else [served] * 4
    records = [ResultRow.model_validate({
        "pid": str(n), "status": "ok", "correct": n % 2 == 0, "subset": "general", "seconds": 1.0, "scoring": {},
        "models": {steps[-2]: {"model": "gpt-4o", **({"served_model": answered[n % len(answered)]}
                                                     if answered[n % len(answered)] else {})}},
        **(rows[n] if rows else {})}) for n in range(4)]
    return Run(Path(f"/runs/{path}"), manifest, records)


def labels(runs: list[Run]) -> list[str]:
    return [row.label for row in table1_rows(runs)]


def test_runs_that_differ_in_a_verdict_setting_are_rows_labelled_by_it() -> None:
    default = run_of("a")
    strict = run_of("b", recorded=settings(threshold=3))
    warm = run_of("c", recorded=settings(temperature=0.7))
    assert labels([default, strict, warm]) == [
        "maps (gpt-4o; review.threshold 5; models.*.temperature 0.0)",
        "maps (gpt-4o; review.threshold 3; models.*.temperature 0.0)",
        "maps (gpt-4o; review.threshold 5; models.*.temperature 0.7)",
    ]
    rows = table1_rows([default, strict, warm])
    assert [len(row.runs) for row in rows] == [1, 1, 1]


def test_a_renamed_step_is_its_own_row_named_by_the_team() -> None:
    default = run_of("a")
    renamed = run_of("b", recorded=settings(["interpreter", "aligner", "expert", "solver", "critic"]))
    assert labels([default, renamed]) == ["maps (gpt-4o; team interpreter, aligner, scholar, solver, critic)",
                                          "maps (gpt-4o; team interpreter, aligner, expert, solver, critic)"]


def test_the_same_settings_share_a_row_across_benchmarks_never_within_one() -> None:
    mathvista = run_of("mv")
    # Another benchmark: its own problems and answer formats, another server address: the same row.
    emma = run_of("emma", benchmark="emma", recorded=settings(data="sha256:b", base_url="http://10.0.0.2:8000/v1"),
                  rows=[{"subset": "Physics"}] * 4)
    again = run_of("mv-again")  # the same settings on the same benchmark: never averaged into one cell
    rows = table1_rows([mathvista, emma, again])
    assert [[run.path.name for run in row.runs] for row in rows] == [["mv", "emma"], ["mv-again"]]
    assert [row.label for row in rows] == ["maps (gpt-4o; run mv)", "maps (gpt-4o; run mv-again)"]
    # Another model answered the other benchmark's calls: its own row.
    mini_emma = run_of("emma-mini", benchmark="emma", served="gpt-4o-mini", rows=[{"subset": "Physics"}] * 4)
    assert [[run.path.name for run in row.runs] for row in table1_rows([mathvista, mini_emma])] == [["mv"], ["emma-mini"]]
    # Another team on the other benchmark: its own row, never the first row's EMMA cells.
    other_team = run_of("emma-3", benchmark="emma", recorded=settings(threshold=3), rows=[{"subset": "Physics"}] * 4)
    rows = table1_rows([mathvista, other_team])
    assert [[run.path.name for run in row.runs] for row in rows] == [["mv"], ["emma-3"]]
    assert [row.label for row in rows] == ["maps (gpt-4o; review.threshold 5)", "maps (gpt-4o; review.threshold 3)"]


def test_a_row_names_the_model_that_answered() -> None:
    mini = run_of("mini", served="gpt-4o-mini")
    assert labels([mini]) == ["maps (gpt-4o-mini; asked for gpt-4o)"]
    mixed = run_of("mixed", served=["gpt-4o-2024-08-06", "gpt-4o-mini"])
    assert labels([mixed]) == ["maps (served by several models: gpt-4o-2024-08-06, gpt-4o-mini; asked for gpt-4o)"]
    dated = run_of("dated", served="gpt-4o-2024-08-06")
    # The paper's GPT-4o row is reproduced by what answered: a dated gpt-4o snapshot is, gpt-4o-mini is not.
    markdown, _ = paper_table([dated, mini])
    assert "| this report | maps (gpt-4o-2024-08-06; asked for gpt-4o) |" in markdown
    dated_line = next(line for line in markdown.splitlines() if "| maps (gpt-4o-2024-08-06" in line)
    mini_line = next(line for line in markdown.splitlines() if "| maps (gpt-4o-mini" in line)
    assert dated_line.endswith("(MAPS (GPT-4o base)) |") and mini_line.endswith("| - |")


def test_a_served_name_is_one_bounded_table_cell() -> None:
    hostile = run_of("hostile", served="evil|model\nname" + "x" * 500)
    label = labels([hostile])[0]
    assert "|" not in label and "\n" not in label and len(label) < 200
    assert label.startswith("maps (evil/model name") and "; asked for gpt-4o)" in label


def test_ablations_are_compared_with_the_full_run_of_their_own_team() -> None:
    default = run_of("full-default", rows=[{"correct": True}] * 4)
    other = run_of("full-other", recorded=settings(threshold=3), rows=[{"correct": False}] * 4)
    ablated = run_of("ablated", recorded=settings(threshold=3, method="maps", without=["scholar"]), without=("scholar",),
                     rows=[{"correct": n < 2} for n in range(4)])
    text = table2([default, other, ablated])
    assert text is not None
    # Against the threshold-3 full run (0 %), not the default one (100 %).
    assert "| w/o scholar | 50.00 (+50.00) | 50.00 (+50.00) |" in text
    lonely = run_of("lonely", recorded=settings(temperature=0.9, without=["aligner"]), without=("aligner",))
    assert "not compared): maps w/o aligner (gpt-4o) on MathVista" in (table2([default, lonely]) or "")


def test_figure4_and_usage_keep_rows_apart_and_a_failed_review_is_never_a_pass() -> None:
    rolled = [{"feedback_step": "scholar", "rollbacks": ["scholar"], "critic_scores": [{"a": 1}, {"a": 5}]}] * 4
    one = run_of("one", rows=rolled)
    unreadable = {"critic_scores": [None], "stop_reason": "critic_unparseable"}
    failed = {"status": "failed", "correct": None, "error": "HTTP 500"}
    passed = {"critic_scores": [{"a": 5}], "stop_reason": "critic_passed"}
    two = run_of("two", recorded=settings(threshold=3), rows=[unreadable, failed, passed, passed])
    shares = feedback_shares([one, two])["mathvista"]
    assert shares["maps (gpt-4o; review.threshold 5)"]["scholar"] == 1.0
    assert shares["maps (gpt-4o; review.threshold 3)"] == {"interpreter": 0.0, "aligner": 0.0, "scholar": 0.0,
                                                           "solver": 0.0, "none": 0.5, "no usable review": 0.5}
    usage = usage_by_role([one, two])
    assert set(usage) == {"maps (gpt-4o; review.threshold 5)", "maps (gpt-4o; review.threshold 3)"}


def test_table1_says_how_failed_problems_are_counted() -> None:
    run = run_of("f", rows=[{"status": "failed", "correct": None, "error": "x"}, {}, {}, {}])
    markdown, csv_text = table1([run])
    assert "Failed without a verdict" in markdown and "maps (gpt-4o): 1." in markdown
    assert "never counted wrong" in markdown
    assert "MathVista Avg. failed" in csv_text.splitlines()[0]


# ---- end to end: two teams on one model, through maps eval and maps report ----------------------


def renamed_scholar_config(folder: Path) -> Path:
    """agents.yaml: the default team with its Scholar renamed `expert`."""
    data = yaml.safe_load((REPO / "maps_autogen" / "settings" / "defaults" / "agents.yaml").read_text())
    for step in data["team"]["steps"]:
        step["name"] = "expert" if step["name"] == "scholar" else step["name"]
        step["inputs"] = ["expert" if name == "scholar" else name for name in step["inputs"]]
        if "reviews" in step:
            step["reviews"] = ["expert" if name == "scholar" else name for name in step["reviews"]]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "agents.yaml"  # not in the runs' folder, where every maps command would read it
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@dataclasses.dataclass
class ServedAs:
    """The scripted answers, each claiming to come from `model`."""

    script: ProblemScript
    model: str

    def __call__(self, request: Received) -> Reply:
        return dataclasses.replace(self.script(request), model=self.model)


def test_maps_report_on_two_teams_and_a_served_model(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "data", 4)
    right = {pid: ("B" if row["question_type"] == "multi_choice" else row["answer"]) for pid, row in rows.items()}
    wrong = {pid: "999" for pid in rows}
    config = renamed_scholar_config(tmp_path / "team")
    plans = [("default", [], ProblemScript(right)),
             ("renamed", ["--config", str(config)], ProblemScript(wrong)),
             ("mini", [], ServedAs(ProblemScript(right), "gpt-4o-mini"))]
    folders = []
    for name, extra, script in plans:
        with FakeOpenAI(script) as server:
            env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
            result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / name), "--no-cache",
                               *extra], env=env, cwd=tmp_path)
            assert result.returncode == 0, result.stderr
        folders.append(next((tmp_path / name).glob("eval-*")))
    out = tmp_path / "report"
    result = run_maps(["report", *map(str, folders), "--paper", "--out", str(out)], env=clean_env(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    default_row = "maps (gpt-4o; team interpreter, aligner, scholar, solver, critic)"
    renamed_row = "maps (gpt-4o; team interpreter, aligner, expert, solver, critic)"
    mini_row = "maps (gpt-4o-mini; asked for gpt-4o)"
    table = (out / "table1.md").read_text()
    assert f"| {default_row} | 100.00 [" in table and f"| {renamed_row} | 0.00 [" in table
    assert f"| {mini_row} | 100.00 [" in table
    # Which runs went into which row.
    report = (out / "report.md").read_text()
    for label, folder in zip((default_row, renamed_row, mini_row), folders):
        assert f"| {label} | {folder} | MathVista | 4 | 0 |" in report
    data_out = json.loads((out / "report.json").read_text())
    assert [row["label"] for row in data_out["table1"]] == [default_row, renamed_row, mini_row]
    assert set(data_out["feedback_shares"]["mathvista"]) == {default_row, renamed_row, mini_row}
    assert "expert" in data_out["usage_by_role"][renamed_row] and "scholar" not in data_out["usage_by_role"][renamed_row]
    assert "scholar" in data_out["usage_by_role"][default_row]
    # The paper's GPT-4o MAPS row is compared with what gpt-4o answered, never with gpt-4o-mini's.
    paper = (out / "table1_paper.md").read_text()
    assert next(line for line in paper.splitlines() if f"| {mini_row} |" in line).endswith("| - |")
