"""A rollback shows exactly what the re-run step was sent, labelled by who sent it, on the run
page, in the live page's fragments and in the terminal's live view: with the Big Seven's
reviewer its score, the reviewer's evaluation and its feedback; with the Big Five's (`sends_back:
[score, feedback]`) the score and the question only, never the evaluation it was not sent.
The team is renamed (the reviewer is "units", a name whose possessive is "Units'"); the
captions naming the reviewer use the team's possessive, never a hard-coded "'s"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from maps_autogen.report.view._prepare import TranscriptState, team_of
from maps_autogen.report.view._render import read_run_or_none, read_transcript_from, render_records
from tests.helpers.common import REPO, TEST_KEY, clean_env, make_png, run_maps, solver_json
from tests.helpers.eval_fixtures import write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, RoleScript

DIMENSIONS = ["caption", "alignment", "knowledge", "solution"]


def team_config(folder: Path, sends_back: list[str] | None) -> Path:
    """agents.yaml: the default team with its reviewer renamed "units" (sending back `sends_back`)."""
    data = yaml.safe_load((REPO / "maps_autogen" / "settings" / "defaults" / "agents.yaml").read_text())
    for step in data["team"]["steps"]:
        if step["name"] == "critic":
            step["name"] = "units"
            if sends_back is not None:
                step["sends_back"] = sends_back
    path = folder / "agents.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def review(low: str | None) -> str:
    scores = {dim: 2 if dim == low else 5 for dim in DIMENSIONS}
    return json.dumps({"scores": scores, "need_feedback": low is not None, "worst_step": low or "solution",
                       "evaluation": {dim: f"the {dim} names no law" for dim in DIMENSIONS},
                       "feedback": {dim: f"which law is the {dim} built on?" for dim in DIMENSIONS}})


def script() -> RoleScript:
    """One rollback to the scholar (knowledge scored 2), then a pass."""
    return RoleScript({"interpreter": ["SEEN"], "aligner": ["ALIGNED"], "scholar": ["LAWS v1", "LAWS v2"],
                       "solver": [solver_json("2")], "units": [review("knowledge"), review(None)]})


def sent_parts(html: str) -> list[str]:
    """The labelled parts of the rollback's "sent" block, as text."""
    block = html.split('<div class="sent">', 1)[1].split('</div></div>', 1)[0]
    return [part.split(">", 1)[1].replace('<span class="text">', "").replace("</span>", "").removesuffix("</div>")
            for part in block.split('<div class="sent-part"')[1:]]


@pytest.mark.parametrize(("sends_back", "expected"), [
    (None, ["Score: 2", "Evaluation: the knowledge names no law", "Feedback: which law is the knowledge built on?"]),
    (["score", "feedback"], ["Score: 2", "Feedback: which law is the knowledge built on?"]),
])
def test_a_rollback_shows_what_the_step_was_sent_by_whom(tmp_path: Path, sends_back: list[str] | None,
                                                         expected: list[str]) -> None:
    config = team_config(tmp_path, sends_back)
    figure = make_png(tmp_path / "figure.png")
    with FakeOpenAI(script()) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        solved = run_maps(["solve", str(figure), "-q", "What is 1 + 1?", "--config", str(config), "--runs-dir",
                           str(tmp_path / "runs")], env=env, cwd=tmp_path)
    assert solved.returncode == 0, solved.stderr
    # The terminal's live view.
    out = solved.stdout
    terminal = ["sent to the scholar step by the Units:", *(f"    {part[0].lower()}{part[1:]}" for part in expected)]
    at = [out.index(line) for line in terminal]
    assert at == sorted(at)
    if sends_back:
        assert "evaluation:" not in out  # not sent, not shown
    assert "Units' scores" in out and "Units's" not in out

    run_dir = next((tmp_path / "runs").glob("solve-*"))
    viewed = run_maps(["view", str(run_dir), "--out", str(tmp_path / "page.html")], env=clean_env(), cwd=tmp_path)
    assert viewed.returncode == 0, viewed.stderr
    run = read_run_or_none(run_dir)
    records, _ = read_transcript_from(run_dir / "transcript.jsonl")
    live = render_records(records, run, True, TranscriptState(team_of(run)))
    for html in ((tmp_path / "page.html").read_text(), live):
        assert "Sent to the scholar step by the Units:" in html
        assert sent_parts(html) == expected
        assert "Units&#39; scores" in html and "Units&#39;s" not in html


def test_the_eval_summary_names_the_renamed_reviewer_with_its_possessive(tmp_path: Path) -> None:
    config = team_config(tmp_path, None)
    data, _ = write_mathvista_jsonl(tmp_path / "mathvista", 1)
    with FakeOpenAI(script()) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        evaluated = run_maps(["eval", "mathvista", "--data", str(data), "--config", str(config), "--runs-dir",
                              str(tmp_path / "evals"), "--concurrency", "1"], env=env, cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr
    eval_dir = next((tmp_path / "evals").glob("eval-*"))
    viewed = run_maps(["view", str(eval_dir), "--out", str(tmp_path / "eval.html")], env=clean_env(), cwd=tmp_path)
    assert viewed.returncode == 0, viewed.stderr
    page = (tmp_path / "eval.html").read_text()
    assert "Where the Units&#39; first decision went" in page and "Units&#39;s" not in page
