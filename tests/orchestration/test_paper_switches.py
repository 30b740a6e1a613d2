"""Where we differ from the papers, the switch back, read from the requests the scripted server
receives: `team: {inputs: equations}` gives every step exactly its equation's inputs (the Solver
s, l and p as in Eq. 5; q carries the options, so the Aligner and the Scholar read them and the
options reach the Solver through the Aligner), `critic: {ties: earliest}` breaks a tie by the
paper's argmin, Big Five's `--threshold 1` passes only the top anchor, a reviewer scale from 0,
the JSON mode, the image size, a step's reply budget, the sampling temperature, the rollback cap
and where a left-out step's images go reach the wire; each switch docs/paper.md names is a
setting `maps` accepts, and the test the row names uses that very setting."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from PIL import Image

from maps_autogen._util import ConfigError
from maps_autogen.settings._config import AppConfig, load_config
from maps_autogen.settings._team import REVIEW_PARTS, StepConfig, TeamConfig
from tests.helpers.common import REPO, TEST_KEY, clean_env, make_png, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, Received, RoleScript

HEADINGS = {"question": "## Question\n", "context": "## Context\n", "options": "## Answer options\n",
            "answer_format": "## Required answer format\n", "interpreter": "## Diagram description (from the Interpreter)\n",
            "aligner": "## Aligned problem background (from the Aligner)\n", "scholar": "## Domain knowledge (from the Scholar)\n"}


def solve(tmp_path: Path, config: dict[str, Any], critic: list[str], *args: str, problem: dict[str, Any] | None = None,
          script: dict[str, list[str]] | None = None, size: tuple[int, int] = (320, 200)
          ) -> tuple[dict[str, Any], list[Received]]:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump(config))
    make_png(tmp_path / "lever.png", size)
    (tmp_path / "problem.yaml").write_text(yaml.safe_dump(problem or {
        "question": "Which mass?", "context": "3 kg at 0.4 m", "options": ["2 kg", "4 kg"], "images": ["lever.png"],
        "answer_format": "Give the letter."}))
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": critic, **(script or {})})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["solve", "--problem", str(tmp_path / "problem.yaml"), "--runs-dir", str(tmp_path / "runs"),
                           "--json", *args], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout), server.received


def shown(request: Received) -> set[str]:
    return {name for name, heading in HEADINGS.items() if heading in request.user_text()}


def review(scores: dict[str, float], worst: str) -> str:
    return json.dumps({"evaluation": {d: "e" for d in scores}, "scores": scores, "need_feedback": True,
                       "worst_step": worst, "feedback": {d: f"{d}?" for d in scores}})


PASS = review({"caption": 5, "alignment": 5, "knowledge": 5, "solution": 5}, "solution")


ALIGNED = "Two masses on a lever: 3 kg at 0.4 m. Options: A. 2 kg; B. 4 kg."


def test_inputs_equations_gives_each_step_exactly_its_equations_inputs(tmp_path) -> None:
    _, declared = solve(tmp_path / "declared", {}, [PASS])
    _, paper = solve(tmp_path / "paper", {"team": {"inputs": "equations"}}, [PASS], script={"aligner": [ALIGNED]})
    assert [shown(r) for r in declared] == [
        {"question", "context", "options"},
        {"question", "context", "options", "interpreter"},
        {"question", "context", "options", "interpreter", "aligner"},
        {"question", "options", "interpreter", "aligner", "scholar", "answer_format"},
        {"interpreter", "aligner", "scholar"},
    ]
    assert [shown(r) for r in paper] == [
        set(),                                       # Eq. 2: the diagram only
        {"question", "context", "options", "interpreter"},  # Eq. 3: p, c, q (q with its options)
        {"question", "context", "options", "interpreter", "aligner"},  # Eq. 4: l, p, c, q
        {"interpreter", "aligner", "scholar"},       # Eq. 5: s, l, p
        {"interpreter", "aligner", "scholar"},       # Eq. 6: a, s, l, p (with the Solver's answer)
    ]
    assert len(paper[0].image_urls()) == 1 and "Proposed solution (from the Solver)" in paper[4].user_text()
    assert "## Answer options\nA. 2 kg\nB. 4 kg" in paper[1].user_text()
    # the Aligner is asked to keep every option with its letter, and so the options reach the Solver
    assert "and every answer option, if there are any, with its letter" in " ".join(paper[1].user_text().split())
    assert f"## Aligned problem background (from the Aligner)\n{ALIGNED}" in paper[3].user_text()
    # ... whose answer stays held to the options' letters, with no answer format (the benchmark's) sent
    schema = paper[3].body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["final_answer"]["enum"] == ["A", "B"]
    assert "Give the letter." not in paper[3].user_text()


def test_under_inputs_equations_an_option_that_is_an_image_keeps_its_letter(tmp_path) -> None:
    make_png(tmp_path / "other.png")
    problem = {"question": "Which figure balances?", "options": ["<image_1>", "<image_2>"],
               "images": ["lever.png", "other.png"]}
    _, requests = solve(tmp_path, {"team": {"inputs": "equations"}}, [PASS], problem=problem)
    content = requests[0].messages[-1]["content"]  # the Interpreter's: the diagrams only, each by its option
    assert [part["type"] for part in content].count("image_url") == 2 and shown(requests[0]) == set()
    text = requests[0].user_text()
    assert "A. <image_1>" in text and "B. <image_2>" in text and "Which figure" not in text


def test_a_copy_of_the_big_five_team_takes_the_same_switch(tmp_path) -> None:
    team = yaml.safe_load((REPO / "maps_autogen" / "settings" / "defaults" / "teams" / "big_five.yaml").read_text())
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "five.yaml").write_text(yaml.safe_dump({**team, "inputs": "equations"}))
    passing = review({"caption": 1, "alignment": 1, "knowledge": 1, "solution": 1}, "solution")
    _, requests = solve(tmp_path, {}, [passing], "--team", str(tmp_path / "five.yaml"))
    assert shown(requests[3]) == {"interpreter", "aligner", "scholar"}


def test_equation_inputs_outside_a_steps_inputs_are_refused_when_in_force(tmp_path) -> None:
    steps = yaml.safe_load((REPO / "agents.yaml").read_text())["team"]["steps"]
    steps[3]["inputs"] = ["question", "options", "interpreter", "aligner", "answer_format"]  # no Scholar
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump({"team": {"steps": steps}}))
    assert run_maps(["config"], env=clean_env(), cwd=tmp_path).returncode == 0  # unused, so unchecked
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump({"team": {"steps": steps, "inputs": "equations"}}))
    result = run_maps(["config"], env=clean_env(), cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "team.steps[3] (solver).equation_inputs: 'scholar' is not one of its inputs" in result.stderr


@pytest.mark.parametrize(("ties", "rerun"), [("worst_step", "solver"), ("earliest", "scholar")])
def test_critic_ties_picks_which_of_the_equally_low_steps_reruns(tmp_path, ties, rerun) -> None:
    tie = review({"caption": 5, "alignment": 5, "knowledge": 3, "solution": 3}, "solution")
    summary, requests = solve(tmp_path, {"critic": {"ties": ties}}, [tie, PASS])
    assert summary["rollbacks"] == [rerun]
    roles = [request.role for request in requests]
    assert roles[5:] == (["scholar", "solver", "critic"] if rerun == "scholar" else ["solver", "critic"])


def _rows() -> list[tuple[list[str], list[str]]]:
    """(switches, test files) of each row of docs/paper.md's tables: what is written as code
    (`...`) in the row's switch column ("Switch back", "Switch to the example"), the settings
    apart from the test files the row names."""
    rows, column = [], None
    for line in (REPO / "docs" / "paper.md").read_text().splitlines():
        if not line.startswith("| "):
            column = column if line.startswith("|") else None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] == "What":
            column = next(index for index, cell in enumerate(cells) if cell.startswith("Switch"))
            continue
        assert column is not None, line
        snippets = re.findall(r"`([^`]+)`", cells[column])
        rows.append(([s for s in snippets if not s.startswith("tests/")], [s for s in snippets if s.startswith("tests/")]))
    return rows


def _switches() -> list[str]:
    return [switch for switches, _ in _rows() for switch in switches]


def _words(switch: str) -> list[str]:
    """What a test using `switch` writes: a flag and its value, or each innermost key and value."""
    if switch.startswith("--"):
        return switch.split()
    data = yaml.safe_load(switch)
    words: list[str] = []
    while isinstance(data, dict):
        words += [str(key) for key in data][-1:]
        data = list(data.values())[-1] if len(data) == 1 else data
        if isinstance(data, dict) and len(data) > 1:
            words += [word for key, value in data.items() for word in (str(key), str(value))]
            break
    if not isinstance(data, dict):
        words += [str(item) for item in data] if isinstance(data, list) else [str(data)]
    return words


def test_every_switch_in_docs_paper_md_is_a_setting_maps_accepts(tmp_path) -> None:
    """A switch is a command-line option, a setting of agents.yaml (a mapping of its top-level
    keys), a setting of a step (a mapping of step keys: tried on each step, the reviewer first,
    until one takes it) or a key's name."""
    switches = _switches()
    assert len(switches) >= 19
    steps = yaml.safe_load((REPO / "agents.yaml").read_text())["team"]["steps"]
    names = {*AppConfig.model_fields, *StepConfig.model_fields, *TeamConfig.model_fields, *REVIEW_PARTS}
    for switch in switches:
        if switch.startswith("--"):  # a command-line option of maps solve
            flag = switch.split()[0]
            assert flag in run_maps(["solve", "--help"], env=clean_env(), cwd=tmp_path).stdout, flag
            continue
        data = yaml.safe_load(switch)
        if isinstance(data, str):
            assert data in names, switch
            continue
        assert isinstance(data, dict) and len(data) == 1, switch
        if next(iter(data)) in AppConfig.model_fields:
            (tmp_path / "agents.yaml").write_text(yaml.safe_dump(data))
            load_config(cwd=tmp_path)  # raises on an unknown key or value
            continue
        taken = []  # a step's setting: on the reviewer, else on the first step that takes it
        for index in reversed(range(len(steps))):
            changed = [*steps[:index], {**steps[index], **data}, *steps[index + 1:]]
            (tmp_path / "agents.yaml").write_text(yaml.safe_dump({"team": {"steps": changed}}))
            try:
                load_config(cwd=tmp_path)
            except ConfigError:
                continue
            taken.append(index)
            break
        assert taken, f"no step takes {switch}"


