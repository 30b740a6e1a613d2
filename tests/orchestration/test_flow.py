"""The Manager's selection and rollback rule, tested exhaustively against an oracle written
independently from MAPS_SPEC.md."""

from __future__ import annotations

import itertools

import pytest

from maps_autogen.orchestration._flow import FlowError, FlowSettings, Turn, decide_next, replay, weakest_step
from maps_autogen.settings._roles import CriticVerdict

I, A, S, V, C = "interpreter", "aligner", "scholar", "solver", "critic"  # noqa: E741 - the steps' initials
STEPS = (I, A, S, V)
DIMS = ("caption", "alignment", "knowledge", "solution")
STEP_BY_DIM = dict(zip(DIMS, STEPS))
DIM_OF_STEP = dict(zip(STEPS, DIMS))


def flow(steps: tuple[str, ...] = STEPS, *, critic: bool = True, **rules) -> FlowSettings:
    """The default team's flow over `steps`, reviewed by the Critic unless `critic` is False."""
    scored = tuple((step, DIM_OF_STEP[step]) for step in steps) if critic else ()
    return FlowSettings(steps=steps, reviewer=C if critic else None, scored=scored, **rules)


def verdict(scores: dict[str, int], worst: str | None = None) -> CriticVerdict:
    return CriticVerdict(scores=scores, need_feedback=min(scores.values()) < 5, worst_step=worst, feedback={d: f"why {d}?" for d in scores})


def oracle_target(scores: dict[str, int], worst: str | None, order: tuple[str, ...]) -> str:
    """k* per the spec: argmin; ties to worst_step if tied, else the earliest step."""
    low = min(scores[d] for d in order)
    candidates = [d for d in order if scores[d] == low]
    return worst if worst in candidates else candidates[0]


def first_pass(steps: tuple[str, ...], v: CriticVerdict | None) -> list[Turn]:
    return [Turn(step) for step in steps] + [Turn(C, v)]


ALL_PATTERNS = list(itertools.product(range(1, 6), repeat=4))
WORST_CHOICES = (None, *DIMS)


@pytest.mark.parametrize("threshold", [5, 4, 3])
def test_every_score_pattern_and_tie_rule(threshold: int) -> None:
    settings = flow(STEPS, threshold=threshold, max_rollbacks=1)
    checked = 0
    for pattern in ALL_PATTERNS:
        scores = dict(zip(DIMS, pattern))
        for worst in WORST_CHOICES:
            decision = decide_next(first_pass(STEPS, verdict(scores, worst)), settings)
            if all(score >= threshold for score in pattern):
                assert decision.next_role is None and decision.stop_reason == "critic_passed"
            else:
                target = STEP_BY_DIM[oracle_target(scores, worst, DIMS)]
                assert decision.next_role == target, (scores, worst)
                assert decision.revision is not None and decision.revision.step == target
                assert decision.revision.dimension == oracle_target(scores, worst, DIMS)
                assert decision.round == 1
            checked += 1
    assert checked == 5**4 * 5


@pytest.mark.parametrize("final_review", [False, True])
def test_after_the_last_rollback_every_later_step_reruns_then_stop_or_final_review(final_review: bool) -> None:
    settings = flow(STEPS, max_rollbacks=1, final_review=final_review)
    for pattern in ALL_PATTERNS:
        if min(pattern) == 5:
            continue
        scores = dict(zip(DIMS, pattern))
        turns = first_pass(STEPS, verdict(scores))
        target = STEP_BY_DIM[oracle_target(scores, None, DIMS)]
        expected_rerun = list(STEPS[STEPS.index(target):])
        seen = []
        while (decision := decide_next(turns, settings)).next_role is not None and decision.next_role != C:
            seen.append(decision.next_role)
            # Only the step the Critic sent back gets its feedback; later steps simply re-run.
            assert (decision.revision is not None) == (decision.next_role == target)
            turns.append(Turn(decision.next_role))
        assert seen == expected_rerun
        if final_review:
            assert decision.next_role == C
            passed = decide_next([*turns, Turn(C, verdict(dict.fromkeys(DIMS, 5)))], settings)
            assert passed.stop_reason == "critic_passed"
            failed = decide_next([*turns, Turn(C, verdict(scores))], settings)
            assert failed.next_role is None and failed.stop_reason == "rollback_limit"
        else:
            assert decision.next_role is None and decision.stop_reason == "rollback_limit"


@pytest.mark.parametrize("max_rollbacks", [0, 1, 2, 3])
def test_rollbacks_are_bounded(max_rollbacks: int) -> None:
    settings = flow(STEPS, max_rollbacks=max_rollbacks, max_rounds=1000, final_review=False)
    low = verdict({"caption": 5, "alignment": 5, "knowledge": 5, "solution": 2})
    turns: list[Turn] = []
    critic_turns = 0
    while (decision := decide_next(turns, settings)).next_role is not None:
        if decision.next_role == C:
            critic_turns += 1
        turns.append(Turn(decision.next_role, low if decision.next_role == C else None))
    state = replay(turns, settings)
    assert len(state.rollbacks) == max_rollbacks
    assert decision.stop_reason == "rollback_limit"
    # The Critic reviews the first pass and every rollback but the last (no final review).
    assert critic_turns == max(1, max_rollbacks)
    assert sum(1 for t in turns if t.role == V) == 1 + max_rollbacks


