"""Eval tasks end to end on small local copies written in each benchmark's published schema.

Every benchmark is written the three ways `--data` accepts (a `save_to_disk` folder with
`datasets.Image()` features, parquet, JSONL with image files beside it), loaded through
`TASK.rows` / `TASK.to_item`, and checked for subsets, pids, images, answer-format texts and a
scoring round trip: `render_response(gold)` must be judged correct by the official rules and a
wrong answer incorrect.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datasets import Features
from PIL import Image as PILImage

from maps_autogen._util._errors import DataError
from maps_autogen.benchmarks import get_benchmark
from maps_autogen.benchmarks.emma import TASK as EMMA
from maps_autogen.benchmarks.mathvista import TASK as MATHVISTA
from maps_autogen.benchmarks.olympiadbench import TASK as OLYMPIAD
from maps_autogen.problem._tasks import AnswerFormats, EvalItem, find_subsets
from maps_autogen.scoring._score import score_record
from tests.helpers.eval_tasks import (
    EMMA_FEATURES,
    EMMA_IMAGES,
    MAX_SIDE,
    MV_FEATURES,
    MV_ROWS,
    OB_FEATURES,
    OB_IMAGES,
    REPO,
    emma_row,
    formats,  # noqa: F401 - the answer formats fixture
    image_widths,
    items,
    ob_row,
    write_jsonl,
)

# ---- writing local copies ---------------------------------------------------------------------




def write_saved(path: Path, rows: list[dict[str, Any]], features: Features) -> Path:
    datasets.Dataset.from_list(rows, features=features).save_to_disk(str(path))
    return path


def write_parquet(path: Path, rows: list[dict[str, Any]], features: Features) -> Path:
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(path))
    return path








def verdict(benchmark: str, item: EvalItem, response: str) -> bool:
    return score_record(benchmark, {**item.record, "response": response}).correct


# ---- OlympiadBench ----------------------------------------------------------------------------





@pytest.fixture(scope="module")
def olympiad_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder, one entry per config, each config in another layout."""
    root = tmp_path_factory.mktemp("olympiadbench")
    write_saved(root / "OE_MM_maths_en_COMP", [
        ob_row(1601, ["$\\frac{1}{2}$"], "Numerical", widths=(41, 42), question="In <image_1> and <image_2>, find $r$."),
        ob_row(1602, ["$2 \\sqrt{3}$"], "Expression"),
        ob_row(1603, ["$(0, 1]$"], "Interval"),
        ob_row(1604, ["$1$, $2$"], "Numerical", multiple=True),
        ob_row(1605, ["$(1, 2)$"], "Tuple"),
    ], OB_FEATURES)
    write_parquet(root / "OE_MM_maths_zh_CEE.parquet", [
        ob_row(2231, ["$4$"], "Numerical", language="Chinese", question="如图<image_1>，求$x$。"),
        ob_row(2232, ["$(-\\infty, 1)$"], "Interval", language="Chinese"),
    ], OB_FEATURES)
    write_jsonl(root / "OE_MM_physics_en_COMP.jsonl", [
        ob_row(3001, ["$3.0$"], "Numerical", subject="Physics", unit="m/s", error="0.1",
               context="A block slides down the incline of <image_1>.", question="Find its speed."),
        ob_row(3002, ["$L=\\frac{a}{b}$ , $1.0 \\cdot 10^{6}$"], "Expression,Numerical", subject="Physics",
               multiple=True, unit=",$\\frac{\\mathrm{J}}{\\mathrm{kg}}$", error=",1e5", widths=(None, 44)),
    ], OB_IMAGES)
    write_jsonl(root / "OE_MM_physics_zh_CEE.jsonl", [
        ob_row(4001, ["$5$"], "Numerical", subject="Physics", language="Chinese", unit="米"),
    ], OB_IMAGES)
    return root


