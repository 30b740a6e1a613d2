"""Benchmarks as a user gets them: replicas of each published schema written in the hub's
download layouts (repo snapshot with data/*.parquet, <config>/<split>/*.parquet, sharded files),
multi-image problems on the wire with their <image_k> tags, an offline machine, and the
answer-format and selection details a user sees."""

from __future__ import annotations

import base64
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image as PILImage

from maps_autogen.benchmarks.emma import TASK as EMMA
from maps_autogen.benchmarks.mathvista import TASK as MATHVISTA
from maps_autogen.benchmarks.olympiadbench import TASK as OLYMPIAD
from maps_autogen.orchestration._role_inputs import interleave_images
from maps_autogen.problem._images import load_image
from maps_autogen.problem._problem import Problem
from maps_autogen.problem._tasks import (
    AnswerFormats,
    EvalItem,
    Subset,
    find_subsets,
    load_answer_formats,
    spread_limit,
)
from tests.helpers.benchmark_replicas import hub_parquet
from tests.helpers.common import TEST_KEY, clean_env, make_png, run_maps
from tests.helpers.eval_fixtures import ProblemScript
from tests.helpers.eval_tasks import (
    EMMA_FEATURES,
    MV_FEATURES,
    MV_ROWS,
    OB_FEATURES,
    emma_row,
    image_widths,
    items,
    ob_row,
)
from tests.helpers.fake_openai import FakeOpenAI, Received

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def formats() -> AnswerFormats:
    return load_answer_formats(REPO / "maps_autogen" / "settings" / "defaults" / "prompts" / "answer_formats.yaml")




# ---- the hub's download layouts ----------------------------------------------------------------


def test_mathvista_repo_snapshot_with_sharded_data_folder(tmp_path: Path, formats: AnswerFormats) -> None:
    snapshot = tmp_path / "MathVista"
    # As `huggingface-cli download AI4Math/MathVista --repo-type dataset` leaves it: the testmini
    # split in shards under data/, the test split beside it (which must not be read).
    hub_parquet(snapshot / "data" / "testmini-00000-of-00001-725687bf7a18d64b.parquet", MV_ROWS, MV_FEATURES, shards=2)
    hub_parquet(snapshot / "data" / "test-00000-of-00001-aaaa.parquet", [dict(MV_ROWS[0], pid="999")], MV_FEATURES)
    (snapshot / "README.md").write_text("---\nconfigs: []\n---\n")
    loaded = items(MATHVISTA, list(MATHVISTA.rows(MATHVISTA.subsets, snapshot)), formats)
    assert sorted(loaded) == ["1", "2", "3"]
    assert [image_widths(loaded[pid]) for pid in ("1", "2", "3")] == [[91], [92], [93]]


def test_olympiadbench_config_split_folders(tmp_path: Path, formats: AnswerFormats) -> None:
    # The hub's parquet conversion: <config>/<split>/0000.parquet, one folder per config.
    hub_parquet(tmp_path / "OE_MM_maths_en_COMP" / "train" / "0000.parquet",
                [ob_row(1601, ["$1$"], "Numerical", widths=(41, 42), question="In <image_1> and <image_2>, find $r$."),
                 ob_row(1602, ["$2$"], "Numerical")], OB_FEATURES)
    hub_parquet(tmp_path / "OE_MM_physics_en_COMP" / "train" / "0000.parquet",
                [ob_row(3001, ["$3$"], "Numerical", subject="Physics")], OB_FEATURES)
    chosen = find_subsets(OLYMPIAD, ("MECO", "PECO"))
    loaded = items(OLYMPIAD, list(OLYMPIAD.rows(chosen, tmp_path)), formats)
    assert {pid: item.subset for pid, item in loaded.items()} == {"1601": "Math_En_COMP", "1602": "Math_En_COMP", "3001": "Physics_En_COMP"}
    assert image_widths(loaded["1601"]) == [41, 42]
    # The split folder itself, passed directly, is one config's data.
    direct = list(OLYMPIAD.rows(find_subsets(OLYMPIAD, ("PECO",)), tmp_path / "OE_MM_physics_en_COMP" / "train"))
    assert [row.fields["id"] for row in direct] == [3001]


def emma_multi_image_row(pid: str, subject: str = "Math") -> dict[str, Any]:
    """An EMMA problem whose options are images: question image 51 px wide, options 52..55."""
    return emma_row(pid, subject, "Multiple Choice", f"[q:{pid}] <image_1> Which option shows the ray that <image_1> reflects?",
                    ["<image_2>", "<image_3>", "<image_4>", "<image_5>"], "B", (51, 52, 53, 54, 55))