def test_each_row_names_a_test_that_uses_its_switches(tmp_path) -> None:
    """The docs' words are the tests': each row with a switch names a test file, and that file
    writes every key and value of each switch (a flag and its value)."""
    rows = [(switches, tests) for switches, tests in _rows() if switches]
    assert len(rows) >= 15
    for switches, tests in rows:
        assert tests, f"no test named for {switches}"
        text = "\n".join((REPO / test).read_text() for test in tests)
        for switch in switches:
            for word in _words(switch):
                assert word in text or word.lower() in text, f"{tests} never writes {word!r} of {switch!r}"


def test_big_five_threshold_one_passes_only_the_top_anchor(tmp_path) -> None:
    between = review({"caption": 1, "alignment": 1, "knowledge": 0.85, "solution": 1}, "knowledge")
    top = review({"caption": 1, "alignment": 1, "knowledge": 1, "solution": 1}, "knowledge")
    summary, _ = solve(tmp_path / "tau", {}, [between], "--team", "big_five")
    assert summary["stop_reason"] == "critic_passed" and summary["rollbacks"] == []  # 0.85 >= 0.8
    summary, requests = solve(tmp_path / "one", {}, [between, top], "--team", "big_five", "--threshold", "1")
    assert summary["rollbacks"] == ["scholar"] and [r.role for r in requests][5:] == ["scholar", "solver", "critic"]


