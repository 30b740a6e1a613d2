"""Who sent each step back, which step re-ran and why a chat stopped are read from what the
records say happened, never recomputed from the scores: the terminal's live view, the run page
(and the live page, which renders the same records) and Figure 4 agree on a run where the person
overrides the reviewer, one where they let it act, a tie under `critic: {ties: earliest}`, a
failing review with `--max-rollbacks 0` (its own Figure 4 bar) and a run without a reviewer (its
own stop reason). Every run has a team whose steps are all renamed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from maps_autogen.records._run_files import read_run, read_summary
from tests.helpers.common import REPO, TEST_KEY, clean_env, make_png, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, RoleScript
from tests.helpers.renamed_team import write_renamed_team
from tests.helpers.view import parse

DIMENSIONS = ("caption", "alignment", "knowledge", "solution")


def review(worst: str = "solution", **low: int) -> str:
    scores = {dimension: low.get(dimension, 5) for dimension in DIMENSIONS}
    return json.dumps({"evaluation": {d: f"{d} evaluated" for d in DIMENSIONS}, "scores": scores,
                       "need_feedback": bool(low), "worst_step": worst, "feedback": {d: f"what about {d}?" for d in DIMENSIONS}})


def solve(tmp_path: Path, critic: list[str], *args: str, stdin: str | None = None,
          changes: dict[str, Any] | None = None) -> tuple[str, Path, Any]:
    """`maps solve` of the renamed team (with the top-level `changes` to its agents.yaml), its
    live view on standard output: (what the terminal showed, the run folder, the run page's DOM)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = write_renamed_team(tmp_path)
    config.write_text(yaml.safe_dump({**yaml.safe_load(config.read_text()), **(changes or {})}, sort_keys=False))
    script = RoleScript({"reasoner": [solver_json("A")], "judge": critic})
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["solve", str(make_png(tmp_path / "lever.png")), "-q", "Which mass?", "-o", "2 kg", "-o",
                           "4 kg", "--config", str(config), "--runs-dir", str(tmp_path / "runs"), *args],
                          env=env, cwd=tmp_path, stdin=stdin)
    assert result.returncode == 0, result.stderr[-3000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    viewed = run_maps(["view", str(run_dir), "--out", str(tmp_path / "run.html")], env=clean_env(), cwd=tmp_path)
    assert viewed.returncode == 0, viewed.stderr
    return result.stdout, run_dir, parse((tmp_path / "run.html").read_text())


def rollbacks_shown(dom: Any) -> list[tuple[str, str, str]]:
    """(who sent it, the step sent back, by) of each rollback card."""
    return [(card.find_all(cls="sender")[0].text(), card.attrs["data-step"], card.attrs["data-by"])
            for card in dom.find_all(cls="rollback")]


def test_the_reviewer_sends_a_step_back_when_the_person_continues_and_the_person_when_they_override(tmp_path) -> None:
    critic = [review("knowledge", knowledge=2), review()]
    shown, run_dir, dom = solve(tmp_path / "continued", critic, "--human", stdin="\n\n")
    assert "↺ rollback 1: the Judge sent the expert step back; it re-runs, then every step after it" in shown
    block = shown.split("↺ rollback 1", 1)[1].split("\n──", 1)[0]  # the rollback's own lines
    assert "sent to the expert step by the Judge:" in block and "UserProxy" not in block
    assert rollbacks_shown(dom) == [("the Judge", "expert", "critic")]
    assert "expert (knowledge; sent back by the Judge)" in dom.find_all(cls="outcome")[0].text()

    shown, run_dir, dom = solve(tmp_path / "overridden", critic, "--human", stdin="back fuser Which label is which?\n\n")
    assert "↺ rollback 1: you sent the fuser step back; it re-runs, then every step after it" in shown
    assert "the Judge sent" not in shown  # the rollback the Judge had planned never happened
    assert rollbacks_shown(dom) == [("the person (UserProxy)", "fuser", "user")]
    assert "fuser (alignment; sent back by the person)" in dom.find_all(cls="outcome")[0].text()
    assert [(r.step, r.by) for r in read_run(run_dir).rollbacks] == [("fuser", "user")]


def test_a_tie_under_ties_earliest_shows_the_step_that_re_ran(tmp_path) -> None:
    tie = review("solution", knowledge=3, solution=3)  # the judge names the reasoner; the argmin the expert
    for ties, step in (("worst_step", "reasoner"), ("earliest", "expert")):
        shown, run_dir, dom = solve(tmp_path / ties, [tie, review()], changes={"critic": {"ties": ties}})
        assert [r.step for r in read_run(run_dir).rollbacks] == [step]
        assert f"↺ rollback 1: the Judge sent the {step} step back" in shown
        assert rollbacks_shown(dom) == [("the Judge", step, "critic")]
        # the review's table leaves the decision to the record after it
        assert all(caption.text() == "Judge's scores" for caption in dom.find_all("caption")
                   if caption.text().startswith("Judge"))


def test_no_rollback_allowed_and_no_reviewer_are_said_as_such(tmp_path) -> None:
    shown, run_dir, dom = solve(tmp_path / "zero", [review("knowledge", knowledge=2)], "--max-rollbacks", "0")
    said = "the review did not pass, and no rollback is allowed (max_rollbacks 0)"
    assert f"■ stopped: rollback_limit: {said}" in shown
    assert dom.find_all(cls="stop")[0].find_all(cls="why")[0].text() == said
    assert not dom.find_all(cls="rollback")

    shown, run_dir, dom = solve(tmp_path / "alone", [review()], "--without", "judge")
    assert read_run(run_dir).stop_reason == "no_reviewer"
    assert "■ stopped: no_reviewer: no reviewer ran: nothing was reviewed" in shown
    assert dom.find_all(cls="stop-reason")[0].text() == "no_reviewer"


def test_figure_4_counts_a_failing_review_with_no_rollback_allowed_as_its_own_bar(tmp_path) -> None:
    config = write_renamed_team(tmp_path)
    script = RoleScript({"reasoner": [solver_json("B")], "judge": [review("knowledge", knowledge=2)]})
    runs = tmp_path / "runs"
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        for folder, args in (("zero", ["--max-rollbacks", "0"]), ("alone", ["--without", "judge"])):
            result = run_maps(["eval", "custom", "--data", str(REPO / "examples" / "bench.jsonl"), "--config",
                               str(config), "--runs-dir", str(runs / folder), *args], env=env, cwd=tmp_path)
            assert result.returncode == 0, result.stderr
    zero, alone = (next(path for path in (runs / folder).iterdir() if path.name.startswith("eval-"))
                   for folder in ("zero", "alone"))
    assert read_summary(zero).feedback_shares == {"describer": 0.0, "fuser": 0.0, "expert": 0.0, "reasoner": 0.0,
                                                  "none": 0.0, "no rollback allowed": 1.0}
    assert read_summary(alone).feedback_shares == {"describer": 0.0, "fuser": 0.0, "expert": 0.0, "reasoner": 0.0,
                                                   "none": 0.0, "no reviewer": 1.0}
    assert read_summary(alone).stop_reasons == {"no_reviewer": 2}
    out = tmp_path / "report"
    report = run_maps(["report", str(zero), "--out", str(out)], env=clean_env(), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    shares = json.loads((out / "report.json").read_text())["feedback_shares"]["custom"]
    assert list(shares.values()) == [{"describer": 0.0, "fuser": 0.0, "expert": 0.0, "reasoner": 0.0, "none": 0.0,
                                      "no rollback allowed": 1.0}]
    markdown = (out / "report.md").read_text()
    assert "| Describer | Fuser | Expert | Reasoner | no regeneration | review failed, no rollback allowed |" in markdown
    assert (out / "figure4.png").is_file()
