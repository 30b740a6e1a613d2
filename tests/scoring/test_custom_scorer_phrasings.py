"""The custom benchmark's rules read what chat models write: a varied set of phrasings (the set
docs/benchmarks.md measures the rules on), each with the option it names, or None where the
reply names two options, negates one or names none. Kept here so every change of the rules is
measured on the same set."""

from __future__ import annotations

import pytest

from maps_autogen.benchmarks.custom import SCORER

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


# ----- numbers ---------------------------------------------------------------------------------
# Replies as chat models write a number (LaTeX fractions, roots, powers of ten, signs, thousands
# separators, mixed numbers, percent, units, \boxed{}), each with a gold answer it states.
NUMBER_READS = [
    ("The answer is 12.5 m", "12.5"),
    ("\\boxed{\\frac{1}{4}}", "0.25"),
    ("$\\boxed{\\dfrac{3}{4}}$", "0.75"),
    ("Final answer: \\tfrac{1}{2}", "0.5"),
    ("The answer is $-\\frac{3}{2}$.", "-1.5"),
    ("\\boxed{\\frac{-3}{2}}", "-1.5"),
    ("The answer is −\\frac{1}{2}", "-0.5"),
    ("The answer is 2\\sqrt{3}", "3.4641016151"),
    ("\\boxed{\\sqrt{2}}", "1.41421356237"),
    ("\\boxed{\\sqrt{16}}", "4"),
    ("The answer is \\sqrt[3]{27}", "3"),
    ("The answer is \\frac{\\sqrt{3}}{2}", "0.8660254038"),
    ("The answer is 2\\pi", "6.283185307"),
    ("\\boxed{\\frac{\\pi}{2}}", "\\frac{\\pi}{2}"),
    ("**Answer:** $3 \\times 10^{8}$ m/s", "300000000"),
    ("Answer: 3e8 m/s", "3e8"),
    ("The speed is large.\nAnswer: 3·10^8 m/s", "3e8"),
    ("The answer is 3.0 × 10⁸ m/s", "3e8"),
    ("The answer is 3.00 \\times 10^{8}", "300000000"),
    ("Final answer: 1.5 \\times 10^{-3} kg", "0.0015"),
    ("The answer is 6.02 x 10^23", "6.02e23"),
    ("The answer is $1.2 \\times 10^{3}$ J", "1200"),
    ("The answer is 7.5e-3 A", "0.0075"),
    ("Answer: 1e3 N", "1000"),
    ("The answer is 10^{-3} m", "0.001"),
    ("The answer is 2^{10}", "1024"),
    ("The answer is \\left(\\frac{1}{2}\\right)^{2}", "0.25"),
    ("The answer is 1,250", "1250"),
    ("The answer is 1{,}250 J", "1250"),
    ("\\boxed{12\\,500}", "12500"),
    ("The answer is −7", "-7"),
    ("Answer: +4", "4"),
    ("The answer is 1\\frac{1}{2} hours", "1.5"),
    ("The answer is 2 1/2 cups", "2.5"),
    ("The answer is 2½", "2.5"),
    ("The answer is 25%", "25"),
    ("The answer is 25\\%", "0.25"),
    ("Answer: 40 percent", "40"),
    ("The answer is 50", "50%"),
    ("\\boxed{x = 5}", "5"),
    ("The answer is $v = 3 \\times 10^{8}\\,\\mathrm{m\\,s^{-1}}$", "3e8"),
    ("The answer is 9.8 m/s^2", "9.8"),
    ("The answer is 9.8 m/s²", "9.8"),
    ("The area is \\boxed{16 \\text{ cm}^2}", "16"),
    ("The answer is 30^\\circ", "30"),
    ("The answer is 45°", "45"),
    ("The answer is \\approx 0.33", "0.33"),
    ("The answer is \\frac{1}{3}", "1/3"),
    ("Answer: \\boxed{0.5}", "\\frac{1}{2}"),
    ("The answer is 12.50", "12.5"),
    ("The answer is 4 kg", "4"),
    ("### Final answer\n**12 N**", "12"),
    ("The answer is T = 2.0 s.", "2"),
    ("The answer is 3(4) = 12", "12"),
    ("The answer is 5 \\mathrm{~kg}", "5"),
    ("The answer is $x_1 = 5$", "5"),
]
# Replies whose only tie to the gold answer is a stray digit (inside a LaTeX form, a unit, a
# subscript, a variable's coefficient, a list or a range): never credited.
NUMBER_STRAYS = [
    ("\\boxed{\\frac{1}{4}}", "4"),
    ("The answer is \\frac{3}{4}", "3"),
    ("The answer is 2\\sqrt{3}", "3"),
    ("The answer is 3 \\times 10^{8}", "8"),
    ("The answer is 10^{8}", "8"),
    ("The answer is 3e8", "8"),
    ("The answer is -\\frac{3}{2}", "2"),
    ("The answer is 1.5 \\times 10^{-3}", "3"),
    ("The answer is 1\\frac{1}{2}", "1"),
    ("\\boxed{\\frac{x}{4}}", "4"),
    ("The answer is \\sqrt{2g}", "2"),
    ("The answer is 2x", "2"),
    ("The answer is 2\\theta", "2"),
    ("The answer is x + 2", "2"),
    ("The answer is x^2 + 3x + 2", "2"),
    ("The answer is 2/x", "2"),
    ("The answer is \\sin 30^\\circ", "30"),
    ("The answer is \\log_{2} 8", "8"),
    ("The answer is 2, 3", "3"),
    ("The answer is 2 or 3", "3"),
    ("The answer is 2 3", "3"),
    ("The answer is 5 \\pm 0.1", "0.1"),
    ("The answer is 12,5", "5"),
    ("The answer is 1:2", "2"),
    ("The answer is 9.8 m/s^2", "2"),
    ("The answer is 16 cm^2", "2"),
    ("The answer is $x_1 = 5$", "1"),
    ("The answer is H_2O", "2"),
    ("The answer is \\frac{1}{0}", "0"),
    ("The answer is \\sqrt{-4}", "2"),
]


@pytest.mark.parametrize(("reply", "gold"), NUMBER_READS, ids=[repr(p[0])[:50] for p in NUMBER_READS])
def test_each_number_phrasing_is_read_as_the_number_it_states(reply: str, gold: str) -> None:
    verdict = SCORER.score({"answer": gold, "answer_type": "number", "response": reply})
    assert verdict.correct, verdict


@pytest.mark.parametrize(("reply", "gold"), NUMBER_STRAYS, ids=[repr(p[0])[:50] for p in NUMBER_STRAYS])
def test_no_stray_digit_is_credited(reply: str, gold: str) -> None:
    verdict = SCORER.score({"answer": gold, "answer_type": "number", "response": reply})
    assert not verdict.correct, verdict


def test_the_number_set_is_read_in_full() -> None:
    """The figure docs/benchmarks.md states: every number phrasing is read as the number it
    states, and no stray digit is credited."""
    read = sum(bool(SCORER.score({"answer": g, "answer_type": "number", "response": r}).correct) for r, g in NUMBER_READS)
    credited = sum(bool(SCORER.score({"answer": g, "answer_type": "number", "response": r}).correct)
                   for r, g in NUMBER_STRAYS)
    assert (len(NUMBER_READS), len(NUMBER_STRAYS)) == (56, 30)
    assert read == len(NUMBER_READS) and credited == 0