def test_a_reviewer_scale_from_zero_reaches_the_wire(tmp_path) -> None:
    steps = yaml.safe_load((REPO / "agents.yaml").read_text())["team"]["steps"]
    steps[-1]["scale"] = {"low": 0, "high": 5}
    _, requests = solve(tmp_path, {"team": {"steps": steps}}, [PASS])
    critic = requests[4]
    score = critic.body["response_format"]["json_schema"]["schema"]["properties"]["scores"]["properties"]["caption"]
    assert score == {"type": "integer", "minimum": 0, "maximum": 5} and "from 0 to 5" in critic.user_text()


def _sent_size(request: Received) -> tuple[int, int]:
    url = request.image_urls()[0]
    size: tuple[int, int] = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size
    return size


def test_json_mode_object_and_max_side_reach_the_wire(tmp_path) -> None:
    _, default = solve(tmp_path / "default", {}, [PASS], size=(2400, 120))
    assert default[3].body["response_format"]["type"] == "json_schema" and _sent_size(default[0]) == (1568, 78)
    config = {"endpoints": {"openai": {"json_mode": "object"}}, "images": {"max_side": 8192}}
    _, requests = solve(tmp_path / "switch", config, [PASS], size=(2400, 120))
    assert requests[3].body["response_format"] == {"type": "json_object"}
    assert _sent_size(requests[0]) == (2400, 120)  # as the file has it