@pytest.fixture(scope="module")
def olympiad_items(olympiad_data: Path, formats: AnswerFormats) -> dict[str, EvalItem]:
    chosen = find_subsets(OLYMPIAD, ("MECO", "MZCE", "PECO", "PZCE"))
    return items(OLYMPIAD, list(OLYMPIAD.rows(chosen, olympiad_data)), formats)


def test_olympiadbench_subsets_follow_table_1() -> None:
    assert get_benchmark("olympiadbench").task is OLYMPIAD
    assert [(s.column, s.name, s.paper_size, s.source, s.default_sample) for s in OLYMPIAD.subsets] == [
        ("MECO", "Math_En_COMP", 150, "OE_MM_maths_en_COMP", None),
        ("MZCE", "Math_Zh_CEE", 300, "OE_MM_maths_zh_CEE", 300),
        ("MZCO", "Math_Zh_COMP", 56, "OE_MM_maths_zh_COMP", None),
        ("PECO", "Physics_En_COMP", 456, "OE_MM_physics_en_COMP", None),
        ("PZCE", "Physics_Zh_CEE", 300, "OE_MM_physics_zh_CEE", 300),
    ]
    assert (OLYMPIAD.hub_id, OLYMPIAD.split) == ("Hothan/OlympiadBench", "train")


def test_olympiadbench_rows_from_every_layout(olympiad_items: dict[str, EvalItem]) -> None:
    subsets = {pid: item.subset for pid, item in olympiad_items.items()}
    assert subsets == {
        "1601": "Math_En_COMP", "1602": "Math_En_COMP", "1603": "Math_En_COMP", "1604": "Math_En_COMP",
        "1605": "Math_En_COMP", "2231": "Math_Zh_CEE", "2232": "Math_Zh_CEE", "3001": "Physics_En_COMP",
        "3002": "Physics_En_COMP", "4001": "Physics_Zh_CEE",
    }
    assert list(olympiad_items)[:5] == ["1601", "1602", "1603", "1604", "1605"]  # subset order, then row order


def test_olympiadbench_images_question_and_context(olympiad_items: dict[str, EvalItem]) -> None:
    first = olympiad_items["1601"]
    assert image_widths(first) == [41, 42]  # saved_to_disk
    assert first.load_problem().question == "In <image_1> and <image_2>, find $r$."
    assert image_widths(olympiad_items["2231"]) == [41]  # parquet
    physics = olympiad_items["3001"]
    assert image_widths(physics) == [41]  # JSONL with a relative image path
    assert physics.load_problem().context == "A block slides down the incline of <image_1>."
    assert physics.load_problem().question == "Find its speed."
    # image_1 empty, image_2 present: shown first, so it is the first image.
    assert image_widths(olympiad_items["3002"]) == [44]


def test_olympiadbench_record_gold_and_metadata(olympiad_items: dict[str, EvalItem]) -> None:
    item = olympiad_items["3002"]
    assert item.record == {
        "id": "3002", "final_answer": ["$L=\\frac{a}{b}$ , $1.0 \\cdot 10^{6}$"], "error": ",1e5",
        "answer_type": "Expression,Numerical", "language": "English", "unit": ",$\\frac{\\mathrm{J}}{\\mathrm{kg}}$",
        "is_multiple_answer": True, "subset": "Physics_En_COMP",
    }
    assert item.gold == "$L=\\frac{a}{b}$ , $1.0 \\cdot 10^{6}$"
    assert item.metadata == {"answer_type": "Expression,Numerical", "difficulty": "Competition", "subfield": "Geometry",
                             "subject": "Physics", "language": "English", "question_type": "Open-ended", "choices": 0}
    assert olympiad_items["2231"].record["language"] == "Chinese"