def test_no_image_flow_skips_the_interpreter_and_scores_three_dimensions() -> None:
    settings = flow((A, S, V), max_rollbacks=1)
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
                assert decision.next_role == STEP_BY_DIM[expected]


def test_a_caption_score_is_ignored_when_there_is_no_interpreter() -> None:
    settings = flow((A, S, V))
    v = verdict({"caption": 1, "alignment": 5, "knowledge": 5, "solution": 5}, "caption")
    assert decide_next(first_pass((A, S, V), v), settings).stop_reason == "critic_passed"


def test_unparseable_critic_stops_the_chat() -> None:
    settings = flow(STEPS)
    decision = decide_next(first_pass(STEPS, None), settings)
    assert decision.next_role is None and decision.stop_reason == "critic_unparseable"


def test_without_critic_the_chat_ends_after_the_solver() -> None:
    settings = flow(critic=False)
    turns = [Turn(step) for step in STEPS]
    assert decide_next(turns[:3], settings).next_role == V
    assert decide_next(turns, settings).stop_reason == "no_reviewer"  # its own reason: nothing was reviewed


def test_max_rounds_stops_a_chat_that_would_go_on() -> None:
    settings = flow(STEPS, max_rollbacks=5, max_rounds=7)
    low = verdict({"caption": 1, "alignment": 5, "knowledge": 5, "solution": 5})
    turns: list[Turn] = []
    while (decision := decide_next(turns, settings)).next_role is not None:
        turns.append(Turn(decision.next_role, low if decision.next_role == C else None))
    assert len(turns) == 7 and decision.stop_reason == "max_rounds"


def test_order_from_the_start() -> None:
    settings = flow(STEPS)
    turns: list[Turn] = []
    for expected in (I, A, S, V, C):
        decision = decide_next(turns, settings)
        assert decision.next_role == expected and decision.revision is None and decision.round == 0
        turns.append(Turn(expected, verdict(dict.fromkeys(DIMS, 5)) if expected == C else None))
    assert decide_next(turns, settings).stop_reason == "critic_passed"


def test_turns_that_stray_from_the_plan_are_rejected() -> None:
    settings = flow(STEPS)
    with pytest.raises(FlowError):
        decide_next([Turn(A)], settings)
    finished = first_pass(STEPS, verdict(dict.fromkeys(DIMS, 5)))
    with pytest.raises(FlowError):
        decide_next([*finished, Turn(I)], settings)


def test_weakest_step_ignores_a_worst_step_that_is_not_among_the_lowest() -> None:
    v = verdict({"caption": 4, "alignment": 2, "knowledge": 2, "solution": 3}, worst="solution")
    assert weakest_step(v, flow()) == A
    v = verdict({"caption": 4, "alignment": 2, "knowledge": 2, "solution": 3}, worst="knowledge")
    assert weakest_step(v, flow()) == S


def test_rounds_are_numbered_by_rollbacks() -> None:
    settings = flow(STEPS, max_rollbacks=2, final_review=False)
    low = verdict({"caption": 5, "alignment": 5, "knowledge": 3, "solution": 5})
    turns = first_pass(STEPS, low) + [Turn(S), Turn(V), Turn(C, low), Turn(S), Turn(V)]
    state = replay(turns, settings)
    assert state.round_of_turn == (0, 0, 0, 0, 0, 1, 1, 1, 2, 2)
    assert state.stop_reason == "rollback_limit"


@pytest.mark.parametrize("max_rollbacks", [1, 2, 3])
def test_algorithm_1_reviews_after_every_rollback_until_the_cap(max_rollbacks: int) -> None:
    """The default loop: the Critic reviews again after every rollback, including the last."""
    settings = flow(max_rollbacks=max_rollbacks, max_rounds=1000)
    assert settings.final_review and FlowSettings(steps=STEPS).max_rollbacks == 3
    low = verdict({"caption": 5, "alignment": 2, "knowledge": 5, "solution": 5})
    turns: list[Turn] = []
    while (decision := decide_next(turns, settings)).next_role is not None:
        turns.append(Turn(decision.next_role, low if decision.next_role == C else None))
    assert sum(1 for t in turns if t.role == C) == 1 + max_rollbacks
    assert decision.stop_reason == "rollback_limit"


def test_any_team_rolls_back_to_its_weakest_scored_step_then_every_later_step() -> None:
    """A renamed, reordered team with an unscored step: the rule follows the declared data."""
    settings = FlowSettings(steps=("researcher", "drafter", "verifier"), reviewer="judge",
                            scored=(("researcher", "sources"), ("verifier", "check")), max_rollbacks=1, final_review=False)
    turns = [Turn("researcher"), Turn("drafter"), Turn("verifier"),
             Turn("judge", verdict({"sources": 2, "check": 4}))]
    decision = decide_next(turns, settings)
    assert decision.next_role == "researcher" and decision.revision.dimension == "sources"
    for step in ("researcher", "drafter", "verifier"):
        decision = decide_next(turns, settings)
        assert decision.next_role == step
        turns.append(Turn(step))
    assert decide_next(turns, settings).stop_reason == "rollback_limit"
