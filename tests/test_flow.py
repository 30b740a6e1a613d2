"""The Manager's selection and rollback rule, tested exhaustively against an oracle written
independently from MAPS_SPEC.md."""

from __future__ import annotations

import itertools

import pytest

from maps_autogen.flow import FlowError, FlowSettings, Turn, decide_next, replay, weakest_step
from maps_autogen.roles import STEPS, CriticVerdict, Role

I, A, S, V, C = Role.INTERPRETER, Role.ALIGNER, Role.SCHOLAR, Role.SOLVER, Role.CRITIC
DIMS = ("caption", "alignment", "knowledge", "solution")
STEP_BY_DIM = dict(zip(DIMS, STEPS))


def verdict(scores: dict[str, int], worst: str | None = None) -> CriticVerdict:
    return CriticVerdict(scores=scores, need_feedback=min(scores.values()) < 5, worst_step=worst, feedback={d: f"why {d}?" for d in scores})


def oracle_target(scores: dict[str, int], worst: str | None, order: tuple[str, ...]) -> str:
    """k* per the spec: argmin; ties to worst_step if tied, else the earliest step."""
    low = min(scores[d] for d in order)
    candidates = [d for d in order if scores[d] == low]
    return worst if worst in candidates else candidates[0]


def first_pass(steps: tuple[Role, ...], v: CriticVerdict | None) -> list[Turn]:
    return [Turn(step) for step in steps] + [Turn(C, v)]


ALL_PATTERNS = list(itertools.product(range(1, 6), repeat=4))
WORST_CHOICES = (None, *DIMS)


@pytest.mark.parametrize("threshold", [5, 4, 3])
def test_every_score_pattern_and_tie_rule(threshold: int) -> None:
    settings = FlowSettings(steps=STEPS, threshold=threshold, max_rollbacks=1)
    checked = 0
    for pattern in ALL_PATTERNS:
        scores = dict(zip(DIMS, pattern))
        for worst in WORST_CHOICES:
            decision = decide_next(first_pass(STEPS, verdict(scores, worst)), settings)
            if all(score >= threshold for score in pattern):
                assert decision.next_role is None and decision.stop_reason == "critic_passed"
            else:
                target = STEP_BY_DIM[oracle_target(scores, worst, DIMS)]
                assert decision.next_role is target, (scores, worst)
                assert decision.revision is not None and decision.revision.step is target
                assert decision.revision.dimension == oracle_target(scores, worst, DIMS)
                assert decision.round == 1
            checked += 1
    assert checked == 5**4 * 5


@pytest.mark.parametrize("final_review", [False, True])
def test_after_the_last_rollback_every_later_step_reruns_then_stop_or_final_review(final_review: bool) -> None:
    settings = FlowSettings(steps=STEPS, max_rollbacks=1, final_review=final_review)
    for pattern in ALL_PATTERNS:
        if min(pattern) == 5:
            continue
        scores = dict(zip(DIMS, pattern))
        turns = first_pass(STEPS, verdict(scores))
        target = STEP_BY_DIM[oracle_target(scores, None, DIMS)]
        expected_rerun = list(STEPS[STEPS.index(target):])
        seen = []
        while (decision := decide_next(turns, settings)).next_role is not None and decision.next_role is not C:
            seen.append(decision.next_role)
            # Only the step the Critic sent back gets its feedback; later steps simply re-run.
            assert (decision.revision is not None) == (decision.next_role is target)
            turns.append(Turn(decision.next_role))
        assert seen == expected_rerun
        if final_review:
            assert decision.next_role is C
            passed = decide_next([*turns, Turn(C, verdict(dict.fromkeys(DIMS, 5)))], settings)
            assert passed.stop_reason == "critic_passed"
            failed = decide_next([*turns, Turn(C, verdict(scores))], settings)
            assert failed.next_role is None and failed.stop_reason == "rollback_limit"
        else:
            assert decision.next_role is None and decision.stop_reason == "rollback_limit"


@pytest.mark.parametrize("max_rollbacks", [0, 1, 2, 3])
def test_rollbacks_are_bounded(max_rollbacks: int) -> None:
    settings = FlowSettings(steps=STEPS, max_rollbacks=max_rollbacks, max_rounds=1000)
    low = verdict({"caption": 5, "alignment": 5, "knowledge": 5, "solution": 2})
    turns: list[Turn] = []
    critic_turns = 0
    while (decision := decide_next(turns, settings)).next_role is not None:
        if decision.next_role is C:
            critic_turns += 1
        turns.append(Turn(decision.next_role, low if decision.next_role is C else None))
    state = replay(turns, settings)
    assert len(state.rollbacks) == max_rollbacks
    assert decision.stop_reason == "rollback_limit"
    # The Critic reviews the first pass and every rollback but the last (no final review).
    assert critic_turns == max(1, max_rollbacks)
    assert sum(1 for t in turns if t.role is V) == 1 + max_rollbacks


