"""`maps solve --human` answered from a pipe, end to end against the scripted server: the
UserProxy is selected after each review (or turn), asks through AG2's human input, and what the
person says is a UserProxy turn in the transcript and reaches the requests the steps receive.
The team's steps are renamed: the person names steps as the team does."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import yaml

from maps_autogen.orchestration._human import MAX_ANSWER_CHARS
from maps_autogen.settings._config import defaults_dir
from tests.helpers.common import MAPS, TEST_KEY, clean_env, make_png, run_maps, solver_json, write_config
from tests.helpers.fake_openai import FakeOpenAI, Received, RoleScript

# default step -> (new name, new dimension)
RENAMED = {"interpreter": ("seer", "sight"), "aligner": ("framer", "framing"), "scholar": ("sage", "lore"),
           "solver": ("answerer", "reckoning"), "critic": ("judge", None)}
DIMENSIONS = ["sight", "framing", "lore", "reckoning"]
QUESTION_HEADING = "## The user's question about your previous answer"
NOTES_HEADING = "## Notes from the user"


def renamed_config(path: Path, **changes: Any) -> Path:
    """The default agents.yaml with every step renamed (and `changes`, dotted keys)."""
    steps = yaml.safe_load((defaults_dir() / "agents.yaml").read_text())["team"]["steps"]
    new = {old: name for old, (name, _) in RENAMED.items()}
    for step in steps:
        name, dimension = RENAMED[step["name"]]
        step["name"], step["inputs"] = name, [new.get(item, item) for item in step["inputs"]]
        if dimension:
            step["critic_dimension"] = dimension
        if "reviews" in step:
            step["reviews"] = [new[item] for item in step["reviews"]]
    return write_config(path, **{"team.steps": steps, **changes})


def verdict(low: str | None = None) -> str:
    scores = {dim: 2 if dim == low else 5 for dim in DIMENSIONS}
    return json.dumps({"scores": scores, "need_feedback": low is not None, "worst_step": low or "reckoning",
                       "feedback": {dim: f"what about the {dim}?" for dim in DIMENSIONS}})


def solve(tmp_path: Path, script: RoleScript, stdin: str, *extra: str) -> tuple[Any, list[Received], Path]:
    """`maps solve --human` with `stdin` piped in; (result, requests received, the run folder)."""
    png = make_png(tmp_path / "lever.png")
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["solve", str(png), "-q", "Which mass balances the lever?", "-o", "2 kg", "-o", "4 kg",
                           "--runs-dir", str(tmp_path / "runs"), "--human", *extra], env=env, cwd=tmp_path, stdin=stdin)
        received = list(server.received)
    runs = list((tmp_path / "runs").iterdir())
    assert len(runs) == 1, result.stderr
    return result, received, runs[0]


def transcript(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]


def person_turns(run_dir: Path) -> list[dict[str, Any]]:
    return [r for r in transcript(run_dir) if r["type"] == "message" and r.get("step") == "user"]


def texts(received: list[Received], role: str) -> list[str]:
    return [request.user_text() for request in received if request.role == role]


def test_back_sends_the_step_back_with_the_persons_question_and_stop_ends(tmp_path: Path) -> None:
    config = renamed_config(tmp_path / "agents.yaml")
    script = RoleScript({"seer": ["SEEN"], "framer": ["FRAMED v1", "FRAMED v2"], "sage": ["LORE v1", "LORE v2"],
                         "answerer": [solver_json("A"), solver_json("B")], "judge": [verdict("lore"), verdict()]})
    stdin = "\n".join([
        "back judge Are you sure?",  # the reviewer cannot be sent back: asked again
        "back framer Is the pivot in the middle?",  # the judge wanted the sage; the person overrides
        "stop",
    ]) + "\n"
    result, received, run_dir = solve(tmp_path, script, stdin, "--config", str(config), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)  # standard output stays one JSON object: the pauses went to stderr
    assert summary["stop_reason"] == "user_stopped" and summary["final_answer"] == "B"
    assert summary["rollbacks"] == ["framer"]
    # The pause as the terminal showed it, with the refusal and the re-ask.
    assert "── UserProxy: your turn (pause 1, after the Judge's review, round 0)" in result.stderr
    assert ("if you continue: rollback 1: the Judge sends the Sage back; it re-runs with its score and the Judge's "
            "evaluation and feedback on lore") in result.stderr
    assert "back STEP QUESTION (STEP: seer, framer, sage, answerer)" in result.stderr
    assert "not taken: the Judge cannot be sent back here" in result.stderr
    # The framer re-ran with its previous output and the person's question; the steps after it re-ran, plainly.
    framer = texts(received, "framer")
    assert len(framer) == 2 and QUESTION_HEADING not in framer[0]
    assert f"{QUESTION_HEADING}\nIs the pivot in the middle?" in framer[1] and "FRAMED v1" in framer[1]
    assert "The user has sent your previous answer back with a question." in framer[1]
    assert "The Critic's question" not in framer[1] and "what about the" not in framer[1]
    assert [QUESTION_HEADING in text for text in texts(received, "sage")] == [False, False]
    assert [r.role for r in received] == ["seer", "framer", "sage", "answerer", "judge", "framer", "sage", "answerer",
                                          "judge"]
    # The person's words are UserProxy turns; the rollback says who sent the step back.
    turns = person_turns(run_dir)
    assert [(t["role"], t["agent"], t["content"], t["parsed"]["decision"], t["parsed"]["source"]) for t in turns] == [
        ("user_proxy", "UserProxy", "back framer Is the pivot in the middle?", "back", "terminal"),
        ("user_proxy", "UserProxy", "stop", "stop", "terminal")]
    rollback = next(r for r in transcript(run_dir) if r.get("event") == "rollback")
    assert (rollback["step"], rollback["by"], rollback["question"]) == ("framer", "user", "Is the pivot in the middle?")
    run = json.loads((run_dir / "run.json").read_text())
    assert run["flow"]["human"] == "review" and run["stop_reason"] == "user_stopped"
    assert run["rollbacks"] == [{"number": 1, "step": "framer", "dimension": "framing", "scores": {},
                                 "question": "Is the pivot in the middle?", "score": None, "evaluation": "",
                                 "by": "user", "sender": "UserProxy"}]
    # The viewer shows the person's turns as the UserProxy's and the rollback as theirs.
    page = tmp_path / "page.html"
    shown = run_maps(["view", str(run_dir), "--out", str(page)], env=clean_env(), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    html = page.read_text()
    assert html.count('data-role="user_proxy"') == 3  # the task, then two pauses
    assert ('data-by="user" data-step="framer">↺ Rollback 1: <span class="sender">the person (UserProxy)</span> sent '
            'the <span class="step">framer</span> step back') in html
    assert ('Sent to the framer step by the person (UserProxy):<div class="sent-part" data-part="question">Question: '
            '<span class="text">Is the pivot in the middle?</span>') in html


def test_every_turn_a_note_reaches_every_later_step_and_the_end_of_input_continues(tmp_path: Path) -> None:
    config = renamed_config(tmp_path / "agents.yaml", **{"human.when": "every_turn"})
    script = RoleScript({"answerer": [solver_json("B")], "judge": [verdict()]})
    # After the seer: a note with a terminal escape in it; after the framer: continue; then the input ends.
    result, received, run_dir = solve(tmp_path, script, "Use SI units \x1b[31mthroughout\n\n", "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert "standard input has ended: the chat continues at every pause" in result.stderr
    assert result.stderr.count("── UserProxy: your turn") == 5  # after each of the five turns
    note = f"{NOTES_HEADING}\n- Use SI units  [31mthroughout"
    assert [note in text for text in texts(received, "seer")] == [False]
    for role in ("framer", "sage", "answerer", "judge"):
        assert [note in text for text in texts(received, role)] == [True], role
    turns = person_turns(run_dir)
    assert [(t["parsed"]["decision"], t["parsed"]["source"]) for t in turns] == [
        ("note", "terminal"), ("continue", "terminal"), ("continue", "end_of_input"), ("continue", "end_of_input"),
        ("continue", "end_of_input")]
    assert turns[0]["content"] == "Use SI units  [31mthroughout"  # no escape sequence kept
    assert "\x1b" not in result.stdout and "\x1b" not in result.stderr
    assert json.loads((run_dir / "run.json").read_text())["stop_reason"] == "critic_passed"


def test_lines_the_pause_cannot_take_are_asked_again(tmp_path: Path) -> None:
    config = renamed_config(tmp_path / "agents.yaml")
    script = RoleScript({"answerer": [solver_json("B")], "judge": [verdict()]})
    stdin = "\n".join(["x" * (MAX_ANSWER_CHARS * 5), "back nowhere Why?", "back sage", "a note where none follows",
                       ""]) + "\n"
    result, received, run_dir = solve(tmp_path, script, stdin, "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert f"not taken: the line is longer than {MAX_ANSWER_CHARS} characters" in result.stderr
    assert "not taken: 'nowhere' is not a step of this team" in result.stderr
    assert "not taken: give the Sage a question to act on: back sage QUESTION" in result.stderr
    assert "not taken: no step runs after this pause" in result.stderr
    assert [(t["parsed"]["decision"], t["content"]) for t in person_turns(run_dir)] == [("continue", "continue")]
    assert [r.role for r in received] == ["seer", "framer", "sage", "answerer", "judge"]
    assert json.loads((run_dir / "run.json").read_text())["stop_reason"] == "critic_passed"


def test_eval_never_waits_on_a_person(tmp_path: Path) -> None:
    result = run_maps(["eval", "custom", "--data", str(tmp_path / "none.jsonl"), "--human"], env=clean_env(),
                      cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: maps eval never waits on a person: --human is for maps solve (drop --human; to steer one problem "
        "yourself, run maps solve --human on it)"]


def test_ctrl_c_while_the_chat_waits_on_the_person_ends_the_run_as_interrupted(tmp_path: Path) -> None:
    png = make_png(tmp_path / "lever.png")
    script = RoleScript({"solver": [solver_json("A")], "critic": [verdict()]})
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        process = subprocess.Popen([*MAPS, "solve", str(png), "-q", "Which?", "--runs-dir", str(tmp_path / "runs"),
                                    "--human"], env=env, cwd=tmp_path, text=True, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            seen = []
            for line in process.stderr:  # type: ignore[union-attr]
                seen.append(line)
                if "if you continue:" in line:  # the chat waits on the person: nothing typed, input still open
                    break
            process.send_signal(signal.SIGINT)
            _, rest = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    assert process.returncode == 130, "".join(seen) + rest
    (run_dir,) = (tmp_path / "runs").iterdir()
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "interrupted" and run["stop_reason"] == "interrupted" and run["final_answer"] == "A"
