"""The Manager's rollback rules as pure functions: the tie rule (the reviewer's worst step among
the equally low, else the earliest; or always the earliest, the paper's argmin), what a step sent
back receives (the reviewer's `sends_back` parts), and a review that would send a step back with
nothing to act on; the team refuses a `sends_back` that could never give a step anything."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from maps_autogen._util._errors import ConfigError
from maps_autogen.orchestration._flow import FlowSettings, Turn, decide_next, unactionable, weakest_step
from maps_autogen.settings._roles import CriticVerdict
from maps_autogen.settings._team import parse_team
from tests.helpers.common import REPO

STEPS = ("interpreter", "aligner", "scholar", "solver")
SCORED = tuple(zip(STEPS, ("caption", "alignment", "knowledge", "solution")))


def settings(**changes: object) -> FlowSettings:
    return FlowSettings(steps=STEPS, reviewer="critic", scored=SCORED, **changes)  # type: ignore[arg-type]


def verdict(worst: str | None, feedback: str = "why?", evaluation: str = "weak") -> CriticVerdict:
    scores = {"caption": 5, "alignment": 3, "knowledge": 5, "solution": 3}
    return CriticVerdict(scores=scores, need_feedback=True, worst_step=worst,
                         feedback={dim: feedback for dim in scores}, evaluation={dim: evaluation for dim in scores})


@pytest.mark.parametrize(("worst", "ties", "expected"), [
    ("solution", "worst_step", "solver"), ("alignment", "worst_step", "aligner"), (None, "worst_step", "aligner"),
    ("caption", "worst_step", "aligner"),  # named, but not among the lowest
    ("solution", "earliest", "aligner"), (None, "earliest", "aligner"),
])
def test_the_tie_rule(worst, ties, expected) -> None:
    assert weakest_step(verdict(worst), settings(ties=ties)) == expected


def test_a_rollback_carries_the_parts_the_reviewer_sends_back() -> None:
    turns = [Turn(step) for step in STEPS] + [Turn("critic", verdict("solution"))]
    every = decide_next(turns, settings()).revision
    assert every is not None and (every.sent.score, every.sent.evaluation, every.sent.feedback) == (3, "weak", "why?")
    question = decide_next(turns, settings(sends_back=("score", "feedback"))).revision
    assert question is not None and (question.sent.score, question.sent.evaluation) == (3, "")


def test_a_review_with_nothing_for_the_step_it_sends_back_is_unactionable() -> None:
    empty = verdict("solution", feedback="", evaluation="")
    assert unactionable(empty, settings(), 0) == "solver"
    assert unactionable(verdict("solution", feedback=""), settings(), 0) is None  # the evaluation is something
    assert unactionable(verdict("solution", feedback=""), settings(sends_back=("score", "feedback")), 0) == "solver"
    assert unactionable(empty, settings(max_rollbacks=1), 1) is None  # no rollback left: it sends nothing back
    passing = CriticVerdict(scores={dim: 5 for _, dim in SCORED}, need_feedback=False)
    assert unactionable(passing, settings(), 0) is None


@pytest.mark.parametrize(("step", "sends_back", "problem"), [
    (-1, ["score"], "steps[4] (critic).sends_back: a step sent back with only its score has nothing to act on"),
    (2, ["feedback"], "steps[2] (scholar).sends_back: only the reviewer has a sends back"),
])
def test_the_team_refuses_a_sends_back_that_cannot_work(step, sends_back, problem) -> None:
    steps = yaml.safe_load((REPO / "agents.yaml").read_text())["team"]["steps"]
    steps[step]["sends_back"] = sends_back
    with pytest.raises(ConfigError) as refused:
        parse_team({"steps": steps}, Path("agents.yaml"), key="team", base_dir=REPO)
    assert f"agents.yaml: team.{problem}" in str(refused.value)
