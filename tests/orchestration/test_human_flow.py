"""The Manager's pure plan with a person in the chat (`flow.FlowSettings.human`): when the
UserProxy is selected, and what the person's continue, note, stop and back do to the plan."""

from __future__ import annotations

import pytest

from maps_autogen.orchestration._flow import PERSON, FlowError, FlowSettings, Turn, decide_next, replay
from maps_autogen.orchestration._human import HumanDecision
from maps_autogen.settings._roles import CriticVerdict

# A renamed team: nothing in the flow may assume the default team's names.
STEPS = ("look", "link", "recall", "answer")
DIMS = ("seen", "linked", "known", "argued")
REVIEWER = "judge"


def flow(**rules: object) -> FlowSettings:
    return FlowSettings(steps=STEPS, reviewer=REVIEWER, scored=tuple(zip(STEPS, DIMS)), **rules)  # type: ignore[arg-type]


def verdict(*scores: int) -> CriticVerdict:
    return CriticVerdict(scores=dict(zip(DIMS, scores)), need_feedback=min(scores) < 5,
                         feedback={d: f"why {d}?" for d in DIMS})


def person(line: str = "") -> Turn:
    kind, _, rest = line.partition(" ")
    if kind == "back":
        step, _, question = rest.partition(" ")
        return Turn(PERSON, decision=HumanDecision.back(step, question))
    if kind == "stop":
        return Turn(PERSON, decision=HumanDecision.stop())
    if kind == "note":
        return Turn(PERSON, decision=HumanDecision.note(rest))
    return Turn(PERSON, decision=HumanDecision())


def first_pass(review: CriticVerdict) -> list[Turn]:
    return [*map(Turn, STEPS), Turn(REVIEWER, review)]


def run(settings: FlowSettings, turns: list[Turn], answers: list[str], reviews: list[CriticVerdict]) -> list[str]:
    """Drive the plan to its end: the person answers in order, the reviewer gives `reviews` in
    order (the last repeats); the roles that spoke, then the stop reason."""
    spoken = [turn.role for turn in turns]
    while (decision := decide_next(turns, settings)).next_role is not None:
        role = decision.next_role
        if role == PERSON:
            turn = person(answers.pop(0))
        elif role == REVIEWER:
            turn = Turn(REVIEWER, reviews.pop(0) if len(reviews) > 1 else reviews[0])
        else:
            turn = Turn(role)
        turns.append(turn)
        spoken.append(role)
    return [*spoken, f"stop:{decision.stop_reason}"]


def test_without_a_person_the_user_proxy_is_never_selected() -> None:
    roles = run(flow(), [], [], [verdict(5, 5, 2, 5), verdict(5, 5, 5, 5)])
    assert PERSON not in roles and roles[-1] == "stop:critic_passed"


def test_review_mode_pauses_after_each_review_and_a_passing_review_ends_only_when_the_person_continues() -> None:
    settings = flow(human="review")
    decision = decide_next(first_pass(verdict(5, 5, 5, 5)), settings)
    assert decision.next_role == PERSON and decision.stop_reason is None  # the pass waits for the person
    state = replay(first_pass(verdict(5, 5, 5, 5)), settings)
    assert state.planned is not None and state.planned.stop_reason == "critic_passed"
    assert decide_next([*first_pass(verdict(5, 5, 5, 5)), person()], settings).stop_reason == "critic_passed"


def test_continue_lets_the_reviewers_rollback_happen_after_the_pause() -> None:
    settings = flow(human="review")
    turns = first_pass(verdict(5, 5, 2, 5))
    assert decide_next(turns, settings).revision is None  # not announced before the person decides
    after = decide_next([*turns, person()], settings)
    assert after.next_role == "recall" and after.revision is not None and after.revision.by == "critic"
    assert after.revision.question == "why known?" and after.round == 1