def test_olympiadbench_answer_formats(olympiad_items: dict[str, EvalItem], formats: AnswerFormats) -> None:
    def expected(case: str, **variables: str) -> str:
        return formats.render("olympiadbench", case, **variables)

    several = " " + expected("multiple")
    assert olympiad_items["1601"].load_problem().answer_format == expected("Numerical", multiple="")
    assert olympiad_items["1602"].load_problem().answer_format == expected("Expression", multiple="")
    assert olympiad_items["1603"].load_problem().answer_format == expected("Interval", multiple="")
    assert olympiad_items["1604"].load_problem().answer_format == expected("Numerical", multiple=several)
    assert "several answers" in olympiad_items["1604"].load_problem().answer_format
    assert olympiad_items["1605"].load_problem().answer_format == expected("Tuple", multiple="")
    assert olympiad_items["3001"].load_problem().answer_format == expected("Numerical", multiple="") + " " + expected("unit", unit="m/s")
    mixed = olympiad_items["3002"].load_problem().answer_format
    units = expected("units", units=expected("no_unit") + "; $\\frac{\\mathrm{J}}{\\mathrm{kg}}$")
    assert mixed == expected("mixed", kinds="Expression, Numerical") + " " + units
    assert olympiad_items["4001"].load_problem().answer_format.endswith(expected("unit", unit="米"))


@pytest.mark.parametrize(
    ("pid", "right", "wrong"),
    [
        ("1601", "0.5", "\\frac{1}{3}"),  # Numerical
        ("1602", "\\sqrt{12}", "3\\sqrt{2}"),  # Expression, sympy-equivalent rewrite
        ("1603", "(0, 1]", "[0, 1]"),  # Interval: brackets matter
        ("1604", "2 and 1", "1, 3"),  # several answers, any order
        ("1605", "$(1, 2)$", "(2, 1)"),  # Tuple
        ("3001", "$3.05$ m/s", "3.5"),  # tolerance from `error`; units dropped
        ("3002", "\\boxed{L=\\frac{a}{b}}, \\boxed{1.0 \\times 10^{6}}", "L=\\frac{a}{b}, 2 \\times 10^{6}"),
        ("2231", "4", "5"),  # Chinese
        ("2232", "$(-\\infty, 1)$", "(-\\infty, 1]"),  # Chinese interval
        ("4001", "\\boxed{5}", "6"),
    ],
)
def test_olympiadbench_round_trip(olympiad_items: dict[str, EvalItem], pid: str, right: str, wrong: str) -> None:
    item = olympiad_items[pid]
    assert verdict("olympiadbench", item, OLYMPIAD.render_response(item.gold, item))
    assert verdict("olympiadbench", item, OLYMPIAD.render_response(right, item))
    assert not verdict("olympiadbench", item, OLYMPIAD.render_response(wrong, item))


def test_olympiadbench_response_text(olympiad_items: dict[str, EvalItem]) -> None:
    english, chinese = olympiad_items["1601"], olympiad_items["2231"]
    assert OLYMPIAD.render_response("$\\frac{1}{2}$", english) == "So the final answer is \\boxed{\\frac{1}{2}}."
    assert OLYMPIAD.render_response("\\boxed{4}", chinese) == "所以最终答案是\\boxed{4}。"
    # Neither a box nor the Solver's own final-answer sentence is wrapped twice.
    assert OLYMPIAD.render_response("So the final answer is \\boxed{\\frac{1}{2}}.", english) == "So the final answer is \\boxed{\\frac{1}{2}}."
    several = OLYMPIAD.render_response("1\n2", olympiad_items["1604"])
    assert several == "So the final answer is \\boxed{1}, \\boxed{2}."
    assert "\n" not in OLYMPIAD.render_response("x =\n\\frac{1}{2}", english)


