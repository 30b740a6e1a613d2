"""Each role's request: its declared inputs only, labelled; images only where configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from maps_autogen.config import load_config
from maps_autogen.images import load_image
from maps_autogen.problem import Problem
from maps_autogen.prompts import load_prompts
from maps_autogen.roles import Role
from maps_autogen.role_inputs import Revision, build_request, format_options
from tests.conftest import make_png

OUTPUTS = {Role.INTERPRETER: "P-caption", Role.ALIGNER: "L-aligned", Role.SCHOLAR: "S-knowledge", Role.SOLVER: "A-solution"}
EXPECTED = {
    Role.INTERPRETER: {"Q-question", "C-context", "A. O-one"},  # only to know what each image is
    Role.ALIGNER: {"Q-question", "C-context", "A. O-one", "P-caption"},
    Role.SCHOLAR: {"Q-question", "C-context", "P-caption", "L-aligned"},
    Role.SOLVER: {"Q-question", "A. O-one", "P-caption", "L-aligned", "S-knowledge", "F-format"},
    Role.CRITIC: {"P-caption", "L-aligned", "S-knowledge", "A-solution"},
}
ALL_MARKERS = {"Q-question", "C-context", "A. O-one", "P-caption", "L-aligned", "S-knowledge", "A-solution", "F-format"}


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(load_config(cwd=Path("/nonexistent")))


@pytest.fixture
def problem(tmp_path: Path) -> Problem:
    image = load_image(str(make_png(tmp_path / "d.png")), max_side=1568)
    return Problem("Q-question", context="C-context", options=("O-one", "O-two"), images=(image,), answer_format="F-format")


@pytest.mark.parametrize("role", list(Role))
def test_each_role_sees_exactly_its_inputs(role: Role, prompts, problem: Problem) -> None:
    text = build_request(role, problem, OUTPUTS, prompts, dimensions=("caption", "alignment", "knowledge", "solution"))
    assert isinstance(text, str)
    assert {marker for marker in ALL_MARKERS if marker in text} == EXPECTED[role]


def test_images_are_sent_noted_or_withheld(prompts, problem: Problem) -> None:
    sent = build_request(Role.INTERPRETER, problem, {}, prompts, dimensions=(), images="send")
    assert isinstance(sent, list) and sent[1]["image_url"]["url"].startswith("data:image/png;base64,")
    noted = build_request(Role.INTERPRETER, problem, {}, prompts, dimensions=(), images="note")
    assert isinstance(noted, str) and "d.png, 320x200 px" in noted and "cannot see images" in noted
    withheld = build_request(Role.ALIGNER, problem, OUTPUTS, prompts, dimensions=(), images="none")
    assert isinstance(withheld, str) and "d.png" not in withheld


def test_revision_material_comes_before_the_instruction(prompts, problem: Problem) -> None:
    text = build_request(Role.SCHOLAR, problem, OUTPUTS, prompts, dimensions=(), revision=Revision("old knowledge", "Is energy conserved?"))
    assert text.index("old knowledge") < text.index("Is energy conserved?") < text.index("Decompose")


def test_critic_instruction_lists_its_dimensions(prompts) -> None:
    text = build_request(Role.CRITIC, Problem("q"), OUTPUTS, prompts, dimensions=("alignment", "knowledge", "solution"))
    assert "dimensions: alignment, knowledge, solution." in text and "no diagram" in text


def test_format_options() -> None:
    assert format_options(("2 kg", "4 kg")) == "A. 2 kg\nB. 4 kg"
    assert format_options(("A. 2 kg", "B) 4 kg")) == "A. 2 kg\nB) 4 kg"
