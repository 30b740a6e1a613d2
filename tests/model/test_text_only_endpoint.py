"""`vision: false` on any endpoint: a text-only server runs the team with the images withheld
from every request (a note stands in for each), recorded in the run and shown on one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maps_autogen._util._errors import ConfigError
from maps_autogen.settings._config import LocalEndpoint, parse_config
from tests.helpers.common import clean_env, critic_json, run_maps, solver_json
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, RoleScript

TEXT_ONLY = """\
endpoints:
  textonly: {kind: openai, api_key_env: null, vision: false}
model: {endpoint: textonly, name: SmolLM2-135M-Instruct}
"""
NOTE = "cannot see images, so this note stands in"


def test_a_text_only_endpoint_gets_notes_not_images_and_the_run_says_so(png: Path, tmp_path: Path) -> None:
    # The file declares only an endpoint and the model: the rest comes from the built-in defaults.
    (tmp_path / "agents.yaml").write_text(TEXT_ONLY)
    script = RoleScript({"interpreter": ["CAPTION: a lever."], "solver": [solver_json("A")], "critic": [critic_json()]})
    with FakeOpenAI(script) as server:
        result = run_maps(["solve", str(png), "-q", "Which mass balances the lever?", "-o", "2 kg", "-o", "4 kg",
                           "--runs-dir", str(tmp_path / "runs")], env=clean_env(OPENAI_BASE_URL=server.base_url), cwd=tmp_path)
        received = list(server.received)
    assert result.returncode == 0, result.stderr
    assert received and all(request.image_urls() == [] for request in received)  # no request carried an image
    interpreter = next(request for request in received if request.role == "interpreter")
    assert NOTE in interpreter.user_text() and "lever.png" in interpreter.user_text()
    shown = [line for line in (result.stdout + result.stderr).splitlines() if "images withheld" in line]
    assert len(shown) == 1 and "Interpreter" in shown[0] and "vision: false" in shown[0]
    run_dir = next((tmp_path / "runs").iterdir())
    run = json.loads((run_dir / "run.json").read_text())
    assert run["flow"]["images_withheld"] == ["interpreter"]
    assert run["models"]["interpreter"]["vision"] is False
    events = [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]
    withheld = [event for event in events if event.get("event") == "images_withheld"]
    assert len(withheld) == 1 and withheld[0]["roles"] == ["interpreter"]
    # what was recorded as sent is what was sent: the note, no image
    recorded = next(event for event in events if event.get("role") == "interpreter" and event.get("type") == "message")
    assert NOTE in json.dumps(recorded["request"]) and "data:image" not in json.dumps(recorded["request"])


def test_a_text_only_baseline_withholds_the_images_and_records_it(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    (tmp_path / "agents.yaml").write_text(TEXT_ONLY)
    answers = ProblemScript({pid: ("B" if row["question_type"] == "multi_choice" else row["answer"]) for pid, row in rows.items()})
    runs = tmp_path / "runs"
    with FakeOpenAI(answers) as server:
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--method", "direct", "--quiet"],
                          env=clean_env(OPENAI_BASE_URL=server.base_url), cwd=tmp_path)
        received = list(server.received)
    assert result.returncode == 0, result.stderr
    assert len(received) == 2 and all(request.image_urls() == [] for request in received)
    assert len([line for line in result.stderr.splitlines() if "images will be withheld" in line]) == 1
    eval_dir = next(runs.glob("eval-*"))
    for run_json in eval_dir.glob("problems/*/run.json"):
        assert json.loads(run_json.read_text())["images_withheld"] == ["direct"]
    manifest = json.loads((eval_dir / "manifest.json").read_text())
    assert {entry["vision"] for entry in manifest["models"].values()} == {False}


def test_the_local_endpoint_sees_images_only_with_a_projector() -> None:
    assert LocalEndpoint().sees_images is False
    assert LocalEndpoint(mmproj_path="mmproj.gguf").sees_images is True
    assert LocalEndpoint(mmproj_path="mmproj.gguf", vision=False).sees_images is False
    with pytest.raises(ConfigError, match="vision: true needs mmproj_path"):
        parse_config({"team": "big_five", "endpoints": {"local": {"kind": "local", "vision": True}}}, Path("agents.yaml"))
