"""`maps eval --resume` sees every change to what the steps are shown and to the settings that
change what is sent: an edited question, context or option, a replaced image file (same name,
other pixels), a text-only model (`vision: false`), another reply cap. Each is refused with one
line naming it before any call; the same data copied elsewhere resumes as before, and so does a
manifest that does not record a setting left at its default (a setting a later version adds)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.common import TEST_KEY, clean_env, make_png, run_maps, write_config
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI

Finished = tuple[Path, Path, FakeOpenAI]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Finished]:
    """A finished three-problem MathVista run, the folder of its data, and its live server."""
    home = tmp_path_factory.mktemp("resume-sees-data")
    data, rows = write_mathvista_jsonl(home / "data", 3)
    answers = {pid: "B" if row["question_type"] == "multi_choice" else row["answer"] for pid, row in rows.items()}
    write_config(home / "agents.yaml")
    with FakeOpenAI(ProblemScript(answers)) as server:
        first = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(home / "runs")],
                         env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=home)
        assert first.returncode == 0, first.stderr
        yield next(p for p in (home / "runs").iterdir() if p.name.startswith("eval-")), data.parent, server


def _edit_row(pid: str, change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        path = folder / "testmini.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows:
            if row["pid"] == pid:
                change(row)
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return edit


def _redraw_image(folder: Path) -> None:
    make_png(folder / "images" / "1.png", color="black", mark=9)  # same file name, other pixels


# (case, how the data copy is edited, config changes, what the one error line names)
CASES = [
    ("question", _edit_row("2", lambda row: row.update(question=row["question"] + " Answer in words.")), {},
     "data (questions, contexts, options or images of 1 id, e.g. 2)"),
    ("option", _edit_row("3", lambda row: row["choices"].__setitem__(1, "teal")), {},
     "data (questions, contexts, options or images of 1 id, e.g. 3)"),
    ("image", _redraw_image, {}, "data (questions, contexts, options or images of 1 id, e.g. 1)"),
    ("text-only model", None, {"endpoints.openai.vision": False}, "models.*.vision null → false (5 roles)"),
    ("reply cap", None, {"limits.reply_bytes": 4096}, "limits.reply_bytes null → 4096"),
]


@pytest.mark.parametrize(("case", "edit", "changes", "named"), CASES, ids=[case[0] for case in CASES])
def test_a_resume_over_other_data_or_sending_settings_is_refused_before_any_call(
        finished: Finished, tmp_path: Path, case: str, edit: Callable[[Path], None] | None,
        changes: dict[str, Any], named: str) -> None:
    run, data, server = finished
    copy = tmp_path / "data"
    shutil.copytree(data, copy)
    if edit is not None:
        edit(copy)
    config = write_config(tmp_path / "agents.yaml", **changes)
    manifest = (run / "manifest.json").read_bytes()
    sent = len(server.received)
    resumed = run_maps(["eval", "mathvista", "--data", str(copy / "testmini.jsonl"), "--resume", str(run),
                        "--config", str(config)],
                       env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    errors = [line for line in resumed.stderr.splitlines() if line.startswith("error: ")]
    assert resumed.returncode == 2 and len(errors) == 1 and named in errors[0], resumed.stderr
    assert len(server.received) == sent and (run / "manifest.json").read_bytes() == manifest


def test_the_same_data_elsewhere_and_a_setting_not_recorded_at_its_default_resume_as_before(finished: Finished, tmp_path: Path) -> None:
    run, data, server = finished
    copy = tmp_path / "data"
    shutil.copytree(data, copy)  # the same rows and images, in another folder
    env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
    config = write_config(tmp_path / "agents.yaml")
    unrecorded = tmp_path / "unrecorded"
    shutil.copytree(run, unrecorded)
    manifest = json.loads((unrecorded / "manifest.json").read_text())
    settings = manifest["settings"]
    del settings["limits"]  # settings at their default, as a version that had none of them would record
    for model in settings["models"].values():
        del model["vision"]
    (unrecorded / "manifest.json").write_text(json.dumps(manifest))
    for folder in (run, unrecorded):
        resumed = run_maps(["eval", "mathvista", "--data", str(copy / "testmini.jsonl"), "--resume", str(folder),
                            "--config", str(config)], env=env, cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr


def test_a_custom_rows_context_is_part_of_what_a_resume_compares(tmp_path: Path) -> None:
    rows = [{"id": "k1", "question": "[q:k1] How many?", "context": "Count the red ones.", "answer": "2"}]
    data = tmp_path / "bench.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with FakeOpenAI(ProblemScript({"k1": "2"})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        first = run_maps(["eval", "custom", "--data", str(data), "--runs-dir", str(tmp_path / "runs")], env=env,
                         cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        run = next(p for p in (tmp_path / "runs").iterdir() if p.name.startswith("eval-"))
        data.write_text(json.dumps({**rows[0], "context": "Count the blue ones."}) + "\n")
        resumed = run_maps(["eval", "custom", "--resume", str(run)], env=env, cwd=tmp_path)
    assert resumed.returncode == 2, resumed.stderr
    assert "data (questions, contexts, options or images of 1 id, e.g. k1)" in resumed.stderr