def test_olympiadbench_one_file_for_two_configs_it_cannot_split(tmp_path: Path) -> None:
    rows = [ob_row(5001, ["$1$"], "Numerical", language="Chinese"), ob_row(5002, ["$2$"], "Numerical", language="Chinese")]
    data = write_jsonl(tmp_path / "mixed.jsonl", rows, OB_IMAGES)
    assert [r.fields["id"] for r in OLYMPIAD.rows(find_subsets(OLYMPIAD, ("MZCE",)), data)] == [5001, 5002]
    # English configs keep none of these Chinese rows; the two Chinese maths configs are ambiguous.
    assert list(OLYMPIAD.rows(find_subsets(OLYMPIAD, ("MECO",)), data)) == []
    with pytest.raises(DataError, match="one entry per config"):
        list(OLYMPIAD.rows(find_subsets(OLYMPIAD, ("MZCE", "MZCO")), data))


def test_olympiadbench_missing_config_entry_is_a_data_error(olympiad_data: Path) -> None:
    with pytest.raises(DataError, match="OE_MM_maths_zh_COMP"):
        list(OLYMPIAD.rows(find_subsets(OLYMPIAD, ("MZCO",)), olympiad_data))


# ---- EMMA -------------------------------------------------------------------------------------





def emma_rows(subject: str, prefix: str) -> list[dict[str, Any]]:
    """Per subject: option images, text options with a lower-case answer, an open question."""
    return [
        emma_row(f"{prefix}_1", subject, "Multiple Choice", "<image_1> Which diagram shows the reflected ray?",
                 ["<image_2>", "<image_3>", "<image_4>", "<image_5>"], "B", (51, 52, 53, 54, 55)),
        emma_row(f"{prefix}_2", subject, "Multiple choice", "What happens to the block in <image_1>?",
                 ["it stays", "it slides left", "it slides right"], "c", (61,)),
        emma_row(f"{prefix}_3", subject, "Open-ended", "How many bonds are there in <image_1>?", [], "35", (71,)),
        emma_row(f"{prefix}_4", subject, "Open-ended", "What fraction of <image_1> is shaded?", None, "0.5", (81,)),
    ]


