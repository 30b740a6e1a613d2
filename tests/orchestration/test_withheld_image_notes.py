"""A model that cannot see, or an endpoint that takes fewer images than a problem has, is told of
each image it is not sent by one note, once, under the images heading, worded as the prompt file
writes it; nothing else in the request changes. Read on the requests as sent: a `vision: false`
endpoint (`maps solve`, `maps eval` with MAPS and with a baseline), the embedded model (its
launcher pointed at the scripted server) and an image cap (`max_images`); Inspect's path is in
tests/inspect_tasks/test_inspect_tasks.py, the real embedded model in
tests/model/test_local_integration.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers.common import clean_env, critic_json, make_png, run_maps, solver_json
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, RoleScript
from tests.helpers.image_notes import assert_notes_once_under_images, note_for

TEXT_ONLY = """\
endpoints:
  textonly: {kind: openai, api_key_env: null, vision: false}
model: {endpoint: textonly, name: text-model}
"""
SCRIPT = {"interpreter": ["CAPTION: a lever."], "solver": [solver_json("A")], "critic": [critic_json()]}


def solve(tmp_path: Path, args: list[str], server: FakeOpenAI) -> None:
    result = run_maps(["solve", *args, "--runs-dir", str(tmp_path / "runs")],
                      env=clean_env(OPENAI_BASE_URL=server.base_url), cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_a_text_only_endpoint_s_requests_carry_each_note_once(tmp_path: Path) -> None:
    (tmp_path / "agents.yaml").write_text(TEXT_ONLY)
    make_png(tmp_path / "lever.png", (320, 200))
    make_png(tmp_path / "table.png", (64, 48))
    with FakeOpenAI(RoleScript(SCRIPT)) as server:
        solve(tmp_path, [str(tmp_path / "lever.png"), str(tmp_path / "table.png"), "-q", "Which mass balances it?",
                         "-o", "2 kg", "-o", "4 kg"], server)
        received = list(server.received)
    seeing = [request for request in received if request.role == "interpreter"]
    assert seeing and all(not request.image_urls() for request in received)
    for request in seeing:
        assert_notes_once_under_images(request.user_text(), [note_for("<image_1>", "lever.png", 320, 200),
                                                             note_for("<image_2>", "table.png", 64, 48)])


def test_an_image_cap_notes_only_the_images_left_out(tmp_path: Path) -> None:
    (tmp_path / "agents.yaml").write_text("endpoints:\n  openai: {max_images: 1}\n")
    make_png(tmp_path / "a.png", (40, 30))
    make_png(tmp_path / "b.png", (50, 20))
    with FakeOpenAI(RoleScript(SCRIPT)) as server:
        solve(tmp_path, [str(tmp_path / "a.png"), str(tmp_path / "b.png"), "-q", "Compare the figures.",
                         "-o", "same", "-o", "different"], server)
        interpreter = [request for request in server.received if request.role == "interpreter"]
    assert interpreter and all(len(request.image_urls()) == 1 for request in interpreter)
    for request in interpreter:
        assert_notes_once_under_images(request.user_text(), [
            note_for("<image_2>", "b.png", 50, 20, template="image_capped_note", max_images=1)])


@pytest.mark.parametrize("method", ["maps", "direct"])
def test_an_eval_on_a_text_only_endpoint_notes_each_image_once(method: str, tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    (tmp_path / "agents.yaml").write_text(TEXT_ONLY)
    answers = ProblemScript({pid: ("B" if row["question_type"] == "multi_choice" else row["answer"])
                             for pid, row in rows.items()})
    with FakeOpenAI(answers) as server:
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"),
                           "--method", method, "--quiet"], env=clean_env(OPENAI_BASE_URL=server.base_url), cwd=tmp_path)
        received = list(server.received)
    assert result.returncode == 0, result.stderr
    seeing = [request for request in received if request.role in ("interpreter", "direct")]
    assert len(seeing) == 2 and all(not request.image_urls() for request in received)
    for request in seeing:
        pid = answers._pid(request)
        assert_notes_once_under_images(request.user_text(), [note_for("<image_1>", f"{pid}.png", 320, 200)])


def test_the_embedded_model_s_requests_carry_each_note_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_png(tmp_path / "lever.png", (320, 200))
    with FakeOpenAI(RoleScript(SCRIPT)) as server:
        import maps_autogen.model.local._server as local_server
        monkeypatch.setattr(local_server, "shared_local_server", lambda settings: SimpleNamespace(
            base_url=server.base_url, api_key="local-no-key", ensure_alive=lambda: None))
        result = run_maps(["solve", str(tmp_path / "lever.png"), "-q", "Which mass balances it?", "-o", "2 kg",
                           "-o", "4 kg", "--model", "local", "--runs-dir", str(tmp_path / "runs")],
                          env=clean_env(), cwd=tmp_path)
        received = list(server.received)
    assert result.returncode == 0, result.stderr
    seeing = [request for request in received if request.role == "interpreter"]
    assert seeing and all(not request.image_urls() for request in received)
    for request in seeing:
        assert_notes_once_under_images(request.user_text(), [note_for("<image_1>", "lever.png", 320, 200)])