def write_emma_snapshot(root: Path) -> Path:
    """EMMA-mini as downloaded: <config>/test-0000k-of-0000n.parquet per subject (Math sharded)."""
    math_rows = [emma_multi_image_row("m1"), emma_row("m2", "Math", "Open-ended", "[q:m2] How long is <image_1>?", None, "3", (61,))]
    hub_parquet(root / "Math" / "test-00000-of-00001.parquet", math_rows, EMMA_FEATURES, shards=2)
    hub_parquet(root / "Physics" / "test-00000-of-00001.parquet", [emma_multi_image_row("p1", "Physics")], EMMA_FEATURES)
    return root


def test_emma_config_folders_with_sharded_files(tmp_path: Path, formats: AnswerFormats) -> None:
    snapshot = write_emma_snapshot(tmp_path / "EMMA-mini")
    loaded = items(EMMA, list(EMMA.rows(find_subsets(EMMA, ("Math", "Physics")), snapshot)), formats)
    assert {pid: item.subset for pid, item in loaded.items()} == {"m1": "Math", "m2": "Math", "p1": "Physics"}
    assert image_widths(loaded["m1"]) == [51, 52, 53, 54, 55]


def test_a_folder_without_the_split_names_the_layouts(tmp_path: Path) -> None:
    hub_parquet(tmp_path / "data" / "test-00000-of-00001.parquet", MV_ROWS, MV_FEATURES)
    done = run_maps(["eval", "mathvista", "--data", str(tmp_path)], env=clean_env(OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "testmini" in done.stderr and "docs/benchmarks.md" in done.stderr


# ---- multi-image problems on the wire ----------------------------------------------------------


def images_with_preceding_text(request: Received) -> list[tuple[str, int]]:
    """(the text part right before each image part, the image's width), in request order."""
    shown, before = [], ""
    for message in request.messages:
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if part["type"] == "text":
                before = part["text"]
            else:
                data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                shown.append((before, PILImage.open(io.BytesIO(data)).width))
                before = ""
    return shown


def joined_text(request: Received) -> str:
    """The user message's text parts joined as they read (images left out)."""
    texts = []
    for message in request.messages:
        content = message["content"]
        if message["role"] == "user":
            texts += [content] if isinstance(content, str) else [part["text"] for part in content if part["type"] == "text"]
    return "".join(texts)


def assert_tagged_in_order(request: Received) -> None:
    shown = images_with_preceding_text(request)
    assert [width for _, width in shown] == [51, 52, 53, 54, 55]
    assert shown[0][0].endswith("<image_1>")
    for number, letter in zip(range(2, 6), "ABCD"):  # each option image right under its letter
        assert shown[number - 1][0].endswith(f"{letter}. <image_{number}>"), shown[number - 1][0][-80:]
    assert "<image_1> Which option shows the ray that <image_1> reflects?" in joined_text(request)  # placeholders kept


@pytest.mark.parametrize("method", ["maps", "direct", "cot"])
def test_multi_image_emma_problem_on_the_wire(tmp_path: Path, method: str) -> None:
    snapshot = write_emma_snapshot(tmp_path / "EMMA-mini")
    with FakeOpenAI(ProblemScript({"m1": "B"})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        done = run_maps(["eval", "emma", "--data", str(snapshot), "--subset", "Math", "--runs-dir", str(tmp_path / "runs"),
                         "--method", method, "--concurrency", "1", "--quiet"], env=env, cwd=tmp_path)
        received = list(server.received)
    assert done.returncode == 0, done.stderr
    with_images = [request for request in received if len(request.image_urls()) == 5]  # m1; m2 has one image
    assert [request.role for request in with_images] == ["interpreter" if method == "maps" else method]
    assert_tagged_in_order(with_images[0])
    if method == "maps":  # the Interpreter knows what each image is, and is told not to solve
        assert "not for you to solve" in joined_text(with_images[0])
        # The Solver answers a multiple-choice problem with one of its option letters.
        solver = next(r for r in received if r.role == "solver" and "[q:m1]" in r.user_text())
        schema = solver.body["response_format"]["json_schema"]["schema"]
        assert schema["properties"]["final_answer"]["enum"] == ["A", "B", "C", "D"]


def test_images_the_text_never_names_follow_it_after_their_tags(tmp_path: Path) -> None:
    images = [load_image(str(make_png(tmp_path / f"{n}.png", size=(40 + n, 20))), max_side=64) for n in (1, 2)]
    parts = interleave_images("Which is larger?", images, ("<image_2>", "neither"))
    assert [part["type"] for part in parts] == ["text", "image_url", "text", "image_url"]
    assert parts[0]["text"] == "Which is larger?\n\n<image_1>" and parts[2]["text"] == "A. <image_2>"


# ---- offline ------------------------------------------------------------------------------------


def test_offline_eval_fails_at_once_with_one_line(tmp_path: Path) -> None:
    # A hub endpoint nobody listens on: the probe is refused at once, so no retries follow.
    env = clean_env(OPENAI_API_KEY=TEST_KEY, HF_ENDPOINT="http://127.0.0.1:9", HF_HOME=str(tmp_path / "hf"))
    done = run_maps(["eval", "emma", "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path, timeout=30)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--data" in lines[0] and "HF_HUB_OFFLINE" in lines[0] and "luckychao/EMMA-mini" in lines[0], done.stderr
    assert not (tmp_path / "runs").exists()
    asked = run_maps(["eval", "emma", "--runs-dir", str(tmp_path / "runs")], env={**env, "HF_HUB_OFFLINE": "1"}, cwd=tmp_path, timeout=30)
    assert asked.returncode == 2 and len(asked.stderr.strip().splitlines()) == 1 and "HF_HUB_OFFLINE is set" in asked.stderr


_LOG_TWICE_PROBE = """
import logging
from maps_autogen.cli._main import _configure_logging
from maps_autogen.problem._hub import import_datasets
_configure_logging()
import_datasets()
logging.getLogger("datasets.load").warning("from datasets")
logging.getLogger("huggingface_hub.utils._http").warning("from the hub client")
"""


def test_library_warnings_are_printed_once() -> None:
    done = subprocess.run([sys.executable, "-c", _LOG_TWICE_PROBE], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["WARNING: from datasets", "WARNING: from the hub client"]


# ---- what the user sees of a row -----------------------------------------------------------------


def test_precision_is_printed_as_a_whole_number_of_places(formats: AnswerFormats) -> None:
    def instruction(precision: Any) -> str:
        return MATHVISTA.answer_format({"question_type": "free_form", "answer_type": "float", "precision": precision}, formats)

    assert "rounded to 1 decimal place." in instruction(1.0)
    assert "rounded to 2 decimal places." in instruction(2.0)
    assert "rounded" not in instruction(None) and "None" not in instruction(None)


def test_images_are_named_by_their_real_format(tmp_path: Path, formats: AnswerFormats) -> None:
    jpeg, png = io.BytesIO(), io.BytesIO()
    PILImage.new("RGB", (30, 20), "red").save(jpeg, format="JPEG")
    PILImage.new("RGB", (30, 20), "blue").save(png, format="PNG")
    rows = [dict(MV_ROWS[1], pid="7", decoded_image={"bytes": jpeg.getvalue(), "path": "7.png"}),
            dict(MV_ROWS[1], pid="8", decoded_image={"bytes": png.getvalue(), "path": "8.png"})]
    folder = tmp_path / "snapshot"
    hub_parquet(folder / "data" / "testmini-00000-of-00001.parquet", rows, MV_FEATURES)
    loaded = items(MATHVISTA, list(MATHVISTA.rows(MATHVISTA.subsets, folder)), formats)
    assert [(image.name, image.mime) for image in loaded["7"].load_problem().images] == [("7.jpg", "image/jpeg")]
    assert [(image.name, image.mime) for image in loaded["8"].load_problem().images] == [("8.png", "image/png")]


def _item(pid: str, subset: str) -> EvalItem:
    return EvalItem(pid=pid, subset=subset, load_problem=lambda: Problem("q"), record={}, gold="")


def test_limit_spreads_over_subsets_evenly_and_deterministically() -> None:
    subsets = (Subset("a", "A", 6, "a"), Subset("b", "B", 3, "b"), Subset("c", "C", 1, "c"))
    pool = [_item(f"a{n}", "a") for n in range(6)] + [_item(f"b{n}", "b") for n in range(3)] + [_item("c0", "c")]
    assert [item.pid for item in spread_limit(pool, subsets, 3)] == ["a3", "b1", "c0"]
    assert [item.pid for item in spread_limit(pool, subsets, 6)] == ["a1", "a3", "a5", "b0", "b2", "c0"]
    assert [item.pid for item in spread_limit(pool, subsets, 8)] == ["a0", "a2", "a3", "a5", "b0", "b1", "b2", "c0"]
    assert spread_limit(pool, subsets, 50) == pool