def test_back_replaces_the_planned_rollback_and_reruns_from_the_step_with_the_persons_question() -> None:
    settings = flow(human="review")
    turns = [*first_pass(verdict(5, 5, 2, 5)), person("back link Is the pivot in the middle?")]
    decision = decide_next(turns, settings)
    assert decision.next_role == "link"
    rollback = decision.revision
    assert rollback is not None and rollback.by == "user" and rollback.question == "Is the pivot in the middle?"
    assert rollback.dimension == "linked" and rollback.scores == {} and rollback.number == 1
    start = len(turns)
    roles = run(settings, turns, ["", ""], [verdict(5, 5, 5, 5)])
    assert roles[start:] == ["link", "recall", "answer", REVIEWER, PERSON, "stop:critic_passed"]


def test_stop_ends_the_chat_at_once_whatever_was_planned() -> None:
    settings = flow(human="review")
    assert decide_next([*first_pass(verdict(1, 1, 1, 1)), person("stop")], settings).stop_reason == "user_stopped"


def test_the_persons_rollbacks_do_not_spend_the_reviewers_budget() -> None:
    settings = flow(human="review", max_rollbacks=1, final_review=False)
    turns = [*first_pass(verdict(5, 5, 5, 5)), person("back recall Which law applies?")]
    state = replay(turns, settings)
    assert state.pending == ("recall", "answer", REVIEWER)  # reviewed: the reviewer still has its rollback
    start = len(turns)
    roles = run(settings, turns, ["", "", ""], [verdict(5, 5, 2, 5)])
    # the reviewer's one rollback, then (budget spent, no final review) the plan ends: the person is asked there too
    assert roles[start:] == ["recall", "answer", REVIEWER, PERSON, "recall", "answer", PERSON,
                                  "stop:rollback_limit"]


def test_after_the_budget_and_without_final_review_a_persons_back_is_not_reviewed() -> None:
    settings = flow(human="review", max_rollbacks=0, final_review=False)
    turns = [*first_pass(verdict(5, 5, 2, 5)), person("back answer Check the units?")]
    assert replay(turns, settings).pending == ("answer",)
    start = len(turns)
    assert run(settings, turns, [""], [verdict(5, 5, 5, 5)])[start:] == ["answer", PERSON, "stop:rollback_limit"]


def test_every_turn_mode_pauses_after_every_agent_turn_and_notes_continue() -> None:
    settings = flow(human="every_turn")
    roles = run(settings, [], ["note use SI units", "", "", "", ""], [verdict(5, 5, 5, 5)])
    assert roles == ["look", PERSON, "link", PERSON, "recall", PERSON, "answer", PERSON, REVIEWER, PERSON,
                     "stop:critic_passed"]


def test_a_team_without_reviewer_pauses_where_the_plan_ends() -> None:
    settings = FlowSettings(steps=STEPS, human="review")
    turns = [*map(Turn, STEPS)]
    assert decide_next(turns, settings).next_role == PERSON
    assert decide_next([*turns, person()], settings).stop_reason == "no_reviewer"
    back = decide_next([*turns, person("back recall And friction?")], settings)
    assert back.next_role == "recall" and back.revision is not None and back.revision.question == "And friction?"


def test_rounds_count_agents_turns_not_the_persons() -> None:
    settings = flow(human="every_turn", max_rounds=3)
    turns = [Turn("look"), person(), Turn("link"), person(), Turn("recall")]
    assert decide_next(turns, settings).stop_reason == "max_rounds"
    assert decide_next(turns[:4], settings).next_role == "recall"


def test_the_persons_backs_are_bounded_and_name_only_steps() -> None:
    settings = flow(human="review", max_backs=1)
    turns = [*first_pass(verdict(5, 5, 5, 5)), person("back look Where?"), *map(Turn, STEPS),
             Turn(REVIEWER, verdict(5, 5, 5, 5))]
    assert decide_next(turns, settings).next_role == PERSON
    with pytest.raises(FlowError, match="max_backs"):
        decide_next([*turns, person("back look Again?")], settings)
    with pytest.raises(FlowError, match="not one of the steps"):
        decide_next([*first_pass(verdict(5, 5, 5, 5)), person(f"back {REVIEWER} Why?")], settings)
    with pytest.raises(FlowError):
        decide_next([Turn("look"), person()], flow())  # no person in this chat


def test_a_person_role_cannot_be_a_step() -> None:
    with pytest.raises(ValueError, match="person's role"):
        FlowSettings(steps=(PERSON, "b"))
