"""A team whose every step is renamed (and whose reviewer sends feedback to a renamed step)
through `maps solve`, `maps eval` and `maps report`: every consumer takes the step names, the
reviewer, the final-answer step and the dimensions from the team the run recorded."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from maps_autogen.records._run_files import read_manifest, read_run, read_summary, read_transcript
from tests.helpers.common import TEST_KEY, clean_env, critic_json, run_maps, solver_json
from tests.helpers.eval_fixtures import QUESTION_ID, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply
from tests.helpers.renamed_team import NEW_NAMES, write_renamed_team

LOW = {"solo", "2", "3"}  # the judge's first review of these problems scores the expert's knowledge low




class RenamedScript:
    """The renamed roles' replies: the reasoner answers, the judge passes except a first review
    of a LOW problem, which sends the expert back."""

    def __init__(self, answers: dict[str, str]):
        self.answers = answers
        self.reviewed: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, request: Received) -> Reply:
        pid = next((m.group(1) for m in map(QUESTION_ID.search, [request.user_text()]) if m), "")
        if request.role == "reasoner":
            return Reply(solver_json(self.answers.get(pid, "B")))
        if request.role == "judge":
            with self.lock:
                first = pid not in self.reviewed
                self.reviewed.add(pid)
            if pid in LOW and first:
                return Reply(critic_json(knowledge=2, worst="knowledge", feedback={"knowledge": "Which law applies here?"}))
            return Reply(critic_json())
        return Reply(f"{request.role} notes for [q:{pid}]")


def test_a_fully_renamed_team_solves_evaluates_and_reports(tmp_path: Path) -> None:
    config = write_renamed_team(tmp_path)
    data, rows = write_mathvista_jsonl(tmp_path / "data", 4)
    answers = {pid: ("B" if row["question_type"] == "multi_choice" else row["answer"]) for pid, row in rows.items()}
    runs = tmp_path / "runs"
    with FakeOpenAI(RenamedScript(answers)) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        solved = run_maps(["solve", str(tmp_path / "data" / "images" / "2.png"), "-q", "[q:solo] What is shown?", "--config", str(config),
                           "--runs-dir", str(runs / "solve"), "--json"], env=env, cwd=tmp_path)
        evaluated = run_maps(["eval", "mathvista", "--data", str(data), "--config", str(config), "--runs-dir", str(runs / "eval"),
                              "--concurrency", "2"], env=env, cwd=tmp_path)
        baseline = run_maps(["eval", "mathvista", "--data", str(data), "--config", str(config), "--runs-dir", str(runs / "cot"),
                             "--method", "cot", "--limit", "1"], env=env, cwd=tmp_path)
    assert solved.returncode == 0, solved.stderr
    assert baseline.returncode == 0, baseline.stderr
    # A baseline's one call goes to the final-answer step's model, recorded under that step's name.
    cot_dir = next(path for path in (runs / "cot").iterdir() if path.name.startswith("eval-"))
    assert list(read_run(next((cot_dir / "problems").iterdir())).models) == ["reasoner"]
    assert evaluated.returncode == 0, evaluated.stderr

    # The solve's run records the renamed team: its reviewer, final-answer step and dimensions.
    run_dir = Path(json.loads(solved.stdout)["run_dir"])
    run = read_run(run_dir)
    assert run.team is not None and run.team.steps == list(NEW_NAMES.values())
    assert run.team.reviewer == "judge" and run.team.final_step == "reasoner"
    assert run.team.scored == {"describer": "caption", "fuser": "alignment", "expert": "knowledge", "reasoner": "solution"}
    assert [rollback.step for rollback in run.rollbacks] == ["expert"] and run.stop_reason == "critic_passed"
    roles = [line.role for line in read_transcript(run_dir) if line.type == "message"]
    assert roles == ["user_proxy", "describer", "fuser", "expert", "reasoner", "judge", "expert", "reasoner", "judge"]

    # The eval's manifest, rows and summary name the renamed steps; Figure 4's targets are the team's.
    eval_dir = next(path for path in (runs / "eval").iterdir() if path.name.startswith("eval-"))
    manifest = read_manifest(eval_dir)
    assert manifest.team is not None and manifest.team.reviewer == "judge" and manifest.team.final_step == "reasoner"
    summary = read_summary(eval_dir)
    assert list(summary.feedback_shares) == ["describer", "fuser", "expert", "reasoner", "none"]
    assert summary.feedback_shares["expert"] == 0.5 and summary.feedback_shares["none"] == 0.5
    assert summary.average.accuracy == 100.0

    # `maps report` on it: no KeyError; Figure 4 shows the renamed steps.
    out = tmp_path / "report"
    report = run_maps(["report", str(eval_dir), "--out", str(out)], env=clean_env(), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    data_out: dict[str, Any] = json.loads((out / "report.json").read_text())
    assert data_out["feedback_shares"]["mathvista"] == {
        "maps (gpt-4o)": {"describer": 0.0, "fuser": 0.0, "expert": 0.5, "reasoner": 0.0, "none": 0.5}}
    markdown = (out / "report.md").read_text()
    assert "| Bar | Describer | Fuser | Expert | Reasoner | no regeneration |" in markdown
    assert "judge" in (out / "usage.md").read_text() and (out / "figure4.png").is_file()


def test_the_live_console_shows_a_renamed_reviewer_s_scores_and_answer_step_s_answer() -> None:
    import io

    from maps_autogen.records._chat_records import AnswerParsed, MessageRecord, VerdictParsed
    from maps_autogen.report._live import LiveConsole

    out = io.StringIO()
    live = LiveConsole(file=out)
    live.emit(MessageRecord(agent="Reasoner", role="reasoner", step="solution", content="{}",
                            parsed=AnswerParsed(final_answer="B", parsed=True, repaired=False)))
    live.emit(MessageRecord(agent="Judge", role="judge", step="review", content="{}",
                            parsed=VerdictParsed(scores={"knowledge": 2, "solution": 5}, need_feedback=True,
                                                 worst_step="knowledge", feedback={}, evaluation={},
                                                 repaired=False)))
    printed = out.getvalue()
    assert "Reasoner's answer: B" in printed
    assert "Judge's scores" in printed and "knowledge" in printed