def write_raw_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Parquet as pyarrow writes it without `datasets` metadata: images as {bytes, path} structs."""
    import io

    converted = []
    for row in rows:
        row = dict(row)
        for field in EMMA_IMAGES:
            if isinstance(row[field], PILImage.Image):
                buffer = io.BytesIO()
                row[field].save(buffer, format="PNG")
                row[field] = {"bytes": buffer.getvalue(), "path": None}
        converted.append(row)
    pq.write_table(pa.Table.from_pylist(converted), path)
    return path


@pytest.fixture(scope="module")
def emma_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("emma")
    write_saved(root / "Math", emma_rows("Math", "Math"), EMMA_FEATURES)
    write_raw_parquet(root / "Physics.parquet", emma_rows("Physics", "phy"))
    write_jsonl(root / "Chemistry.jsonl", emma_rows("Chemistry", "chem"), EMMA_IMAGES)
    return root


@pytest.fixture(scope="module")
def emma_items(emma_data: Path, formats: AnswerFormats) -> dict[str, EvalItem]:
    return items(EMMA, list(EMMA.rows(EMMA.subsets, emma_data)), formats)


def test_emma_subsets_follow_table_1() -> None:
    assert get_benchmark("emma").task is EMMA
    assert [(s.name, s.column, s.paper_size, s.source) for s in EMMA.subsets] == [
        ("Math", "Math", 100, "Math"), ("Physics", "Phy.", 100, "Physics"), ("Chemistry", "Chem.", 100, "Chemistry")]
    assert (EMMA.hub_id, EMMA.split) == ("luckychao/EMMA-mini", "test")


def test_emma_rows_from_every_layout(emma_items: dict[str, EvalItem]) -> None:
    assert {pid: item.subset for pid, item in emma_items.items()} == {
        **{f"Math_{n}": "Math" for n in range(1, 5)}, **{f"phy_{n}": "Physics" for n in range(1, 5)},
        **{f"chem_{n}": "Chemistry" for n in range(1, 5)},
    }


@pytest.mark.parametrize("prefix", ["Math", "phy", "chem"])
def test_emma_question_and_option_images(emma_items: dict[str, EvalItem], prefix: str) -> None:
    item = emma_items[f"{prefix}_1"]
    assert image_widths(item) == [51, 52, 53, 54, 55]  # question image, then each option image
    assert item.load_problem().question.startswith("<image_1> ")
    assert item.load_problem().options == ("<image_2>", "<image_3>", "<image_4>", "<image_5>")
    assert item.record["gt_content"] == "<image_3>"
    assert image_widths(emma_items[f"{prefix}_3"]) == [71]
    assert emma_items[f"{prefix}_3"].load_problem().options == ()


def test_emma_records_formats_and_metadata(emma_items: dict[str, EvalItem], formats: AnswerFormats) -> None:
    choice, text_choice, open_item = emma_items["phy_1"], emma_items["phy_2"], emma_items["phy_3"]
    assert choice.load_problem().answer_format == formats.render("emma", "multiple_choice")
    assert text_choice.load_problem().answer_format == formats.render("emma", "multiple_choice")
    assert open_item.load_problem().answer_format == formats.render("emma", "open")
    assert text_choice.record == {"pid": "phy_2", "type": "Multiple choice", "options": ["it stays", "it slides left", "it slides right"],
                                  "answer": "c", "gt_content": "it slides right", "subset": "Physics"}
    assert text_choice.gold == "C"
    # the task names the option as the scorer does for a record without gt_content (one rule)
    from maps_autogen.benchmarks.emma._scorer import option_text
    assert option_text({k: v for k, v in text_choice.record.items() if k != "gt_content"}) == "it slides right"
    assert open_item.record["gt_content"] == "35" and open_item.gold == "35"
    assert open_item.metadata == {"type": "Open-ended", "category": "Path Tracing", "task": "Physics task", "source": "EMMA", "subject": "Physics", "choices": 0}


@pytest.mark.parametrize(
    ("pid", "right", "wrong"),
    [
        ("Math_1", "(B)", "C"),  # option images: a letter
        ("phy_2", "it slides right", "A"),  # lower-case answer; the option text maps to its letter
        ("chem_2", "\\boxed{c}", "b"),
        ("phy_3", "$35$", "36"),  # open answer
        ("chem_4", "\\frac{1}{2}", "\\frac{1}{3}"),  # open answer, LaTeX equal to the value
    ],
)
def test_emma_round_trip(emma_items: dict[str, EvalItem], pid: str, right: str, wrong: str) -> None:
    item = emma_items[pid]
    assert verdict("emma", item, EMMA.render_response(item.gold, item))
    assert verdict("emma", item, EMMA.render_response(right, item))
    assert not verdict("emma", item, EMMA.render_response(wrong, item))


def test_emma_response_text(emma_items: dict[str, EvalItem]) -> None:
    assert EMMA.render_response("B", emma_items["Math_1"]) == "The answer is \\boxed{B}."
    assert EMMA.render_response("\\boxed{B}", emma_items["Math_1"]) == "The answer is \\boxed{B}."
    assert EMMA.render_response("B. <image_3>", emma_items["Math_1"]) == "The answer is \\boxed{B}."
    assert EMMA.render_response("(C) it slides right", emma_items["phy_2"]) == "The answer is \\boxed{C}."
    assert EMMA.render_response("35", emma_items["Math_3"]) == "The answer is \\boxed{35}."


def test_emma_one_file_with_every_subject(tmp_path: Path, formats: AnswerFormats) -> None:
    rows = emma_rows("Math", "Math")[:1] + emma_rows("Physics", "phy")[:1] + emma_rows("Chemistry", "chem")[:1]
    data = write_jsonl(tmp_path / "emma.jsonl", rows, EMMA_IMAGES)
    loaded = list(EMMA.rows(EMMA.subsets, data))
    assert [(row.subset, row.fields["pid"]) for row in loaded] == [("Math", "Math_1"), ("Physics", "phy_1"), ("Chemistry", "chem_1")]
    assert image_widths(EMMA.to_item(loaded[0], prompts=formats, max_side=MAX_SIDE)) == [51, 52, 53, 54, 55]


# ---- MathVista --------------------------------------------------------------------------------







def mv_jsonl(path: Path) -> Path:
    """The hub's JSONL form: `image` is a path relative to the file, no decoded image."""
    (path.parent / "images").mkdir(exist_ok=True)
    rows = []
    for row in MV_ROWS:
        row["decoded_image"].save(path.parent / row["image"], format="JPEG")
        rows.append({**row, "decoded_image": None})
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("layout", ["saved", "parquet", "jsonl"])
def test_mathvista_from_every_layout(tmp_path: Path, formats: AnswerFormats, layout: str) -> None:
    data = {
        "saved": lambda: write_saved(tmp_path / "testmini", MV_ROWS, MV_FEATURES),
        "parquet": lambda: write_parquet(tmp_path / "testmini.parquet", MV_ROWS, MV_FEATURES),
        "jsonl": lambda: mv_jsonl(tmp_path / "testmini.jsonl"),
    }[layout]()
    loaded = items(MATHVISTA, list(MATHVISTA.rows(MATHVISTA.subsets, data)), formats)
    assert {pid: item.subset for pid, item in loaded.items()} == {"1": "math", "2": "general", "3": "math"}
    assert [image_widths(loaded[pid]) for pid in ("1", "2", "3")] == [[91], [92], [93]]
    assert loaded["1"].load_problem().options == ("35°", "55°", "125°", "145°")
    assert loaded["1"].load_problem().answer_format == formats.render("mathvista", "multi_choice")
    assert loaded["2"].load_problem().answer_format == formats.render("mathvista", "integer") + " " + formats.render("mathvista", "unit", unit="cm")
    assert "rounded to 2 decimal places." in loaded["3"].load_problem().answer_format and "2.0" not in loaded["3"].load_problem().answer_format
    only_general = list(MATHVISTA.rows(find_subsets(MATHVISTA, ("general",)), data))
    assert [row.fields["pid"] for row in only_general] == ["2"]
    for pid, right, wrong in (("1", "D", "A"), ("2", "7", "8"), ("3", "1.45", "1.5")):
        item = loaded[pid]
        assert verdict("mathvista", item, MATHVISTA.render_response(item.gold, item))
        assert verdict("mathvista", item, MATHVISTA.render_response(right, item))
        assert not verdict("mathvista", item, MATHVISTA.render_response(wrong, item))


