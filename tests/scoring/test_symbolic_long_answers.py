"""Long answers (~1 KB) get the official OlympiadBench and EMMA verdicts without the seconds
the official LaTeX parse spends on them (full-context LL prediction, milliseconds per token).

The parse is first run with ANTLR's SLL prediction, which builds the same tree as LL or
reports an error; only a parse SLL cannot settle runs the official parse. The tests check the
path each text took (`_symbolic.parse_paths`), that both paths give the same expression, and
that no symbolic check timed out: never the wall time.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from maps_autogen.benchmarks import _latex_parse, _symbolic
from maps_autogen.benchmarks.emma import _scorer as emma
from maps_autogen.benchmarks.olympiadbench import _scorer as olympiadbench

PROSE = (
    "First we compute the area of the triangle using the formula for the height and the base then we "
    "divide by two and obtain the value that we need for the next step of the argument where x is "
) * 5  # about 1 KB of prose, no commas: one answer item, parsed whole as LaTeX


def balanced_sum(ones: int) -> str:
    """(((1+1)+(1+1))+...): `ones` ones, nested only log2(ones) deep."""
    if ones == 1:
        return "1"
    half = ones // 2
    return f"({balanced_sum(half)}+{balanced_sum(ones - half)})"


BALANCED = balanced_sum(256)  # about 1 KB worth 256
CHAIN = "+".join(["1"] * 500)  # 999 characters worth 500, but 500 levels deep once parsed


@pytest.fixture
def fresh_parses() -> Iterator[None]:
    _latex_parse._parse_cached.cache_clear()
    _latex_parse._whole_cached.cache_clear()
    _symbolic.parse_paths.clear()
    yield
    _latex_parse._parse_cached.cache_clear()
    _latex_parse._whole_cached.cache_clear()


def test_a_long_prose_answer_is_judged_on_the_fast_path(fresh_parses: None) -> None:
    assert len(PROSE) >= 900
    # Official: the prose parses as a product of symbols, the truth is a number -> not equal.
    assert olympiadbench.judge(PROSE, "5") is False
    assert emma.verdict(PROSE, "A", "5") is False
    assert _symbolic.parse_paths["ll"] == 0
    assert _symbolic.parse_paths["sll"] >= 2


def test_a_long_expression_equal_to_the_truth_is_credited_on_the_fast_path(fresh_parses: None) -> None:
    assert len(BALANCED) >= 900
    assert olympiadbench.judge(BALANCED, "256") is True
    assert olympiadbench.judge(BALANCED, "257") is False
    assert emma.verdict(BALANCED, "A", "256") is True
    # Official too: evaluating a sum nested 500 deep exceeds Python's recursion limit, which the
    # official judge counts as "not equal".
    assert olympiadbench.judge(CHAIN, "500") is False
    assert _symbolic.parse_paths["ll"] == 0


@pytest.mark.parametrize(
    "text",
    [
        PROSE[:300],
        CHAIN[:301],
        "\\frac{a+b}{2} + \\sqrt{x^2 + 1} \\cdot (y - 3) - \\frac{1}{2}",
        "x^{2} + 2x + 1 = 0",
        "\\sin x \\cos y + e^{i\\pi}",
        "2 \\times 10^{-3}",
        "\\int_0^1 x dx",  # SLL reports an error here: LL settles it
        "f'(x) + 3!",
    ],
)
def test_the_fast_parse_builds_what_the_official_parse_builds(text: str) -> None:
    from sympy.parsing.latex import parse_latex as official

    try:
        fast = _latex_parse._parse_fast(text)
    except _latex_parse._NotSettled:
        fast = _symbolic.parse_latex(text)  # the official parse, run by the fallback
    assert fast == official(text)


@pytest.mark.parametrize(
    "text",
    [
        "(1 + 2",  # a syntax error: the official parse decides (it fails too)
        "1 2 ) 3",  # the parse stops before the end: the official parse decides where it stops
    ],
)
def test_what_the_fast_parse_cannot_settle_goes_to_the_official_parse(fresh_parses: None, text: str) -> None:
    from sympy.parsing.latex import parse_latex as official

    with pytest.raises(_latex_parse._NotSettled):
        _latex_parse._parse_fast(text)
    try:
        expected: object = official(text)
    except Exception as error:  # noqa: BLE001 - the official parse fails: so must ours
        with pytest.raises(type(error)):
            _symbolic.parse_latex(text)
    else:
        assert _symbolic.parse_latex(text) == expected
    assert _symbolic.parse_paths["ll"] == 1


def test_long_answers_are_scored_in_the_helper_without_a_timeout() -> None:
    _symbolic.clear_incidents()
    records = [
        {"final_answer": ["$256$"], "response": f"So the final answer is {BALANCED}"},
        {"final_answer": ["$5$"], "response": PROSE},
    ]
    verdicts = [olympiadbench.SCORER.score(record).correct for record in records]
    emma_record = {"pid": "Math_1", "type": "Open-ended", "answer": "256",
                   "response": f"The answer is {BALANCED}"}
    verdicts.append(emma.SCORER.score(emma_record).correct)
    assert verdicts == [True, False, True]
    assert _symbolic.incidents() == []
