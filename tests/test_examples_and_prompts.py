"""The shipped examples and the prompts a newcomer's first run depends on: the text example
states its numbers, the vision example needs its image, no prompt offers a placeholder a model
could copy as its answer, and (on the embedded model) the Critic's verdict depends on what it
reviews."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from maps_autogen.problem import load_problem_file

REPO = Path(__file__).resolve().parents[1]
# Prompt text a model reads while solving (extract_mathvista.md is the answer extractor's).
SOLVING_PROMPTS = sorted(p for p in (REPO / "prompts").glob("*.yaml"))
# A copyable stand-in for content: "...", "<your answer>", "<dimension>" (not the <image_1> tags
# that name a problem's images).
_PLACEHOLDER = re.compile(r"\.\.\.|…|<(?!image_\d+>)[a-z_ ]+>", re.IGNORECASE)


@pytest.mark.parametrize("path", SOLVING_PROMPTS, ids=lambda p: p.name)
def test_no_prompt_offers_a_placeholder_to_copy(path: Path) -> None:
    text = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("#"))
    assert not _PLACEHOLDER.findall(text), f"{path.name}: {_PLACEHOLDER.findall(text)}"


def test_the_text_example_states_every_number_of_its_diagram() -> None:
    problem = load_problem_file(REPO / "examples" / "lever" / "problem.yaml", max_side=1568)
    for value in ("3 kg", "0.4 m", "0.6 m"):  # the labels draw_examples.py writes into lever.png
        assert value in problem.question
    assert [image.name for image in problem.images] == ["lever.png"]


def test_the_vision_example_needs_its_image() -> None:
    problem = load_problem_file(REPO / "examples" / "circuit" / "problem.yaml", max_side=1568)
    text = " ".join((problem.question, problem.context, *problem.options))
    for value in ("12 V", "4 ohm", "12 ohm", "R1", "R2"):  # only in circuit.png
        assert value not in text
    assert [(image.name, image.width, image.height) for image in problem.images] == [("circuit.png", 640, 360)]
    assert problem.options == ("1 A", "3 A", "4 A", "4.5 A")


@pytest.mark.local
def test_embedded_critic_verdicts_depend_on_what_it_reviews() -> None:
    """Two problems' material, one sound and one nonsense, reviewed by the embedded model's
    Critic: the verdicts (scores and weakest step) differ."""
    from maps_autogen.config import load_config
    from maps_autogen.problem import Problem
    from maps_autogen.role_inputs import build_request
    from maps_autogen.roles import Role, critic_schema
    from maps_autogen.solve import assemble_team
    from maps_autogen.verdict import parse_critic_reply

    team = assemble_team(load_config(cwd=Path("/nonexistent")), env={})
    dimensions = ("caption", "alignment", "knowledge", "solution")
    lever = Problem("A 3 kg mass hangs 0.4 m left of the pivot of a light lever. What mass at 0.6 m right balances it?",
                    options=("1 kg", "2 kg", "3 kg", "4.5 kg"))
    circuit = Problem("A 12 V battery drives a 4 ohm and a 12 ohm resistor in parallel. What current flows through the battery?",
                      options=("1 A", "3 A", "4 A", "4.5 A"))
    material = {
        "lever": (lever, {Role.INTERPRETER: "A horizontal lever on a pivot: a 3 kg mass at 0.4 m on the left, m at 0.6 m on the right.",
                          Role.ALIGNER: "Torques balance: 3 kg x 0.4 m = m x 0.6 m.",
                          Role.SCHOLAR: "Lever law for a light lever in equilibrium: m1 d1 = m2 d2.",
                          Role.SOLVER: "m = 3 x 0.4 / 0.6 = 2 kg, option B. Final answer: B"}),
        "circuit": (circuit, {Role.INTERPRETER: "Bananas on a table.",
                              Role.ALIGNER: "The battery is 900 tonnes and the sky is green.",
                              Role.SCHOLAR: "Nothing is known about circuits.",
                              Role.SOLVER: "The current is purple. Final answer: E"}),
    }
    verdicts = {}
    for name, (problem, outputs) in material.items():
        request = build_request(Role.CRITIC, problem, outputs, team.prompts, dimensions=dimensions)
        messages = [{"role": "system", "content": team.prompts.system_message(Role.CRITIC)}, {"role": "user", "content": request}]
        reply = team.backends[Role.CRITIC].complete(messages, role="critic", schema_name="critic_verdict", schema=critic_schema(dimensions))
        verdict = parse_critic_reply(reply.text, dimensions)
        assert verdict is not None, reply.text
        verdicts[name] = (verdict.scores, verdict.worst_step)
    assert verdicts["lever"] != verdicts["circuit"], verdicts
