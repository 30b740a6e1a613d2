"""`maps_autogen.solve(..., on_human=callback)`: the callback gets each pause's state and returns
the person's decision (a line, or a `HumanDecision`); its answers are UserProxy turns and reach
the requests; an answer the pause cannot take is asked again with the reason; an exception in
the callback ends the chat and is raised once the run folder is complete."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import maps_autogen
from maps_autogen._util._errors import UsageError
from maps_autogen.orchestration._human import HumanDecision, HumanState
from maps_autogen.records._chat_records import DecisionParsed
from maps_autogen.records._run_files import read_run, read_transcript
from tests.helpers.common import api_service, critic_json, make_png, solver_json, write_config
from tests.helpers.fake_openai import FakeOpenAI, RoleScript


def script() -> RoleScript:
    return RoleScript({"interpreter": ["CAPTION"], "aligner": ["ALIGNED"], "scholar": ["KNOW v1", "KNOW v2"],
                       "solver": [solver_json("A"), solver_json("B")],
                       "critic": [critic_json(5, 5, 2, 5, worst="knowledge",
                                              feedback={"knowledge": "Which law applies?"}), critic_json()]})


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeOpenAI]:
    with api_service(monkeypatch, tmp_path, script()) as server:
        yield server


def problem(tmp_path: Path) -> maps_autogen.Problem:
    return maps_autogen.Problem("Which mass balances the lever?", options=["2 kg", "4 kg"],
                                images=[make_png(tmp_path / "lever.png")])


def test_the_callback_gets_each_pause_and_steers_the_chat(service: FakeOpenAI, tmp_path: Path) -> None:
    seen: list[HumanState] = []
    answers: list[str | HumanDecision] = [
        "back aligner",  # no question: asked again, with the reason
        HumanDecision.back("scholar", "Does the torque about the pivot balance?"),
        "",
    ]

    def on_human(state: HumanState) -> str | HumanDecision:
        seen.append(state)
        return answers.pop(0)

    result = maps_autogen.solve(problem(tmp_path), on_human=on_human, runs_dir=tmp_path / "runs")
    assert result.stop_reason == "critic_passed" and result.final_answer == "B"
    first, again, last = seen
    assert (first.pause, first.after, first.review, first.answer) == (1, "critic", True, "A. 2 kg")
    assert first.scores == {"caption": 5, "alignment": 5, "knowledge": 2, "solution": 5}
    assert first.questions["knowledge"] == "Which law applies?"
    assert first.next == ("rollback 1: the Critic sends the Scholar back; it re-runs with its score and the Critic's "
                          "evaluation and feedback on knowledge, then every step after it")
    assert first.steps == ("interpreter", "aligner", "scholar", "solver") and first.backs_left == 10
    assert first.problem is None and again.problem == "give the Aligner a question to act on: back aligner QUESTION"
    assert (last.pause, last.answer, last.ends, last.backs_left) == (2, "B. 4 kg", True, 9)
    assert last.next == "the Critic passed every step: the chat ends with this answer"
    scholar = [request.user_text() for request in service.received if request.role == "scholar"]
    assert "## The user's question about your previous answer\nDoes the torque about the pivot balance?" in scholar[1]
    assert "Which law applies?" not in scholar[1]  # the person's back replaced the Critic's rollback
    assert [r.step for r in result.rollbacks] == ["scholar"] and result.rollbacks[0].by == "user"
    turns = [r for r in read_transcript(result.run_dir) if getattr(r, "step", None) == "user"]
    assert [(t.content, t.parsed.source if isinstance(t.parsed, DecisionParsed) else None) for t in turns] == [
        ("back scholar Does the torque about the pivot balance?", "api"), ("continue", "api")]
    assert read_run(result.run_dir).flow is not None and read_run(result.run_dir).flow.human == "review"


def test_every_turn_from_the_config(service: FakeOpenAI, tmp_path: Path) -> None:
    config = write_config(tmp_path / "agents.yaml", **{"human.when": "every_turn"})
    after: list[str] = []

    def on_human(state: HumanState) -> str:
        after.append(state.after)
        return "stop" if state.after == "scholar" else ""

    result = maps_autogen.solve(problem(tmp_path), config=config, on_human=on_human, runs_dir=tmp_path / "runs")
    assert after == ["interpreter", "aligner", "scholar"]
    assert result.stop_reason == "user_stopped" and result.final_answer == ""
    assert [request.role for request in service.received] == ["interpreter", "aligner", "scholar"]


def test_a_callback_that_fails_ends_the_chat_and_its_error_is_raised(service: FakeOpenAI, tmp_path: Path) -> None:
    def broken(state: HumanState) -> str:
        raise KeyError("the widget went away")

    with pytest.raises(KeyError, match="the widget went away"):
        maps_autogen.solve(problem(tmp_path), on_human=broken, runs_dir=tmp_path / "runs")
    (run_dir,) = (tmp_path / "runs").iterdir()
    run = read_run(run_dir)
    assert run.status == "finished" and run.stop_reason == "error" and "the widget went away" in (run.error or "")

    with pytest.raises(UsageError, match="on_human gave no answer pause 1 takes in 3 tries: 'x' is not a step"):
        maps_autogen.solve(problem(tmp_path), on_human=lambda state: "back x y", runs_dir=tmp_path / "runs2")
