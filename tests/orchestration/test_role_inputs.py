"""Each step's request: its declared inputs only, labelled; images only where configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from maps_autogen.orchestration._role_inputs import Revision, build_request, format_options, review_variables
from maps_autogen.problem._images import load_image
from maps_autogen.problem._problem import Problem
from maps_autogen.settings._config import load_config
from maps_autogen.settings._prompts import load_prompts
from tests.helpers.common import make_png

OUTPUTS = {"interpreter": "P-caption", "aligner": "L-aligned", "scholar": "S-knowledge", "solver": "A-solution"}
EXPECTED = {
    "interpreter": {"Q-question", "C-context", "A. O-one"},  # only to know what each image is
    "aligner": {"Q-question", "C-context", "A. O-one", "P-caption"},
    "scholar": {"Q-question", "C-context", "A. O-one", "P-caption", "L-aligned"},  # q with its options (Eq. 4)
    "solver": {"Q-question", "A. O-one", "P-caption", "L-aligned", "S-knowledge", "F-format"},
    "critic": {"P-caption", "L-aligned", "S-knowledge", "A-solution"},
}
ALL_MARKERS = {"Q-question", "C-context", "A. O-one", "P-caption", "L-aligned", "S-knowledge", "A-solution", "F-format"}


@pytest.fixture(scope="module")
def loaded():
    return load_config(cwd=Path("/nonexistent"))


@pytest.fixture(scope="module")
def prompts(loaded):
    return load_prompts(loaded)


@pytest.fixture(scope="module")
def step(loaded):
    return loaded.team.config.step


@pytest.fixture
def problem(tmp_path: Path) -> Problem:
    image = load_image(str(make_png(tmp_path / "d.png")), max_side=1568)
    return Problem("Q-question", context="C-context", options=("O-one", "O-two"), images=(image,), answer_format="F-format")


SCORED = (("interpreter", "caption"), ("aligner", "alignment"), ("scholar", "knowledge"), ("solver", "solution"))


def critic_variables(prompts, scored=SCORED):
    return review_variables(scored, prompts, low=1, high=5, threshold=5)


@pytest.mark.parametrize("role", list(EXPECTED))
def test_each_role_sees_exactly_its_inputs(role: str, prompts, step, problem: Problem) -> None:
    text = build_request(step(role), problem, OUTPUTS, prompts, review_variables=critic_variables(prompts))
    assert isinstance(text, str)
    assert {marker for marker in ALL_MARKERS if marker in text} == EXPECTED[role]


def test_images_are_sent_noted_or_withheld(prompts, step, problem: Problem) -> None:
    sent = build_request(step("interpreter"), problem, {}, prompts, images="send")
    assert isinstance(sent, list) and sent[1]["image_url"]["url"].startswith("data:image/png;base64,")
    noted = build_request(step("interpreter"), problem, {}, prompts, images="note")
    assert isinstance(noted, str) and "d.png, 320x200 px" in noted and "cannot see images" in noted
    withheld = build_request(step("aligner"), problem, OUTPUTS, prompts, images="none")
    assert isinstance(withheld, str) and "d.png" not in withheld


def test_revision_material_comes_before_the_instruction(prompts, step, problem: Problem) -> None:
    text = build_request(step("scholar"), problem, OUTPUTS, prompts, revision=Revision("old knowledge", "Is energy conserved?"))
    assert text.index("old knowledge") < text.index("Is energy conserved?") < text.index("Decompose")


def test_critic_instruction_lists_its_dimensions_rubric_and_scale(prompts, step) -> None:
    no_interpreter = {name: text for name, text in OUTPUTS.items() if name != "interpreter"}  # no image: it did not run
    text = build_request(step("critic"), Problem("q"), no_interpreter, prompts, review_variables=critic_variables(prompts, SCORED[1:]))
    assert "- alignment: Aligned problem background (from the Aligner)\n- knowledge: Domain knowledge" in text
    assert "caption" not in text and "no diagram" in text
    assert "(one of:\nalignment, knowledge, solution)" in text or "(one of: alignment, knowledge, solution)" in " ".join(text.split())
    # the rubric: what each score means, the three Socratic kinds (domain standards under consistency)
    for words in ("5: it withstands three counterfactual", "1: it fails the basic check that its elements exist",
                  "Existence:", "Consistency:", "Stress:", "standards of the field"):
        assert words in text
    assert text.index('"evaluation"') < text.index('"scores"')


def test_format_options() -> None:
    assert format_options(("2 kg", "4 kg")) == "A. 2 kg\nB. 4 kg"
    assert format_options(("A. 2 kg", "B) 4 kg")) == "A. 2 kg\nB) 4 kg"
