"""Where we differ from the papers, the switch back, read from the requests the scripted server
receives: `team: {inputs: equations}` gives every step exactly its equation's inputs (the Solver
s, l and p as in Eq. 5), `critic: {ties: earliest}` breaks a tie by the paper's argmin, Big
Five's `--threshold 1` passes only the top anchor, a reviewer scale from 0, the JSON mode and
the image size reach the wire, and each switch docs/paper.md names is a setting `maps` accepts."""

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

from maps_autogen.settings._config import AppConfig, load_config
from maps_autogen.settings._team import REVIEW_PARTS, StepConfig, TeamConfig
from tests.helpers.common import REPO, TEST_KEY, clean_env, make_png, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, Received, RoleScript

HEADINGS = {"question": "## Question\n", "context": "## Context\n", "options": "## Answer options\n",
            "answer_format": "## Required answer format\n", "interpreter": "## Diagram description (from the Interpreter)\n",
            "aligner": "## Aligned problem background (from the Aligner)\n", "scholar": "## Domain knowledge (from the Scholar)\n"}


def solve(tmp_path: Path, config: dict[str, Any], critic: list[str], *args: str) -> tuple[dict[str, Any], list[Received]]:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump(config))
    make_png(tmp_path / "lever.png")
    (tmp_path / "problem.yaml").write_text(yaml.safe_dump({
        "question": "Which mass?", "context": "3 kg at 0.4 m", "options": ["2 kg", "4 kg"], "images": ["lever.png"],
        "answer_format": "Give the letter."}))
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": critic})) as server:
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


def test_inputs_equations_gives_each_step_exactly_its_equations_inputs(tmp_path) -> None:
    _, declared = solve(tmp_path / "declared", {}, [PASS])
    _, paper = solve(tmp_path / "paper", {"team": {"inputs": "equations"}}, [PASS])
    assert [shown(r) for r in declared] == [
        {"question", "context", "options"},
        {"question", "context", "options", "interpreter"},
        {"question", "context", "interpreter", "aligner"},
        {"question", "options", "interpreter", "aligner", "scholar", "answer_format"},
        {"interpreter", "aligner", "scholar"},
    ]
    assert [shown(r) for r in paper] == [
        set(),                                       # Eq. 2: the diagram only
        {"question", "context", "interpreter"},      # Eq. 3: p, c, q
        {"question", "context", "interpreter", "aligner"},  # Eq. 4: l, p, c, q
        {"interpreter", "aligner", "scholar"},       # Eq. 5: s, l, p
        {"interpreter", "aligner", "scholar"},       # Eq. 6: a, s, l, p (with the Solver's answer)
    ]
    assert len(paper[0].image_urls()) == 1 and "Proposed solution (from the Solver)" in paper[4].user_text()
    # the Solver's answer is still held to the options' letters (they reach it through the Aligner)
    schema = paper[3].body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["final_answer"]["enum"] == ["A", "B"]


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


def _switches() -> list[str]:
    """The settings in the "Switch back" column of docs/paper.md, as written there (`...`)."""
    text = (REPO / "docs" / "paper.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| What")]
    header = next(line for line in text.splitlines() if line.startswith("| What"))
    column = [cell.strip() for cell in header.strip("|").split("|")].index("Switch back")
    cells = [[cell.strip() for cell in row.strip("|").split("|")][column] for row in rows]
    return [snippet for cell in cells for snippet in re.findall(r"`([^`]+)`", cell)]


def test_every_switch_in_docs_paper_md_is_a_setting_maps_accepts(tmp_path) -> None:
    """A switch is a command-line option, a setting of agents.yaml (a mapping of its top-level
    keys), a setting of a step (a mapping of step keys: tried on the reviewer) or a key's name."""
    switches = _switches()
    assert len(switches) >= 15
    steps = yaml.safe_load((REPO / "agents.yaml").read_text())["team"]["steps"]
    names = {*AppConfig.model_fields, *StepConfig.model_fields, *TeamConfig.model_fields, *REVIEW_PARTS}
    for switch in switches:
        if switch.startswith("--"):  # a command-line option of maps solve
            flag = switch.split()[0]
            assert flag in run_maps(["solve", "--help"], env=clean_env(), cwd=tmp_path).stdout, flag
            continue
        if "/" in switch:  # the test that reads the switch's effect
            assert (REPO / switch).is_file(), switch
            continue
        data = yaml.safe_load(switch)
        if isinstance(data, str):
            assert data in names, switch
            continue
        assert isinstance(data, dict) and len(data) == 1, switch
        if next(iter(data)) not in AppConfig.model_fields:  # a step's setting, on the reviewer
            data = {"team": {"steps": [*steps[:-1], {**steps[-1], **data}]}}
        (tmp_path / "agents.yaml").write_text(yaml.safe_dump(data))
        load_config(cwd=tmp_path)  # raises on an unknown key or value


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


def test_json_mode_object_and_max_side_reach_the_wire(tmp_path) -> None:
    config = {"endpoints": {"openai": {"json_mode": "object"}}, "images": {"max_side": 64}}
    _, requests = solve(tmp_path, config, [PASS])
    assert requests[3].body["response_format"] == {"type": "json_object"}
    url = requests[0].image_urls()[0]
    assert max(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size) == 64


def test_the_rollback_cap_and_the_one_decision_variant_on_the_wire(tmp_path) -> None:
    low = review({"caption": 5, "alignment": 5, "knowledge": 2, "solution": 5}, "knowledge")
    summary, requests = solve(tmp_path / "cap", {}, [low])
    assert summary["stop_reason"] == "rollback_limit" and len(summary["rollbacks"]) == 3
    assert [r.role for r in requests].count("critic") == 4  # a final review after the third rollback
    summary, requests = solve(tmp_path / "one", {"critic": {"max_rollbacks": 1, "final_review": False}}, [low])
    assert [r.role for r in requests][4:] == ["critic", "scholar", "solver"]  # one decision, no review after it