def test_no_image_flow_skips_the_interpreter_and_scores_three_dimensions() -> None:
    settings = FlowSettings(steps=(A, S, V), max_rollbacks=1)
    assert settings.dimensions == ("alignment", "knowledge", "solution")
    assert decide_next([], settings).next_role is A
    for pattern in itertools.product(range(1, 6), repeat=3):
        scores = dict(zip(DIMS[1:], pattern))
        for worst in (None, *DIMS):
            decision = decide_next(first_pass((A, S, V), verdict(scores, worst)), settings)
            if min(pattern) == 5:
                assert decision.stop_reason == "critic_passed"
            else:
                expected = oracle_target(scores, worst if worst != "caption" else None, DIMS[1:])
                assert decision.next_role is STEP_BY_DIM[expected]


def test_a_caption_score_is_ignored_when_there_is_no_interpreter() -> None:
    settings = FlowSettings(steps=(A, S, V))
    v = verdict({"caption": 1, "alignment": 5, "knowledge": 5, "solution": 5}, "caption")
    assert decide_next(first_pass((A, S, V), v), settings).stop_reason == "critic_passed"


def test_unparseable_critic_stops_the_chat() -> None:
    settings = FlowSettings(steps=STEPS)
    decision = decide_next(first_pass(STEPS, None), settings)
    assert decision.next_role is None and decision.stop_reason == "critic_unparseable"


def test_without_critic_the_chat_ends_after_the_solver() -> None:
    settings = FlowSettings(steps=STEPS, critic=False)
    turns = [Turn(step) for step in STEPS]
    assert decide_next(turns[:3], settings).next_role is V
    assert decide_next(turns, settings).stop_reason == "rollback_limit"


def test_max_rounds_stops_a_chat_that_would_go_on() -> None:
    settings = FlowSettings(steps=STEPS, max_rollbacks=5, max_rounds=7)
    low = verdict({"caption": 1, "alignment": 5, "knowledge": 5, "solution": 5})
    turns: list[Turn] = []
    while (decision := decide_next(turns, settings)).next_role is not None:
        turns.append(Turn(decision.next_role, low if decision.next_role is C else None))
    assert len(turns) == 7 and decision.stop_reason == "max_rounds"


def test_order_from_the_start() -> None:
    settings = FlowSettings(steps=STEPS)
    turns: list[Turn] = []
    for expected in (I, A, S, V, C):
        decision = decide_next(turns, settings)
        assert decision.next_role is expected and decision.revision is None and decision.round == 0
        turns.append(Turn(expected, verdict(dict.fromkeys(DIMS, 5)) if expected is C else None))
    assert decide_next(turns, settings).stop_reason == "critic_passed"


def test_turns_that_stray_from_the_plan_are_rejected() -> None:
    settings = FlowSettings(steps=STEPS)
    with pytest.raises(FlowError):
        decide_next([Turn(A)], settings)
    finished = first_pass(STEPS, verdict(dict.fromkeys(DIMS, 5)))
    with pytest.raises(FlowError):
        decide_next([*finished, Turn(I)], settings)


def test_weakest_step_ignores_a_worst_step_that_is_not_among_the_lowest() -> None:
    v = verdict({"caption": 4, "alignment": 2, "knowledge": 2, "solution": 3}, worst="solution")
    assert weakest_step(v, STEPS) is A
    v = verdict({"caption": 4, "alignment": 2, "knowledge": 2, "solution": 3}, worst="knowledge")
    assert weakest_step(v, STEPS) is S


def test_rounds_are_numbered_by_rollbacks() -> None:
    settings = FlowSettings(steps=STEPS, max_rollbacks=2)
    low = verdict({"caption": 5, "alignment": 5, "knowledge": 3, "solution": 5})
    turns = first_pass(STEPS, low) + [Turn(S), Turn(V), Turn(C, low), Turn(S), Turn(V)]
    state = replay(turns, settings)
    assert state.round_of_turn == (0, 0, 0, 0, 0, 1, 1, 1, 2, 2)
    assert state.stop_reason == "rollback_limit"