# ---- the hub path without a network -----------------------------------------------------------

_OFFLINE_PROBE = """
import json, sys, time
from maps_autogen._util._errors import DataError
from maps_autogen.benchmarks import get_benchmark
out = {}
for name in ("olympiadbench", "emma", "mathvista"):
    task = get_benchmark(name).task
    started = time.monotonic()
    try:
        list(task.rows(task.subsets[:1], None))
        out[name] = {"error": None}
    except DataError as error:
        out[name] = {"error": str(error), "seconds": time.monotonic() - started}
print(json.dumps(out))
"""


def test_hub_without_network_is_a_clean_data_error(tmp_path: Path) -> None:
    # A fresh interpreter: huggingface_hub reads HF_HUB_OFFLINE once, when it is imported, so
    # setting it in this (already importing) test process would not take effect. An empty
    # HF_HOME keeps a developer's cached copy of the real data sets out of the test.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "HF_DATASETS_OFFLINE": "1"}
    env.pop("HF_DATASETS_CACHE", None)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _OFFLINE_PROBE], env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert time.monotonic() - started < 60
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for name, result in results.items():
        message = result["error"]
        assert message is not None, f"{name}: rows loaded without a network"
        assert "\n" not in message and "--data" in message, message
        assert result["seconds"] < 10, f"{name} took {result['seconds']:.1f}s to fail"
