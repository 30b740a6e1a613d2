"""vLLM started with `--limit-mm-per-prompt` takes at most N images per request: its refusal
("At most N image(s) may be provided in one prompt.") stops the run at once with both fixes,
and `max_images: N` on the endpoint makes the team keep to it: each request carries at most N
images and a note for each other one (saying why: the request carries no more, not that the model
cannot see), and the run records which steps had images withheld."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.common import TEST_KEY, clean_env, critic_json, make_png, run_maps, solver_json, write_config
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply, RoleScript, recorded

# The note for an image left out by the cap says so: the model can see images (the first is sent).
NOTE = "Only 1 image(s) fit in one request to this model, so this note stands in for it."


def two_images(tmp_path: Path) -> list[str]:
    return [str(make_png(tmp_path / "first.png", mark=1)), str(make_png(tmp_path / "second.png", mark=2))]


def env_for(server: FakeOpenAI) -> dict[str, str]:
    return clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)


def test_vllms_limit_stops_a_solve_at_once_naming_both_fixes(tmp_path: Path) -> None:
    images = two_images(tmp_path)
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 4})
    with FakeOpenAI(lambda request: recorded("vllm_too_many_images")) as server:
        result = run_maps(["solve", *images, "-q", "Which is heavier?", "--runs-dir", str(tmp_path / "runs")],
                          env=env_for(server), cwd=tmp_path)
        sent = len(server.received)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert sent == 1  # fatal at once: every request with two images meets it
    assert "At most 1 image(s) may be provided in one prompt." in line
    assert "--limit-mm-per-prompt" in line and "max_images: 1 on endpoint 'openai'" in line


def test_max_images_keeps_each_request_within_the_limit_and_the_run_says_so(tmp_path: Path) -> None:
    images = two_images(tmp_path)
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_images": 1})

    def limited(request: Received) -> Reply:  # as vLLM with --limit-mm-per-prompt '{"image": 1}'
        if len(request.image_urls()) > 1:
            return recorded("vllm_too_many_images")
        return RoleScript({"interpreter": ["CAPTION"], "solver": [solver_json("A")], "critic": [critic_json()]})(request)

    with FakeOpenAI(limited) as server:
        result = run_maps(["solve", *images, "-q", "Which is heavier?", "--runs-dir", str(tmp_path / "runs")],
                          env=env_for(server), cwd=tmp_path)
        received = [request for request in server.received if request.method == "POST"]
    assert result.returncode == 0, result.stderr
    interpreter = next(request for request in received if request.role == "interpreter")
    assert len(interpreter.image_urls()) == 1
    assert NOTE in interpreter.user_text() and "second.png" in interpreter.user_text()
    assert "cannot see images" not in interpreter.user_text()
    assert "first.png" not in interpreter.user_text()  # the first is sent, not noted
    run_dir = next((tmp_path / "runs").iterdir())
    run = json.loads((run_dir / "run.json").read_text())
    assert "interpreter" in run["flow"]["images_withheld"]
    events = [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]
    (withheld,) = [event for event in events if event.get("event") == "images_withheld"]
    assert "takes at most 1 per request (max_images)" in withheld["detail"]


def test_a_baseline_keeps_to_max_images_too(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_images": 0})
    answers = ProblemScript({pid: "B" if row["question_type"] == "multi_choice" else row["answer"]
                             for pid, row in rows.items()})
    runs = tmp_path / "runs"
    with FakeOpenAI(answers) as server:
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--method", "direct",
                           "--quiet"], env=env_for(server), cwd=tmp_path)
        received = list(server.received)
    assert result.returncode == 0, result.stderr
    assert received and all(request.image_urls() == [] for request in received)
    for run_json in next(runs.glob("eval-*")).glob("problems/*/run.json"):
        assert json.loads(run_json.read_text())["images_withheld"] == ["direct"]
