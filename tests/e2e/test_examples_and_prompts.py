"""The shipped examples and the prompts a newcomer's first run depends on: the text example
states its numbers, the vision example needs its image, and no prompt offers a placeholder a
model could copy as its answer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from maps_autogen.problem._problem import load_problem_file

REPO = Path(__file__).resolve().parents[2]
# Prompt text a model reads while solving (extract_mathvista.md is the answer extractor's).
SOLVING_PROMPTS = sorted(p for p in (REPO / "maps_autogen" / "settings" / "defaults" / "prompts").glob("*.yaml"))
# A copyable stand-in for content: "...", "<your answer>", "<dimension>" (not the <image_1> tags
# that name a problem's images).
_PLACEHOLDER = re.compile(r"\.\.\.|…|<(?!image_\d+>)[a-z_ ]+>", re.IGNORECASE)


@pytest.mark.parametrize("path", SOLVING_PROMPTS, ids=lambda p: p.name)
def test_no_prompt_offers_a_placeholder_to_copy(path: Path) -> None:
    text = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("#"))
    assert not _PLACEHOLDER.findall(text), f"{path.name}: {_PLACEHOLDER.findall(text)}"


def test_the_text_example_states_every_number_of_its_diagram() -> None:
    problem = load_problem_file(REPO / "examples" / "lever" / "problem.yaml", max_side=1568)
    for value in ("3 kg", "0.4 m", "0.6 m"):  # the labels examples/draw_examples.py writes into lever.png
        assert value in problem.question
    assert [image.name for image in problem.images] == ["lever.png"]


def test_the_vision_example_needs_its_image() -> None:
    problem = load_problem_file(REPO / "examples" / "circuit" / "problem.yaml", max_side=1568)
    text = " ".join((problem.question, problem.context, *problem.options))
    for value in ("12 V", "4 ohm", "12 ohm", "R1", "R2"):  # only in circuit.png
        assert value not in text
    assert [(image.name, image.width, image.height) for image in problem.images] == [("circuit.png", 640, 360)]
    assert problem.options == ("1 A", "3 A", "4 A", "4.5 A")
