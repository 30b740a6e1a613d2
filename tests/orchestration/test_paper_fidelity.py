"""Where the project follows the MAPS paper: the "w/o Interpreter" ablation leaves the team
without the image (today's hand-over only behind `images.to_next_step`), the reviewer's rubric
counts as the paper does and carries each dimension's feedback template from the team, the
Interpreter asks for colours and measured geometry, an image without a tag lands where the
instruction says the images are, and each step has a reply budget that fits its work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from maps_autogen.orchestration._role_inputs import build_request, review_variables
from maps_autogen.problem._problem import build_problem
from maps_autogen.settings._config import load_config
from maps_autogen.settings._prompts import load_prompts
from maps_autogen.settings._team import plan_chat
from tests.helpers.common import critic_json, make_png, solver_json
from tests.helpers.fake_openai import FakeOpenAI, RoleScript
from tests.helpers.team import by_name, solve, steps, write_team_config


def transcript(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]


# ----- 1. the paper's "w/o Interpreter": no step receives the image ---------------------------

def test_without_the_interpreter_no_request_carries_the_image_and_the_run_says_so(tmp_path, monkeypatch, capsys) -> None:
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": [critic_json(caption=None)]})) as server:
        code, summary, err = solve(tmp_path, monkeypatch, capsys, server, "--without", "interpreter")
    assert code == 0, err
    assert server.roles() == ["aligner", "scholar", "solver", "critic"]
    assert [r.image_urls() for r in server.received] == [[], [], [], []]
    assert summary is not None
    run_dir = Path(summary["run_dir"])
    run = json.loads((run_dir / "run.json").read_text())
    assert run["flow"]["images_dropped"] == ["interpreter"] and run["flow"]["image_roles"] == []
    events = [r for r in transcript(run_dir) if r.get("event") == "images_dropped"]
    assert len(events) == 1 and events[0]["roles"] == ["interpreter"] and "no step" in events[0]["detail"]



def test_images_to_next_step_hands_a_left_out_steps_images_on_and_records_nothing_dropped(tmp_path) -> None:
    team = load_config(cwd=tmp_path).team.config
    paper = plan_chat(team, has_images=True, without=frozenset({"interpreter"}))
    handed = plan_chat(team, has_images=True, without=frozenset({"interpreter"}), images_to_next=True)
    assert (paper.image_steps, paper.images_dropped) == (frozenset(), ("interpreter",))
    assert (handed.image_steps, handed.images_dropped) == (frozenset({"aligner"}), ())
    # leaving out a step that sees no images drops nothing
    assert plan_chat(team, has_images=True, without=frozenset({"scholar"})).images_dropped == ()

# ----- 2. the reviewer's rubric counts, and each dimension's feedback template comes from the team

# Table 6's anchors, in our words and with nothing added: each whole line of the rubric.
ANCHORS_1_TO_5 = ["- 5: it withstands three counterfactual scenarios (three small changes of the given conditions);\n",
                  "- 4: at most one of its assumptions still needs validating;\n",
                  "- 3: it needs two or three further pieces of evidence;\n",
                  "- 2: it holds a structural contradiction;\n",
                  "- 1: it fails the basic check that its elements exist.\n"]


def reviewer_text(loaded_team: str | None, tmp_path: Path) -> tuple[str, dict[str, str]]:
    """The reviewer's first request as built for a problem with an image, and the dimensions'
    templates as the team declares them."""
    loaded = load_config(cwd=tmp_path, team=Path(loaded_team) if loaded_team else None)
    team = loaded.team.config
    prompts = load_prompts(loaded)
    problem = build_problem("Q?", image_sources=[str(make_png(tmp_path / "f.png"))], max_side=512)
    plan = plan_chat(team, has_images=True)
    reviewer = team.step(plan.reviewer or "")
    variables = review_variables(plan.scored, prompts, low=team.scale.low, high=team.scale.high, threshold=team.threshold)
    text = build_request(reviewer, problem, {}, prompts, review_variables=variables)
    assert isinstance(text, str)
    return text, {step.dimension: step.feedback_template or "" for step in team.steps if step.name in dict(plan.scored)}


def test_the_default_reviewer_counts_as_the_paper_does_and_asks_along_each_dimensions_template(tmp_path) -> None:
    text, templates = reviewer_text(None, tmp_path)
    for anchor in ANCHORS_1_TO_5:
        assert anchor in text
    assert set(templates) == {"caption", "alignment", "knowledge", "solution"}
    for dimension, template in templates.items():
        assert template and f"- {dimension}: {template}" in text
    assert "measured quantity" in templates["caption"] and "same object or quantity" in templates["alignment"]
    assert "established source" in templates["knowledge"] and "known, equivalent case" in templates["solution"]


def test_the_big_five_reviewer_places_the_anchors_on_its_0_to_1_scale(tmp_path) -> None:
    text, templates = reviewer_text("big_five", tmp_path)
    for score, anchor in zip(("1.0", "0.75", "0.5", "0.25", "0"), ANCHORS_1_TO_5):
        assert f"- {score}: {anchor.split(': ', 1)[1]}" in text
    assert "0.8" not in text  # the pass mark is the Manager's, not told to the reviewer
    for dimension, template in templates.items():
        assert template and f"- {dimension}: {template}" in text


def test_a_renamed_dimension_brings_its_own_template_to_the_reviewer_on_the_wire(tmp_path, monkeypatch, capsys) -> None:
    team = steps()
    by_name(team, "interpreter").update(critic_dimension="figure", feedback_template="which arrow has no stated length")
    del by_name(team, "scholar")["feedback_template"]  # a dimension without a template is not listed
    write_team_config(tmp_path, team)
    verdict = json.dumps({"reasoning": "r", "scores": {"figure": 5, "alignment": 5, "knowledge": 5, "solution": 5},
                          "need_feedback": False, "worst_step": "figure",
                          "feedback": {"figure": "f?", "alignment": "a?", "knowledge": "k?", "solution": "s?"}})
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": [verdict]})) as server:
        code, _, err = solve(tmp_path, monkeypatch, capsys, server)
    assert code == 0, err
    critic = next(r for r in server.received if r.role == "critic").user_text()
    assert "- figure: which arrow has no stated length" in critic
    assert "- caption:" not in critic and "- knowledge: which" not in critic
    assert f"- solution: {by_name(team, 'solver')['feedback_template']}" in critic
    for anchor in ANCHORS_1_TO_5:
        assert anchor in critic


# ----- 3 and 4. the Interpreter asks for colours and measured geometry; an untagged image lands
# where its instruction says the images are -----------------------------------------------------

def test_an_untagged_image_reaches_the_interpreter_under_the_images_heading_not_inside_its_instruction(tmp_path, monkeypatch, capsys) -> None:
    write_team_config(tmp_path)  # the paper's layout: the instruction closes the Interpreter's request
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": [critic_json()]})) as server:
        code, _, err = solve(tmp_path, monkeypatch, capsys, server)  # the question names no <image_1>
    assert code == 0, err
    interpreter = next(r for r in server.received if r.role == "interpreter")
    content = interpreter.messages[-1]["content"]
    kinds = [part["type"] for part in content]
    assert kinds == ["text", "image_url", "text"]
    before, after = content[0]["text"], content[2]["text"]
    assert before.endswith("## Diagram(s)\n<image_1>")  # the heading the instruction names, after the inputs
    assert "## Answer options\nA. O-one" in before
    # the whole instruction, its own example tags included, comes after the image
    assert after.lstrip().startswith("Whatever of the problem's text is shown above") and "such as <image_1>, the" in " ".join(after.split())
    assert 'under the heading "Diagram(s)"' in " ".join(after.split())
    instruction = " ".join(after.split())
    for asked in ("colour", "its code", "coordinates", "angles", "sizes and lengths", "purely visual evidence"):
        assert asked in instruction, asked


def test_a_tagged_image_follows_its_tag_in_the_question(tmp_path) -> None:
    loaded = load_config(cwd=tmp_path)
    prompts = load_prompts(loaded)
    problem = build_problem("In <image_1>, which way?", image_sources=[str(make_png(tmp_path / "f.png"))], max_side=512)
    content = build_request(loaded.team.config.step("interpreter"), problem, {}, prompts, images="send")
    assert isinstance(content, list) and [part["type"] for part in content] == ["text", "image_url", "text"]
    assert content[0]["text"].endswith("## Question\nIn <image_1>") and "## Diagram(s)" not in content[2]["text"]


# ----- 5. each step's reply budget fits its work, and a step's model keys inherit the top-level ones

BUDGETS = {"interpreter": 3072, "aligner": 3072, "scholar": 4096, "solver": 8192, "critic": 2048}


def test_each_step_sends_its_own_budget_on_the_model_the_config_names(tmp_path, monkeypatch, capsys) -> None:
    write_team_config(tmp_path, model={"name": "my-served-model", "temperature": 0.3})  # a step's budget keeps this model
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": [critic_json()]})) as server:
        code, _, err = solve(tmp_path, monkeypatch, capsys, server)
    assert code == 0, err
    sent = {r.role: (r.body["model"], r.body["temperature"], r.body["max_tokens"]) for r in server.received}
    assert sent == {role: ("my-served-model", 0.3, budget) for role, budget in BUDGETS.items()}


def test_model_on_the_command_line_keeps_each_steps_budget_and_both_teams_set_them(tmp_path) -> None:
    from maps_autogen.settings._endpoints import resolve_models
    from maps_autogen.settings._overrides import with_overrides

    for team in (None, "big_five"):
        loaded = with_overrides(load_config(cwd=tmp_path, team=Path(team) if team else None), model="gpt-4o-mini")
        models = resolve_models(loaded, {"OPENAI_API_KEY": "sk-test-budget-000000"}).models
        assert {role: (model.model, model.max_tokens) for role, model in models.items()} == {
            role: ("gpt-4o-mini", budget) for role, budget in BUDGETS.items()}
