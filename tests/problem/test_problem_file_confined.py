"""A problem file is untrusted: the image files it names stay inside its folder, as a data set
row's do. An absolute path, `~`, `..` or a symlink leading out is refused with one line naming
the file, the image and the flag, before anything is read or sent; `--allow-outside-paths`
(`allow_outside_paths=` in the API) lets a trusted file through. A path typed on the command
line is the user's own and is read as given."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import maps_autogen
from maps_autogen._util._errors import ProblemError
from tests.helpers.common import TEST_KEY, clean_env, make_png, run_maps
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply


def problem_with_image(folder: Path, image: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "problem.yaml"
    path.write_text(f"question: Which bar is tallest?\nimages:\n  - {image!r}\n")
    return path


@pytest.fixture
def private_picture(tmp_path: Path) -> Path:
    """A picture outside the problem's folder that must never be sent."""
    (tmp_path / "private").mkdir()
    return make_png(tmp_path / "private" / "scan.png", color="red", mark=3)


def _outside_references(tmp_path: Path, private_picture: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / "docs").mkdir(parents=True)
    os.symlink(private_picture, home / "docs" / "scan.png")
    inside = tmp_path / "problems"
    inside.mkdir()
    os.symlink(private_picture.parent, inside / "shared")  # a folder link inside that leads out
    return {
        "absolute": str(private_picture),
        "home": "~/docs/scan.png",
        "parent": "../private/scan.png",
        "symlink": "shared/scan.png",
    }


@pytest.mark.parametrize("kind", ["absolute", "home", "parent", "symlink"])
def test_an_image_outside_the_problem_files_folder_is_refused_unless_allowed(
        tmp_path: Path, private_picture: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    reference = _outside_references(tmp_path, private_picture)[kind]
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = problem_with_image(tmp_path / "problems", reference)
    with pytest.raises(ProblemError) as refused:
        maps_autogen.load_problem(path)
    message = str(refused.value)
    assert f"{path}: image 1 refers to '{reference}', which is outside the problem file's folder" in message
    assert "--allow-outside-paths" in message
    allowed = maps_autogen.load_problem(path, allow_outside_paths=True)
    assert allowed.images[0].data == maps_autogen.Problem("q", images=[private_picture]).images[0].data


def test_maps_solve_refuses_before_any_call_and_sends_the_file_when_allowed(
        tmp_path: Path, private_picture: Path) -> None:
    path = problem_with_image(tmp_path / "problems", str(private_picture))
    images_sent: list[int] = []

    def script(request: Received) -> Reply:
        images_sent.append(sum(1 for m in request.messages if isinstance(m.get("content"), list)
                               for part in m["content"] if part.get("type") == "image_url"))
        return Reply('{"final_answer": "A", "reasoning": "tallest"}' if request.role == "solver" else "notes")

    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        refused = run_maps(["solve", "--problem", str(path), "--runs-dir", str(tmp_path / "runs")], env=env,
                           cwd=tmp_path)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1 and "outside the problem file's folder" in refused.stderr
        assert not server.received and not (tmp_path / "runs").exists()
        allowed = run_maps(["solve", "--problem", str(path), "--allow-outside-paths", "--quiet",
                            "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
    assert allowed.returncode in (0, 1), allowed.stderr
    assert max(images_sent) == 1


def test_an_image_beside_the_file_and_a_typed_path_are_read(tmp_path: Path, private_picture: Path) -> None:
    (tmp_path / "problems" / "figures").mkdir(parents=True)
    make_png(tmp_path / "problems" / "figures" / "bars.png")
    beside = maps_autogen.load_problem(problem_with_image(tmp_path / "problems", "figures/bars.png"))
    assert len(beside.images) == 1
    typed = maps_autogen.Problem("Which bar is tallest?", images=[str(private_picture)])  # the user's own path
    assert len(typed.images) == 1
