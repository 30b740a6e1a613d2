"""The custom benchmark's rules read what chat models write: a varied set of phrasings (the set
docs/benchmarks.md measures the rules on), each with the option it names, or None where the
reply names two options, negates one or names none. Kept here so every change of the rules is
measured on the same set."""

from __future__ import annotations

import pytest

from maps_autogen.scoring.benchmarks.custom.scorer import SCORER

OPTIONS = ["2 kg", "4 kg", "6 kg", "8 kg"]  # the gold answer is B (4 kg) throughout
WORDS = ["up", "down", "left", "right"]  # the same with options that are words

# (reply, the options, the letter the reply names; None: it names none, two, or negates one)
NAMES_ONE = [
    ("B", OPTIONS, "B"),
    ("b", OPTIONS, "B"),
    ("(B)", OPTIONS, "B"),
    ("(b)", OPTIONS, "B"),
    ("[B]", OPTIONS, "B"),
    ("B.", OPTIONS, "B"),
    ("B)", OPTIONS, "B"),
    ("B:", OPTIONS, "B"),
    ("**B**", OPTIONS, "B"),
    ("`B`", OPTIONS, "B"),
    ("Option B", OPTIONS, "B"),
    ("option (b)", OPTIONS, "B"),
    ("The answer is B", OPTIONS, "B"),
    ("The answer is B.", OPTIONS, "B"),
    ("The answer is: B", OPTIONS, "B"),
    ("The answer is (B).", OPTIONS, "B"),
    ("the answer is b", OPTIONS, "B"),
    ("THE ANSWER IS B", OPTIONS, "B"),
    ("Answer: B", OPTIONS, "B"),
    ("answer: (b)", OPTIONS, "B"),
    ("**Answer:** B", OPTIONS, "B"),
    ("**Answer:** (B) 4 kg", OPTIONS, "B"),
    ("**Answer: B**", OPTIONS, "B"),
    ("Final answer: B", OPTIONS, "B"),
    ("Final Answer: **(B)**", OPTIONS, "B"),
    ("**Final answer:**\n\n(B) 4 kg", OPTIONS, "B"),
    ("### Final answer\nB", OPTIONS, "B"),
    ("The correct answer is B) 4 kg.", OPTIONS, "B"),
    ("The correct answer would be option B.", OPTIONS, "B"),
    ("The correct option is (B).", OPTIONS, "B"),
    ("The answer is B. 4 kg", OPTIONS, "B"),
    ("The answer is B: 4 kg", OPTIONS, "B"),
    ("The answer is 4 kg", OPTIONS, "B"),
    ("The answer is 4 kg (B).", OPTIONS, "B"),
    ("Answer = B", OPTIONS, "B"),
    ("\\boxed{B}", OPTIONS, "B"),
    ("$\\boxed{B}$", OPTIONS, "B"),
    ("\\boxed{\\text{B}}", OPTIONS, "B"),
    ("\\boxed{(B)}", OPTIONS, "B"),
    ("so the mass is \\boxed{4 kg}", OPTIONS, "B"),
    ("4 kg", OPTIONS, "B"),
    ("4 KG.", OPTIONS, "B"),
    ("I think it's B.", OPTIONS, "B"),
    ("B is correct.", OPTIONS, "B"),
    ("It must be (B) because the lever balances at 4 kg.", OPTIONS, "B"),
    ("Working: 2 x 2 = 4.\nThe answer is B because the moments balance.", OPTIONS, "B"),
    ("The moments balance when m = 4 kg.\n\nAnswer: B", OPTIONS, "B"),
    ("The answer is (A)", OPTIONS, "A"),  # a wrong answer is read as what it names
    ("A is correct", OPTIONS, "A"),
    ("Answer: D", OPTIONS, "D"),
    ("down", WORDS, "B"),
    ("Down.", WORDS, "B"),
    ("The answer is: down", WORDS, "B"),
    ("**Answer:** (B) down", WORDS, "B"),
    ("The block moves down.", WORDS, "B"),
    ("Final answer: *down*", WORDS, "B"),
]
NAMES_NONE = [
    ("B or C", OPTIONS, None),
    ("The answer is B or C.", OPTIONS, None),
    ("Both (B) and (C) are correct.", OPTIONS, None),
    ("The answer is B, not C.", OPTIONS, None),
    ("The answer is not B.", OPTIONS, None),
    ("not B", OPTIONS, None),
    ("B is wrong.", OPTIONS, None),
    ("Answer: B is incorrect", OPTIONS, None),
    ("The answer is (B) 2 kg", OPTIONS, None),  # its letter and another option's text
    ("**Answer:** (B) up", WORDS, None),
    ("It is either 2 kg or 4 kg.", OPTIONS, None),
    ("So \\boxed{B}, not \\boxed{C}.", OPTIONS, None),
    ("The block does not move down.", WORDS, None),
    ("The answer is E", OPTIONS, None),  # beyond the options
    ("I cannot tell from the figure.", OPTIONS, None),
    ("", OPTIONS, None),
    ("A block of 4 kg hangs from the left end, so we compare moments about the pivot and the lighter mass on "
     "the right must be larger; after working through every step carefully the result follows from the balance "
     "of torques and we can read it off.", OPTIONS, None),  # a long reply with no answer phrase names nothing
]
PHRASINGS = NAMES_ONE + NAMES_NONE


@pytest.mark.parametrize(("reply", "options", "letter"), PHRASINGS, ids=[repr(p[0])[:50] for p in PHRASINGS])
def test_each_phrasing_names_what_it_says(reply: str, options: list[str], letter: str | None) -> None:
    verdict = SCORER.score({"answer": "B", "options": options, "response": reply})
    assert verdict.prediction == letter
    assert verdict.correct is (letter == "B")


def test_the_set_is_read_in_full() -> None:
    """The figure docs/benchmarks.md states: every phrasing that names one option is read as
    that option, and no reply naming two, negating one or naming none is credited."""
    read = sum(SCORER.score({"answer": "B", "options": o, "response": r}).prediction == want for r, o, want in NAMES_ONE)
    credited = sum(bool(SCORER.score({"answer": "B", "options": o, "response": r}).correct) for r, o, _ in NAMES_NONE)
    assert (len(NAMES_ONE), len(NAMES_NONE)) == (56, 17)
    assert read == len(NAMES_ONE) and credited == 0


@pytest.mark.parametrize(("reply", "gold", "right"), [
    ("The answer is: 12.5 m", "12.5", True),
    ("**Answer:** 12.50", "12.5", True),
    ("Final answer: $\\boxed{12.5}$", "12.5", True),
    ("### Final answer\n**12.5 m**", "12.5", True),
    ("The answer is: 13", "12.5", False),
])
def test_numbers_after_the_same_phrasings(reply: str, gold: str, right: bool) -> None:
    assert SCORER.score({"answer": gold, "answer_type": "number", "response": reply}).correct is right


@pytest.mark.parametrize(("reply", "right"), [
    ("The answer is: virtual image.", True),
    ("**Answer:** *virtual image*", True),
    ("Final answer: \\boxed{\\text{virtual image}}", True),
    ("The answer is: real image", False),
])
def test_texts_after_the_same_phrasings(reply: str, right: bool) -> None:
    assert SCORER.score({"answer": "a virtual image", "answer_type": "text", "response": reply}).correct is right
