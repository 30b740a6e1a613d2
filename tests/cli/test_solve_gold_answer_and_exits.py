"""The first hour (issue 28): a problem file's gold answer scored at the end of `maps solve`,
a closed standard output ending a run as Ctrl-C does, `maps view --open` without a browser,
and the embedded model's own team setting (shorter review loop), announced and recorded."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

from maps_autogen.settings._config import load_config
from maps_autogen.settings._endpoints import embedded_team_setting, resolve_models
from maps_autogen.settings._overrides import with_overrides
from tests.helpers.common import MAPS, TEST_KEY, clean_env, critic_json, make_png, run_maps, solver_json, write_config
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply, RoleScript


def lever_problem(folder: Path, **extra: object) -> Path:
    """A problem file like examples/lever with its gold answer (`answer`) and an image."""
    make_png(folder / "lever.png")
    data = {"question": "Which mass balances the lever?", "options": ["1 kg", "2 kg", "3 kg", "4.5 kg"],
            "images": ["lever.png"], **extra}
    path = folder / "problem.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def script(answer: str) -> RoleScript:
    return RoleScript({
        "interpreter": ["CAPTION: a lever."], "aligner": ["ALIGNED"], "scholar": ["KNOW"],
        "solver": [solver_json(answer)], "critic": [critic_json(5, 5, 5, 5)],
    })


def test_a_wrong_answer_is_said_to_be_wrong_everywhere(tmp_path: Path) -> None:
    problem = lever_problem(tmp_path, answer="B")
    runs = tmp_path / "runs"
    with FakeOpenAI(script("A")) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        shown = run_maps(["solve", "--problem", str(problem), "--runs-dir", str(runs)], env=env, cwd=tmp_path)
        as_json = run_maps(["solve", "--problem", str(problem), "--runs-dir", str(runs), "--json"], env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "Final answer: A" in shown.stdout
    assert "Gold answer: B (from the problem file): the final answer is wrong" in shown.stdout
    summary = json.loads(as_json.stdout)
    assert summary["final_answer"] == "A" and summary["gold"] == "B" and summary["correct"] is False
    run = json.loads((Path(summary["run_dir"]) / "run.json").read_text())
    assert run["gold"] == "B" and run["correct"] is False
    assert run["evaluation"]["prediction"] == "A" and run["evaluation"]["correct"] is False
    page = run_maps(["view", summary["run_dir"]], env=env, cwd=tmp_path)
    html = Path(page.stdout.strip()).read_text()
    assert '<span class="pill bad verdict">incorrect</span>' in html  # the viewer's verdict, as for an eval


def test_a_right_answer_by_option_text_is_right(tmp_path: Path) -> None:
    problem = lever_problem(tmp_path, answer="B")
    with FakeOpenAI(script("2 kg")) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["solve", "--problem", str(problem), "--runs-dir", str(tmp_path / "runs"), "--json"],
                          env=env, cwd=tmp_path)
    summary = json.loads(result.stdout)
    assert summary["correct"] is True and summary["gold"] == "B"


@pytest.mark.parametrize(("answer", "says"), [("E", "option letter A-D"), ([1, 2], "non-empty string or a number")])
def test_a_gold_answer_that_cannot_be_scored_is_one_line_before_any_call(tmp_path: Path, answer: object,
                                                                        says: str) -> None:
    problem = lever_problem(tmp_path, answer=answer)
    with FakeOpenAI(script("A")) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["solve", "--problem", str(problem), "--runs-dir", str(tmp_path / "runs")], env=env,
                          cwd=tmp_path)
        calls = len(server.received)
    assert result.returncode == 2 and calls == 0
    assert says in result.stderr and "answer" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_closed_stdout_ends_the_run_as_ctrl_c_does(tmp_path: Path) -> None:
    """`maps solve ... | head -3`: the reader goes away while the team works; the run stops at its
    next output, run.json says interrupted, the finished turns stay, no traceback, exit 141."""
    problem = lever_problem(tmp_path, answer="B")
    closed = threading.Event()
    replies = script("B")

    def gated(request: Received) -> Reply:
        if request.role == "scholar":  # answers only once the reader has gone
            closed.wait(60)
        return replies(request)

    with FakeOpenAI(gated) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        process = subprocess.Popen([*MAPS, "solve", "--problem", str(problem), "--runs-dir", str(tmp_path / "runs")],
                                   env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        assert process.stdout is not None and process.stderr is not None
        for line in process.stdout:  # like `head`: read until the first turn, then go
            if "CAPTION: a lever." in line:
                break
        process.stdout.close()
        closed.set()
        stderr = process.stderr.read()
        code = process.wait(60)
    assert code == 141, stderr
    assert "Traceback" not in stderr and "standard output was closed" in stderr
    run_dir = next((tmp_path / "runs").iterdir())
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "interrupted" and run["stop_reason"] == "interrupted"
    assert "standard output was closed" in run["error"]
    kept = [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]
    assert any(r.get("type") == "message" and r.get("role") == "interpreter" for r in kept)


def test_view_open_without_a_browser_says_so(tmp_path: Path) -> None:
    problem = lever_problem(tmp_path)
    with FakeOpenAI(script("A")) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        solved = run_maps(["solve", "--problem", str(problem), "--runs-dir", str(tmp_path / "runs"), "--json"],
                          env=env, cwd=tmp_path)
    run_dir = json.loads(solved.stdout)["run_dir"]
    headless = {k: v for k, v in env.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER", "TERM")}
    headless["PATH"] = str(tmp_path / "no-browsers")  # no xdg-open, no console browser either
    result = run_maps(["view", run_dir, "--open"], env=headless, cwd=tmp_path, process=True)
    assert result.returncode == 0, result.stderr
    page = result.stdout.strip()
    assert Path(page).is_file()
    assert len(result.stderr.strip().splitlines()) == 1
    assert "no browser" in result.stderr and Path(page).name in result.stderr


def test_the_embedded_model_brings_a_short_review_loop_unless_the_user_sets_one(tmp_path: Path) -> None:
    """Pure decision: the embedded model serving every step gets its endpoint's review loop
    (1 rollback, no final review) with a line saying so; a critic set in the file or a flag wins,
    and a service never gets it."""
    no_key: dict[str, str] = {}
    loaded = load_config(write_config(tmp_path / "agents.yaml"))
    adjusted, note = embedded_team_setting(loaded, resolve_models(loaded, no_key))
    assert adjusted.config.critic.max_rollbacks == 1 and adjusted.config.critic.final_review is False
    assert note is not None and "at most 1 rollback, no final review" in note
    assert "endpoints.local" in adjusted.origins["critic"]

    own = load_config(write_config(tmp_path / "own.yaml", **{"critic.max_rollbacks": 2}))
    kept, none = embedded_team_setting(own, resolve_models(own, no_key))
    assert kept.config.critic.max_rollbacks == 2 and kept.config.critic.final_review is True and none is None

    flagged = with_overrides(loaded, max_rollbacks=3)
    kept, none = embedded_team_setting(flagged, resolve_models(flagged, no_key))
    assert kept.config.critic.max_rollbacks == 3 and none is None

    service = resolve_models(loaded, {"OPENAI_API_KEY": TEST_KEY})
    kept, none = embedded_team_setting(loaded, service)
    assert kept.config.critic.max_rollbacks == 3 and none is None