def test_a_steps_reply_budget_and_the_temperature_reach_the_wire(tmp_path) -> None:
    steps = yaml.safe_load((REPO / "agents.yaml").read_text())["team"]["steps"]
    steps[3]["model"] = {"max_tokens": 16384}  # on the Solver
    _, requests = solve(tmp_path, {"team": {"steps": steps}, "model": {"temperature": 1.0}}, [PASS])
    assert {r.role: r.body["max_tokens"] for r in requests} == {
        "interpreter": 3072, "aligner": 3072, "scholar": 4096, "solver": 16384, "critic": 2048}
    assert {r.body["temperature"] for r in requests} == {1.0}


def test_images_to_next_step_hands_the_left_out_interpreters_image_to_the_aligner(tmp_path) -> None:
    _, paper = solve(tmp_path / "paper", {}, [PASS], "--without", "interpreter")
    _, handed = solve(tmp_path / "handed", {"images": {"to_next_step": True}}, [PASS], "--without", "interpreter")
    assert [(r.role, len(r.image_urls())) for r in paper] == [("aligner", 0), ("scholar", 0), ("solver", 0), ("critic", 0)]
    assert [(r.role, len(r.image_urls())) for r in handed] == [("aligner", 1), ("scholar", 0), ("solver", 0), ("critic", 0)]


def test_the_rollback_cap_of_twenty_on_the_wire(tmp_path) -> None:
    low = review({"caption": 5, "alignment": 5, "knowledge": 5, "solution": 2}, "solution")
    summary, requests = solve(tmp_path, {"critic": {"max_rollbacks": 20}}, [low])
    assert summary["stop_reason"] == "rollback_limit" and summary["rollbacks"] == ["solver"] * 20
    assert [r.role for r in requests][4:] == ["critic", *["solver", "critic"] * 20]  # a final review after the last


def test_the_rollback_cap_and_the_one_decision_variant_on_the_wire(tmp_path) -> None:
    low = review({"caption": 5, "alignment": 5, "knowledge": 2, "solution": 5}, "knowledge")
    summary, requests = solve(tmp_path / "cap", {}, [low])
    assert summary["stop_reason"] == "rollback_limit" and len(summary["rollbacks"]) == 3
    assert [r.role for r in requests].count("critic") == 4  # a final review after the third rollback
    summary, requests = solve(tmp_path / "one", {"critic": {"max_rollbacks": 1, "final_review": False}}, [low])
    assert [r.role for r in requests][4:] == ["critic", "scholar", "solver"]  # one decision, no review after it
